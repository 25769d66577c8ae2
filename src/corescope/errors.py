"""One error hierarchy. Every error corescope raises on purpose is a CorescopeError of one of
four kinds; the CLI maps each to its message and exit code in one place (views/cli.py), so a
new error needs no handler of its own. Classes that callers already catch by their builtin base
(ValueError, OSError, ...) keep that base beside the kind."""

from __future__ import annotations


class CorescopeError(Exception):
    """An error with a message meant for the user."""

    kind = "error"
    exit_code = 2  # usage or environment error, as for click's own usage errors


class InvalidInput(CorescopeError):
    """A file, an argument or a request that cannot be read as what it claims to be."""

    kind = "input"


class StoreFault(CorescopeError):
    """The store cannot be opened, read or written."""

    kind = "store"


class MissingTool(CorescopeError):
    """An external tool (perf, ethtool, ...) is absent or failed."""

    kind = "tool"


class NotPermitted(CorescopeError):
    """The operation needs a privilege or consent this run does not have."""

    kind = "permission"
