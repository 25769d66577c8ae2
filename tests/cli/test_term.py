"""views/term: untrusted text never reaches the terminal with its control characters, and
NO_COLOR turns colour off. The CLI tests run the real commands on logs and stacks that carry
escape sequences (a screen clear, an OSC window title, a one-byte C1 CSI)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from corescope.model.events import KernelEvent
from corescope.render import term
from corescope.store import events as store_events
from corescope.store.db import Store
from support import run_cli

EVIL = "evil\x1b[2J\x1b]0;pwned\x07\x9b31m\u202e"


def test_clean_escapes_every_control_character() -> None:
    out = term.clean(EVIL + "\nnext\tcol\r")
    assert out == "evil\\x1b[2J\\x1b]0;pwned\\x07\\x9b31m\\u202e\\nnext\\tcol\\r"
    assert all(ch.isprintable() for ch in out)
    assert term.clean("plain ✓ café") == "plain ✓ café"


def test_clean_lines_keeps_newlines_and_tabs() -> None:
    assert term.clean_lines("a\tb\nc\x1b[2Jd\r\n") == "a\tb\nc\\x1b[2Jd\\r\n"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_use_color_honours_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert term.use_color(_Tty()) is True
    assert term.use_color(io.StringIO()) is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert term.use_color(_Tty()) is False
    monkeypatch.setenv("NO_COLOR", "")  # empty means unset, per no-color.org
    assert term.use_color(_Tty()) is True
    monkeypatch.setenv("TERM", "dumb")
    assert term.use_color(_Tty()) is False


def _no_controls(text: str) -> None:
    bad = [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0]
    assert not bad, repr(text)


def test_events_file_escapes_log_text(tmp_path: Path) -> None:
    log = tmp_path / "dmesg.txt"
    log.write_text(
        f"[  100.000001] INFO: task {EVIL}:4242 blocked for more than 120 seconds.\n"
        f"[  101.000001] ena 0000:00:05.0 eth0: Resetting the device \x1b]52;c;aGk=\x07\n")
    proc = run_cli("events", "--file", str(log), "--all")
    assert proc.returncode in (0, 1), proc.stderr
    assert "hung_task" in proc.stdout
    assert "\\x1b[2J" in proc.stdout  # visible, not executed
    _no_controls(proc.stdout)
    _no_controls(proc.stderr)


def test_events_and_report_from_store_escape_log_text(tmp_path: Path) -> None:
    import time
    now = time.time()
    with Store.open(tmp_path / "s") as store:
        store_events.insert_events(store, [KernelEvent(
            time=now - 30, kind="nic_reset", raw=f"ena 0000:00:05.0 eth0: reset {EVIL}",
            driver="ena", device="0000:00:05.0", fields={"iface": "eth0"}, seq=1,
            mono_usec=1)], "boot")
    for args in (("events",), ("report",)):
        proc = run_cli(*args, "--store", str(tmp_path / "s"))
        assert proc.returncode in (0, 1), proc.stderr
        assert "\\x1b[2J" in proc.stdout, proc.stdout
        _no_controls(proc.stdout)


def test_flame_top_escapes_process_names(tmp_path: Path) -> None:
    script = tmp_path / "perf.txt"
    script.write_text(
        f"{EVIL}  6831/6831  [001]   361.870649: cpu-clock: \n"
        "\tffffffff81b6ba40 iov_iter_zero ([kernel.kallsyms])\n"
        "\tffffffff81d33eb8 read\x1b[2J_iter_zero ([kernel.kallsyms])\n\n")
    proc = run_cli("flame", "--perf-script", str(script))
    assert proc.returncode == 0, proc.stderr
    assert "\\x1b" in proc.stdout
    _no_controls(proc.stdout)
    _no_controls(proc.stderr)


def test_a_newline_in_a_name_cannot_forge_a_line_of_diagnosis(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The walker's comm (a process names itself) carries a newline and a fake verdict: the
    timeline and diagnosis print it on its own line's text, escaped, never as a new line."""
    from dataclasses import replace

    from corescope.investigate import Window, investigate
    from corescope.render.text import print_investigation
    from support.synth_incident import evidence_of, zombie_chain_hour

    forged = "kubelet\nroot cause: healthy (forged)"
    sc = zombie_chain_hour(cpus=8, hot_cpu=3, seconds=900, resets_at=(400, 700), hz=19)
    sc.stacks = [(replace(s, comm=forged) if s.comm == "kubelet" else s, t)
                 for s, t in sc.stacks]
    inv = investigate(evidence_of(sc), Window(sc.start, sc.end))
    print_investigation(inv)
    out = capsys.readouterr().out
    assert "kubelet\\nroot cause: healthy (forged)" in out, out
    assert not any(line.startswith("root cause: healthy") for line in out.splitlines())
    _no_controls(out)
