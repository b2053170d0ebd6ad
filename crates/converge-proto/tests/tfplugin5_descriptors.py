"""Print the tfplugin5 schema (protocol 5.5) that PyPI's `tfplugin-proto-all`
ships, flattened like `sdk_descriptors.py` (`descriptor_flat.py`).
`tests/proto/tfplugin5_descriptors.rs` compares it with Converge's
proto/tfplugin5/tfplugin5.proto. Run with the interpreter named by
CONVERGE_TEST_TF_PYTHON.
"""

import tfplugin_proto.tfplugin5_5_pb2 as tfplugin5

from descriptor_flat import add_file, dump


def main():
    out = {}
    add_file(out, tfplugin5.DESCRIPTOR)
    dump(out)


if __name__ == "__main__":
    main()
