"""The lines of one kernel report, joined into the event of its first line.

The kernel prints several reports as many records (each with its own stamp in dmesg, or each
line stamped by the console and syslog): a machine check (the summary, `CPU N: Machine
Check`, `TSC`/`ADDR`/`MISC`, `PROCESSOR`, then the EDAC decoder's lines), an Intel TX hang's
register dump (`Tx Queue <2>` after `Detected Tx Unit Hang`), an RCU stall (one line per
stalled CPU, `(detected by N, t=... jiffies`), an OOM kill (`oom-kill:constraint=...`, the
chosen `Kill process N ... or sacrifice child`, the victim's `Killed process M`), a hard
lockup and the panic it leads to, a driver's TX timeout and its own line for the same queue,
and the `WARNING: CPU: N` splat around a NETDEV WATCHDOG line. Joined, each is one event of
its kind: the event of its first line, with the fields of all its lines and `lines` how many
there are; its further lines stay events of kind "other" with `part_of` naming the report's
kind. A count of events is a count of reports, and an OOM event names the process killed.

Only lines near the report's last line (in time and in records) join it; anything else passes
through unchanged. The joiner keeps its state across `feed` calls (the recorder classifies a
batch at a time): a line that continues a report whose first line an earlier batch returned is
kept as "other" with `part_of` too, and the head, with the fields and line count it gained,
is returned by `take_updates` (the recorder rewrites the stored row's fields with it).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from corescope.analysis.classify import container_of, cpu_list
from corescope.model.events import KernelEvent

# --- what a line is to a report --------------------------------------------------------------

# Intel TX hang dump lines: `  TDH                  <b>`, `  TDH, TDT  <1a>, <3c>`,
# `buffer_info[next_to_clean]:`, `MAC Status             <40080083>`
_HANG_LINE = re.compile(
    r"^\s*(?:[A-Za-z_][\w .,()-]{0,40}?\s*<[0-9a-fA-Fx]{0,20}>(?:,\s*<[0-9a-fA-Fx]{0,20}>)?"
    r"|(?:tx_)?buffer_info\[next_to_clean\]:?)\s*$")
_HANG_QUEUE = re.compile(r"Tx Queue\s+<(\d+)>")
# RCU stall report lines (kernel/rcu/tree_stall.h; rcutree.c in 3.x): a stalled CPU
# `rcu: \t2-...0: (1 GPs behind) idle=...` / EL7 `\t3: (1 GPs behind)`, the `{ 3 5}` list,
# `(detected by 0, t=21002 jiffies, ...)`, `(t=21003 jiffies g=...)`, tasks blocked, the GP
# kthread's state
_RCU_CPU = re.compile(r"^(?:rcu: )?\s*(\d{1,5})-?[.\w!]{0,8}: \(")
_RCU_BRACES = re.compile(r"^(?:rcu: )?\s*\{([\d\s.,-]{1,200})\}")
_RCU_DETECTED = re.compile(r"\(detected by (\d+), t=(\d+) jiffies")
_RCU_T = re.compile(r"^(?:rcu: )?\s*\(t=(\d+) jiffies")
_RCU_MISC = re.compile(r"^(?:rcu: )?\s*(?:Tasks blocked on level-\d+ rcu_node|blocking rcu_node"
                       r"|Unless rcu_\w+ kthread gets sufficient CPU time|RCU grace-period "
                       r"kthread stack dump|Stack dump where RCU GP kthread last ran)")
# OOM report lines (mm/oom_kill.c, mm/memcontrol.c)
_OOM_SUMMARY = re.compile(r"oom-kill:constraint=")
_OOM_SELECT = re.compile(r"\bKill process \d+ \(.{0,64}?\)(?: score \d+)? or (?:sacrifice "
                         r"child|a child)|\bKill process \d+ \(.{0,64}?\) score", re.I)
_OOM_KILLED = re.compile(r"\bKilled process \d+")
_OOM_REAPED = re.compile(r"oom_reaper: reaped process (\d+)")
_OOM_TASK_IN = re.compile(r"Task in (\S+) killed as a result of limit of (\S+)")
# machine check reports (arch/x86/kernel/cpu/mce, drivers/edac): the lines that start one
_HW_STARTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("logged", re.compile(r"Machine check events logged")),
    ("handling", re.compile(r"HANDLING MCE MEMORY ERROR")),
    ("mc", re.compile(r"CPU:? ?\d+:? (?:Machine Check|\(\w+:\w+:\w+\) MC\d+_STATUS)")),
    ("apei", re.compile(r"Hardware error from APEI Generic Hardware Error Source")),
    ("edac_count", re.compile(r"EDAC (?:\w+ )?MC\d+: \d+ (?:CE|UE)\b")),
)
_EDAC_REPORT = re.compile(r"EDAC (?:\w+ )?MC\d+: (?:CPU \d+: Machine Check|TSC|ADDR|MISC|"
                          r"PROCESSOR|MCGSTATUS|mcgstatus|SYND)")
# the splat around NETDEV WATCHDOG: `WARNING: CPU: 7 PID: 0 at net/sched/sch_generic.c:447
# dev_watchdog+0x221/0x230` before it, `CPU: 7 PID: 0 Comm: swapper/7 ...` after it
_WARN_WATCHDOG = re.compile(r"WARNING: CPU: (\d+) PID: (\d+) at \S*(?:sch_generic\.c|dev_watchdog)"
                            r"|WARNING: CPU: (\d+) PID: (\d+) at .{0,80}dev_watchdog")
_SPLAT_CPU = re.compile(r"^CPU: (\d+) (?:UID: \d+ )?PID: (\d+) Comm: ")


@dataclass
class _Open:
    family: str
    index: int | None  # where the head is in this batch's output (None: already emitted)
    kind: str
    time: float
    n: int  # records seen since the report's last line
    lines: int = 1
    keys: set[str] = field(default_factory=set)
    pid: int | None = None
    queue: int | None = None
    where: tuple[str | None, str | None] = (None, None)  # (device, iface)
    head: KernelEvent | None = None  # the head as last returned, once its batch is out


_FAMILY = {"nic_tx_stall": "hang", "hw_error": "hw", "rcu_stall": "rcu", "oom_kill": "oom",
           "hard_lockup": "lockup", "soft_lockup": "lockup", "hung_task": "lockup",
           "nic_tx_timeout": "txto"}
_WINDOW_S = {"hang": 1.0, "hw": 1.0, "rcu": 5.0, "oom": 5.0, "lockup": 10.0, "txto": 0.5,
             "wd": 0.5}
_WINDOW_N = {"hang": 40, "hw": 40, "rcu": 400, "oom": 2000, "lockup": 400, "txto": 8, "wd": 60}


def join_reports(events: Iterable[KernelEvent]) -> list[KernelEvent]:
    """One pass over a whole log (see ReportJoiner)."""
    return ReportJoiner().feed(events)


class ReportJoiner:
    def __init__(self) -> None:
        self._open: dict[str, _Open] = {}
        self._warn: tuple[int, float, int] | None = None  # (cpu, time, records since)
        self._oom_ctx: tuple[dict[str, Any], float, int] | None = None
        # heads returned by an earlier feed whose fields grew since: (seq, usec) -> head
        self._updates: dict[tuple[int | None, int | None], KernelEvent] = {}

    def feed(self, events: Iterable[KernelEvent]) -> list[KernelEvent]:
        out: list[KernelEvent] = []
        for e in events:
            self._age()
            if self._join(e, out) is None:
                out.append(self._start(e, len(out)))
        for o in self._open.values():
            if o.index is not None:
                o.head = out[o.index]
            o.index = None  # emitted with this batch
        return out

    def take_updates(self) -> list[KernelEvent]:
        """The heads an earlier `feed` returned whose fields have grown since (a report's
        further lines came in a later batch), as they are now; each once."""
        out = list(self._updates.values())
        self._updates.clear()
        return out

    def _head(self, o: _Open, out: list[KernelEvent]) -> KernelEvent | None:
        return out[o.index] if o.index is not None else o.head

    def _put(self, o: _Open, out: list[KernelEvent], head: KernelEvent) -> None:
        if o.index is not None:
            out[o.index] = head
        else:
            o.head = head
            self._updates[(head.seq, head.mono_usec)] = head

    # -- bookkeeping --

    def _age(self) -> None:
        for o in self._open.values():
            o.n += 1
        if self._warn is not None:
            cpu, t, n = self._warn
            self._warn = (cpu, t, n + 1)
        if self._oom_ctx is not None:
            ctx, t, n = self._oom_ctx
            self._oom_ctx = (ctx, t, n + 1)

    def _live(self, family: str, e: KernelEvent) -> _Open | None:
        o = self._open.get(family)
        if o is None:
            return None
        if e.time - o.time >= _WINDOW_S[family] or e.time < o.time - 1.0 \
                or o.n > _WINDOW_N[family]:
            del self._open[family]
            return None
        return o

    def _merge(self, o: _Open, e: KernelEvent, out: list[KernelEvent],
               fields: dict[str, Any] | None = None, override: bool = False) -> KernelEvent:
        """Add `e`'s line(s) to the open report: the head takes its fields and counts its
        lines; `e` itself is kept, as kind "other" with `part_of` (every record stays one
        event: the store's sequence numbers stay whole)."""
        o.lines += e.raw.count("\n") + 1
        o.time, o.n = e.time, 0
        head = self._head(o, out)
        if head is not None:
            merged = dict(head.fields)
            for k, v in (e.fields if fields is None else fields).items():
                if override or k not in merged:
                    merged[k] = v
            merged["lines"] = o.lines
            self._put(o, out, dataclasses.replace(head, fields=merged))
        part = dataclasses.replace(e, kind="other", fields={"part_of": o.kind})
        out.append(part)
        return part

    def _set(self, o: _Open, out: list[KernelEvent], **fields: Any) -> None:
        head = self._head(o, out)
        if head is not None:
            self._put(o, out, dataclasses.replace(head, fields={**head.fields, **fields}))

    # -- joining --

    def _join(self, e: KernelEvent, out: list[KernelEvent]) -> KernelEvent | None:
        """The event `e` became part of (None: `e` stands on its own)."""
        raw = e.raw
        w = _WARN_WATCHDOG.search(raw) if "WARNING: CPU:" in raw else None
        if w is not None:
            cpu = int(w.group(1) or w.group(3))
            o = self._live("wd", e)
            if o is not None:  # the splat after its message (4.19+: message, then WARNING)
                self._set(o, out, cpu=cpu)
                del self._open["wd"]
            else:
                self._warn = (cpu, e.time, 0)
        if e.kind == "other":
            return self._join_other(e, out)
        if e.kind == "hw_error":
            return self._join_hw(e, out)
        if e.kind == "oom_kill":
            return self._join_oom(e, out)
        if e.kind == "rcu_stall":
            o = self._live("rcu", e)
            if o is not None and e.fields.get("variant") == "kthread starved":
                return self._merge(o, e, out, {
                    "starved_jiffies": e.fields.get("starved_jiffies")})
            return None
        if e.kind in ("hard_lockup", "soft_lockup", "hung_task") and e.fields.get("panic"):
            o = self._live("lockup", e)
            if o is not None and o.kind == e.kind and "panic" not in o.keys:
                o.keys.add("panic")
                return self._merge(o, e, out, {**e.fields, "panic": True})
            return None
        if e.kind == "nic_tx_timeout":
            o = self._live("txto", e)
            # a driver's own line for the timeout just reported (not a second watchdog)
            if o is not None and e.fields.get("format") == "driver_tx_timeout" \
                    and self._same_timeout(o, e):
                if o.queue is None:
                    o.queue = e.queue
                return self._merge(o, e, out)
        return None

    @staticmethod
    def _same_timeout(o: _Open, e: KernelEvent) -> bool:
        dev, iface = o.where
        same = (dev is not None and e.device == dev) or (iface is not None and e.iface == iface)
        return same and (o.queue is None or e.queue is None or o.queue == e.queue)

    def _join_other(self, e: KernelEvent, out: list[KernelEvent]) -> KernelEvent | None:
        raw = e.raw
        o = self._live("hang", e)
        if o is not None and _HANG_LINE.match(raw):
            q = _HANG_QUEUE.search(raw)
            return self._merge(o, e, out, {"queue": int(q.group(1))} if q else {})
        o = self._live("rcu", e)
        if o is not None:
            rf = self._rcu_fields(raw, o, out)
            if rf is not None:
                return self._merge(o, e, out, rf)
        o = self._live("hw", e)
        if o is not None and _EDAC_REPORT.search(raw):
            return self._merge(o, e, out, {})
        o = self._live("oom", e)
        if o is not None:
            r = _OOM_REAPED.search(raw)
            if r is not None and int(r.group(1)) == o.pid:
                return self._merge(o, e, out, {"reaped": True})
        t = _OOM_TASK_IN.search(raw)
        if t is not None:
            self._oom_ctx = ({"cgroup": t.group(1), "limit_cgroup": t.group(2)}, e.time, 0)
        o = self._live("wd", e)
        s = _SPLAT_CPU.match(raw) if o is not None else None
        if o is not None and s is not None:
            self._set(o, out, cpu=int(s.group(1)))
            del self._open["wd"]
        return None

    def _rcu_fields(self, raw: str, o: _Open, out: list[KernelEvent]) -> dict[str, Any] | None:
        m = _RCU_CPU.match(raw)
        if m is not None:
            head = self._head(o, out)
            cpus = list(head.fields.get("cpus") or []) if head is not None else []
            cpu = int(m.group(1))
            if cpu not in cpus:
                cpus.append(cpu)
            self._set(o, out, cpus=cpus[:64])
            return {}
        m = _RCU_BRACES.match(raw)
        if m is not None:
            self._set(o, out, cpus=cpu_list(m.group(1)))
            t = re.search(r"\bt=(\d+) jiffies", raw)
            return {"jiffies": int(t.group(1))} if t else {}
        m = _RCU_DETECTED.search(raw)
        if m is not None:
            return {"detected_by": int(m.group(1)), "jiffies": int(m.group(2))}
        m = _RCU_T.match(raw)
        if m is not None:
            return {"jiffies": int(m.group(1))}
        if _RCU_MISC.match(raw):
            return {}
        return None

    def _join_hw(self, e: KernelEvent, out: list[KernelEvent]) -> KernelEvent | None:
        keys = {k for k, p in _HW_STARTS if p.search(e.raw)}
        o = self._live("hw", e)
        if o is None or keys & o.keys or (keys and "edac_count" in o.keys) \
                or (keys and o.keys and ("apei" in keys) != ("apei" in o.keys)):
            # a new report: a line that starts one repeats, the EDAC decoder's summary ended
            # the one before, or firmware-first (APEI) and kernel-first reports meet
            return None
        o.keys |= keys
        return self._merge(o, e, out)

    def _join_oom(self, e: KernelEvent, out: list[KernelEvent]) -> KernelEvent | None:
        raw = e.raw
        line = ("summary" if _OOM_SUMMARY.search(raw) else "select" if _OOM_SELECT.search(raw)
                else "killed" if _OOM_KILLED.search(raw) else "other")
        o = self._live("oom", e)
        if o is None or line == "other":
            return None
        pid = e.fields.get("pid")
        if line == "killed" and "killed" not in o.keys and ("select" in o.keys or o.pid == pid):
            o.keys.add("killed")
            o.pid = pid if isinstance(pid, int) else o.pid
            if o.index is None:
                # the head is stored already: it takes the victim's pid and comm
                return self._merge(o, e, out, e.fields, override=True)
            # the victim's line is the event (its time, its text); the lines before it
            # (summary, choice) are its parts
            o.lines += e.raw.count("\n") + 1
            o.time, o.n = e.time, 0
            head = out[o.index]
            out[o.index] = dataclasses.replace(head, kind="other", fields={"part_of": e.kind})
            out.append(dataclasses.replace(e, fields={**head.fields, **e.fields,
                                                      "lines": o.lines}))
            o.index = len(out) - 1
            return out[-1]
        if line == "select" and not o.keys & {"select", "killed"} and o.pid == pid:
            o.keys.add("select")
            return self._merge(o, e, out)
        return None

    # -- heads --

    def _start(self, e: KernelEvent, idx: int) -> KernelEvent:
        """`e` as the head of the report it may begin (at `idx` in this batch's output)."""
        kind = e.kind
        if kind == "nic_tx_stall" and e.fields.get("signal") == "tx_unit_hang":
            self._open["hang"] = _Open("hang", idx, kind, e.time, 0)
        elif kind == "hw_error":
            o = self._open["hw"] = _Open("hw", idx, kind, e.time, 0)
            o.keys = {k for k, p in _HW_STARTS if p.search(e.raw)}
            out_fields = {**e.fields, "lines": e.raw.count("\n") + 1}
            e = dataclasses.replace(e, fields=out_fields)
        elif kind == "rcu_stall":
            self._open["rcu"] = _Open("rcu", idx, kind, e.time, 0)
        elif kind == "oom_kill":
            e = self._start_oom(e, idx)
        elif kind in ("hard_lockup", "soft_lockup", "hung_task"):
            o = self._open["lockup"] = _Open("lockup", idx, kind, e.time, 0)
            if e.fields.get("panic"):
                o.keys.add("panic")
        elif kind == "nic_tx_timeout":
            o = self._open["txto"] = _Open("txto", idx, kind, e.time, 0)
            o.where, o.queue = (e.device, e.iface), e.queue
            if e.fields.get("format") == "netdev_watchdog" and "cpu" not in e.fields:
                # the splat's WARNING line just before (older kernels print it first)
                if self._warn is not None and e.time - self._warn[1] <= 0.05 \
                        and self._warn[2] <= 3:
                    e = dataclasses.replace(e, fields={**e.fields, "cpu": self._warn[0]})
                    self._warn = None
                else:
                    self._open["wd"] = _Open("wd", idx, kind, e.time, 0)
        head = self._open.get(_FAMILY.get(kind, ""))
        if head is not None and head.index == idx:
            head.lines = e.raw.count("\n") + 1
        return e

    def _start_oom(self, e: KernelEvent, idx: int) -> KernelEvent:
        raw = e.raw
        o = self._open["oom"] = _Open("oom", idx, e.kind, e.time, 0)
        if _OOM_SUMMARY.search(raw):
            o.keys.add("summary")
        elif _OOM_SELECT.search(raw):
            o.keys.add("select")
        elif _OOM_KILLED.search(raw):
            o.keys.add("killed")
        pid = e.fields.get("pid")
        o.pid = pid if isinstance(pid, int) else None
        fields = dict(e.fields)
        if self._oom_ctx is not None:
            ctx, t, n = self._oom_ctx
            if e.time - t <= _WINDOW_S["oom"] and n <= _WINDOW_N["oom"]:
                for k, v in ctx.items():
                    fields.setdefault(k, v)
            self._oom_ctx = None
        cg = fields.get("cgroup")
        if isinstance(cg, str) and "container_id" not in fields and (cid := container_of(cg)):
            fields["container_id"] = cid
        return dataclasses.replace(e, fields=fields)
