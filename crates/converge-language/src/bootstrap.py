# Converge's runner for Pulumi Python programs.
#
# The published `pulumi` wheel ships no runner of its own; Converge runs this
# script with the project's interpreter. It does what a Pulumi language host's
# executor does: read the arguments the engine passes, hand the configuration
# (env PULUMI_CONFIG / PULUMI_CONFIG_SECRET_KEYS) and the engine's addresses to
# the SDK, and run the program inside the root stack resource.
#
# Started with `--wait` alone, it imports the SDK first and then reads the
# run from stdin, one JSON line: {"args": [the arguments above],
# "env": {the configuration variables}}. Converge starts it so ahead of the
# run, while it opens the stack; at end of input without a line (the run
# never came) it exits quietly.
#
# Converge runs it as `python -c STUB`, the source in an environment
# variable, compiled under the name `<converge python runner>`: no temporary
# file, and tracebacks through it say what it is.
#
# Exit codes: 0 success; 32 the failure was already reported to the engine
# (Engine.Log at error severity); 33 the interpreter has no `pulumi` module,
# nothing printed (Converge says so, once); anything else is for the engine
# to explain from stderr.

import argparse
import asyncio
import json
import logging
import os
import runpy
import sys
import traceback

# The program failed and said so through the engine's log.
EXIT_REPORTED = 32

# The interpreter has no `pulumi` module.
EXIT_NO_SDK = 33

# `python -c` puts the working directory first on the module path; the
# program's own directory is put there below, as `python main.py` would.
if sys.path and sys.path[0] == "":
    del sys.path[0]

# What the SDK raises when the monitor answers UNAVAILABLE: the deployment
# failed and the engine reports that failure itself.
MONITOR_TERMINATED = "Resource monitor has terminated, shutting down"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="Run a Pulumi Python program for Converge")
    ap.add_argument("--monitor", required=True, help="the resource monitor's address")
    ap.add_argument("--engine", required=True, help="the engine's address")
    ap.add_argument("--project", required=True)
    ap.add_argument("--stack", required=True)
    ap.add_argument("--root_directory", help="the directory of Pulumi.yaml")
    ap.add_argument("--pwd", help="the working directory of the program")
    ap.add_argument("--dry_run", default="false", help="true for a preview")
    ap.add_argument("--parallel", default="16")
    ap.add_argument("--organization", default="organization")
    ap.add_argument("PROGRAM", help="a directory with __main__.py, or a .py file")
    ap.add_argument("ARGS", nargs="*")
    return ap.parse_args(argv)


def wait_for_run():
    """The arguments of a run started with `--wait`, once they arrive; the
    run's variables are set first, as if the process had started with
    them. Then stdin is /dev/null, as for a runner started for its run."""
    import_sdk()
    line = sys.stdin.readline()
    if not line.strip():
        sys.exit(0)
    run = json.loads(line)
    os.environ.update(run["env"])
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(0, closefd=False)
    return run["args"]


def import_sdk():
    try:
        import pulumi  # noqa: F401
        import pulumi.runtime  # noqa: F401
    except ImportError as e:
        if isinstance(e, ModuleNotFoundError) and e.name == "pulumi":
            # Converge says so, once, as the run's error.
            sys.exit(EXIT_NO_SDK)
        # The SDK is there, but a module it needs is missing or broken:
        # the traceback names it.
        traceback.print_exc()
        print(
            "\nThe Pulumi SDK installed for " + sys.executable + " cannot be imported.\n"
            "Reinstall it with `pip install pulumi` (in the project's virtualenv, if it has one).",
            file=sys.stderr,
        )
        sys.exit(1)


def report_error(message):
    """Reports `message` to the engine; returns the exit code to use."""
    import pulumi

    try:
        pulumi.log.error(message)
        return EXIT_REPORTED
    except Exception:  # noqa: BLE001 the engine is gone: stderr is all that is left
        print(message, file=sys.stderr)
        return 1


def format_exception(exc):
    """The traceback of `exc` from the program's own code on: the frames of
    this runner, the SDK's stack wrapper and runpy say nothing to the user."""
    te = traceback.TracebackException.from_exception(exc)
    cut = 0
    for i, frame in enumerate(te.stack):
        if frame.filename in ("<frozen runpy>",) or frame.filename.endswith("runpy.py"):
            cut = i + 1
    if 0 < cut < len(te.stack):
        te.stack = traceback.StackSummary.from_list(te.stack[cut:])
    return "".join(te.format())


def main():
    argv = wait_for_run() if sys.argv[1:] == ["--wait"] else None
    args = parse_args(argv)
    import_sdk()
    import pulumi
    import pulumi.runtime

    pulumi.runtime.set_all_config(
        pulumi.runtime.get_config_env(),
        pulumi.runtime.get_config_secret_keys_env(),
    )
    pulumi.runtime.configure(
        pulumi.runtime.Settings(
            monitor=args.monitor,
            engine=args.engine,
            project=args.project,
            stack=args.stack,
            parallel=int(args.parallel),
            dry_run=args.dry_run == "true",
            organization=args.organization,
            root_directory=args.root_directory,
        )
    )

    program = os.path.abspath(args.PROGRAM)
    if os.path.isfile(program):
        # As `python main.py` would: the program's directory is importable.
        sys.path.insert(0, os.path.dirname(program))
    sys.argv = [program] + args.ARGS
    if args.pwd:
        os.chdir(args.pwd)

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    # A failed program leaves futures unobserved on purpose; asyncio's
    # complaints about them would only confuse the user.
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)

    exit_code = 0
    try:
        loop.run_until_complete(
            pulumi.runtime.run_in_stack(lambda: runpy.run_path(program, run_name="__main__"))
        )
    except pulumi.RunError as e:
        if str(e) == MONITOR_TERMINATED:
            exit_code = EXIT_REPORTED
        else:
            exit_code = report_error(str(e))
    except Exception as e:  # noqa: BLE001 every failure of the program is reported
        exit_code = report_error(
            "Program failed with an unhandled exception:\n" + format_exception(e)
        )
    finally:
        try:
            loop.close()
        except Exception:  # noqa: BLE001 closing a loop with pending work
            pass
        sys.stdout.flush()
        sys.stderr.flush()
    sys.exit(exit_code)


if __name__ == "__main__":
    main()
