"""Surge before evict, the decisions (drain/surge.py): when to surge, by how much, what is recorded, how it is
taken back. Pure: workload JSON in, patches out."""

from __future__ import annotations

import json
from typing import Any

from drain_orchestrator.drain.report import DrainReport, SurgeNote
from drain_orchestrator.drain.surge import (
    HOLDERS,
    ORIGINAL_MAX_REPLICAS,
    ORIGINAL_MIN_REPLICAS,
    ORIGINAL_REPLICAS,
    SURGE_ANNOTATION,
    DeploymentFacts,
    HpaFacts,
    SurgeStatus,
    decide,
    parse_holders,
    pdb_never_allows,
    replacement_ready,
    restore,
)
from drain_orchestrator.drain.workload_reads import selector_string, unschedulable_message


def deployment(
    replicas: int = 1,
    *,
    annotations: dict[str, str] | None = None,
    status: dict[str, int] | None = None,
    strategy: dict[str, Any] | None = None,
) -> DeploymentFacts:
    st = {"observedGeneration": 3, "replicas": replicas, "updatedReplicas": replicas, "availableReplicas": replicas}
    st.update(status or {})
    return DeploymentFacts.from_dict(
        {
            "metadata": {
                "namespace": "ns",
                "name": "web",
                "uid": "u1",
                "resourceVersion": "42",
                "generation": 3,
                "annotations": {SURGE_ANNOTATION: "true", **(annotations or {})},
            },
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                **({"strategy": strategy} if strategy is not None else {}),
            },
            "status": st,
        }
    )


SURGE_2 = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2}}


def hpa(min_replicas: int = 1, max_replicas: int = 3, annotations: dict[str, str] | None = None) -> HpaFacts:
    return HpaFacts.from_dict(
        {
            "metadata": {"name": "web", "resourceVersion": "7", "annotations": annotations or {}},
            "spec": {"minReplicas": min_replicas, "maxReplicas": max_replicas},
        }
    )


def surged(dep: DeploymentFacts, body: dict[str, Any]) -> DeploymentFacts:
    """The Deployment as the apiserver would store it after a merge patch."""
    ann = {**dep.annotations, **body["metadata"]["annotations"]}
    ann = {k: v for k, v in ann.items() if v is not None}
    replicas = body["spec"]["replicas"]
    return DeploymentFacts(**{**dep.__dict__, "annotations": ann, "replicas": replicas})


def test_a_singleton_is_surged_by_one_and_the_original_is_recorded_with_the_node() -> None:
    d = decide("annotated", deployment(1), None, "node-a", "run-1", 1)
    assert d.status is SurgeStatus.SURGED and d.patch is not None
    assert d.patch.via == "deployment" and (d.patch.before, d.patch.after) == (1, 2)
    meta = d.patch.body["metadata"]
    assert meta["resourceVersion"] == "42"  # a concurrent change makes the PATCH fail (409) instead of doubling
    assert meta["annotations"][ORIGINAL_REPLICAS] == "1"
    assert json.loads(meta["annotations"][HOLDERS]) == {"node-a": {"count": 1, "run": "run-1"}}


def test_a_replay_or_a_second_execution_for_the_same_node_never_surges_again() -> None:
    first = decide("annotated", deployment(1), None, "node-a", "run-1", 1)
    assert first.patch is not None
    after = surged(deployment(1), first.patch.body)
    again = decide("annotated", after, None, "node-a", "run-2", 1)
    assert again.status is SurgeStatus.SURGED and again.patch is None


def test_several_pods_of_one_deployment_on_the_node_surge_by_their_number() -> None:
    d = decide("always", deployment(3, strategy=SURGE_2), None, "node-a", "r", 2)
    assert d.patch is not None and (d.patch.before, d.patch.after) == (3, 5)


