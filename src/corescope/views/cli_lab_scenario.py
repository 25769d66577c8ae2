"""`corescope lab scenario`: write a generated incident hour (files only; no root needed)."""

from __future__ import annotations

from pathlib import Path

import click

from corescope.lab.scenarios import KINDS, generate
from corescope.lab.scenarios.plan import ALSO, OMITTABLE
from corescope.views.clitypes import (
    POSITIVE_DURATION,
    FiniteFloatRange,
    emit_json,
    fail,
    json_option,
)


@click.command()
@click.option("--kind", type=click.Choice(KINDS), required=True,
              help="Which story the hour tells.")
@click.option("--cpus", type=click.IntRange(2, 1024), default=96, show_default=True,
              help="CPUs of the generated node.")
@click.option("--seed", type=int, default=1, show_default=True,
              help="Same seed, same bytes; other seeds vary cores, names, formats, noise.")
@click.option("--duration", type=POSITIVE_DURATION, default="1h", show_default=True,
              help="Length of the record (1 min to 6 h).")
@click.option("--hot-cpu", type=int, default=None, help="The saturated core (stories with one).")
@click.option("--unit", default=None, help="Name of the crash-looping systemd unit.")
@click.option("--container", default=None, help="Name of the container in the story.")
@click.option("--noise", type=FiniteFloatRange(0, 1), default=None,
              help="Jitter and kernel-log chatter, 0 to 1 (default: from the seed).")
@click.option("--dmesg-lines", type=click.IntRange(0, 10_000_000), default=None,
              help="Total kernel log lines (default: from the seed).")
@click.option("--walker", default=None,
              help="The process whose memory.stat reads walk the memcgs (default kubelet).")
@click.option("--census-format", type=click.Choice(("v1", "v2")), default=None,
              help="The census loop of a cgroup v1 (default) or v2 node.")
@click.option("--omit", multiple=True, type=click.Choice(sorted(OMITTABLE)),
              help="Evidence not saved (repeatable).")
@click.option("--also", multiple=True, type=click.Choice(sorted(ALSO)),
              help="A second story on top of the first (repeatable).")
@click.option("--edge", type=click.Choice(("start", "end")), default=None,
              help="Move one incident to the window's first or last seconds.")
@click.option("-o", "--output", "output", type=click.Path(file_okay=False, path_type=Path),
              required=True, help="Directory to write (created; must be empty).")
@json_option("Print expected.json.")
def scenario(kind: str, cpus: int, seed: int, duration: float, hot_cpu: int | None,
             unit: str | None, container: str | None, noise: float | None,
             dmesg_lines: int | None, walker: str | None, census_format: str | None,
             omit: tuple[str, ...], also: tuple[str, ...], edge: str | None, output: Path,
             as_json: bool) -> None:
    """Write one generated hour of a node's saved evidence (mpstat JSON, dmesg, perf script
    chunks, the census loop, /proc snapshots, systemctl/crictl, pressure loops) with its
    ground truth in expected.json. Deterministic: the same options give the same bytes."""
    try:
        exp = generate(kind, output, cpus=cpus, seed=seed, duration_s=int(duration),
                       hot_cpu=hot_cpu, unit=unit, container=container, noise=noise,
                       dmesg_lines=dmesg_lines, walker=walker, census_format=census_format,
                       omit=omit, also=also, edge=edge)
    except (ValueError, FileExistsError) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}")
    if as_json:
        emit_json(exp)
        return
    click.echo(f"corescope lab scenario: {kind} (seed {seed}, {cpus} CPUs) → {output}: "
               f"{len(exp['files'])} files; expected root cause {exp['root_cause']}"
               + (f", culprit {exp['culprit']}" if exp["culprit"] else "")
               + (f", hot cpu {exp['hot_cpu']}" if exp["hot_cpu"] is not None else ""))


def register(cli: click.Group, lab: click.Group) -> None:
    lab.add_command(scenario)
