"""`corescope lab hotcore`: pin a burner to one core and burn system time."""

from __future__ import annotations

import click

from corescope.lab.hotcore import BURNER_NAME, allowed_cpus, burn
from corescope.views.clitypes import DURATION, fail, require_lab_consent


@click.command()
@click.option("--cpu", type=int, required=True, help="The core to saturate.")
@click.option("--seconds", type=DURATION, default="4", show_default=True,
              help="How long to burn.")
@click.option("--yes", is_flag=True, help="Consent: this pins one core at ~100% system time.")
def hotcore(cpu: int, seconds: float, yes: bool) -> None:
    """Burn system time on one core (a tight loop of 1 MiB /dev/zero reads), like kubelet's
    memcg walk did on CPU 39."""
    require_lab_consent(yes, f"lab hotcore would pin a process ({BURNER_NAME}) to cpu{cpu} and "
                        f"keep it at ~100% system time for {seconds:g}s.")
    if cpu not in allowed_cpus():
        fail(f"cpu{cpu} is not online or not allowed here (allowed: "
             f"{', '.join(map(str, sorted(allowed_cpus())))})")
    if not 0 < seconds <= 3600:
        fail("--seconds must be between 0 and 3600")
    click.echo(f"corescope lab hotcore: burning cpu{cpu} for {seconds:g}s as {BURNER_NAME}",
               err=True)
    reads = burn(cpu, seconds)
    click.echo(f"corescope lab hotcore: done ({reads} MiB zero-filled by the kernel)", err=True)


def register(cli: click.Group, lab: click.Group) -> None:
    lab.add_command(hotcore)
