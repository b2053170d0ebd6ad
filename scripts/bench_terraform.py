#!/usr/bin/env python3
"""Terraform provider rows: the release `converge` binary drives a YAML
program of N `gostore:index/item:Item` resources of the Go test provider
(go-plugin, AutoMTLS, protocol 6; crates/converge-testkit/go/gostore),
installed in OpenTofu's unpacked layout, objects as files in a temporary
directory, on a file backend:

  tf_up_create          up --yes --skip-preview on a fresh stack
  tf_preview_nochange   preview, nothing changed
  tf_refresh            refresh --yes --skip-preview, nothing drifted
  tf_refresh_50ms       the same with the provider answering each
                        ReadResource after 50 ms (its read_delay_ms), with
                        floor_ms = N x 50 ms / parallelism

Each prints one JSON line: bench, n, parallel, wall_ms (spawn to exit),
peak_rss_kb (converge's own ru_maxrss), provider_peak_rss_kb (the largest
provider process's VmHWM, which it reports when it exits), providers_started and
providers_configured (the provider's own start and configure events) and
providers_shutdown (those that ended through go-plugin's Shutdown).

Usage: bench_terraform.py path/to/converge; BENCH_TF_SIZE=1000 (default),
BENCH_TF_PARALLEL=16 (Converge's default). Needs CONVERGE_TEST_GO (the go
binary; scripts/lib/go.sh).
"""

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def os_arch() -> str:
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return f"{platform.system().lower()}_{arch}"


def build_provider() -> Path:
    out = subprocess.run(
        ["cargo", "run", "--quiet", "-p", "converge-testkit", "--example", "go_provider"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    )
    return Path(out.stdout.strip())


def program(n: int) -> str:
    lines = ["name: tfbench", "runtime: yaml", "resources:"]
    for i in range(n):
        lines += [f"  r{i}:", "    type: gostore:Item", "    properties:", f"      key: k{i}", f"      value: v{i}"]
    return "\n".join(lines) + "\n"


class World:
    def __init__(self, converge: Path, provider: Path, root: Path, n: int, parallel: int):
        self.converge, self.root, self.parallel = converge, root, parallel
        self.project, self.backend = root / "project", root / "backend"
        self.objects, self.events = root / "objects", root / "events.log"
        for d in (self.project, self.backend, self.objects):
            d.mkdir(parents=True)
        home = root / "user"
        target = home / ".terraform.d/plugins/registry.opentofu.org/converge-test/gostore/2.0.0" / os_arch()
        target.mkdir(parents=True)
        shutil.copy(provider, target / "terraform-provider-gostore_v2.0.0")
        (self.project / "Pulumi.yaml").write_text(program(n))
        self.env = dict(os.environ, HOME=str(home), CONVERGE_HOME=str(root / "home"),
                        PULUMI_BACKEND_URL=f"file://{self.backend}", PULUMI_CONFIG_PASSPHRASE="",
                        GOSTORE_EVENTS=str(self.events))
        self.env.pop("TF_PLUGIN_CACHE_DIR", None)
        self.env.pop("TF_CLI_CONFIG_FILE", None)
        self.run(["stack", "init", "dev"])
        self.run(["config", "set", "gostore:directory", str(self.objects)])

    def run(self, args: list[str]) -> dict:
        if self.events.exists():
            self.events.unlink()
        start = time.monotonic()
        proc = subprocess.Popen([str(self.converge), "--non-interactive", *args], cwd=self.project,
                                env=self.env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        output = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            sys.stderr.write(f"converge {' '.join(args)} failed:\n{output.decode(errors='replace')[-4000:]}")
            sys.exit(1)
        events = [line.split() for line in self.events.read_text().splitlines()] if self.events.exists() else []
        count = lambda what: sum(1 for e in events if e[0] == what)
        peaks = [int(e[2]) for e in events if e[0] == "exit" and len(e) > 2]
        return {
            "wall_ms": round(wall * 1000),
            "peak_rss_kb": usage.ru_maxrss,
            "provider_peak_rss_kb": max(peaks, default=0),
            "providers_started": count("start"),
            "providers_configured": count("configure"),
            "providers_shutdown": count("exit"),
        }


def main() -> None:
    converge = Path(sys.argv[1]).resolve()
    n = int(os.environ.get("BENCH_TF_SIZE", "1000"))
    parallel = int(os.environ.get("BENCH_TF_PARALLEL", "16"))
    provider = build_provider()
    with tempfile.TemporaryDirectory() as tmp:
        w = World(converge, provider, Path(tmp), n, parallel)
        p = ["--parallel", str(parallel)]
        rows = [
            ("tf_up_create", ["up", "--yes", "--skip-preview", *p]),
            ("tf_preview_nochange", ["preview", *p]),
            ("tf_refresh", ["refresh", "--yes", "--skip-preview", *p]),
        ]
        for name, args in rows:
            row = w.run(args)
            print(json.dumps({"bench": name, "n": n, "parallel": parallel, **row}), flush=True)
        w.run(["config", "set", "gostore:readDelayMs", "50"])
        # The provider's configuration changed: up once so refresh reads
        # with the new one.
        w.run(["up", "--yes", "--skip-preview", *p])
        row = w.run(["refresh", "--yes", "--skip-preview", *p])
        floor = n * 50 / parallel
        print(json.dumps({"bench": "tf_refresh_50ms", "n": n, "parallel": parallel, **row,
                          "floor_ms": round(floor), "over_floor": round(row["wall_ms"] / floor, 2)}), flush=True)


if __name__ == "__main__":
    main()
