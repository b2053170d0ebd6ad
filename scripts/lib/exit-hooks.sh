# Sourced first by scripts/test and scripts/bench: `on_exit CMD` runs CMD
# when the calling script exits, after the commands registered before it
# (one EXIT trap for every server the scripts start).
exit_hooks=()
on_exit() { exit_hooks+=("$1"); }
run_exit_hooks() {
  local i
  for ((i = ${#exit_hooks[@]} - 1; i >= 0; i--)); do eval "${exit_hooks[$i]}"; done
}
trap run_exit_hooks EXIT
