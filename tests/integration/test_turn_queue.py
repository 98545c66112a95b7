"""A storm behind a slow budget, on the bed's real controllers: drains whose turn is far end their pass and wait
durably (releasing the Lambda they would hold), a few keep watching, and every node is still drained as fast as the
budget admits pods.

One pod per node (anti-affinity) under a budget that allows one disruption: a replacement becomes Ready only when
the next spare node opens, one every RISE_SECONDS, so the budget admits a pod that often, as a rollout with slow
readiness probes would. Each drain runs passes the way the workflow does (bench/turn_queue.py run_storm): a pass that
ends queued is followed by a wait until its return (the durable wait's stand-in), then a new pass."""

from __future__ import annotations

from typing import Any

import pytest
from bench.turn_queue import run_storm, slow_budget

from drain_orchestrator.drain.options import DrainOptions
from tests.integration.drain_support import drainer_client, pods_on

pytestmark = pytest.mark.integration

DRAINS = 12
RISE_SECONDS = 5.0
QUEUE_AFTER = 5.0  # a turn further than this is waited for away from the watch (the product's is longer)


def test_drains_whose_turn_is_far_wait_away_from_the_budget_and_every_node_is_drained_in_time(
    testbed: Any, k8s: Any
) -> None:
    nodes, spares = slow_budget(k8s, DRAINS)
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
