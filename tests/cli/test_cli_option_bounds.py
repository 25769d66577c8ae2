"""Numbers and durations where zero or a negative means nothing are usage errors (exit 2,
naming the option), checked before any store is opened; and every duration option that
still accepts zero says here why zero means something."""

from __future__ import annotations

import click
import pytest

from corescope.views.cli import COMMAND_MODULES, cli, lab, load_module
from corescope.views.clitypes import TimeValue
from support import FIXTURES, run_cli

LOG = str(FIXTURES / "events" / "dmesg_incidents.txt")

# (command line, what the message must name). The store does not exist: the option must be
# refused first, not reported as "no store".
REFUSED = [
    (("report", "--window", "0"), "--window"),
    (("report", "--window", "0s"), "--window"),
    (("report", "--window", "-5s"), "--window"),
    (("report", "--event", "3", "--window", "0"), "--window"),
    (("zombies", "--window", "0"), "--window"),
    (("flame", "--pid", "-1"), "--pid"),
    (("heatmap", "--pid", "-7"), "--pid"),
    (("flame", "--event", "1", "--before", "0", "--after", "0"), "--before"),
    (("capture", "--event", "1", "--before", "0", "--after", "0", "-o", "/nonexistent/x.tar"),
     "--before"),
    (("lab", "nicreset", "--cpu", "-1"), "--cpu"),  # refused before consent: nothing written
    (("fleet", "diff", LOG, "--top", "-3"), "--top"),
    # refused by the command itself (see ZERO_MEANS), still before the store
    (("record", "--interval", "0"), "--interval"),
    (("record", "--census-interval", "0"), "--census-interval"),
    (("record", "--profile-chunk", "0"), "--profile-chunk"),
    (("doctor", "--seconds", "0"), "--seconds"),
]


@pytest.mark.parametrize(("args", "names"), REFUSED, ids=[" ".join(a) for a, _ in REFUSED])
def test_meaningless_values_are_usage_errors(tmp_path, args, names) -> None:
    proc = run_cli("--store", str(tmp_path / "none"), *args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert names in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "no store" not in proc.stderr, proc.stderr


# Duration options that accept zero, and what zero means for each.
ZERO_MEANS = {
    ("capture", "--before"): "the window starts at the event (--after gives it a length)",
    ("capture", "--after"): "the window ends at the event",
    ("flame", "--before"): "the window starts at --at (--after gives it a length)",
    ("flame", "--after"): "the window ends at --at",
    ("flame", "--baseline-gap"): "the baseline ends where the window begins",
    ("heatmap", "--before"): "as flame",
    ("heatmap", "--after"): "as flame",
    ("cores", "--min-duration"): "an episode of any length",
    ("doctor", "--seconds"): "refused in the command: fewer than 1 s of live sampling",
    ("record", "--interval"): "refused in the command: 0.1 s to 60 s",
    ("record", "--census-interval"): "refused in the command: must be positive",
    ("record", "--netdev-interval"): "refused in the command: must be positive",
    ("record", "--pressure-interval"): "refused in the command: must be positive",
    ("record", "--profile-chunk"): "refused in the command: 5 s to 1 h",
    ("record", "--metrics-max-window"): "refused in the command: 1 s to 1 h",
}


def _commands() -> list[tuple[str, click.Command]]:
    for _name, module, _help in COMMAND_MODULES:
        load_module(module)
    out: list[tuple[str, click.Command]] = []
    for prefix, group in (("", cli), ("lab ", lab)):
        for name, cmd in group.commands.items():
            if isinstance(cmd, click.Group) and cmd is not lab:
                out += [(f"{prefix}{name} {n}", c) for n, c in cmd.commands.items()]
            elif cmd is not lab:
                out.append((prefix + name, cmd))
    return out


def test_every_duration_that_accepts_zero_is_listed_with_its_meaning() -> None:
    accepting = set()
    for name, cmd in _commands():
        for p in cmd.params:
            t = p.type
            if isinstance(t, TimeValue) and not t._instant and not t._positive:
                accepting.add((name, p.opts[0]))
    assert accepting == set(ZERO_MEANS), (sorted(accepting - set(ZERO_MEANS)),
                                          sorted(set(ZERO_MEANS) - accepting))


@pytest.mark.parametrize("args", [("report", "--window", "0"), ("zombies", "--window", "0")])
def test_zero_is_refused_in_the_options_words(tmp_path, args) -> None:
    err = run_cli("--store", str(tmp_path / "none"), *args).stderr
    assert "must be longer than zero" in err, err
