# Sourced by scripts/test: a second Python virtualenv in "$cache/tf-venv"
# (ignored by git) with PyPI's `tf`, an independent implementation of
# Terraform's tfplugin6 protocol and go-plugin handshake, and
# `tfplugin-proto-all`, descriptors of every tfplugin5 and tfplugin6
# release. Their descriptors check our tfplugin5 and tfplugin6 .proto files;
# the Python Terraform test providers are written with `tf`. Separate from
# "$cache/venv" because `tf` needs protobuf < 6 and the pulumi SDK
# protobuf 6. Rebuilt only when the requirements change.
tf_venv="$cache/tf-venv"
tf_requirements="tf==1.2.0 tfplugin-proto-all==0.1.0"
mkdir -p "$cache"
if [ ! -x "$tf_venv/bin/python" ] || [ "$(cat "$tf_venv/.requirements" 2>/dev/null)" != "$tf_requirements" ]; then
  echo "== setting up the Terraform test virtualenv in $tf_venv"
  rm -rf "$tf_venv"
  python3 -m venv "$tf_venv"
  "$tf_venv/bin/pip" install --quiet --disable-pip-version-check $tf_requirements
  echo "$tf_requirements" > "$tf_venv/.requirements"
fi
export CONVERGE_TEST_TF_PYTHON="$tf_venv/bin/python"
