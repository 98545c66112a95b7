"""The README's opening quotes benchmark results: each figure must be the current one in docs/benchmarks.md (the
50-node storm beside aws-node-termination-handler, control plane on a core of its own), so a re-run cannot leave the
README telling an older story. Its cost figures are checked in test_cost_doc.py."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TIMES = "\N{MULTIPLICATION SIGN}"


def _flat(name: str) -> str:
    return " ".join((ROOT / name).read_text(encoding="utf-8").split())


def test_the_storm_the_readme_quotes_is_the_current_50_node_result() -> None:
    readme = _flat("README.md")
    quoted = re.search(
        rf"a 50-node storm on the test bed drained in ([\d.]+) {TIMES} the time of a drainer that knows every budget, "
        rf"with ([\d.]+) refused evictions a pod, and in ([\d.]+) {TIMES} the time NTH took",
        readme,
    )
    assert quoted, "README.md: the storm sentence was reworded; keep its figures checked here"
    ratio, refusals, against_nth = quoted.groups()
    bench = _flat("docs/benchmarks.md")
    table = bench.split(f"| 50 {TIMES} 10 split | orchestrator | NTH | lower bound |", 1)[1].split("## ", 1)[0]
    assert f"| storm ÷ lower bound, per round | **{ratio}** (" in table
    assert f"| PDB refusals per pod | **{refusals}** (" in table
    assert f"Orchestrator ÷ NTH: time {against_nth}," in table
