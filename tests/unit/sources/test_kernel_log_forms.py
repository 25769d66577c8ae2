"""Saved-log forms, as `events --file` reads them: every dmesg, journalctl and syslog form,
pasted-terminal noise around them; each line keeps its own printed time, none is taken for
JSON. The excerpts are written here in the exact forms util-linux dmesg, journalctl, rsyslog,
syslog-ng and OpenWrt logread print (stamps and numbers made up).
"""

from __future__ import annotations

import time

import pytest

from corescope.model.events import KernelEvent
from support.kernel_logs import BOOT, events_of
from support.kernel_logs import local as _local

# --- saved-log forms: every form keeps each line's own time and is never taken for JSON ---

LINE = "ena 0000:00:05.0 eth0: Trigger reset is on"


def _one(text: str) -> KernelEvent:
    evs, _, _ = events_of(text)
    got = [e for e in evs if e.kind == "nic_reset"]
    assert len(got) == 1, [(e.kind, e.raw) for e in evs]
    return got[0]


def test_dmesg_T_in_a_french_locale_is_not_json() -> None:
    e = _one(f"[mar. févr.  8 12:57:41 2022] {LINE}\n")
    assert e.time == _local(2022, 2, 8, 12, 57, 41)


@pytest.mark.parametrize("stamp", ["[Di Feb  8 12:57:41 2022]", "[mar feb  8 12:57:41 2022]",
                                   "[Вт фев  8 12:57:41 2022]", "[火  2月  8 12:57:41 2022]",
                                   "[Tue Feb  8 12:57:41 2022]"])
def test_dmesg_T_other_locales(stamp: str) -> None:
    assert _one(f"{stamp} {LINE}\n").time == _local(2022, 2, 8, 12, 57, 41)


def test_dmesg_H_relative_lines_are_classified_and_placed_from_their_anchor() -> None:
    text = ("[Feb 8 12:57] ena 0000:00:05.0 eth0: Keep alive watchdog timeout.\n"
            "[  +0.005106] " + LINE + "\n")
    evs, _, _ = events_of(text)
    kinds = [e.kind for e in evs]
    assert kinds == ["nic_keepalive_timeout", "nic_reset"]
    t0 = evs[0].time
    assert abs(evs[1].time - t0 - 0.005106) < 1e-6
    assert time.localtime(t0)[1:5] == (2, 8, 12, 57)


def test_dmesg_H_without_an_anchor_is_still_classified() -> None:
    evs, _, _ = events_of("[  +0.005106] " + LINE + "\n[  +1.000000] " + LINE + "\n")
    assert [e.kind for e in evs] == ["nic_reset", "nic_reset"]


def test_time_format_delta_is_classified() -> None:
    evs, _, _ = events_of("[<    0.000000>] " + LINE + "\n[<    0.002672>] " + LINE + "\n")
    assert [e.kind for e in evs] == ["nic_reset", "nic_reset"]


@pytest.mark.parametrize("stamp", ["[  240.]", "[  240.12]", "[240.123456]"])
def test_stamps_cut_short(stamp: str) -> None:
    e = _one(f"{stamp} {LINE}\n")
    assert abs(e.time - BOOT - 240) < 1


def test_pasted_shell_prompt_first_line_is_not_json() -> None:
    text = ("[root@ip-10-0-0-5 ~]# dmesg | grep -i ena\n"
            f"[ 1234.567890] {LINE}\n")
    assert _one(text).time == pytest.approx(BOOT + 1234.56789)


@pytest.mark.parametrize("text", [
    f"$ dmesg -T | grep ena\n[ 1234.567890] {LINE}\n",
    f"ubuntu@node:~$ sudo dmesg\n[ 1234.567890] {LINE}\nubuntu@node:~$ \n",
    f"```\n[ 1234.567890] {LINE}\n```\n",
    f"> [ 1234.567890] {LINE}\n> [ 1234.600000] something else\n",
    f">     [ 1234.567890] {LINE}\n",
    f"    [ 1234.567890] {LINE}\n",
    f"/var/log/kern.log:[ 1234.567890] {LINE}\n",
    f"1234:[ 1234.567890] {LINE}\n",
])
def test_terminal_noise_around_a_dmesg_paste(text: str) -> None:
    assert _one(text).time == pytest.approx(BOOT + 1234.56789)


