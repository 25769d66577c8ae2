"""Saved incident artifacts: content-based kind detection and one pure parser per format
family. `corescope.ingest` reads files, directories and bundles through this package and
writes what it returns into the store, so that every command works on it as on a recording.

Kinds (`KIND_MODULES`, in detection order; the first module whose `sniff` claims a file wins):

| module | kinds |
| --- | --- |
| `native` | `corescope_native`, `corescope_manifest` (a `corescope capture` bundle) |
| `sysstat` | `mpstat_json` (sysstat 11 and 12), `sadf_json`, `sadf_csv`, `mpstat_text` (their |
| | SCPU tables: NET_RX/NET_TX per CPU, written as `softirqs_loop` is) |
| `sadf_forms` | `sadf_ppc` (`sadf -p`), `sadf_xml` (`sadf -x`), read into sysstat's samples |
| `procstat_loop` | `proc_stat` (one `/proc/stat` or a `date; cat /proc/stat` loop) |
| `interrupts_loop` | `proc_interrupts` (one `/proc/interrupts` or a dated loop) |
| `softirqs_loop` | `softirqs_loop` (a `date; cat /proc/softirqs` loop: NET_RX/NET_TX per CPU) |
| `census_loop` | `census_loop` (v1 or v2 loops), `proc_cgroups`, `cgroup_stat` |
| `units` | `systemctl_show`, `journal_json`/`_export`/`_verbose`, `crictl_json`/`_table`, |
| | `docker_ps`/`_inspect` |
| `perf_profiles` | `perf_script`, `folded`: into the profile ring (`ingest.perf_write`) |
| `perf_detect` | `perf_script`, `folded` (recognition only, when `perf_profiles` is absent) |
| `anchors` | `uptime_since` (`uptime -s`), `uptime_pair` (`date; cat /proc/uptime`): boot times |
| `kernel_log` | `kernel_log` (dmesg plain/-r/-x/-T/iso, kern.log, a /dev/kmsg dump) |
| `pressure_loops` | `psi_loop`, `schedstat_loop`, `vmstat_loop` (checked before `procstat_loop`) |

Plug-in contract (how a new format joins)
-----------------------------------------
1. A module under this package (or anywhere importable) defines:

   - `KINDS: tuple[str, ...]`: the kinds it parses.
   - `sniff(head: str) -> str | None`: `head` is the first `SNIFF_BYTES` of the decompressed
     content, decoded as UTF-8 with replacement. Return one of `KINDS` when the content is
     yours, else None. Decide from content only, never from the file name. Cheap: it runs on
     every file.
   - `parse(data: bytes, kind: str, source: str) -> Parsed`: the whole decompressed content
     (at most the importer's size cap). Pure and total: never raise on any content; report what
     you could not read with `Parsed.diag(...)`. Put model records in the `Parsed` lists, or
     your own payload in `Parsed.extra` with `extra_records`, `extra_span` (wall clock, if known
     before anchoring) and `extra_cpus` filled in for the import report. Boot times your
     format states go in `Parsed.boot_times`.

2. Its module name goes into `KIND_MODULES` before the module whose `sniff` would otherwise
   claim the same content (a plug-in may import and reuse that module's `sniff`).

3. If it uses `Parsed.extra`, a writer is registered in `corescope.ingest.write.EXTRA_WRITERS`
   as `kind -> "module:function"`, with signature
   `write(parsed: Parsed, store: Store, ctx: WriteContext) -> Written`. `ctx.boot_time` is the
   boot time settled for the whole import (None when unanchored), to place boot-relative
   clocks. The writer goes through the store's own APIs only.
"""

from __future__ import annotations

KIND_MODULES: tuple[str, ...] = (
    "corescope.sources.artifacts.native",
    # before procstat_loop: schedstat's `cpuN` lines would otherwise pass for /proc/stat's
    "corescope.sources.artifacts.pressure_loops",
    "corescope.sources.artifacts.sysstat",
    "corescope.sources.artifacts.sadf_forms",
    "corescope.sources.artifacts.census_loop",
    "corescope.sources.artifacts.softirqs_loop",
    "corescope.sources.artifacts.interrupts_loop",
    "corescope.sources.artifacts.procstat_loop",
    "corescope.sources.artifacts.units",
    "corescope.sources.artifacts.perf_profiles",
    "corescope.sources.artifacts.perf_detect",
    "corescope.sources.artifacts.anchors",
    "corescope.sources.artifacts.kernel_log",
)

# How much decompressed content a sniffer sees.
SNIFF_BYTES = 64 * 1024
