"""`flame --format speedscope`: valid against speedscope's published file-format schema, one
sampled profile per CPU, stacks root first, weights adding up to the busy samples."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from support import FIXTURES, run_cli

CAPTURE = FIXTURES / "profiles" / "burner_idle.txt"

# Transcribed from https://www.speedscope.app/file-format-schema.json (JSON Schema
# draft-06, generated from speedscope's src/lib/file-format-spec.ts): the file, frame,
# sampled and evented profile definitions, with their required keys and enums.
_UNIT = {"enum": ["bytes", "microseconds", "milliseconds", "nanoseconds", "none", "seconds"],
         "type": "string"}
_EVENT = {"type": "object", "required": ["at", "frame", "type"],
          "properties": {"type": {"type": "string", "enum": ["O", "C"]},
                         "frame": {"type": "number"}, "at": {"type": "number"}}}
SPEEDSCOPE_SCHEMA = {
    "$schema": "http://json-schema.org/draft-06/schema#",
    "definitions": {
        "Frame": {"type": "object", "required": ["name"],
                  "properties": {"name": {"type": "string"}, "file": {"type": "string"},
                                 "line": {"type": "number"}, "col": {"type": "number"}}},
        "SampledProfile": {
            "type": "object",
            "required": ["endValue", "name", "samples", "startValue", "type", "unit",
                         "weights"],
            "properties": {
                "type": {"type": "string", "enum": ["sampled"]},
                "name": {"type": "string"}, "unit": _UNIT,
                "startValue": {"type": "number"}, "endValue": {"type": "number"},
                "samples": {"type": "array",
                            "items": {"type": "array", "items": {"type": "number"}}},
                "weights": {"type": "array", "items": {"type": "number"}}}},
        "EventedProfile": {
            "type": "object",
            "required": ["endValue", "events", "name", "startValue", "type", "unit"],
            "properties": {
                "type": {"type": "string", "enum": ["evented"]},
                "name": {"type": "string"}, "unit": _UNIT,
                "startValue": {"type": "number"}, "endValue": {"type": "number"},
                "events": {"type": "array", "items": _EVENT}}},
    },
    "type": "object",
    "required": ["$schema", "profiles", "shared"],
    "properties": {
        "$schema": {"type": "string",
                    "enum": ["https://www.speedscope.app/file-format-schema.json"]},
        "shared": {"type": "object", "required": ["frames"],
                   "properties": {"frames": {"type": "array",
                                             "items": {"$ref": "#/definitions/Frame"}}}},
        "profiles": {"type": "array", "items": {"anyOf": [
            {"$ref": "#/definitions/EventedProfile"},
            {"$ref": "#/definitions/SampledProfile"}]}},
        "name": {"type": "string"},
        "activeProfileIndex": {"type": "number"},
        "exporter": {"type": "string"},
    },
}


def speedscope(*args: str) -> dict:
    proc = run_cli("flame", "--perf-script", str(CAPTURE), "--format", "speedscope", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_valid_one_profile_per_cpu_root_first() -> None:
    doc = speedscope("--include-idle")
    jsonschema.Draft6Validator(SPEEDSCOPE_SCHEMA).validate(doc)
    names = [p["name"] for p in doc["profiles"]]
    assert names == ["cpu 0", "cpu 1"]
    frames = doc["shared"]["frames"]
    by = {p["name"]: p for p in doc["profiles"]}
    for p in doc["profiles"]:
        assert len(p["samples"]) == len(p["weights"])
        assert sum(p["weights"]) == p["endValue"] == 137
        assert all(0 <= i < len(frames) for s in p["samples"] for i in s)
    cpu1 = by["cpu 1"]
    stack = [frames[i]["name"] for i in cpu1["samples"][0]]
    assert stack[0] == "python3" and stack[-1] in ("iov_iter_zero_[k]", "read_iter_zero_[k]")
    assert any(f.get("file") == "/usr/lib/x86_64-linux-gnu/libc.so.6" for f in frames)
    # consecutive equal stacks are merged into one weighted sample
    assert len(cpu1["samples"]) < 137


def test_idle_left_out_by_default_and_cpu_filter(tmp_path: Path) -> None:
    doc = speedscope()
    jsonschema.Draft6Validator(SPEEDSCOPE_SCHEMA).validate(doc)
    assert [p["name"] for p in doc["profiles"]] == ["cpu 1"]
    out = tmp_path / "w.speedscope.json"
    run_cli("flame", "--perf-script", str(CAPTURE), "--format", "speedscope", "--cpu", "0",
            "--include-idle", "-o", str(out), check=True)
    doc0 = json.loads(out.read_text())
    assert [p["name"] for p in doc0["profiles"]] == ["cpu 0"]


def test_schema_rejects_what_speedscope_would() -> None:
    # the transcription is strict enough to catch a broken file
    doc = speedscope()
    del doc["profiles"][0]["weights"]
    try:
        jsonschema.Draft6Validator(SPEEDSCOPE_SCHEMA).validate(doc)
    except jsonschema.ValidationError:
        return
    raise AssertionError("a sampled profile without weights validated")