def test_grep_output_of_kern_log_files_keeps_the_syslog_time() -> None:
    text = f"/var/log/kern.log.1:Feb  8 12:57:41 node1 kernel: [ 1234.567890] {LINE}\n"
    e = _one(text)
    assert time.localtime(e.time)[1:6] == (2, 8, 12, 57, 41)


def test_syslog_kernel_lines_keep_their_own_time_not_this_boot() -> None:
    text = (f"Feb  8 12:57:41 node1 kernel: [ 1234.567890] {LINE}\n"
            f"Feb  8 12:57:45 node1 kernel: [ 1238.567890] {LINE}\n")
    evs, _, _ = events_of(text)
    assert [time.localtime(e.time)[1:6] for e in evs] == [(2, 8, 12, 57, 41),
                                                          (2, 8, 12, 57, 45)]
    assert evs[0].mono_usec == 1234567890


def test_syslog_with_a_year() -> None:
    for text in (f"2022 Feb  8 12:57:41 node1 kernel: {LINE}\n",
                 f"Feb  8 2022 12:57:41 node1 kernel: {LINE}\n"):
        assert _one(text).time == _local(2022, 2, 8, 12, 57, 41)


def test_rfc5424() -> None:
    text = f"<4>1 2022-02-08T12:57:41.123456+00:00 node1 kernel - - - {LINE}\n"
    assert _one(text).time == pytest.approx(1644325061.123456)
    text = ("<30>1 2022-02-08T12:57:41.123456+00:00 node1 netifd 812 - - "
            "Network device 'eth0' link is up\n")
    evs, _, _ = events_of(text)
    assert [e.kind for e in evs if e.kind != "other"] == []


def test_rsyslog_high_precision() -> None:
    text = f"2022-02-08T12:57:41.123456+01:00 node1 kernel: [ 1234.567890] {LINE}\n"
    assert _one(text).time == pytest.approx(1644321461.123456)


def test_openwrt_logread_keeps_time_and_interface() -> None:
    text = ("Tue Feb  8 12:57:41 2022 kern.warn kernel: [12345.678901] NETDEV WATCHDOG: eth0 "
            "(mtk_soc_eth): transmit queue 0 timed out\n")
    evs, _, _ = events_of(text)
    e = next(e for e in evs if e.kind == "nic_tx_timeout")
    assert e.iface == "eth0" and e.driver == "mtk_soc_eth"
    assert e.time == _local(2022, 2, 8, 12, 57, 41)
    assert e.level == 4


def test_date_space_time_millis_host_kernel() -> None:
    text = ("2022-02-08 12:57:41.123 node1 kernel: [  342.006981] ena 0000:00:05.0 eth0: "
            "Trigger reset is on\n"
            "2022-02-08 12:57:41.125 node1 kernel: ena 0000:00:05.0 eth1: Link is Down\n")
    evs, _, _ = events_of(text)
    e = next(e for e in evs if e.kind == "nic_reset")
    assert e.time == pytest.approx(_local(2022, 2, 8, 12, 57, 41.123))
    assert e.iface == "eth0"
    d = next(e for e in evs if e.kind == "link_down")
    assert d.iface == "eth1" and d.time == pytest.approx(_local(2022, 2, 8, 12, 57, 41.125))


