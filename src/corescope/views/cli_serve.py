"""`corescope serve`: the report pages live over the store, with FlameScope's rewind. Read
only; loopback unless another address is written out, which prints a warning."""

from __future__ import annotations

import click

from corescope.views.clitypes import CliContext, fail


@click.command("serve")
@click.option("--listen", default="127.0.0.1:9723", show_default=True, metavar="HOST:PORT",
              help="Address to listen on. Anything but loopback exposes the node's "
                   "process and kernel details to the network: it prints a warning.")
@click.pass_obj
def serve(obj: CliContext, listen: str) -> None:
    """The incident pages over the store in a browser (read-only web UI)."""
    from corescope.render.server import is_loopback, make_server, parse_listen
    from corescope.store.db import DB_NAME
    from corescope.views.report_pages import store_backend

    try:
        host, port = parse_listen(listen)
    except ValueError as exc:
        fail(str(exc))
    if not (obj.store_dir / DB_NAME).exists():
        fail(f"no store at {obj.store_dir}: run `corescope record` (or `corescope analyze "
             "--store DIR`) first, or give --store")
    if not is_loopback(host):
        click.echo(f"corescope: WARNING: serving on {host}, not loopback: anyone who can "
                   "reach this address can read process names, stacks and kernel log lines "
                   "of this node. There is no authentication.", err=True)
    try:
        srv = make_server(host, port, store_backend(obj.store_dir, obj.runner))
    except OSError as exc:
        fail(f"cannot listen on {listen}: {exc.strerror or exc}")
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"corescope: serving {obj.store_dir} on http://{shown}:{srv.server_address[1]}/ "
               "(read-only; Ctrl-C stops)", err=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()


def register(cli: click.Group, lab: click.Group) -> None:
    cli.add_command(serve)
