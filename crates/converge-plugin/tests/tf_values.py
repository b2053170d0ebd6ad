"""The `tf` framework's own msgpack encoder and decoder, for
`tests/terraform_values.rs`. Run with CONVERGE_TEST_TF_PYTHON.

  encode: prints a JSON list of cases, each with its cty type (from the
          framework's type classes where it has one), the value as JSON
          (unknown as {"$unknown": true}) and the framework's msgpack bytes
          in hex (`tf.utils.to_dynamic_value`).
  decode: reads {"name": hex, ...} on stdin, decodes each with
          `tf.utils.read_dynamic_value` and prints {"name": value-as-JSON}.
"""

import json
import sys

from tf import types as t
from tf.gen import tfplugin_pb2 as pb
from tf.types import Unknown
from tf.utils import read_dynamic_value, to_dynamic_value

OBJECT_TYPE = b'["object",{"id":"string","n":"number","tags":["map","string"]}]'

CASES = [
    ("string", t.String().tf_type(), "h\u00e9llo"),
    ("number_int", t.Number().tf_type(), 42),
    ("number_negative", t.Number().tf_type(), -7),
    ("number_big", t.Number().tf_type(), 2**40),
    ("number_float", t.Number().tf_type(), 2.5),
    ("bool", t.Bool().tf_type(), True),
    ("unknown", t.String().tf_type(), Unknown),
    ("null", t.String().tf_type(), None),
    ("list", t.List(t.Number()).tf_type(), [1, 2.5, Unknown, None]),
    ("set", t.Set(t.String()).tf_type(), ["a", "b"]),
    ("map", t.Map(t.List(t.Bool())).tf_type(), {"x": [True], "y": None, "z": Unknown}),
    # A resource state: attributes in the provider's order, not sorted.
    ("object", OBJECT_TYPE, {"tags": {"a": "b"}, "id": "i-1", "n": Unknown}),
]


def to_json(value):
    if value is Unknown:
        return {"$unknown": True}
    if isinstance(value, list):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    return value


def main():
    if sys.argv[1] == "encode":
        out = [
            {
                "name": name,
                "type": type_json.decode(),
                "value": to_json(value),
                "hex": to_dynamic_value(value).msgpack.hex(),
            }
            for name, type_json, value in CASES
        ]
    else:
        out = {
            name: to_json(read_dynamic_value(pb.DynamicValue(msgpack=bytes.fromhex(hex_bytes))))
            for name, hex_bytes in json.load(sys.stdin).items()
        }
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
