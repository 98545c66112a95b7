"""What a new container imports before its first event: the admission's modules, not a drain's.

Most events an account's rules deliver are skipped at admission (another cluster's instance, a stale warning), so
the drain's flows, its engine and the apiserver transport load only when an instance's flow starts. A fresh
interpreter per test: this process has imported everything already.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "lambda_src"


def _modules_after(statement: str) -> set[str]:
    code = f"import json, sys; {statement}; print(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": str(SOURCE), "CLUSTER_NAMES": "blue"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_the_handler_s_init_loads_no_drain_or_schedule_flow_engine_apiserver_transport_or_parser() -> None:
    loaded = _modules_after("import drain_orchestrator.handler")
    assert "drain_orchestrator.workflow.event_flow" in loaded  # the admission is there
    drain_side = sorted(
        m
        for m in loaded
        if m.startswith(("drain_orchestrator.engine", "drain_orchestrator.kube", "drain_orchestrator.drain."))
        or m
        in {
            "drain_orchestrator.workflow.drain_flow",
            "drain_orchestrator.workflow.launch_flow",
            "drain_orchestrator.workflow.block_flow",  # a Capacity Block's events only
            "drain_orchestrator.workflow.sweep_flow",  # the schedules' ticks only
            "drain_orchestrator.workflow.liveness_flow",
            "drain_orchestrator.workflow.results",
            "drain_orchestrator.events",
        }
        or m.split(".")[0] == "pydantic"
    )
    assert drain_side == []


def test_a_drain_s_flow_loads_when_asked_for_and_brings_its_results() -> None:
    loaded = _modules_after("import drain_orchestrator.handler, drain_orchestrator.workflow.drain_flow")
    assert {"drain_orchestrator.workflow.results", "drain_orchestrator.workflow.pace"} <= loaded
