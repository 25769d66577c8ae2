"""Self-contained HTML pages: data embedded safely in <script> tags, every script inline
and allowed by its hash in a Content-Security-Policy, so a name in the data can never run
and the page asks nothing from the network."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from importlib import resources
from typing import Any

# Characters that must not appear raw inside a <script> element: "<" could start
# "</script>" or "<!--" (which switches the HTML tokenizer into its escaped state and eats
# the rest of the page), ">" and "&" for symmetry with the HTML spec's advice, and U+2028/9
# which older JS engines treat as line ends.
_SCRIPT_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                  "\u2028": "\\u2028", "\u2029": "\\u2029"}
_SCRIPT_UNSAFE_RE = re.compile("[<>&\u2028\u2029]")


def script_json(obj: Any) -> str:
    """JSON that is safe as the text of a <script type="application/json"> element and
    parses back to `obj` with JSON.parse."""
    text = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    return _SCRIPT_UNSAFE_RE.sub(lambda m: _SCRIPT_UNSAFE[m.group(0)], text)


def asset(name: str) -> str:
    return (resources.files("corescope.render") / "assets" / name).read_text("utf-8")


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def page(title: str, body: str, scripts: list[str], data: dict[str, Any] | None = None,
         style: str = "", connect_self: bool = False) -> str:
    """One HTML document. `body` is trusted markup (escape anything dynamic yourself),
    `scripts` inline JS (allowed by hash, nothing else runs), `data` JSON blocks by id."""
    blocks = "".join(
        f'<script id="{html.escape(k)}" type="application/json">{script_json(v)}</script>\n'
        for k, v in (data or {}).items())
    code = "".join(f"<script>{s}</script>\n" for s in scripts)
    connect = "'self'" if connect_self else "'none'"
    csp = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
           f"connect-src {connect}; base-uri 'none'; form-action 'none'; "
           f"script-src {' '.join(_sha256(s) for s in scripts) or chr(39) + 'none' + chr(39)}")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{html.escape(title)}</title>\n<style>{style}</style></head><body>\n"
            f"{body}\n{blocks}{code}</body></html>\n")
