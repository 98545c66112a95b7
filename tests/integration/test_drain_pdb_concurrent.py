"""Several drains at once under one PodDisruptionBudget (a termination storm in small): the first wave waits for
its turn at the budget, and each rise is retried in proportion to what it allows, so the apiserver refuses few
evictions. Counted from the apiserver's own metrics
(tests in a session run one at a time, so the difference is this test's)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from bench.storm import apiserver_metrics, metric_sum

from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.engine import budget_turns
from drain_orchestrator.engine.drainer import Drainer
from drain_orchestrator.kube.node_claim import look_at
from drain_orchestrator.kube.rest import Kube
from tests.integration.drain_support import drain, drainer, pod_lists_of, pods_on, sending, set_unschedulable

pytestmark = pytest.mark.integration

DRAINS = 4
PODS_PER_NODE = 4
HOLD_SECONDS = 8  # how long the budget stays at 0 once every drain has been refused


def claim(kube: Kube, node: str) -> None:
    """The drain claim an execution takes before its first pass: what tells other drains this node is draining."""
    now = time.time()
    assert look_at(kube, node, f"run-{node}", now + 300, now, 120).claim.holder == f"run-{node}"


def _evictions(api: Any) -> dict[str, float]:
    """Eviction responses served so far, by HTTP code."""
    samples = apiserver_metrics(api)
    return {c: metric_sum(samples, "apiserver_request_total", code=c, subresource="eviction") for c in ("201", "429")}


def test_concurrent_drains_under_one_pdb_retry_only_what_a_budget_rise_allows(testbed: Any, k8s: Any) -> None:
    nodes = k8s.add_nodes(DRAINS)
    spares = k8s.add_nodes(2)
    replicas = DRAINS * PODS_PER_NODE
    for s in spares:
        set_unschedulable(k8s, s, True)
    k8s.deployment("web", replicas, nodes=[*nodes, *spares])
    k8s.wait_pods_ready("app=web", replicas, timeout=120)
    k8s.pdb("web", {"app": "web"}, max_unavailable=2)
    k8s.wait_pdb("web", disruptions_allowed=2)
    assert sum(len(pods_on(k8s, n)) for n in nodes) == replicas
    before = _evictions(k8s.api_client)
    reports: dict[str, Any] = {}
    gate = threading.Barrier(DRAINS)

    def run(node: str) -> None:
        with drainer(testbed) as kube:  # one client each, like one Lambda container per execution
            claim(kube, node)
            gate.wait()
            reports[node] = drain(kube, node, timeout=150)

    threads = [threading.Thread(target=run, args=(n,)) for n in nodes]
    for t in threads:
        t.start()
    # the spares are cordoned: the 2 evicted pods cannot be replaced, so the budget stays at 0 and every other
    # pod waits for it; hold the budget there for a while, as a slow rollout would
    k8s.wait_for(lambda: _evictions(k8s.api_client)["201"] - before["201"] >= 2, timeout=60, what="first evictions")
    time.sleep(HOLD_SECONDS)  # what is measured is what does not happen meanwhile
    held = _evictions(k8s.api_client)["429"] - before["429"]
    for s in spares:
        set_unschedulable(k8s, s, False)
    for t in threads:
        t.join(180)
    assert all(reports[n].drained for n in nodes), {n: r.remaining for n, r in reports.items()}
    after = _evictions(k8s.api_client)
    assert after["201"] - before["201"] == replicas
    refused = after["429"] - before["429"]
    # Other drains are under way, so each pod waits for its turn at the budget before its first eviction: the two
    # the budget allows go, the others are not sent (all at once, 14 would be refused here) and, while it allows
    # nothing, not retried (a backoff timer alone would retry each pod every few seconds: 75 refusals); once the
    # replacements come, each rise is tried for at most what it allows. Slack of two per drain: a drain that
    # looked before the others had cordoned evicts at once, and on a loaded apiserver an eviction can come back
    # 429 without naming the budget (its own conflict retries on the PDB's status gave up).
    assert held <= 2 * DRAINS, f"{held} refusals while the budget was held at 0"
    assert refused <= replicas, f"{refused} refused evictions for {replicas} pods"


def test_drains_waiting_on_one_budget_take_its_rises_in_turn_instead_of_all_at_once(testbed: Any, k8s: Any) -> None:
    """Every pod waits first (the budget allows nothing), then the budget opens one disruption at a time: each rise
    is taken by the drain whose hold-off ends first while the others, still watching, see it fall back and send
    nothing, instead of every waiting drain evicting at the rise and all but one being refused."""
    nodes = k8s.add_nodes(DRAINS)
    spares = k8s.add_nodes(2)
    replicas = DRAINS * 2
    for s in spares:
        set_unschedulable(k8s, s, True)
    k8s.deployment("web", replicas, nodes=[*nodes, *spares])
    k8s.wait_pods_ready("app=web", replicas, timeout=120)
    k8s.pdb("web", {"app": "web"}, max_unavailable=0)  # refused as "does not allow evicting pods currently"
    k8s.wait_pdb("web", disruptions_allowed=0)
    before = _evictions(k8s.api_client)
    reports: dict[str, Any] = {}
    gate = threading.Barrier(DRAINS)

    def run(node: str) -> None:
        with drainer(testbed) as kube:
            claim(kube, node)
            gate.wait()
            reports[node] = drain(kube, node, timeout=150)

    threads = [threading.Thread(target=run, args=(n,)) for n in nodes]
    for t in threads:
        t.start()
    k8s.wait_for(lambda: all(k8s.core.read_node(n).spec.unschedulable for n in nodes), timeout=60, what="cordons")
    time.sleep(3)  # the drains' first passes: what is measured is the refusals that do not happen
    first_wave = _evictions(k8s.api_client)["429"] - before["429"]
    for s in spares:
        set_unschedulable(k8s, s, False)
    # one disruption at a time: each replacement becoming Ready lets the next pod go
    k8s.policy.patch_namespaced_pod_disruption_budget("web", k8s.ns, {"spec": {"maxUnavailable": 1}})
    for t in threads:
        t.join(180)
    assert all(reports[n].drained for n in nodes), {n: r.remaining for n, r in reports.items()}
    after = _evictions(k8s.api_client)
    assert after["201"] - before["201"] == replicas
    at_rises = after["429"] - before["429"] - first_wave
    # all at once, each of the 8 rises would be tried by every drain still waiting (up to 3 refusals a rise); in
    # turn, a refusal is a hold-off that ended within one eviction's time of another's: none on an idle host, at
    # most one a rise on a loaded one
    assert at_rises <= replicas, f"{at_rises} refusals at {replicas} budget rises ({first_wave} in the first wave)"
    # the budget allowed nothing while other nodes drained: no pod was sent before its turn (all at once: 8 refused;
    # a drain that looked before any other had cordoned sends its 2)
    assert first_wave <= 2 * (DRAINS // 2), f"{first_wave} refusals in the first wave"


def test_a_drain_that_counted_the_storm_early_spreads_its_turns_over_the_drains_that_started_since(
    testbed: Any, k8s: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A storm's drains cordon over a second or two: one of the first counts few draining nodes, and its turns at
    a budget would be spread over too few drains. At the budget's first rise a moment later it counts again."""
    node, early, *later = k8s.add_nodes(6)
    k8s.deployment("web", 8, nodes=[node])
    k8s.wait_pods_ready("app=web", 8, timeout=120)
    k8s.pdb("web", {"app": "web"}, max_unavailable=1)
    k8s.wait_pdb("web", disruptions_allowed=1)
    options = DrainOptions(run_id="t")
    with drainer(testbed) as kube, Drainer(kube, node, options) as draining:
        for n in (node, early):
            set_unschedulable(k8s, n, True)
            claim(kube, n)
        report = draining.drain_pass()
        turns = draining.turns
        key = (k8s.ns, "web")
        # two nodes draining, a budget allowing one: every pod waits for its turn, spread over two drains
        assert report.evicted == [] and turns.contenders == {key: 2}, (report, turns.contenders)
        for n in later:  # the rest of the storm starts
            set_unschedulable(k8s, n, True)
            claim(kube, n)
        monkeypatch.setattr(budget_turns, "RECOUNT_AFTER_SECONDS", 0.0)  # the first count is "a moment ago" now
        draining.wait_between_passes(1.0, time.monotonic() + 15)

    assert turns.contenders == {key: 6}  # counted again at the rise: six drains now
    assert turns.recount is None  # once


