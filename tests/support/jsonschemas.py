"""Validate a command's JSON output against its published schema (docs/json/v1/NAME.schema.json):
shared by the integration test of every command and the live tests of the lab commands."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "json" / "v1"


@cache
def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def errors(name: str, data: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
            for e in validator(name).iter_errors(data)]


def check(name: str, data: Any) -> None:
    errs = errors(name, data)
    assert not errs, f"{name} --json does not match docs/json/v1/{name}.schema.json:\n" + \
        "\n".join(errs[:20])
