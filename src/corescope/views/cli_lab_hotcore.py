"""`corescope lab hotcore`: pin a burner to one core and burn system time."""

from __future__ import annotations

import click

from corescope.lab.hotcore import BURNER_NAME, WALKERS, allowed_cpus, burn
from corescope.views.clitypes import POSITIVE_DURATION, fail, require_lab_consent


@click.command()
@click.option("--cpu", type=int, required=True, help="The core to saturate.")
@click.option("--seconds", type=POSITIVE_DURATION, default="4", show_default=True,
              help="How long to burn.")
@click.option("--walker", type=click.Choice(WALKERS), default="zero", show_default=True,
              help="zero: 1 MiB /dev/zero reads; memcg: read corescope-lab's memory.stat in a "
              "loop, the incident's memcg stat walk (over the lab's dying memcgs).")
@click.option("--yes", is_flag=True, help="Consent: this pins one core at ~100% system time.")
def hotcore(cpu: int, seconds: float, walker: str, yes: bool) -> None:
    """Burn system time on one core, like kubelet's memcg walk did on CPU 39: a tight loop of
    /dev/zero reads, or (--walker memcg) of the lab parent's memory.stat."""
    require_lab_consent(yes, f"lab hotcore would pin a process ({BURNER_NAME}) to cpu{cpu} and "
                        f"keep it at ~100% system time for {seconds:g}s.")
    if cpu not in allowed_cpus():
        fail(f"cpu{cpu} is not online or not allowed here (allowed: "
             f"{', '.join(map(str, sorted(allowed_cpus())))})")
    if not 0 < seconds <= 3600:
        fail("--seconds must be between 0 and 3600")
    stat_file = None
    if walker == "memcg":
        from corescope.lab.zombies import LabError, lab_parent

        try:
            stat_file = str(lab_parent() / "memory.stat")
        except (LabError, OSError) as exc:
            fail(f"lab hotcore --walker memcg: {exc}")
    def started(pid: int) -> None:
        click.echo(f"corescope lab hotcore: burning cpu{cpu} for {seconds:g}s as {BURNER_NAME} "
                   f"(pid {pid})" + (f", reading {stat_file}" if stat_file else ""), err=True)

    reads = burn(cpu, seconds, stat_file, started)
    what = f"{reads} reads of {stat_file}" if stat_file else \
        f"{reads} MiB zero-filled by the kernel"
    click.echo(f"corescope lab hotcore: done ({what})", err=True)


def register(cli: click.Group, lab: click.Group) -> None:
    lab.add_command(hotcore)
