"""pprof's profile.proto (github.com/google/pprof/proto/profile.proto), declared with the real
protobuf runtime so tests decode what corescope writes with a real decoder, not with ours."""

from __future__ import annotations

import gzip
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_MESSAGES = {
    "Profile": [("sample_type", 1, "ValueType", True), ("sample", 2, "Sample", True),
                ("mapping", 3, "Mapping", True), ("location", 4, "Location", True),
                ("function", 5, "Function", True), ("string_table", 6, "string", True),
                ("drop_frames", 7, "int64", False), ("keep_frames", 8, "int64", False),
                ("time_nanos", 9, "int64", False), ("duration_nanos", 10, "int64", False),
                ("period_type", 11, "ValueType", False), ("period", 12, "int64", False),
                ("comment", 13, "int64", True), ("default_sample_type", 14, "int64", False)],
    "ValueType": [("type", 1, "int64", False), ("unit", 2, "int64", False)],
    "Sample": [("location_id", 1, "uint64", True), ("value", 2, "int64", True),
               ("label", 3, "Label", True)],
    "Label": [("key", 1, "int64", False), ("str", 2, "int64", False),
              ("num", 3, "int64", False), ("num_unit", 4, "int64", False)],
    "Mapping": [("id", 1, "uint64", False), ("memory_start", 2, "uint64", False),
                ("memory_limit", 3, "uint64", False), ("file_offset", 4, "uint64", False),
                ("filename", 5, "int64", False), ("build_id", 6, "int64", False)],
    "Location": [("id", 1, "uint64", False), ("mapping_id", 2, "uint64", False),
                 ("address", 3, "uint64", False), ("line", 4, "Line", True),
                 ("is_folded", 5, "bool", False)],
    "Line": [("function_id", 1, "uint64", False), ("line", 2, "int64", False)],
    "Function": [("id", 1, "uint64", False), ("name", 2, "int64", False),
                 ("system_name", 3, "int64", False), ("filename", 4, "int64", False),
                 ("start_line", 5, "int64", False)],
}
_SCALARS = {"int64": _F.TYPE_INT64, "uint64": _F.TYPE_UINT64, "string": _F.TYPE_STRING,
            "bool": _F.TYPE_BOOL}


def _profile_class() -> Any:
    fd = descriptor_pb2.FileDescriptorProto(name="corescope_test_profile.proto",
                                            package="perftools.profiles", syntax="proto3")
    for name, fields in _MESSAGES.items():
        m = fd.message_type.add(name=name)
        for fname, num, typ, repeated in fields:
            f = m.field.add(name=fname, number=num,
                            label=_F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL)
            if typ in _SCALARS:
                f.type = _SCALARS[typ]
            else:
                f.type = _F.TYPE_MESSAGE
                f.type_name = f".perftools.profiles.{typ}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName("perftools.profiles.Profile"))


Profile = _profile_class()


def decode(body: bytes) -> Any:
    """A gzipped (or plain) pprof body → the decoded Profile message."""
    raw = gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body
    msg = Profile()
    msg.ParseFromString(raw)
    return msg


def sample_labels(prof: Any, sample: Any) -> dict[str, str | int]:
    st = prof.string_table
    return {st[lab.key]: (st[lab.str] if lab.str else lab.num) for lab in sample.label}
