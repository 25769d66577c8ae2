"""Exit 0 when corescope is already installed editable from this checkout, as pyproject.toml
declares it now (version, requirements, commands) and with every requirement satisfied; 1
otherwise. setup.sh then skips `pip install -e`, which rebuilds the editable wheel each time
(~20 s of every `make test`). Any doubt means 1: the install runs, as it always did.

Usage: python3 scripts/installed.py [EXTRA]
"""

from __future__ import annotations

import importlib.metadata as md
import json
import sys
import tomllib
from pathlib import Path

try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # pip carries its own copy
    from pip._vendor.packaging.requirements import Requirement  # type: ignore[no-redef]
    from pip._vendor.packaging.utils import canonicalize_name  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parent.parent


def _key(req: Requirement) -> tuple[str, str, str, str]:
    return (canonicalize_name(req.name), str(req.specifier), ",".join(sorted(req.extras)),
            str(req.marker or ""))


def declared(project: dict) -> set[tuple[str, str, str, str]]:
    """The requirements pyproject declares, as the installed metadata writes them (an
    optional group's carry `extra == "NAME"`)."""
    reqs = [Requirement(r) for r in project.get("dependencies", [])]
    for group, items in project.get("optional-dependencies", {}).items():
        reqs += [Requirement(f'{r}; extra == "{group}"') for r in items]
    return {_key(r) for r in reqs}


def _editable_here(dist: md.Distribution) -> bool:
    url = json.loads(dist.read_text("direct_url.json") or "{}")
    return bool(url.get("dir_info", {}).get("editable")) and url.get("url") == REPO.as_uri()


def up_to_date(extra: str | None, pyproject: str | None = None) -> bool:
    """Whether the installed corescope is this checkout's, as `pyproject` (the checkout's
    pyproject.toml text by default) declares it."""
    text = (REPO / "pyproject.toml").read_text() if pyproject is None else pyproject
    project = tomllib.loads(text)["project"]
    # the installed one (with pip's direct_url.json): the build's src/*.egg-info, found
    # first where src is on sys.path, is not an install
    dist = next((d for d in md.distributions(name=project["name"]) if _editable_here(d)), None)
    if dist is None:
        return False
    if dist.version != project["version"]:
        return False
    if {_key(Requirement(r)) for r in dist.requires or []} != declared(project):
        return False
    scripts = {e.name: e.value for e in dist.entry_points if e.group == "console_scripts"}
    if scripts != project.get("scripts", {}):
        return False
    env = {"extra": extra or ""}
    for r in map(Requirement, dist.requires or []):
        if r.marker is not None and not r.marker.evaluate(env):
            continue
        try:
            have = md.version(r.name)
        except md.PackageNotFoundError:
            return False
        if not r.specifier.contains(have, prereleases=True):
            return False
    return True


if __name__ == "__main__":
    try:
        ok = up_to_date(sys.argv[1] if len(sys.argv) > 1 else None)
    except Exception:  # any doubt: install
        ok = False
    sys.exit(0 if ok else 1)
