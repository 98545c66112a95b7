"""A storm behind a slow budget, on the bed's real controllers: drains whose turn is far end their pass and wait
durably (releasing the Lambda they would hold), a few keep watching, and every node is still drained as fast as the
budget admits pods.

One pod per node (anti-affinity) under a budget that allows one disruption: a replacement becomes Ready only when
the next spare node opens, one every few seconds, so the budget admits a pod that often, as a rollout with slow
readiness probes would (bench/turn_queue.py slow_budget)."""

from __future__ import annotations

import json
import math
import threading
from typing import Any

import pytest
from bench import storm
from bench.turn_queue import open_spares, run_storm, slow_budget

from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.turn_queue import QUEUE_AFTER_SECONDS, QUEUE_WATCHED_MIN_SECONDS, QUEUE_WATCHERS
from testbed.aws_seed import AwsSeed
from testbed.kube import KubeScenario
from tests.integration.drain_support import drainer_client, pods_on
from tests.integration.lambda_support import LambdaHarness

pytestmark = pytest.mark.integration

DRAINS = 12
RISE_SECONDS = 5.0
QUEUE_AFTER = 5.0  # a turn further than this is waited for away from the watch (the product's is longer)
OWNED = {"kubernetes.io/cluster/blue": "owned"}


def test_drains_whose_turn_is_far_wait_away_from_the_budget_and_every_node_is_drained_in_time(
    testbed: Any, k8s: Any
) -> None:
    """The engine's passes, run as the workflow runs them (bench/turn_queue.py run_storm): a pass that ends queued is
    followed by a wait until its return (the durable wait's stand-in), then a new pass."""
    nodes = k8s.add_nodes(DRAINS)
    spares = slow_budget(k8s, nodes)
    run = run_storm(
        lambda: drainer_client(testbed), k8s, nodes, spares, DrainOptions(queue_after=QUEUE_AFTER), RISE_SECONDS
    )
    assert not run.errors, run.errors
    assert sorted(run.took) == sorted(nodes), f"not drained: {set(nodes) - set(run.took)}"
    assert all(pods_on(k8s, n) == [] for n in nodes)
    # drains whose turn was far left the watch: the time spent in passes (a Lambda held) is well under the time the
    # drains took; with every drain watching to its turn, the two are equal
    assert run.queued, "no drain left the budget's watch"
    assert run.held_share < 0.85, f"{run.held_share:.2f} of the drains' time spent in passes; waits {run.queued}"
    # a few drains kept watching, so the budget's rises were taken while the others were away: the last node is
    # drained within a queued wait (at most the longest drawn) of the last spare's opening
    late = f"last drained at {run.last:.0f} s, the last spare opened at {run.opened:.0f} s"
    assert run.last <= run.opened + max(run.queued) + 15, late


def test_through_the_handler_a_far_turn_ends_the_pass_queued_and_the_flow_waits_for_it_durably(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    """Terminate hooks of a whole group behind the slow budget, through the handler with the shipped rule (a turn
    more than 20 s away): a pass checkpoints ``queued``, the flow's next operation is a durable wait, then a pass that
    drains; every hook is completed."""
    aws.eks_cluster("blue")
    fleet = storm.seed_fleet(aws, k8s, "ng-queue", DRAINS, OWNED)
    spares = slow_budget(k8s, fleet.nodes)
    lam.configure("blue")
    fleet.start_actions(aws)
    runs = [lam.start(fleet.event(iid), timeout=420) for iid in fleet.instance_ids]
    opener = threading.Thread(target=open_spares, args=(k8s, spares, 8.0), daemon=True)
    opener.start()
    done = [r.finish() for r in runs]
    opener.join(60)
    assert [d.status for d in done] == ["SUCCEEDED"] * DRAINS, [d.error for d in done]
    assert [d.result["instances"][0]["result"] for d in done if d.result] == ["drained"] * DRAINS
    assert all(pods_on(k8s, n) == [] for n in fleet.nodes)
    queued = 0
    for d in done:
        ops = sorted(d.operations, key=lambda op: op.start_timestamp.timestamp() if op.start_timestamp else math.inf)
        names = [str(op.name or "") for op in ops]  # in the order they began
        for n in range(len(names)):
            step = f"drain-pass-{n}"
            if step not in names or not d.step(step).get("queued"):
                continue
            queued += 1
            later = names[names.index(step) + 1 :]
            assert f"drain-pass-{n + 1}" in later, later  # a pass follows the wait: the drain goes on
            # between them, the wait for its turn: durable, no pass and no Lambda held meanwhile
            between = later[: later.index(f"drain-pass-{n + 1}")]
            assert f"recheck-{n}" in between, between
    assert queued >= 1, "no pass ended queued"
    # each queued pass logs what it judged its turn from, so an operator can tell a long wait's why
    lines = [json.loads(x) for x in lam.collect().stdout.splitlines() if x.startswith("{") and '"drain pass"' in x]
    looks = [x["queue"] for x in lines if x.get("message") == "drain pass" and x.get("queued")]
    assert len(looks) == queued, lines
    for look in looks:
        assert look["budget"].endswith("/web"), look
        assert look["wait_seconds"] >= QUEUE_AFTER_SECONDS, look
        # judged on the seconds its waits read the watch: at least the minimum it judges on
        assert look["watched_seconds"] >= QUEUE_WATCHED_MIN_SECONDS and look["falls_seen"] >= 1, look
        assert look["drains_left"] > QUEUE_WATCHERS * look["allows"], look