def test_journalctl_forms() -> None:
    forms = {
        "short": f"Feb 08 12:57:41 node1 kernel: {LINE}\n",
        "short-precise": f"Feb 08 12:57:41.123456 node1 kernel: {LINE}\n",
        "short-iso": f"2022-02-08T12:57:41+0000 node1 kernel: {LINE}\n",
        "short-monotonic": f"[ 1234.567890] node1 kernel: {LINE}\n",
        "json": ('{"__REALTIME_TIMESTAMP":"1644325061123456","_TRANSPORT":"kernel",'
                 f'"_SOURCE_MONOTONIC_TIMESTAMP":"1234567890","MESSAGE":"{LINE}"}}\n'),
    }
    for name, text in forms.items():
        e = _one(text)
        assert e.kind == "nic_reset", name
    assert _one(forms["short-iso"]).time == 1644325061
    assert _one(forms["json"]).time == pytest.approx(1644325061.123456)


def test_a_json_journal_is_still_json() -> None:
    text = ('[{"__REALTIME_TIMESTAMP":"1644325061123456","_TRANSPORT":"kernel",'
            f'"MESSAGE":"{LINE}"}}]\n')
    assert _one(text).time == pytest.approx(1644325061.123456)


def test_syslog_without_a_host_and_with_two_spaces() -> None:
    # a syslog template with an empty host field: `Feb 23 03:28:16 kernel:`, `...16  kernel:`
    text = ("Feb 23 03:28:16 kernel: mce: [Hardware Error]: Machine check events logged\n"
            "Feb 23 03:28:16 kernel: EDAC sbridge MC1: HANDLING MCE MEMORY ERROR\n"
            "Feb 23 03:28:16 kernel: EDAC sbridge MC1: CPU 1: Machine Check Event: 0 Bank 11: "
            "8c00004f000800c2\n"
            "Feb 23 03:28:16 kernel: EDAC sbridge MC1: TSC 0\n"
            "Feb 23 03:28:16  kernel: EDAC MC1: 1 CE memory scrubbing error on "
            "CPU_SrcID#1_Ha#0_Chan#0_DIMM#0 (channel:0 slot:0 page:0xee30a0)\n")
    evs, diags, _ = events_of(text)
    hw = [e for e in evs if e.kind == "hw_error"]
    assert len(hw) == 1 and hw[0].fields["lines"] == 5 and hw[0].fields["cpu"] == 1
    assert not diags
    assert all(time.localtime(e.time)[1:6] == (2, 23, 3, 28, 16) for e in evs)


def test_busybox_syslogd_messages_keep_time_driver_and_level() -> None:
    # BusyBox syslogd (sysklogd/syslogd.c timestamp_and_log, without -S) writes
    # `"%s %.64s %s %s\n", timestamp, hostname, facility.priority, msg`: Alpine's and
    # embedded systems' /var/log/messages; klogd's lines carry the ident `kernel`
    text = ("Dec  1 10:00:01 node7 kern.warn kernel: [ 5521.882301] virtio_net virtio1 eth0: "
            "NETDEV WATCHDOG: CPU: 0: transmit queue 2 timed out 5376 ms\n"
            "Dec  1 10:00:02 node7 daemon.info netifd: Network device 'eth0' link is down\n"
            "Dec  1 10:00:03 node7 kern.err kernel: [ 5523.000000] ena 0000:00:05.0 eth1: "
            "Trigger reset is on\n")
    evs, _, _ = events_of(text)
    assert [e.kind for e in evs] == ["nic_tx_timeout", "nic_reset"]
    wd, reset = evs
    assert (wd.driver, wd.iface, wd.fields.get("cpu")) == ("virtio_net", "eth0", 0)
    assert time.localtime(wd.time)[1:6] == (12, 1, 10, 0, 1)
    assert (wd.level, reset.level) == (4, 3)
    assert (reset.driver, reset.iface) == ("ena", "eth1")