def test_two_nodes_each_hold_their_own_surge_and_the_last_one_restores_the_original() -> None:
    a = decide("annotated", deployment(2, strategy=SURGE_2), None, "node-a", "r1", 1)
    assert a.patch is not None
    dep = surged(deployment(2, strategy=SURGE_2), a.patch.body)
    b = decide("annotated", dep, None, "node-b", "r2", 1)
    assert b.patch is not None and (b.patch.before, b.patch.after) == (3, 4)
    assert ORIGINAL_REPLICAS not in b.patch.body["metadata"]["annotations"]  # the first original stays
    dep = surged(dep, b.patch.body)
    back_a = restore(dep, None, "node-a")
    assert back_a is not None and back_a.after == 3
    dep = surged(dep, back_a.body)
    assert ORIGINAL_REPLICAS in dep.annotations and set(dep.holders) == {"node-b"}
    back_b = restore(dep, None, "node-b")
    assert back_b is not None and back_b.after == 2
    dep = surged(dep, back_b.body)
    assert HOLDERS not in dep.annotations and ORIGINAL_REPLICAS not in dep.annotations
    assert restore(dep, None, "node-b") is None  # restoring twice changes nothing


def test_a_scale_by_someone_else_during_the_surge_survives_the_restore() -> None:
    a = decide("annotated", deployment(2), None, "node-a", "r", 1)
    assert a.patch is not None
    dep = surged(deployment(2), a.patch.body)
    dep = DeploymentFacts(**{**dep.__dict__, "replicas": 6})  # a user scaled 3 -> 6 meanwhile
    back = restore(dep, None, "node-a")
    assert back is not None and back.after == 5


def test_an_hpa_managed_deployment_raises_the_hpa_floor_not_spec_replicas() -> None:
    d = decide("annotated", deployment(1), hpa(1, 1), "node-a", "r", 1)
    assert d.patch is not None and d.patch.via == "hpa"
    spec, ann = d.patch.body["spec"], d.patch.body["metadata"]["annotations"]
    assert spec == {"minReplicas": 2, "maxReplicas": 2}  # max raised too: a floor above the ceiling is invalid
    assert (ann[ORIGINAL_MIN_REPLICAS], ann[ORIGINAL_MAX_REPLICAS]) == ("1", "1")
    held = hpa(2, 2, {k: v for k, v in ann.items() if v is not None})
    back = restore(deployment(2), held, "node-a")
    assert back is not None and back.body["spec"] == {"minReplicas": 1, "maxReplicas": 1}
    assert all(v is None for v in back.body["metadata"]["annotations"].values())


def test_the_hpa_floor_starts_from_the_current_replicas_when_the_hpa_scaled_above_it() -> None:
    d = decide("annotated", deployment(4), hpa(2, 10), "node-a", "r", 1)
    assert d.patch is not None and d.patch.body["spec"] == {"minReplicas": 5, "maxReplicas": 10}


def test_modes_and_the_opt_out() -> None:
    plain = DeploymentFacts(**{**deployment(1).__dict__, "annotations": {}})
    assert decide("annotated", plain, None, "n", "r", 1).status is SurgeStatus.NOT_ENABLED
    assert decide("always", plain, None, "n", "r", 1).status is SurgeStatus.SURGED
    out = deployment(1, annotations={SURGE_ANNOTATION: "false"})
    assert decide("always", out, None, "n", "r", 1).status is SurgeStatus.NOT_ENABLED
    assert decide("never", deployment(1), None, "n", "r", 1).status is SurgeStatus.NOT_ENABLED


def test_a_deployment_mid_rollout_or_paused_is_not_surged() -> None:
    rolling = deployment(2, status={"replicas": 3, "updatedReplicas": 1})
    d = decide("annotated", rolling, None, "n", "r", 1)
    assert d.status is SurgeStatus.ROLLOUT and d.patch is None and "1 of 3" in d.detail
    unobserved = deployment(1, status={"observedGeneration": 2})
    assert decide("annotated", unobserved, None, "n", "r", 1).status is SurgeStatus.ROLLOUT
    paused = DeploymentFacts(**{**deployment(1).__dict__, "paused": True})
    d = decide("annotated", paused, None, "n", "r", 1)
    assert d.status is SurgeStatus.PAUSED and d.patch is None and "resumed" in d.detail


