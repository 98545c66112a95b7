"""A storm behind a slow budget, on the bed's real controllers: drains whose turn is far end their pass and wait
durably (releasing the Lambda they would hold), a few keep watching, and every node is still drained as fast as the
budget admits pods.

One pod per node (anti-affinity) under a budget that allows one disruption: a replacement becomes Ready only when
the test opens the next spare node, one every RISE_SECONDS, so the budget admits a pod that often, as a rollout with
slow readiness probes would. Each drain runs passes the way the workflow does (workflow/drain_flow.py): a pass that
ends queued is followed by a wait until its return (the durable wait's stand-in), then a new pass."""

from __future__ import annotations

import functools
import threading
import time
from typing import Any

import pytest

from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.engine.drainer import drain_node
from drain_orchestrator.engine.held_pass import HoldCheck
from drain_orchestrator.pacing import HELD_LINGER_SECONDS
from testbed.kube import UNSCHEDULABLE_TAINT
from tests.integration.drain_support import drainer, pods_on, set_unschedulable
from tests.integration.test_drain_pdb_concurrent import claim

pytestmark = pytest.mark.integration

DRAINS = 12
RISE_SECONDS = 5.0
QUEUE_AFTER = 5.0  # a turn further than this is waited for away from the watch (the product's is longer)


def _one_per_node(k8s: Any, nodes: list[str]) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": nodes}]}
    apart = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
    return {
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [apart]},
        }
    }


def test_drains_whose_turn_is_far_wait_away_from_the_budget_and_every_node_is_drained_in_time(
    testbed: Any, k8s: Any
) -> None:
    nodes = k8s.add_nodes(DRAINS)
    spares = k8s.add_nodes(DRAINS)
    for s in spares:
        set_unschedulable(k8s, s, True)
    for s in spares:
        k8s.wait_for(functools.partial(k8s.node_tainted, s, UNSCHEDULABLE_TAINT), what="the spares' cordon seen")
    k8s.deployment("web", DRAINS, spec_extra=_one_per_node(k8s, [*nodes, *spares]))
    k8s.wait_pods_ready("app=web", DRAINS, timeout=120)
    assert all(len(pods_on(k8s, n)) == 1 for n in nodes)
    k8s.pdb("web", {"app": "web"}, max_unavailable=1)
    k8s.wait_pdb("web", disruptions_allowed=1)

    lock = threading.Lock()
    in_pass: dict[str, float] = {}  # seconds each drain spent inside its passes (holding a Lambda)
    took: dict[str, float] = {}  # seconds from its start until drained
    queued: list[float] = []  # each queued pass's wait
    errors: list[BaseException] = []
    gate = threading.Barrier(DRAINS + 1)
    options = DrainOptions(queue_after=QUEUE_AFTER)

    def run(node: str) -> None:
        try:
            with drainer(testbed) as kube:
                claim(kube, node)
                gate.wait()
                start = time.monotonic()
                spent = 0.0
                while time.monotonic() - start < 180:
                    hold = HoldCheck(linger=HELD_LINGER_SECONDS)
                    began = time.monotonic()
                    report = drain_node(kube, node, options, timeout=120, hold=hold)
                    spent += time.monotonic() - began
                    if report.drained:
                        break
                    assert hold.ended, report
                    if hold.queued:
                        assert hold.wake_at is not None
                        with lock:
                            queued.append(hold.wake_at - time.time())
                    # the workflow's durable wait: no pass, no Lambda, until the pass's return (or a held recheck)
                    threading.Event().wait(max(1.0, (hold.wake_at or time.time() + 5.0) - time.time()))
                with lock:
                    in_pass[node], took[node] = spent, time.monotonic() - start
        except BaseException as exc:  # reported by the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in nodes]
    for t in threads:
        t.start()
    gate.wait()
    start = time.monotonic()
    # the budget admits a pod each time a replacement becomes Ready: one spare opens every RISE_SECONDS
    for s in spares:
        threading.Event().wait(RISE_SECONDS)
        set_unschedulable(k8s, s, False)
    opened = time.monotonic() - start
    for t in threads:
        t.join(200)
    assert not errors, errors
    assert sorted(took) == sorted(nodes), f"not drained: {set(nodes) - set(took)}"
    assert all(pods_on(k8s, n) == [] for n in nodes)
    # drains whose turn was far left the watch: the time spent in passes (a Lambda held) is well under the time the
    # drains took; with every drain watching to its turn, the two are equal
    assert queued, "no drain left the budget's watch"
    held_share = sum(in_pass.values()) / sum(took.values())
    assert held_share < 0.85, f"{held_share:.2f} of the drains' time spent in passes; queued waits {queued}"
    # a few drains kept watching, so the budget's rises were taken while the others were away: the last node is
    # drained within a queued wait (QUEUE_AFTER's order, at most the longest drawn) of the last spare's opening
    last = max(took.values())
    assert last <= opened + max(queued) + 15, f"last drained at {last:.0f} s, the last spare opened at {opened:.0f} s"
