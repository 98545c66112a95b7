"""Cold import (not a test): what a new Lambda container imports, beside the durable SDK's own import.

    make bench-cold-import        # = python -m bench.cold_import [--samples N] [--sources DIR]...

Three statements, each timed in a fresh interpreter with compiled bytecode present (as the bundle ships it) and the
environment the construct deploys for the default settings (with the settings' bound checked at synth, so the
settings check does not simulate the pacing model again), interleaved so that machine noise hits them alike:

- the durable SDK alone (``import aws_durable_execution_sdk_python``): the floor, every durable function pays it;
- the handler module (``import drain_orchestrator.handler``): the container's init phase;
- an event the admission skips (another cluster's instance, a stale warning): the handler plus the parser and the
  AWS clients' module, all a skipped event's first invocation imports (the drain's flows load only when an
  instance's flow starts);
- the first invocation: the handler plus every module of the package outside ``cli/``, which is what a drain's
  first invocation imports inside its steps (the parser, the engine, the apiserver transport; recorded with
  ``sys.modules`` after a terminate drain under the local runner: all but ``restamp`` and ``aws.lambda_versions``).

``--sources`` times another checkout's ``lambda_src`` (e.g. ``git archive`` of an older commit) with this
environment's packages; given more than once, the checkouts are interleaved too, sample by sample (the host's noise
is larger than the differences between them). The ratio is the median of each sample over the SDK's sample of the
same round. Results go to stdout as a Markdown table; docs/benchmarks.md records
them with the command.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "drain_orchestrator"
SDK = "durable SDK alone"
HANDLER = "handler module (init)"
SKIPPED = "a skipped event's first invocation (handler + parse + decide)"
FIRST = "first invocation (handler + step modules)"


def first_invocation_modules(sources: Path) -> list[str]:
    """Every module of the package but the command line's, found on disk (``kube/`` is a namespace package, which
    pkgutil does not walk), so a renamed or new module needs no edit here."""
    names = []
    for path in sorted((sources / PACKAGE).rglob("*.py")):
        parts = path.relative_to(sources).with_suffix("").parts
        if parts[1:2] == ("cli",) or parts[-1] == "__main__":
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def statements(sources: Path) -> dict[str, str]:
    return {
        SDK: "import aws_durable_execution_sdk_python",
        HANDLER: f"import {PACKAGE}.handler",
        SKIPPED: f"import {PACKAGE}.handler, {PACKAGE}.events, {PACKAGE}.aws.clients",
        FIRST: "import " + ", ".join([f"{PACKAGE}.handler", *first_invocation_modules(sources)]),
    }


def _run(code: str, sources: Path, *, deployed: bool = True) -> str:
    env = {**os.environ, "PYTHONPATH": str(sources), "CLUSTER_NAMES": "blue"}
    if deployed:  # the construct's environment: the settings' bound checked at synth (when the sources know it)
        env.update(_bound_checked(sources))
    # measure with compiled bytecode, as the Lambda bundle ships it (this machine sets PYTHONDONTWRITEBYTECODE=1)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout


@functools.cache
def _bound_checked(sources: Path) -> dict[str, str]:
    """The variable the construct sets for the default settings (infra/environment.py), as ``sources`` name it."""
    code = (
        "from drain_orchestrator import workflow_settings as w\n"
        "print(getattr(w, 'BOUND_CHECKED_VARIABLE', ''), w.bound_digest(w.WorkflowSettings()) "
        "if hasattr(w, 'bound_digest') else '')"
    )
    name, _, value = _run(code, sources, deployed=False).strip().partition(" ")
    return {name: value} if name and value else {}


def import_ms(stmt: str, sources: Path) -> float:
    out = _run(f"import time; t=time.perf_counter(); {stmt}; print((time.perf_counter()-t)*1000)", sources)
    return float(out.strip().splitlines()[-1])


def added_packages(stmt: str, sources: Path) -> list[str]:
    """Top-level packages the statement leaves in sys.modules beyond the SDK's (what the function adds)."""

    def tops(of: str) -> set[str]:
        return set(
            _run(f"import sys; {of}; print(' '.join({{m.split('.')[0] for m in sys.modules}}))", sources).split()
        )

    return sorted(tops(stmt) - tops(statements(sources)[SDK]))


def bench(samples: int, sources: list[Path]) -> dict[Path, dict[str, list[float]]]:
    stmts = {src: statements(src) for src in sources}
    for src in sources:
        for stmt in stmts[src].values():
            import_ms(stmt, src)  # writes the .pyc files: what a deployed bundle has
    times: dict[Path, dict[str, list[float]]] = {src: {name: [] for name in stmts[src]} for src in sources}
    for _ in range(samples):
        for src in sources:
            for name, stmt in stmts[src].items():
                times[src][name].append(import_ms(stmt, src))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--samples", type=int, default=15, help="fresh interpreters per statement")
    parser.add_argument("--sources", type=Path, action="append", help="a lambda_src to import (default: this one's)")
    args = parser.parse_args()
    sources = [src.resolve() for src in args.sources or [REPO / "lambda_src"]]
    results = bench(args.samples, sources)
    print(f"| cold import, {args.samples} samples each (fresh interpreter, warm .pyc) | median ms | min-max | ÷ SDK |")
    print("|---|---|---|---|")
    for src, times in results.items():
        label = "" if len(sources) == 1 else f"`{src}`: "
        for name, values in times.items():
            # each sample over the SDK's of the same round: the host's load drifts less within a round than across
            ratio = statistics.median(v / sdk for v, sdk in zip(values, times[SDK], strict=True))
            spread = f"{min(values):.0f}-{max(values):.0f}"
            print(f"| {label}{name} | {statistics.median(values):.0f} | {spread} | {ratio:.2f} |")
    for src in sources:
        added = added_packages(statements(src)[FIRST], src)
        print(f"\npackages a first invocation adds to the SDK's (`{src}`): {', '.join(added)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
