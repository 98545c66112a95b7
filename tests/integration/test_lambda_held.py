"""What holds a drain, through the Lambda on the real bed: a drain held by a PDB (or a gate) past HELD_NOTIFY_SECONDS
sends one ``held`` notification (PDBs, pods, since when, what the deadline brings), counts DrainHeldSeconds and marks
the node for ``status``; so does a drain held by the pods' own drain policies (do-not-disrupt, wait-for-completion,
a later evict-order behind a held pod), each named as its reason, until POLICY_HOLD_MAX_SECONDS lets the pods go; an
eviction webhook that is down is named in the verdict, the final notification and the logs."""

from __future__ import annotations

import json
import time
from datetime import datetime

import pytest

from drain_orchestrator.cli.status import cluster_status
from drain_orchestrator.drain.policy import DO_NOT_DISRUPT, ORDER_ANNOTATION, POLICY_ANNOTATION
from drain_orchestrator.kube.rest import Kube
from testbed.aws_seed import AwsSeed
from testbed.kube import KubeScenario
from tests.integration.admission_support import webhook_down
from tests.integration.gates_support import VolumeAttachments
from tests.integration.lambda_support import LambdaHarness
from tests.integration.notification_support import assert_shaped_like_its_example
from tests.integration.scenario_support import (
    Background,
    assert_completed_by_function,
    blue_asg_node,
    final_notification,
    hold_with_pdb,
    instance_summary,
    pods_on,
    set_pdb,
    spread,
    terminate_event,
)

pytestmark = pytest.mark.integration


