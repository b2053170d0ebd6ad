"""Print go-plugin's `plugin` package as PyPI's `tf` ships it
(tf/gen/grpc_controller_pb2.py, tf/gen/grpc_stdio_pb2.py), as JSON: one
serialized FileDescriptorProto (base64) per file, keyed by file base name.
`tests/plugin_descriptors.rs` compares them with ours."""

import base64
import json

from google.protobuf import descriptor_pb2
from tf.gen import grpc_controller_pb2, grpc_stdio_pb2

out = {}
for module in (grpc_controller_pb2, grpc_stdio_pb2):
    proto = descriptor_pb2.FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(proto)
    out[proto.name.rsplit("/", 1)[-1]] = base64.b64encode(proto.SerializeToString()).decode()
print(json.dumps(out))