def test_syslog_tag_without_a_space_before_the_kernel_stamp() -> None:
    # a syslog template of `%syslogtag%%msg%` (no sp-if-no-1st-sp) prints `kernel:[`, as in
    # a Raspberry Pi report of an r8152 TX timeout (5.15): the line keeps its time and driver
    text = ("2022-11-04T14:09:31 server kernel:[75215.928881] NETDEV WATCHDOG: eth1 (r8152): "
            "transmit queue 0 timed out\n"
            "2022-11-04T14:09:31 server kernel:[75215.928941] WARNING: CPU: 0 PID: 0 at "
            "net/sched/sch_generic.c:478 dev_watchdog+0x398/0x3a0\n"
            "2022-11-04T14:09:32 server kernel:[75216.011111] r8152 4-1.2:1.0 eth1: Tx timeout\n")
    evs, notes, _ = events_of(text)
    got = [e for e in evs if e.kind == "nic_tx_timeout"]
    assert [(e.driver, e.iface) for e in got] == [("r8152", "eth1"), ("r8152", "eth1")]
    assert got[0].fields.get("cpu") == 0
    assert got[0].time == _local(2022, 11, 4, 14, 9, 31)
    assert not any("without a timestamp" in n for n in notes)


# --- a syslog daemon's repeat lines: the message came again N times -----------------------
# A kern.log written by rsyslog from journald (imjournal: no printk stamp in the text, so
# identical kernel messages fold), by syslog-ng and by sysklogd. The repeat line is an event
# of the repeated message's kind and driver, at the repeat line's time, with `repeated`: N.
_FIRST = "Feb  8 12:57:41 node1 kernel: ena 0000:00:05.0 eth0: Trigger reset is on\n"
_REPEATS = [
    # rsyslog runtime/ratelimit.c ratelimitGenRepMsg: " message repeated %d times: [%.800s]"
    ("rsyslog", "Feb  8 12:57:50 node1 kernel: message repeated 3 times: "
                "[ ena 0000:00:05.0 eth0: Trigger reset is on]\n"),
    # rsyslog action.c, RepeatedMsgContainsOriginalMsg off: " last message repeated %d times"
    ("rsyslog-old", "Feb  8 12:57:50 node1 kernel: last message repeated 3 times\n"),
    # syslog-ng logwriter.c: "Last message '%.20s' repeated %d times, suppressed by
    # syslog-ng on %s", with the original's PROGRAM
    ("syslog-ng", "Feb  8 12:57:50 node1 kernel: Last message 'ena 0000:00:05.0 eth' "
                  "repeated 3 times, suppressed by syslog-ng on node1\n"),
    # sysklogd syslogd.c fprintlog: "last message repeated %d times", no tag
    ("sysklogd", "Feb  8 12:57:50 node1 last message repeated 3 times\n"),
]


@pytest.mark.parametrize("repeat", [r[1] for r in _REPEATS], ids=[r[0] for r in _REPEATS])
def test_a_syslog_repeat_line_carries_the_repeated_incident_and_its_count(repeat: str) -> None:
    evs, diags, _ = events_of(_FIRST + repeat)
    resets = [e for e in evs if e.kind == "nic_reset"]
    assert [(e.iface, e.driver, e.fields.get("repeated")) for e in resets] == [
        ("eth0", "ena", None), ("eth0", "ena", 3)]
    assert resets[1].time - resets[0].time == 9.0 and not diags  # the repeat line's stamp


def test_a_repeat_of_another_programs_line_is_not_the_kernels() -> None:
    # sysklogd's repeat follows whatever line came before it: here sshd's
    text = (_FIRST + "Feb  8 12:57:45 node1 sshd[812]: Accepted publickey for root\n"
            "Feb  8 12:57:50 node1 last message repeated 3 times\n")
    evs, _, _ = events_of(text)
    assert [e.fields.get("repeated") for e in evs if e.kind == "nic_reset"] == [None]
    # syslog-ng's quotes the start of the message it repeats: another one is not this one
    text = (_FIRST + "Feb  8 12:57:50 node1 kernel: Last message 'usb 1-1: new high-spe' "
            "repeated 2 times, suppressed by syslog-ng on node1\n")
    evs, _, _ = events_of(text)
    assert [e.fields.get("repeated") for e in evs if e.kind == "nic_reset"] == [None]
