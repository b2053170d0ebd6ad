#!/usr/bin/env python3
"""The Python-SDK rows of scripts/bench: what Converge adds to a
Python program, as the program sees it.

A generated Pulumi Python program of N `pulumi.ComponentResource`s runs two
ways, alternating, R times each:

  converge  `converge up --yes --skip-preview` of a fresh stack (the release
            binary, file backend, empty passphrase): the CLI, the engine,
            the journal and the checkpoint, with the program run by
            Converge's Python runner;
  floor     the same runner and program against `null_monitor` (the engine
            crate's example: a monitor and engine that answer every RPC at
            once and keep nothing), so only the SDK, gRPC and Python count.

Shapes: `flat` (N independent components) and `chain` (each component
created inside an `apply` of the previous one's URN, so it is registered
only after the previous registration returned).

Each (shape, N) prints one JSON line: bench ("sdk_flat" / "sdk_chain"), n,
runs, wall_ms (median of the converge runs), floor_ms (median of the floor
runs), runs_ms and floor_runs_ms (every run), ratio (the median over the runs of each converge run's time over
the floor run right after it: a slow spell of the VM, which moves single
runs by 10-30 % here, then weighs on both sides of a ratio) and
ratio_of_medians (wall_ms / floor_ms, what earlier records give as the
ratio).

Usage: bench_sdk.py CONVERGE NULL_MONITOR PYTHON; BENCH_SDK_SIZES
(default 1000,3000) chooses N, BENCH_SDK_RUNS (default 5) R.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOOTSTRAP = ROOT / "crates/converge-language/src/bootstrap.py"


def program(shape: str, n: int) -> str:
    head = [
        "import pulumi",
        "",
        "class Group(pulumi.ComponentResource):",
        "    def __init__(self, name, opts=None):",
        "        super().__init__('bench:index:Group', name, None, opts)",
        "",
    ]
    if shape == "flat":
        body = [f"for i in range({n}):", "    Group(f'g{i}')"]
    else:
        body = [
            f"N = {n}",
            "def next_group(i, _urn=None):",
            "    g = Group(f'g{i}')",
            "    if i + 1 < N:",
            "        g.urn.apply(lambda u: next_group(i + 1, u))",
            "next_group(0)",
        ]
    return "\n".join(head + body) + "\n"


def timed(cmd: list[str], cwd: Path, env: dict) -> float:
    start = time.monotonic()
    done = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    wall = time.monotonic() - start
    if done.returncode != 0:
        sys.stderr.write(f"{' '.join(cmd)} failed ({done.returncode}):\n"
                         + done.stdout.decode(errors="replace")[-4000:])
        sys.exit(1)
    return wall * 1000


def bench(converge: Path, monitor_addr: str, python: Path, shape: str, n: int,
          runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="converge-bench-sdk-") as tmp:
        root = Path(tmp)
        project = root / "project"
        project.mkdir()
        venv = python.parent.parent
        (project / "Pulumi.yaml").write_text(
            f"name: bench\nruntime:\n  name: python\n  options:\n    virtualenv: {venv}\n")
        (project / "__main__.py").write_text(program(shape, n))
        env = dict(os.environ)
        env.update({
            "CONVERGE_HOME": str(root / "home"),
            "PULUMI_BACKEND_URL": f"file://{root / 'backend'}",
            "PULUMI_CONFIG_PASSPHRASE": "",
        })
        env.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)
        (root / "backend").mkdir()
        floor_cmd = [str(python), str(BOOTSTRAP), "--monitor", monitor_addr,
                     "--engine", monitor_addr, "--project", "bench", "--stack", "dev",
                     "--root_directory", str(project), "--pwd", str(project),
                     "--dry_run", "false", "--parallel", "16", str(project)]
        walls, floors = [], []
        for i in range(runs):
            stack = f"s{i}"
            subprocess.run([str(converge), "--non-interactive", "stack", "init", stack],
                           cwd=project, env=env, check=True, stdout=subprocess.DEVNULL)
            walls.append(timed([str(converge), "--non-interactive", "up", "--yes",
                                "--skip-preview"], project, env))
            floors.append(timed(floor_cmd, project, env))
        wall, floor = statistics.median(walls), statistics.median(floors)
        paired = statistics.median(w / f for w, f in zip(walls, floors))
        print(json.dumps({"bench": f"sdk_{shape}", "n": n, "runs": runs,
                          "wall_ms": round(wall), "floor_ms": round(floor),
                          "ratio": round(paired, 3),
                          "ratio_of_medians": round(wall / floor, 3),
                          "runs_ms": [round(w) for w in walls],
                          "floor_runs_ms": [round(f) for f in floors]}), flush=True)


def main() -> None:
    converge, null_monitor, python = (Path(a).absolute() for a in sys.argv[1:4])
    sizes = [int(s) for s in os.environ.get("BENCH_SDK_SIZES", "1000,3000").split(",")]
    runs = int(os.environ.get("BENCH_SDK_RUNS", "5"))
    monitor = subprocess.Popen([str(null_monitor)], stdout=subprocess.PIPE, text=True)
    try:
        addr = monitor.stdout.readline().strip()
        for n in sizes:
            for shape in ("flat", "chain"):
                bench(converge, addr, python, shape, n, runs)
    finally:
        monitor.kill()
        monitor.wait()


if __name__ == "__main__":
    main()
