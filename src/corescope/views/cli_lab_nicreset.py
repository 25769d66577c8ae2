"""`corescope lab nicreset`: its own module, so `events` does not load the lab's writer."""

from __future__ import annotations

import click

from corescope.lab import nicreset
from corescope.model.common import JSON_SCHEMA
from corescope.render import term
from corescope.views.clitypes import emit_json, fail, json_option, require_lab_consent


@click.command("nicreset")
@click.option("--driver", type=click.Choice(nicreset.DRIVERS), default="ena", show_default=True,
              help="Whose log format to write.")
@click.option("--queue", type=click.IntRange(0, 4095), default=5, show_default=True,
              help="The TX queue the lines name as stalled.")
@click.option("--device", default=None, help="Bus id in the lines [default: per driver].")
@click.option("--iface", default="eth0", show_default=True,
              help="The interface the lines name.")
@click.option("--cpu", type=click.IntRange(min=0), default=0, show_default=True,
              help="CPU named by the NETDEV WATCHDOG line (mlx5_core, virtio_net).")
@click.option("--yes", is_flag=True, help="Consent: this writes lines to the kernel log.")
@json_option("Print the lines and their write times.")
def nicreset_cmd(driver: str, queue: int, device: str | None, iface: str, cpu: int, yes: bool,
                 as_json: bool) -> None:
    """Write a realistic NIC stall-and-reset sequence to /dev/kmsg, each line marked
    `corescope-lab`."""
    require_lab_consent(yes, "lab nicreset would write driver stall and reset lines "
                        "(marked corescope-lab) to the kernel log.")
    dev = device or nicreset.DEFAULT_DEVICE[driver]
    try:
        written = nicreset.write_lines(nicreset.sequence(driver, queue, dev, iface, cpu))
    except OSError as exc:
        fail(f"cannot write /dev/kmsg: {exc.strerror}")
    if as_json:
        emit_json({"schema": JSON_SCHEMA,
                   "lines": [{"level": w.level, "text": w.text,
                              "written_before": round(w.wall_before, 6),
                              "written_after": round(w.wall_after, 6)} for w in written]})
        return
    for w in written:
        term.echo(f"wrote <{w.level}> {w.text}")


def register(cli: click.Group, lab: click.Group) -> None:
    lab.add_command(nicreset_cmd)
