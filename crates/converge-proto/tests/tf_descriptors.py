"""Print the tfplugin6 schema of PyPI's `tf` framework as JSON, flattened
like `sdk_descriptors.py` (`descriptor_flat.py`). `tests/tf_descriptors.rs`
compares it with Converge's proto/tfplugin6/tfplugin6.proto. Run with the
interpreter named by CONVERGE_TEST_TF_PYTHON.
"""

import tf.gen.tfplugin_pb2 as tfplugin

from descriptor_flat import add_file, dump


def main():
    out = {}
    add_file(out, tfplugin.DESCRIPTOR)
    dump(out)


if __name__ == "__main__":
    main()
