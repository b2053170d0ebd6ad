"""Passes property values through the installed Pulumi Python SDK's own
serializer and deserializer, for tests/sdk_wire.rs.

  sdk_values.py serialize
      Prints {"plain": HEX, "output_values": HEX}: a fixed set of Python
      inputs as the SDK sends them to the engine (rpc.serialize_properties),
      without and with output values, as serialized google.protobuf.Struct.
  sdk_values.py deserialize HEX
      Reads a serialized Struct as the SDK reads the engine's answers
      (rpc.deserialize_properties) and prints what the program would see,
      as JSON.

The monitor is taken to support secrets, resource references and output
values, as Converge's does.
"""

import asyncio
import json
import sys

from google.protobuf import struct_pb2

from pulumi import (
    AssetArchive,
    FileArchive,
    FileAsset,
    Output,
    RemoteArchive,
    RemoteAsset,
    StringAsset,
)
from pulumi.output import Unknown
from pulumi.runtime import rpc, settings
from pulumi.runtime.proto import resource_pb2

settings.SETTINGS.monitor_features = {
    resource_pb2.RESOURCE_MONITOR_FEATURE_SECRETS,
    resource_pb2.RESOURCE_MONITOR_FEATURE_RESOURCE_REFERENCES,
    resource_pb2.RESOURCE_MONITOR_FEATURE_OUTPUT_VALUES,
}


def resolved(value):
    future = asyncio.get_running_loop().create_future()
    future.set_result(value)
    return future


def inputs():
    return {
        "null": None,
        "bool": True,
        "number": 1.5,
        "string": "s",
        "list": [1, "a", None],
        "object": {"k": "v"},
        "secret": Output.secret("s3cret"),
        "unknown": Output(set(), resolved(None), resolved(False)),
        "secretUnknown": Output(set(), resolved(None), resolved(False), resolved(True)),
        "text": StringAsset("hello"),
        "file": FileAsset("./f.txt"),
        "remote": RemoteAsset("https://example.com/a"),
        "archive": AssetArchive({"a": StringAsset("x"), "d": FileArchive("./dir")}),
        "remoteArchive": RemoteArchive("https://example.com/a.zip"),
    }


async def serialize():
    out = {}
    for name, keep in (("plain", False), ("output_values", True)):
        struct = await rpc.serialize_properties(inputs(), {}, keep_output_values=keep)
        out[name] = struct.SerializeToString().hex()
    return out


async def describe(value):
    """What a program sees, as JSON."""
    if rpc.is_rpc_secret(value):
        return {"secret": await describe(rpc.unwrap_rpc_secret(value))}
    if isinstance(value, Unknown):
        return {"unknown": True}
    if isinstance(value, Output):
        return {
            "output": {
                "known": await value.is_known(),
                "secret": await value.is_secret(),
                "value": await describe(await value.future()),
            }
        }
    for cls, field in ((StringAsset, "text"), (FileAsset, "path"), (RemoteAsset, "uri")):
        if isinstance(value, cls):
            return {"asset": {field: getattr(value, field)}}
    if isinstance(value, AssetArchive):
        assets = {k: await describe(v) for k, v in value.assets.items()}
        return {"archive": {"assets": assets}}
    for cls, field in ((FileArchive, "path"), (RemoteArchive, "uri")):
        if isinstance(value, cls):
            return {"archive": {field: getattr(value, field)}}
    if isinstance(value, dict):
        return {k: await describe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [await describe(v) for v in value]
    return value


async def deserialize(hex_struct):
    struct = struct_pb2.Struct()
    struct.ParseFromString(bytes.fromhex(hex_struct))
    return await describe(rpc.deserialize_properties(struct, keep_unknowns=True))


def main():
    if sys.argv[1:] == ["serialize"]:
        result = asyncio.run(serialize())
    elif len(sys.argv) == 3 and sys.argv[1] == "deserialize":
        result = asyncio.run(deserialize(sys.argv[2]))
    else:
        sys.exit("usage: sdk_values.py serialize | deserialize HEX")
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
