"""Saved `perf script` (or folded) input read whole straight into a flame Profile, folded as
it is parsed: what `flame --perf-script FILE --format folded` with no window and no filter
needs. The general road (evidence.open.profile_input) imports the input into a temporary ring
first, so that windows, filters, --event and --diff work on it; for the whole input that
costs a column chunk, SQLite and numpy for the same answer. Imports no numpy and no store.

The answer is the general road's: one perf event drawn (the one named, or the first seen;
folded stacks always), the same parser, the same Profile rules (tests hold the two to it).
Where the first event seen could depend on the order the ring keeps several inputs in, the
caller is told to take the general road instead (None), unless the input cannot be read
twice (stdin)."""

from __future__ import annotations

from dataclasses import dataclass, field

from corescope.analysis.flame import Profile
from corescope.errors import InvalidInput
from corescope.evidence.event_pick import EventPick
from corescope.model.common import Diagnostic
from corescope.sources import folded, perf_import, perf_script
from corescope.sources.folded import EVENT as FOLDED_EVENT


@dataclass
class Folded:
    """The whole input's profile, the event drawn and every event present."""

    profile: Profile
    event: str | None
    events_present: dict[str, int] = field(default_factory=dict)


def no_samples(skipped: list[str]) -> InvalidInput:
    """The error of --perf-script input that holds no sample, with why inputs were skipped."""
    return InvalidInput("no samples in the --perf-script input" +
                        (f" ({'; '.join(skipped[:3])})" if skipped else ""))


def fold_inputs(inputs: tuple[str, ...], diags: list[Diagnostic], *, include_idle: bool,
                weight: str, by_thread: bool) -> Folded | None:
    """The Profile of every sample of `inputs` (files, folders of them, - for stdin), as
    `flame` with no window draws it; None where the general road must answer instead (inputs
    of several perf events in several files, whose first event is the ring's to say).
    Raises InvalidInput when they hold no samples."""
    prof = Profile(include_idle=include_idle, weight=weight, by_thread=by_thread)
    pick = EventPick(None)
    skipped: list[str] = []
    paths = perf_import.expand(inputs)
    for path in paths:
        name = perf_import.input_name(path)
        try:
            opened = perf_import.open_input(path, name)
        except perf_import.InputError as exc:
            skipped.append(f"{name}: {exc}")
            diags.append(Diagnostic(name, f"skipped: {exc}"))
            continue
        before = sum(pick.present.values())
        if opened.kind == "folded":
            for s in folded.parse_blocks(opened.blocks, diags, source=name):
                if pick.keep(s):  # (always: folded stacks are drawn)
                    prof.add(s)
        else:
            for b in perf_script.parse_batches(opened.blocks, diags, source=name):
                prof.add_batch(pick.keep_batch(b))
        diags.extend(opened.read_diags)
        if sum(pick.present.values()) == before:
            skipped.append(f"{name}: no samples")
            diags.append(Diagnostic(name, "skipped: no samples"))
    if not pick.present:
        raise no_samples(skipped)
    perf_events = [e for e in pick.present if e != FOLDED_EVENT]
    if len(perf_events) > 1 and len(paths) > 1 and perf_import.STDIN not in map(str, paths):
        return None
    return Folded(prof, pick.chosen, dict(pick.present))