def test_a_storm_drain_s_passes_after_its_first_read_its_pods_from_the_watch_of_its_list_however_long_it_waited(
    testbed: Any, k8s: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another node is draining and the budget allows nothing: the first wave waits for its turns, and the drain
    watches its node's pods from its LIST. Its waits on the budget run out (no turn) and its turns come long after
    that LIST (no LIST that old is reused on its own): each pass reads the node's pods from the watch instead of
    listing them again, a pod bound to the node meanwhile is drained (while the budget still allows nothing) and
    named, and the pods' going is seen on the same watch."""
    from drain_orchestrator.engine import node_view, waits

    node, other, spare = k8s.add_nodes(3)
    k8s.deployment_on("web", 3, [node], spare)
    k8s.pdb("web", {"app": "web"}, max_unavailable=0)
    k8s.wait_pdb("web", disruptions_allowed=0)
    monkeypatch.setattr(node_view, "TURN_LISTING_SECONDS", 0.0)  # every turn comes "long" after the LIST
    monkeypatch.setattr(waits, "BUDGET_WAIT_SECONDS", 1.0)  # waits on the budget run out: passes without a turn
    waiting, late_sent = threading.Event(), threading.Event()
    reports: list[Any] = []

    def progress(line: str) -> None:
        if "wait for their turn" in line:
            waiting.set()
        elif line == f"evicting pod {k8s.ns}/late":
            late_sent.set()

    with drainer(testbed) as kube:
        set_unschedulable(k8s, other, True)
        claim(kube, other)
        claim(kube, node)
        lists = pod_lists_of(kube)
        run = threading.Thread(
            target=lambda: reports.append(drain(kube, node, timeout=90, force=True, progress=progress))
        )
        run.start()
        assert waiting.wait(30), "the first wave did not wait for its turns"
        k8s.bare_pod("late", node=node)  # bound after the LIST, while the drain waits on the budget
        assert late_sent.wait(30), "the pod bound while the drain waited was not evicted before the budget opened"
        k8s.policy.patch_namespaced_pod_disruption_budget("web", k8s.ns, {"spec": {"maxUnavailable": 1}})
        run.join(120)
    (report,) = reports
    assert report.drained, report
    web = [p for p in report.evicted if p.startswith(f"{k8s.ns}/web-")]
    assert len(web) == 3 and f"{k8s.ns}/late" in report.evicted and len(report.evicted) == 4, report.evicted
    assert any(w.startswith("Warning: bound to the node after the cordon") and "/late" in w for w in report.warnings)
    assert pods_on(k8s, node) == []
    assert len(lists) == 1, f"{len(lists)} LISTs of the node's pods: passes after the first listed them again"


def test_a_wait_on_budgets_asks_their_watch_for_the_rest_of_the_pass_not_for_its_own_end(
    testbed: Any, k8s: Any
) -> None:
    """A storm drain's first pass is held (every pod waits for its turn), so its waits end at its held linger; the
    turns that come keep the pass going past it. The budgets' watch is asked for as long as the pass may come back
    for more waits (``keep_until``), not for the wait's own end: the waits after it read on from it, and the budgets
    are listed once."""
    node, other, spare = k8s.add_nodes(3)
    k8s.deployment_on("web", 3, [node], spare)
    k8s.pdb("web", {"app": "web"}, max_unavailable=0)
    k8s.wait_pdb("web", disruptions_allowed=0)
    with sending(testbed) as kube, Drainer(kube, node, DrainOptions(run_id="t")) as draining:
        set_unschedulable(k8s, other, True)
        claim(kube, other)
        claim(kube, node)
        assert draining.drain_pass().evicted == []  # the first wave waits for its turns
        started = time.monotonic()
        draining.wait_between_passes(1.0, started + 1.5, keep_until=started + 60)  # the budget allows nothing
        stream = draining.budgets.resume.stream if draining.budgets.resume is not None else None
        assert stream is not None and stream.until > started + 30, "the budgets' watch was asked for the wait only"
        k8s.wait_for(lambda: time.monotonic() > started + 3, timeout=10, what="a watch asked for the wait to end")
        k8s.policy.patch_namespaced_pod_disruption_budget("web", k8s.ns, {"spec": {"maxUnavailable": 1}})
        report = draining.drain(timeout=60)
    assert report.drained and len(report.evicted) == 3, report
    budgets = kube.to(f"/apis/policy/v1/namespaces/{k8s.ns}/poddisruptionbudgets")
    assert budgets == ["WATCH+LIST"], budgets  # listed once, with the watch every wait read on from