def test_a_budget_no_scale_can_open_is_reported_not_surged() -> None:
    assert pdb_never_allows({"spec": {"maxUnavailable": 0}})
    assert pdb_never_allows({"spec": {"minAvailable": "100%"}})
    assert not pdb_never_allows({"spec": {"minAvailable": 1}})
    d = decide("annotated", deployment(1), None, "n", "r", 1, ["web-pdb"])
    assert d.status is SurgeStatus.FUTILE and "web-pdb" in d.detail and d.patch is None


def test_the_surge_is_taken_back_once_the_pods_left_the_node_and_the_replacements_are_available() -> None:
    a = decide("annotated", deployment(1), None, "n", "r", 1)
    assert a.patch is not None
    dep = surged(deployment(1, status={"availableReplicas": 2}), a.patch.body)
    assert not replacement_ready(dep, None, left_on_node=1)  # the original is still there
    assert replacement_ready(dep, None, left_on_node=0)
    starved = DeploymentFacts(**{**dep.__dict__, "available_replicas": 0})
    assert not replacement_ready(starved, None, left_on_node=0)


def test_selector_and_unschedulable_message() -> None:
    sel = {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]}
    assert selector_string(sel) == "app=web,tier in (a)"
    pending = {
        "metadata": {},
        "status": {
            "phase": "Pending",
            "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/2 nodes"}
            ],
        },
    }
    assert unschedulable_message([{"metadata": {}, "status": {"phase": "Running"}}, pending]) == "0/2 nodes"
    assert unschedulable_message([{"metadata": {}, "status": {"phase": "Pending"}}]) is None


def test_report_keeps_one_note_per_workload_with_the_surge_figures() -> None:
    total = DrainReport(node="n")
    first = DrainReport(
        node="n", surge=[SurgeNote("Deployment ns/web", "surged", "replicas 1 -> 2", ["ns/p"], "deployment", 1, 2)]
    )
    later = DrainReport(node="n", surge=[SurgeNote("Deployment ns/web", "restored", "replicas 2 -> 1: ready")])
    total.absorb(first)
    total.absorb(later)
    (note,) = DrainReport.from_dict(total.to_dict()).surge
    assert note.status == "restored" and (note.replicas_before, note.replicas_after) == (1, 2)
    assert "replicas 1 -> 2" in note.detail and "ready" in note.detail


def test_a_surge_never_goes_past_the_deployments_own_max_surge_nor_the_cap() -> None:
    # the default maxSurge, 25% of 3 replicas rounded up: one extra replica for two refused pods
    d = decide("always", deployment(3), None, "node-a", "r", 2)
    assert d.patch is not None and (d.patch.before, d.patch.after) == (3, 4)
    assert json.loads(d.patch.body["metadata"]["annotations"][HOLDERS])["node-a"]["count"] == 1
    # a second node's drain finds the room taken: no more replicas, the budget decides as without a surge
    dep = surged(deployment(3), d.patch.body)
    other = decide("always", dep, None, "node-b", "r2", 1)
    assert other.status is SurgeStatus.LIMIT and other.patch is None
    assert "1 extra replica(s) in place for other nodes; its maxSurge allows 1" in other.detail
    # SURGE_MAX_REPLICAS caps a generous maxSurge
    wide = deployment(10, strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "100%"}})
    capped = decide("always", wide, None, "node-a", "r", 8, limit=3)
    assert capped.patch is not None and capped.patch.after == 13
    # Recreate: its pods never run beside each other, so no surge; nor with maxSurge 0
    for strategy in ({"type": "Recreate"}, {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0}}):
        none = decide("always", deployment(2, strategy=strategy), None, "node-a", "r", 1)
        assert none.status is SurgeStatus.LIMIT and none.patch is None


def test_holders_and_counts_a_namespace_user_wrote_are_not_read_as_ours() -> None:
    raw = json.dumps(
        {
            "node-a": {"count": 1, "run": "r"},
            "../../api/v1/secrets": {"count": 1},
            "node-b": {"count": True},
            "node-c": {"count": 10**12},
            "node-d": "x",
        }
    )
    assert set(parse_holders(raw)) == {"node-a"}
    dep = deployment(2, annotations={ORIGINAL_REPLICAS: "²"})  # a digit to str.isdigit, not a number
    assert dep.original_replicas is None
