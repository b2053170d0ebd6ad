"""Print the protocol schema embedded in the installed Pulumi Python SDK as JSON.

Every `pulumi/runtime/proto/**/*_pb2.py` module of the SDK carries its
serialized FileDescriptorProto. This script loads each one and flattens it
(`descriptor_flat.py`) into a JSON object whose keys name one schema element
each and whose values hold the facts that decide wire compatibility.
`tests/descriptors.rs` builds the same flat form from Converge's own .proto
files and compares the two.
"""

import importlib
import os

import pulumi.runtime.proto as proto_pkg

from descriptor_flat import add_file, dump


def sdk_modules():
    root = os.path.dirname(proto_pkg.__file__)
    for directory, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if name.endswith("_pb2.py"):
                rel = os.path.relpath(os.path.join(directory, name[:-3]), root)
                yield "pulumi.runtime.proto." + rel.replace(os.sep, ".")


def main():
    out = {}
    for module_name in sdk_modules():
        add_file(out, importlib.import_module(module_name).DESCRIPTOR)
    dump(out)


if __name__ == "__main__":
    main()
