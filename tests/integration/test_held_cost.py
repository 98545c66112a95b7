"""A drain held by a PodDisruptionBudget that never allows, through the Lambda on the real bed with real waits: its
passes end early once every pod is held, the waits between them grow, and the Kubernetes requests stay few (counted
from the apiserver's audit log); a budget watch cut by an apiserver restart does not keep it from seeing the budget
lift."""

from __future__ import annotations

import json
import time
from datetime import datetime

import pytest

from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.faults import BedFaults
from testbed.kube import KubeScenario
from tests.integration.audit_support import at, audit_offset, by_verb_and_resource, function_requests
from tests.integration.lambda_support import LambdaHarness
from tests.integration.scenario_support import (
    Background,
    blue_asg_node,
    hold_with_pdb,
    instance_summary,
    pods_on,
    terminate_event,
    wait_cordoned,
)

pytestmark = pytest.mark.integration

HOLD_SECONDS = 90


def _logged_at(line: dict[str, str]) -> float:
    return datetime.strptime(line["timestamp"], "%Y-%m-%d %H:%M:%S,%f%z").timestamp()


def test_a_held_drain_ends_its_passes_early_and_polls_rarely(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    hold_with_pdb(k8s, node, spare)
    lam.configure(
        "blue",
        DEADLINE_ASG_TERMINATE_SECONDS=str(HOLD_SECONDS),
        FORCE_DELETE_ON_DEADLINE="false",
        RECHECK_MIN_SECONDS="2",
        HELD_RECHECK_MAX_SECONDS="30",
    )
    offset = audit_offset(testbed)
    started = time.time()
    run = lam.run(terminate_event(aws, iid), timeout=HOLD_SECONDS + 120, skip_time=False)
    ended = time.time()
    inst = instance_summary(run)
    assert inst["result"] == "deadline-missed", inst
    passes = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{") and '"drain pass"' in line]
    # a pass budget is 120 s, the hold 90 s: without ending early there would be a single pass
    assert len(passes) >= 4, passes
    # the first pass may end with the drain's respectful minimum (the deadline policy starts after it, within two
    # passes of the deadline); every other pass but the last ends early, once every pod is held
    assert all(p["held_early"] for p in passes[1:-1]), [(p["timestamp"], p["held_early"], p["seconds"]) for p in passes]
    first_held = next(i for i, p in enumerate(passes) if p["held_early"])
    waits = [op for op in run.operations if str(getattr(op, "name", "")).startswith("recheck-")]
    assert len(waits) == len(passes) - 1

    requests = function_requests(testbed, offset)
    assert requests, "the audit log recorded none of the function's requests"
    # the first held pass watches the budget for 30 s after its evictions were refused, then ends: no budget watch later
    first_end = _logged_at(passes[first_held]) + 1
    later = [e for e in requests if first_end <= at(e) <= ended]
    counted = dict(by_verb_and_resource(later))
    # (a pass's look at the node, its presence and the cordon's witness, is one short watch of the node: one a pass)
    quick = len(passes) - first_held - 1  # the passes after it end at their first look
    watches = {k: v for k, v in counted.items() if k.startswith("watch")}
    assert set(watches) <= {"watch nodes"} and watches.get("watch nodes", 0) <= quick, (watches, quick)
    assert len(later) <= 12 * quick + 8, (quick, counted)  # each a few requests, then the verdict's
    # between passes nothing asks: the requests come in one burst per pass (polling asked about once a second)
    busy_seconds = {int(at(e)) for e in later}
    assert len(busy_seconds) <= 2 * quick + 3, (sorted(s - int(started) for s in busy_seconds), quick)


def test_a_held_drain_whose_watch_the_apiserver_cuts_still_sees_the_budget_lift_and_drains(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, bed_faults: BedFaults
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    hold_with_pdb(k8s, node, spare)
    held = sorted(p.metadata.name for p in pods_on(k8s, node))
    lam.configure("blue", DEADLINE_ASG_TERMINATE_SECONDS="180", FORCE_DELETE_ON_DEADLINE="false")

    def fault() -> None:
        wait_cordoned(k8s, node)
        time.sleep(8)  # the first pass is watching the budget
        bed_faults.stop("kube-apiserver")
        bed_faults.restart("kube-apiserver")
        k8s.policy.patch_namespaced_pod_disruption_budget("web", k8s.ns, {"spec": {"maxUnavailable": 1}})

    background = Background(fault)
    run = lam.run(terminate_event(aws, iid), timeout=300, skip_time=False)
    background.outcome(timeout=120)
    inst = instance_summary(run)
    assert inst["result"] == "drained", inst
    assert inst["report"]["evicted"] == len(held) and inst["report"]["forced"] == []
    assert pods_on(k8s, node) == []
