"""Print the protocol schema embedded in the installed Pulumi Python SDK as JSON.

Every `pulumi/runtime/proto/**/*_pb2.py` module of the SDK carries its
serialized FileDescriptorProto. This script loads each one and flattens it into
a JSON object whose keys name one schema element each and whose values hold
the facts that decide wire compatibility. `tests/descriptors.rs` builds the
same flat form from Converge's own .proto files and compares the two.

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

import importlib
import json
import os
import sys

from google.protobuf import descriptor_pb2

import pulumi.runtime.proto as proto_pkg

LABELS = descriptor_pb2.FieldDescriptorProto.Label
TYPES = descriptor_pb2.FieldDescriptorProto.Type


def sdk_modules():
    root = os.path.dirname(proto_pkg.__file__)
    for directory, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if name.endswith("_pb2.py"):
                rel = os.path.relpath(os.path.join(directory, name[:-3]), root)
                yield "pulumi.runtime.proto." + rel.replace(os.sep, ".")


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


def main():
    out = {}
    for module_name in sdk_modules():
        module = importlib.import_module(module_name)
        fdp = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(fdp)
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
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