def test_a_drain_held_by_a_pdb_is_said_once_with_the_pdbs_pods_and_what_the_deadline_brings(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    hold_with_pdb(k8s, node, spare)
    held_pods = sorted(f"{k8s.ns}/{p.metadata.name}" for p in pods_on(k8s, node))
    lam.configure(
        "blue",
        HELD_NOTIFY_SECONDS="4",
        DRAIN_PASS_SECONDS="5",
        DEADLINE_ASG_TERMINATE_SECONDS="25",
        FORCE_DELETE_ON_DEADLINE="false",
        LIFECYCLE_RESULT_ON_FAILURE="ABANDON",
    )
    started = time.time()
    run = lam.run(terminate_event(aws, iid))
    inst = instance_summary(run)
    assert inst["result"] == "deadline-missed"
    assert_completed_by_function(aws, iid, "ABANDON")
    notes = lam.notifications()
    (held,) = [n for n in notes if n["phase"] == "held"]
    assert (held["pdbs"], held["pods"], held["reasons"], held["at_deadline"]) == (
        ["web"],
        held_pods,
        ["pdb"],
        "abandon",
    )
    assert held["held_seconds"] >= 4
    assert_shaped_like_its_example(held, without=("approval_id", "approve"))  # HELD_APPROVAL is off here
    since = datetime.fromisoformat(held["held_since"]).timestamp()
    assert started - 1 <= since <= started + 20
    assert run.metric_total("DrainHeldSeconds") >= 4
    assert len([m for m in run.emf() if m["name"] == "DrainHeldSeconds"]) == 1
    # the verdict names the reason of each held pod
    assert sorted(h["pod"] for h in inst["report"]["held"]) == held_pods
    assert {(h["reason"], tuple(h["pdbs"]), h["status"]) for h in inst["report"]["held"]} == {("pdb", ("web",), 429)}
    # status shows the same, from the node's note: the held pods counted per namespace (anyone who may read nodes
    # reads the note), what holds each pod now from its own reading of pods and budgets
    (row,) = [s for s in cluster_status(Kube(k8s.api_client), "blue", None, now=time.time()) if s.node == node]
    by_namespace = f"{len(held_pods)} pods in {k8s.ns}"
    assert (row.held_since, row.held_by, row.held_reasons, row.at_deadline) == (
        held["held_since"],
        [by_namespace],
        ["pdb"],
        "abandon",
    )
    assert any(h.startswith(f"held since {held['held_since']} by {by_namespace}") for h in row.holds), row.holds
    note = k8s.core.read_node(node).metadata.annotations["drain-orchestrator.io/held"]
    assert json.loads(note)["pods_per_namespace"] == {k8s.ns: len(held_pods)}
    # a drain that outlives its first pass says it started, once, before it says it is held
    events = k8s.core.list_namespaced_event(
        "default", field_selector=f"involvedObject.name={node},source=drain-orchestrator"
    ).items
    events.sort(key=lambda e: int(e.metadata.resource_version))
    assert [e.reason for e in events] == ["DrainStarted", "DrainHeld", "DrainFailed"], [e.reason for e in events]
    assert events[0].message.startswith("cordoned and draining for asg-terminate since "), events[0].message
    assert events[1].message.endswith(f"(pdb): {by_namespace}; at the deadline: abandon"), events[1].message
    for public in (note, events[1].message):  # neither the pods' nor the budget's names
        assert not [p for p in held_pods if p.split("/")[1] in public] and '"web"' not in public, public


POLICY_HOLD_CAP = 20


def cap_policy_holds(lam: LambdaHarness) -> int:
    """Held notices after 4 s, annotation holds capped at POLICY_HOLD_CAP seconds and a hook deadline of 300 s: a drain
    that ends well before 300 s ended at the cap (or when its hold let go), not at the deadline. Returns the cap."""
    lam.configure(
        "blue",
        HELD_NOTIFY_SECONDS="4",
        DRAIN_PASS_SECONDS="5",
        POLICY_HOLD_MAX_SECONDS=str(POLICY_HOLD_CAP),
        DEADLINE_ASG_TERMINATE_SECONDS="300",
    )
    return POLICY_HOLD_CAP


@pytest.mark.parametrize(
    ("annotation", "value", "reason"),
    [
        (DO_NOT_DISRUPT, "true", "do-not-disrupt"),
        (POLICY_ANNOTATION, "wait-for-completion", "wait-for-completion"),
    ],
    ids=["do-not-disrupt", "wait-for-completion"],
)
def test_a_pod_its_drain_policy_lets_finish_holding_a_scale_in_is_said_before_the_deadline_and_goes_at_the_cap(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, annotation: str, value: str, reason: str
) -> None:
    iid, node, _spare = blue_asg_node(aws, k8s)
    k8s.bare_pod("pinned", node=node, grace=1, metadata_extra={"annotations": {annotation: value}})
    k8s.wait_for(lambda: any(k8s.pod_ready(p) for p in pods_on(k8s, node)), what="the pinned pod ready")
    cap = cap_policy_holds(lam)
    started = time.time()
    run = lam.run(terminate_event(aws, iid))
    ended = time.time()
    inst = instance_summary(run)
    assert inst["result"] == "drained"  # the annotation held it until the cluster's cap, not the hook's deadline
    assert_completed_by_function(aws, iid, "CONTINUE")
    assert not pods_on(k8s, node)
    (held,) = [n for n in lam.notifications() if n["phase"] == "held"]
    pod = f"{k8s.ns}/pinned"
    said = (held["pods"], held["reasons"], held["pdbs"], held["at_deadline"])
    assert said == ([pod], [reason], [], "evict")
    (entry,) = held["held"]
    assert (entry["pod"], entry["reason"], entry["status"]) == (pod, reason, None)
    said_at = datetime.fromisoformat(held["held_since"]).timestamp() + held["held_seconds"]
    assert held["held_seconds"] >= 4 and said_at < datetime.fromisoformat(held["deadline"]).timestamp()
    assert said_at < started + cap  # said while the pod still held the drain
    assert ended - started < 300 - 60  # gone at the cap, long before the deadline
    assert run.metric_total("DrainHeldSeconds") >= 4


def test_a_later_evict_order_held_behind_a_pod_a_budget_holds_is_said_and_goes_at_the_cap(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    # the namespace's first order (-5) under a budget that allows nothing, and a pod of a later order (0) behind it
    k8s.deployment_on("db", 1, [node], spare, grace=1)
    k8s.apps.patch_namespaced_deployment("db", k8s.ns, {"metadata": {"annotations": {ORDER_ANNOTATION: "-5"}}})
    k8s.pdb("db", {"app": "db"}, max_unavailable=0)
    k8s.wait_pdb("db", disruptions_allowed=0)
    k8s.bare_pod("late", node=node, grace=1)
    k8s.wait_for(lambda: len([p for p in pods_on(k8s, node) if k8s.pod_ready(p)]) == 2, what="db and late ready")
    (db,) = [f"{k8s.ns}/{p.metadata.name}" for p in pods_on(k8s, node) if p.metadata.name.startswith("db-")]
    late = f"{k8s.ns}/late"
    cap = cap_policy_holds(lam)

    def late_goes_first_then_the_budget_lets_go() -> float:
        """When the later pod left the node (the earlier one still held by its budget); then the budget's owner
        relaxes it, so the drain can end."""

        def on_node() -> set[str]:
            return {f"{k8s.ns}/{p.metadata.name}" for p in pods_on(k8s, node)}

        k8s.wait_for(lambda: late not in on_node(), timeout=150, what="the later evict-order evicted")
        gone_at = time.time()
        assert db in on_node(), "the earlier order left first: nothing held the later one"
        set_pdb(k8s, "db", max_unavailable=1)
        return gone_at

    started = time.time()
    order = Background(late_goes_first_then_the_budget_lets_go)
    run = lam.run(terminate_event(aws, iid))
    ended = time.time()
    late_gone_at = order.outcome(timeout=30)
    inst = instance_summary(run)
    assert inst["result"] == "drained"
    assert_completed_by_function(aws, iid, "CONTINUE")
    assert not pods_on(k8s, node)
    (held,) = [n for n in lam.notifications() if n["phase"] == "held"]
    said = (held["pods"], held["reasons"], held["pdbs"], held["at_deadline"])
    assert said == (sorted([db, late]), ["evict-order", "pdb"], ["db"], "force-delete")
    entries = {e["pod"]: (e["reason"], e["pdbs"], e["status"]) for e in held["held"]}
    assert entries == {db: ("pdb", ["db"], 429), late: ("evict-order", [], None)}
    (message,) = [e["message"] for e in held["held"] if e["pod"] == late]
    assert f"waits for the earlier orders of {k8s.ns}; {db} is held" in message
    said_at = datetime.fromisoformat(held["held_since"]).timestamp() + held["held_seconds"]
    assert held["held_seconds"] >= 4 and said_at < started + cap  # said while the order still held the later pod
    assert late_gone_at >= started + cap  # held by its order until the cap (counted from the cordon, after start)
    assert ended - started < 300 - 60  # the rest went once its budget let go, long before the deadline
    assert run.metric_total("DrainHeldSeconds") >= 4


def test_a_drain_released_before_held_notify_seconds_says_nothing(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    spread(k8s, node, spare, replicas=2)
    lam.configure("blue", DRAIN_PASS_SECONDS="5")  # the default: 600 s
    run = lam.run(terminate_event(aws, iid))
    assert instance_summary(run)["result"] == "drained"
    assert "held" not in {n["phase"] for n in lam.notifications()}
    assert run.metric_total("DrainHeldSeconds") == 0


def test_an_eviction_webhook_that_is_down_is_named_in_the_verdict_the_notification_and_the_logs(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    spread(k8s, node, spare, replicas=2)
    # the held notice needs two passes 5 s apart before the deadline: room for them on a loaded machine too
    lam.configure("blue", DRAIN_PASS_SECONDS="5", DEADLINE_ASG_TERMINATE_SECONDS="30", HELD_NOTIFY_SECONDS="5")
    with webhook_down(k8s) as hook:
        run = lam.run(terminate_event(aws, iid))
    inst = instance_summary(run)
    assert inst["result"] == "deadline-missed"
    assert_completed_by_function(aws, iid, "CONTINUE")  # LIFECYCLE_RESULT_ON_FAILURE's default
    held = inst["report"]["held"]
    assert len(held) == 2
    for h in held:
        assert (h["reason"], h["status"]) == ("webhook-failed", 500), h
        assert f'failed calling webhook "{hook}"' in h["message"]
    notes = final_notification(lam, "failed", "deadline-missed")
    (final,) = [n for n in notes if n["phase"] == "failed"]
    assert {h["reason"] for h in final["report"]["held"]} == {"webhook-failed"}
    # failing evictions are not forced at the deadline: the held notice says what the deadline brings instead
    (notice,) = [n for n in notes if n["phase"] == "held"]
    assert (notice["reasons"], notice["at_deadline"], notice["pdbs"]) == (["webhook-failed"], "continue", [])
    logged = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{") and "drain pass" in line]
    assert any("webhook-failed (500)" in entry for line in logged for entry in line.get("held", [])), logged


def test_a_gate_holding_the_instance_past_held_notify_seconds_is_said_once_naming_it(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    spread(k8s, node, spare, replicas=2)
    volumes = VolumeAttachments(k8s)
    try:
        stuck = volumes.attach(node, "pv-data")
        # the deadline leaves the gate room past the drain and its late look, even on a loaded machine
        lam.configure("blue", HELD_NOTIFY_SECONDS="3", DEADLINE_ASG_TERMINATE_SECONDS="40")
        run = lam.run(terminate_event(aws, iid))
    finally:
        volumes.cleanup()
    assert instance_summary(run)["result"] == "gate-held"
    (held,) = [n for n in lam.notifications() if n["phase"] == "held"]
    assert (held["reasons"], held["gates"], held["pods"], held["at_deadline"]) == (
        ["gate"],
        [f"{stuck} (pv-data)"],
        [],
        "continue",
    )
    assert held["held_seconds"] >= 3
    assert len([m for m in run.emf() if m["name"] == "DrainHeldSeconds"]) == 1
