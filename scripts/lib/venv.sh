# Sourced by scripts/test and scripts/bench: the Python virtualenv in
# "$cache/venv" (ignored by git) with the independent implementations the
# interop tests compare against, the published SDKs, and an S3-compatible
# server (moto). Rebuilt only when the requirements change.
venv="$cache/venv"
requirements="cryptography==50.0.2 pulumi==3.272.0 pulumi_random==4.21.4 pulumi_command==1.2.1 pulumi-policy==1.21.0 moto[server]==5.2.5"
mkdir -p "$cache"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.requirements" 2>/dev/null)" != "$requirements" ]; then
  echo "== setting up the test virtualenv in $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check $requirements
  echo "$requirements" > "$venv/.requirements"
fi
