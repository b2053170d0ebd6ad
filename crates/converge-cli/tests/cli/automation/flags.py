"""Drives `converge`, exposed as `pulumi` on PATH, with the published
Automation API of the `pulumi` package: every logging and debugging option
the SDK passes to preview, up, refresh and destroy, and
`destroy(exclude_protected=True)`.

Usage: flags.py PROJECT_DIR

The backend, passphrase and Converge home come from the environment.
Every check is an assertion; the last line printed is `flags: ok`.
"""

import os
import sys

from pulumi import automation as auto

PROJECT = sys.argv[1]
ENV = {
    k: os.environ[k]
    for k in ("PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE", "CONVERGE_HOME")
    if k in os.environ
}
TRACES = "file://" + os.path.join(os.getcwd(), "traces.json")
# What the SDK turns into --debug, --verbose 3, --logtostderr, --logflow
# and --tracing.
LOUD = dict(
    debug=True,
    log_verbosity=3,
    log_to_std_err=True,
    log_flow=True,
    tracing=TRACES,
)


def check_logs(result, what):
    # -v 3 --logtostderr: Converge's debug-level logs; --tracing: a
    # warning that no traces are emitted.
    assert "DEBUG converge::commands::deploy: the engine starts" in result.stderr, (
        what,
        result.stderr,
    )
    assert "does not emit Pulumi's traces" in result.stderr, (what, result.stderr)


st = auto.create_or_select_stack(
    "dev", work_dir=PROJECT, opts=auto.LocalWorkspaceOptions(env_vars=ENV)
)

preview = st.preview(**LOUD)
check_logs(preview, "preview")
assert preview.change_summary.get(auto.OpType.CREATE, 0) >= 6, preview.change_summary

up = st.up(**LOUD)
check_logs(up, "up")
# --debug: the program's debug-level message is shown.
assert "debug: the marker of --debug" in up.stdout, up.stdout
assert up.summary.result == "succeeded", up.summary

# Without --debug, the same message is not shown.
quiet = st.preview()
assert "the marker of --debug" not in quiet.stdout, quiet.stdout
assert "the engine starts" not in quiet.stderr, quiet.stderr

refresh = st.refresh(**LOUD)
check_logs(refresh, "refresh")

# --attach-debugger is refused, naming the flag, and changes nothing.
try:
    st.preview(attach_debugger=True)
    raise AssertionError("attach_debugger=True was accepted")
except auto.errors.CommandError as e:
    assert "--attach-debugger" in str(e), str(e)


def urns():
    # The default provider's name carries its version (default_4_16_0).
    names = (r["urn"].split("::")[-1] for r in st.export_stack().deployment["resources"])
    return sorted(n.split("_")[0] for n in names)


before = urns()
assert before == ["default", "dep", "gone", "keep", "other", "proj-dev", "shelf"], before

destroy = st.destroy(exclude_protected=True, **LOUD)
check_logs(destroy, "destroy")
assert destroy.summary.result == "succeeded", destroy.summary
# The protected pet stays with its parent component, the stack, the pet
# it depends on and its provider; the rest is gone.
after = urns()
assert after == ["default", "dep", "keep", "proj-dev", "shelf"], after

# Nothing unprotected is left: said, and nothing changes.
again = st.destroy(exclude_protected=True)
assert "no unprotected resources to destroy" in again.stderr, again.stderr
assert urns() == after

# The stack is not removed.
assert "dev" in [s.name for s in st.workspace.list_stacks()]
print("flags: ok")
