"""`python -m testbed up|down|status|env [--dir DIR]`: the local test bed outside pytest (make cluster-up,
cluster-down, env)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from testbed.bed import REPO, Testbed
from testbed.local_env import ENV_HINT


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m testbed")
    p.add_argument("command", choices=["up", "down", "status", "env"])
    p.add_argument("--dir", type=Path, default=REPO / ".local" / "cluster")
    p.add_argument("--nodes", type=int, default=2, help="Ready kwok nodes to create on `up` (default 2)")
    a = p.parse_args(argv)
    if a.command == "up":
        bed = Testbed.attach(a.dir)
        if bed:
            print(f"test bed already running: kubeconfig {bed.kubeconfig}")
            return 0
        t0 = time.monotonic()
        bed = Testbed.start(a.dir)
        if a.nodes:
            from testbed.kube import KubeScenario

            # a namespace and Ready nodes to look at; tests and the demo make their own
            with bed.admin_api_client() as api:
                KubeScenario(api, prefix="local").add_nodes(a.nodes)
        print(f"test bed up in {time.monotonic() - t0:.1f} s")
        print(f"  kubeconfig:    {bed.kubeconfig}")
        print(f"  apiserver:     {bed.server}")
        print(f"  AWS emulator:  {bed.aws_endpoint}   (export AWS_ENDPOINT_URL={bed.aws_endpoint})")
        print(f"  logs:          {bed.logs}")
        print(ENV_HINT)
        return 0
    if a.command == "down":
        state = a.dir / "state.json"
        if not state.exists():
            print("no test bed recorded in", a.dir)
            return 0
        from testbed.procs import State, stop_procs

        s = State.load(state)
        stop_procs(s.procs)
        state.unlink()
        print(f"test bed stopped ({len(s.procs)} processes)")
        return 0
    bed = Testbed.attach(a.dir)
    if a.command == "env":
        if bed is None:
            print(f"no test bed running in {a.dir}: start one with `make cluster-up` or `make demo`", file=sys.stderr)
            return 1
        from testbed.local_env import export_lines, shell_env

        print("\n".join(export_lines(shell_env(bed))))
        return 0
    print("running" if bed else "not running")
    return 0 if bed else 1


if __name__ == "__main__":
    sys.exit(main())
