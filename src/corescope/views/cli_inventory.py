"""`corescope inventory`: this node's units, kernel, image, cgroup layout, NICs and IRQ
placement, as one JSON document per node for `corescope fleet diff`."""

from __future__ import annotations

import click

from corescope.model.inventory import Inventory
from corescope.model.text import valid_json
from corescope.render.term import clean
from corescope.views.clitypes import CliContext, emit_json, fail, json_option


def parse_labels(items: tuple[str, ...]) -> dict[str, str]:
    labels: dict[str, str] = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k:
            fail(f"--label wants KEY=VALUE, got {item!r}")
        labels[k] = v
    return labels


def render_text(inv: Inventory) -> str:
    """One line per fact, each cleaned as a whole (term.clean): os-release, NIC, driver and
    unit names are the node's text, and a control character or newline in one must not reach
    the terminal or forge a line."""
    lines = [f"node {inv.node}" + (" (" + ", ".join(f"{k}={v}" for k, v in
                                                   sorted(inv.labels.items())) + ")"
                                   if inv.labels else ""),
             f"  kernel        {inv.kernel_release or '?'}",
             f"  image         {inv.image_id or '?'}"
             + (f" (BOOT_IMAGE {inv.boot_image})" if inv.boot_image else ""),
             f"  boot id       {inv.boot_id or '?'}",
             f"  cgroups       {inv.cgroup_layout or '?'} (memory on {inv.cgroup_memory or '-'})",
             f"  irq policy    {inv.irq_policy or '?'}"]
    for n in inv.nics:
        lines.append(f"  nic {n.iface:<9} {n.driver or '?'} {n.version or ''}"
                     + (f" firmware {n.firmware}" if n.firmware else ""))
    if inv.units_measured:
        lines.append(f"  units         {len(inv.units_enabled)} enabled, "
                     f"failed: {', '.join(inv.units_failed) or 'none'}, "
                     f"restarting: {', '.join(inv.units_restarting) or 'none'}")
    lines += [f"  note: {n}" for n in inv.notes]
    return "\n".join(clean(line) for line in lines)


@click.command()
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE",
              help="Attach a label (e.g. zone=us-east-1a) for `fleet diff` to group by.")
@json_option()
@click.pass_obj
def inventory(obj: CliContext, labels: tuple[str, ...], as_json: bool) -> None:
    """What should be the same on every node: units, kernel, image, cgroups, NICs, IRQs."""
    from corescope.sources.inventory import collect

    inv = collect(obj.root, obj.runner, parse_labels(labels))
    if as_json:
        emit_json(valid_json(inv.to_json()))  # a name not UTF-8: escaped, valid Unicode
    else:
        click.echo(render_text(inv))


def register(cli: click.Group, lab: click.Group) -> None:
    cli.add_command(inventory)
