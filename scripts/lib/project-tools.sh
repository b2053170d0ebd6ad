# Sourced by scripts/test: the tools `converge new` runs for its python and
# typescript templates (crates/converge-cli/tests/cli/new_project.rs), as a
# user's machine has them — `python3 -m venv` (with pip) and `npm`.
# Installs what is missing from Debian's packages; the templates' SDKs come
# from PyPI and npm when the tests run.
project_tools_missing=""
python3 -c 'import venv, ensurepip' 2>/dev/null || project_tools_missing="$project_tools_missing python3-venv"
command -v npm >/dev/null 2>&1 || project_tools_missing="$project_tools_missing nodejs npm"
if [ -n "$project_tools_missing" ]; then
  echo "== installing$project_tools_missing (for converge new's templates)"
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $project_tools_missing >/dev/null
  else
    sudo -n apt-get update -qq
    sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $project_tools_missing >/dev/null
  fi
fi
