"""Evidence chosen once: what a command was given (a store directory, this node as it is now,
a saved kernel log, a store's profile ring, saved perf script files) turned into the Evidence
an investigation reads; and every store a command opens, opened here. Failures are
CorescopeErrors (a store that cannot be opened: StoreError, of the store kind), said once by
the CLI; what was left out comes back as status lines and warnings, never printed here."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from corescope.errors import InvalidInput, MissingTool
from corescope.model.common import Diagnostic, SensorStatus

if TYPE_CHECKING:  # a saved log's evidence loads neither the store (sqlite3) nor numpy
    from corescope.evidence.base import Evidence
    from corescope.evidence.memory import MemoryEvidence
    from corescope.evidence.profiles import Progress, RingProfiles
    from corescope.evidence.store import StoreEvidence
    from corescope.rootfs import Root
    from corescope.runner import Runner
    from corescope.store.db import Store


def open_store(store_dir: Path, *, create: bool = False) -> Store:
    """The store at `store_dir`: one that must be there (a reader's), or with `create` one
    made there if there is none (an analysis kept with --store). StoreError says why not."""
    from corescope.store.db import Store

    return Store.open(store_dir, create=create)


def recording_store(store_dir: Path, log: Callable[[str], None]) -> Store:
    """The store `record` writes: a corrupt one is moved aside (kept, 0600) and a fresh one
    started, said through `log`, so recording goes on. StoreError when neither can be."""
    from corescope.store.db import Store

    return Store.open_or_replace(store_dir, log)


@contextmanager
def scratch_store(prefix: str) -> Iterator[Store]:
    """A new store in a private temporary directory, for input imported only to be read
    (analyze without --store, flame --perf-script): removed with its directory afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        store = open_store(tmp / "store", create=True)
        try:
            yield store
        finally:
            store.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def existing_store(store_dir: Path) -> Store | None:
    """The store if one was recorded or analyzed there, else None; a store that is there but
    cannot be opened raises StoreError."""
    from corescope.store.db import DB_NAME

    if not (store_dir / DB_NAME).exists():
        return None
    return open_store(store_dir)


def ring_profiles(store_dir: Path, runner: Runner) -> RingProfiles:
    """The profile ring of the store (recorded or analyzed) for the flame views, which need
    only the ring: its other records load when asked for (RingProfiles.evidence). No store
    there, or one that cannot be opened, raises StoreError."""
    from corescope.evidence.profiles import RingProfiles

    return RingProfiles(open_store(store_dir), runner)


# what a flame query reads the ring with (numpy, the chunks' columns), and what imports saved
# perf script input into a temporary ring: the CLI loads them once the options say which
# (views.clitypes.load_modules), as start-up loads its own
RING_QUERY_MODULES = ("corescope.evidence.ring_profile",)
PERF_INPUT_MODULES = ("corescope.ingest.perf_write", "corescope.sources.perf_import",
                      "corescope.store.db")


def profile_modules(inputs: tuple[str, ...]) -> tuple[str, ...]:
    """The modules `profile_input` will need for these inputs."""
    return RING_QUERY_MODULES + (PERF_INPUT_MODULES if inputs else ())


def profile_input(store_dir: Path, runner: Runner, inputs: tuple[str, ...],
                  boot_time: float | None, diags: list[Diagnostic],
                  progress: Progress | None) -> RingProfiles:
    """The profile ring `flame` and `heatmap` read: the store's, or with `inputs` (saved
    perf script or folded files, folders of them, - for stdin) those files imported into a
    temporary ring, which the same query then reads. The query's notes go to `diags` for
    the store's ring; for the inputs, only the import's (they name the user's files).
    InvalidInput when the inputs hold no samples."""
    if not inputs:
        src = ring_profiles(store_dir, runner)
        src.diags, src.progress = diags, progress
        return src
    return _perf_input_ring(runner, inputs, boot_time, diags, progress)


def _perf_input_ring(runner: Runner, inputs: tuple[str, ...], boot_time: float | None,
                     diags: list[Diagnostic], progress: Progress | None) -> RingProfiles:
    from corescope.evidence.perf_fold import no_samples
    from corescope.evidence.profiles import RingProfiles
    from corescope.ingest.perf_write import import_input  # the writer: offline input only
    from corescope.sources import perf_import

    scratch = ExitStack()  # the temporary ring lives until the flame view closes it
    src = RingProfiles(scratch.enter_context(scratch_store("corescope-flame-")), runner,
                       offline=True, progress=progress, on_close=scratch.close)
    try:
        skipped = []
        for path in perf_import.expand(inputs):
            got = import_input(src.store, path, boot_time=boot_time, diags=diags)
            if got.skipped:
                skipped.append(f"{got.name}: {got.skipped}")
                diags.append(Diagnostic(got.name, f"skipped: {got.skipped}"))
        chunks = src.all_chunks()
        if not chunks:
            raise no_samples(skipped)
    except BaseException:
        src.close()
        raise
    timed = {c.anchored for c in chunks if c.format in ("text", "columns") and not c.untimed}
    if len(timed) > 1:
        diags.append(Diagnostic("--perf-script", "inputs mix wall-clock and boot-relative "
                                "times: give --boot-time to put them on one clock"))
    return src


def ring_events(store_dir: Path, runner: Runner, src: RingProfiles) -> Evidence:
    """The Evidence whose kernel events a flame view's --event ID names: the ring's own
    store, or for saved perf script input the store at `store_dir`."""
    if not src.offline:
        return src.evidence()
    return ring_profiles(store_dir, runner).evidence()


def store_evidence(store_dir: Path, runner: Runner) -> StoreEvidence:
    """The evidence of a store that must be there (serve's pages, the exporter's diagnosis
    thread: each caller its own connection); StoreError when it cannot be opened."""
    from corescope.evidence.store import StoreEvidence

    return StoreEvidence(open_store(store_dir), runner)


MAX_LOG_BYTES = 128 * 1024 * 1024  # a saved log beyond this is cut with `tail -c` first


@dataclass
class LogEvidence:
    """A saved kernel log's classified events, what could not be read in it, and how its
    times were set."""

    evidence: MemoryEvidence
    diagnostics: list[Diagnostic]
    clock: str


def log_evidence(path: Path) -> LogEvidence:
    """The evidence of one saved `dmesg` log or `journalctl -k -o json` export."""
    # the log's parser and classifier load for a saved log only: the store holds classified
    # events
    from corescope.analysis.classify import classify_saved_log
    from corescope.evidence.memory import MemoryEvidence
    from corescope.rootfs import read_capped
    from corescope.sources.artifacts.content import as_utf8
    from corescope.sources.kmsg_clock import anchor_clock
    from corescope.sources.kmsg_saved import parse_saved_log

    try:
        # capped, and no devices: `/dev/zero` is an error, not a MemoryError; a pipe
        # (`--file <(dmesg)`) is read to its end
        data = read_capped(path, MAX_LOG_BYTES, allow_pipe=True)
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from exc
    records, diags = parse_saved_log(as_utf8(data), str(path))  # UTF-16, a BOM: as analyze
    events, clock = classify_saved_log(records, anchor_clock())
    return LogEvidence(MemoryEvidence(name=str(path), kernel_events=events), diags, clock)


@dataclass
class NodeEvidence:
    """This node's evidence, the store's own status line when it could not take part, and
    warnings for the user (a store that is there but unreadable)."""

    evidence: Evidence
    statuses: list[SensorStatus] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def node_evidence(store_dir: Path, root: Root, runner: Runner, *, sample_seconds: float = 0.0,
                  kernel_ring: bool = False, history_s: float = 24 * 3600.0,
                  now: bool = True) -> NodeEvidence:
    """The store merged with a live read of the node. An analyzed store describes another
    machine, and a window that ends in the past (`now` False) is not about the node as it is
    today: then the live node is left out."""
    # the live node's readers load only for the commands that look at it
    from corescope.evidence.live import LiveEvidence
    from corescope.evidence.merged import MergedEvidence
    from corescope.evidence.store import StoreEvidence
    from corescope.store.db import StoreError
    from corescope.store.meta import is_analyzed

    store: Store | None = None
    unreadable: StoreError | None = None
    try:
        store = existing_store(store_dir)
    except StoreError as exc:
        unreadable = exc
    if store is not None and (is_analyzed(store) or not now):
        return NodeEvidence(StoreEvidence(store, runner))
    live = LiveEvidence(root, runner, history_s=history_s)
    if sample_seconds:
        try:
            live.sample_cores(sample_seconds)
        except (OSError, ValueError) as exc:
            if store is not None:
                store.close()
            raise MissingTool(f"cannot sample per-core CPU time: {exc}") from exc
    if kernel_ring:
        live.read_kernel_ring(_recorded_skew(store))
    live.read_cgroups()
    live.read_restarts()
    if store is not None:
        return NodeEvidence(MergedEvidence(StoreEvidence(store, runner), live))
    if unreadable is not None:
        # said as a warning too: a command that shows only some sensor lines must not hide it
        return NodeEvidence(live, [SensorStatus("store", False, f"{unreadable}; live read only")],
                            [f"{unreadable}; reading the live node only"])
    return NodeEvidence(live, [SensorStatus(
        "store", False, f"no store at {store_dir} (start `corescope record` to keep history); "
        "only the live node was examined")])


def _recorded_skew(store: Store | None) -> float | None:
    """The kernel log clock's skew a recorder learned this boot (so lines only the ring still
    holds sit where the recorder would have put them)."""
    if store is None:
        return None
    from corescope.sources.clock import boot_wall_time
    from corescope.store import events as store_events

    return store_events.latest_skew(store, boot_wall_time())
