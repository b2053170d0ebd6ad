#!/usr/bin/env python3
"""The CLI rows of scripts/bench: the release `converge` binary
runs a generated YAML program of N `random:index/randomInteger:RandomInteger`
resources (built-in provider, no network) on a file backend in a temporary
directory, with an empty passphrase:

  cli_up_create         up --yes --skip-preview on a fresh stack
  cli_preview_nochange  preview, nothing changed
  cli_up_1pct           up --yes --skip-preview after 1 % of the resources
                        changed an input (their `keepers`: a replacement)
  cli_destroy           destroy --yes --skip-preview

Each prints one JSON line: bench, n, wall_ms (spawn to exit), peak_rss_kb
(the converge process's own ru_maxrss, from wait4), bytes_written (the
process's `wchar` in /proc/<pid>/io, read before it is reaped, less what it
wrote to its stdout and stderr: every byte it handed to write(2) for the
backend — journal, checkpoint, backups, history, locks) and, after an up,
snapshot_bytes (the stored checkpoint's size).

Each row is the median of BENCH_CLI_RUNS runs (default 3 up to N = 10,000,
1 above), each in a fresh world, and says how many (`runs`).

Usage: bench_cli.py [path/to/converge]; BENCH_CLI_SIZES=1000,10000,100000 (default)
chooses N.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESOURCE_TYPE = "random:index/randomInteger:RandomInteger"


def program(n: int, changed_every: int | None = None) -> str:
    """Pulumi.yaml of n independent RandomIntegers; every `changed_every`th
    one has a different `keepers`."""
    lines = ["name: bench", "runtime: yaml", "resources:"]
    for i in range(n):
        generation = 1 if changed_every and i % changed_every == 0 else 0
        lines += [
            f"  r{i}:",
            f"    type: {RESOURCE_TYPE}",
            "    properties:",
            "      min: 0",
            "      max: 1000000",
            f"      seed: r{i}",
            "      keepers:",
            f"        gen: g{generation}",
        ]
    return "\n".join(lines) + "\n"


class World:
    """A Converge home, a file backend and a project in a temp dir."""

    def __init__(self, converge: Path, root: Path):
        self.converge = converge
        self.root = root
        self.project = root / "project"
        self.backend = root / "backend"
        self.logs = root / "logs"
        for d in (self.project, self.backend, self.logs):
            d.mkdir()
        self.env = dict(os.environ)
        self.env.update(
            {
                "CONVERGE_HOME": str(root / "home"),
                "PULUMI_BACKEND_URL": f"file://{self.backend}",
                "PULUMI_CONFIG_PASSPHRASE": "",
            }
        )
        self.env.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)

    def write_program(self, text: str) -> None:
        (self.project / "Pulumi.yaml").write_text(text)

    def checkpoint_bytes(self) -> int:
        found = list((self.backend / ".pulumi" / "stacks").rglob("dev.json"))
        return found[0].stat().st_size if found else 0

    def run(self, args: list[str]) -> dict:
        """Runs `converge --non-interactive args…`; fails the bench when it
        fails. Wall time, peak RSS and bytes written of that process."""
        out_path, err_path = self.logs / "stdout", self.logs / "stderr"
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            start = time.monotonic()
            proc = subprocess.Popen(
                [str(self.converge), "--non-interactive", *args],
                cwd=self.project,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
            )
            # Wait without reaping, so /proc/<pid>/io is still there.
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
            wall = time.monotonic() - start
            io = dict(
                line.split(": ", 1)
                for line in Path(f"/proc/{proc.pid}/io").read_text().splitlines()
            )
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
        printed = out_path.stat().st_size + err_path.stat().st_size
        if proc.returncode != 0:
            sys.stderr.write(
                f"converge {' '.join(args)} failed ({proc.returncode}):\n"
                + out_path.read_text(errors="replace")[-4000:]
                + err_path.read_text(errors="replace")[-4000:]
            )
            sys.exit(1)
        return {
            "wall_ms": round(wall * 1000),
            "peak_rss_kb": usage.ru_maxrss,
            "bytes_written": int(io["wchar"]) - printed,
        }


ROWS = ["cli_up_create", "cli_preview_nochange", "cli_up_1pct", "cli_destroy"]


def sequence(converge: Path, n: int) -> dict[str, dict]:
    """One run of the four rows, in a world of its own."""
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="converge-bench-cli-") as tmp:
        world = World(converge, Path(tmp))
        world.write_program(program(n))
        world.run(["stack", "init", "dev"])

        def row(name: str, args: list[str], snapshot: bool = False) -> None:
            measured = world.run(args)
            if snapshot:
                measured["snapshot_bytes"] = world.checkpoint_bytes()
            out[name] = measured

        row("cli_up_create", ["up", "--yes", "--skip-preview"], snapshot=True)
        row("cli_preview_nochange", ["preview"])
        world.write_program(program(n, changed_every=100))
        row("cli_up_1pct", ["up", "--yes", "--skip-preview"], snapshot=True)
        row("cli_destroy", ["destroy", "--yes", "--skip-preview"])
    return out


def bench(converge: Path, n: int, runs: int) -> None:
    """Each row's median over `runs` sequences (by wall time: the run
    whose wall time is the median, all its numbers); the machine's other
    work makes single runs vary by up to 2x."""
    results = [sequence(converge, n) for _ in range(runs)]
    for name in ROWS:
        measured = sorted((r[name] for r in results), key=lambda m: m["wall_ms"])
        median = measured[len(measured) // 2]
        line = {"bench": name, "n": n, **median, "runs": runs}
        print(json.dumps(line), flush=True)


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    converge = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else root / "target/release/converge"
    sizes = os.environ.get("BENCH_CLI_SIZES", "1000,10000,100000")
    for n in (int(s) for s in sizes.split(",") if s.strip()):
        # Three runs up to 10,000 resources; one at 100,000 (minutes each).
        runs = int(os.environ.get("BENCH_CLI_RUNS", "3" if n <= 10_000 else "1"))
        bench(converge, n, runs)


if __name__ == "__main__":
    main()
