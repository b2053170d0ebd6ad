"""The flat, keyed form of a protobuf schema that the descriptor tests compare
(`tests/common/flatten.rs` builds the same form from Converge's .proto files).

Reserved ranges are end-exclusive, sorted and merged; reserved names sorted.

Keys:
  "file <path>"                  {"package"}
  "message <.full.Name>"         {"file", "map_entry", "oneofs", "reserved_ranges", "reserved_names"}
  "field <.full.Name>.<field>"   {"number", "label", "type", "type_name", "oneof", "proto3_optional"}
  "enum <.full.Name>"            {"file", "reserved_ranges", "reserved_names"}
  "value <.full.Name>.<VALUE>"   {"number"}
  "service <.full.Name>"         {"file"}
  "method <.full.Name>.<Method>" {"input", "output", "client_streaming", "server_streaming"}
"""

import json
import sys

from google.protobuf import descriptor_pb2

LABELS = descriptor_pb2.FieldDescriptorProto.Label
TYPES = descriptor_pb2.FieldDescriptorProto.Type


def merged(ranges):
    """End-exclusive ranges, sorted and with touching ranges joined, so that
    `reserved 6 to 8;` and `reserved 6; reserved 7; reserved 8;` compare equal."""
    out = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


def add_message(out, file_name, scope, msg):
    full = scope + "." + msg.name
    oneofs = [o.name for o in msg.oneof_decl]
    out["message " + full] = {
        "file": file_name,
        "map_entry": msg.options.map_entry,
        "oneofs": oneofs,
        "reserved_ranges": merged([(r.start, r.end) for r in msg.reserved_range]),
        "reserved_names": sorted(msg.reserved_name),
    }
    for field in msg.field:
        out["field " + full + "." + field.name] = {
            "number": field.number,
            "label": LABELS.Name(field.label),
            "type": TYPES.Name(field.type),
            "type_name": field.type_name,
            "oneof": oneofs[field.oneof_index] if field.HasField("oneof_index") else None,
            "proto3_optional": field.proto3_optional,
        }
    for nested in msg.nested_type:
        add_message(out, file_name, full, nested)
    for enum in msg.enum_type:
        add_enum(out, file_name, full, enum)


def add_enum(out, file_name, scope, enum):
    full = scope + "." + enum.name
    out["enum " + full] = {
        "file": file_name,
        # Enum ranges include their end; make them end-exclusive like messages'.
        "reserved_ranges": merged([(r.start, r.end + 1) for r in enum.reserved_range]),
        "reserved_names": sorted(enum.reserved_name),
    }
    for value in enum.value:
        out["value " + full + "." + value.name] = {"number": value.number}


def add_file(out, file_descriptor):
    """Adds everything a module's `DESCRIPTOR` (a FileDescriptor) defines."""
    fdp = descriptor_pb2.FileDescriptorProto()
    file_descriptor.CopyToProto(fdp)
    scope = "." + fdp.package if fdp.package else ""
    out["file " + fdp.name] = {"package": fdp.package}
    for msg in fdp.message_type:
        add_message(out, fdp.name, scope, msg)
    for enum in fdp.enum_type:
        add_enum(out, fdp.name, scope, enum)
    for service in fdp.service:
        full = scope + "." + service.name
        out["service " + full] = {"file": fdp.name}
        for method in service.method:
            out["method " + full + "." + method.name] = {
                "input": method.input_type,
                "output": method.output_type,
                "client_streaming": method.client_streaming,
                "server_streaming": method.server_streaming,
            }


def dump(out):
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
