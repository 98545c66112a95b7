"""The AWS Health scheduled-change lifecycle on the real control plane: a change published ``upcoming`` may later be
``closed`` (done or cancelled) by a newer update of the same eventArn, delivered to its own execution, in any order.
A closed change is never drained; an upcoming one that a newer closed update overtook never drains at its old window
and leaves its node schedulable, returned to service if it had been cordoned for it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from drain_orchestrator.cli import main
from drain_orchestrator.returns import ANN_RETURN
from drain_orchestrator.scheduled_change import ANN_CHANGES, read_records
from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.kube import KubeScenario
from tests.integration.lambda_support import CallbackApi, LambdaHarness, Run
from tests.integration.return_support import node_events, owned_node_with_a_pod, pod_stayed, until

pytestmark = pytest.mark.integration
CLOSED = "health-scheduled-change-closed.json"  # the same eventArn as the upcoming sample, updated six days later
# the upcoming change's window, from its execution's start: long enough for the closed update to be recorded
# before the window on a loaded machine
WINDOW_IN = 25


def _upcoming(iid: str, start: float) -> dict[str, object]:
    return samples.health_event([iid], start=start)


def _closed(iid: str, start: float) -> dict[str, object]:
    return samples.health_event([iid], start=start, sample=CLOSED)


def _recorded(k8s: KubeScenario, node: str) -> dict[str, str]:
    """The status of each change recorded on the node, by eventArn."""
    raw = (k8s.core.read_node(node).metadata.annotations or {}).get(ANN_CHANGES)
    return {arn: r.status for arn, r in read_records(raw).items()}


def _one(run: Run) -> dict[str, object]:
    assert run.status == "SUCCEEDED", run.error
    (inst,) = run.result["instances"]
    return dict(inst)


def test_a_closed_scheduled_change_is_not_acted_on(aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness) -> None:
    iid, node, pod_uid = owned_node_with_a_pod(aws, k8s)
    lam.configure("blue", SCHEDULED_CHANGE_LEAD_SECONDS="0")
    # its window is now: an upcoming change would be drained at once
    inst = _one(lam.run(_closed(iid, time.time())))
    assert inst["decision"] == "change-closed"
    assert inst.get("cordoned") is None and inst.get("result") is None
    assert inst["returned"] == {"status": "not-ours", "reason": "change-closed", "at": inst["returned"]["at"]}
    n = k8s.core.read_node(node)
    assert not n.spec.unschedulable
    assert pod_stayed(k8s, node, pod_uid)
    assert "NodeCordoned" not in node_events(k8s, node)
    assert set(_recorded(k8s, node).values()) == {"closed"}  # a late upcoming update of it will find it closed
    assert lam.notifications() == []


def test_explain_says_a_closed_change_returns_its_node_where_its_upcoming_update_drains_it(
    testbed: Testbed,
    aws: AwsSeed,
    k8s: KubeScenario,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    iid, node, pod_uid = owned_node_with_a_pod(aws, k8s)
    monkeypatch.setenv("CLUSTER_NAMES", "blue")
    start = time.time() + 600

    def explained(event: dict[str, object]) -> dict[str, Any]:
        path = tmp_path / "event.json"
        path.write_text(json.dumps(event))
        capsys.readouterr()
        assert main(["explain", str(path), "--kubeconfig", str(testbed.kubeconfig)]) == 0
        (decision,) = json.loads(capsys.readouterr().out)["decisions"]
        return dict(decision)

    upcoming = explained(_upcoming(iid, start))
    assert (upcoming["reason"], upcoming["action"], upcoming["node"]) == ("owned-instance-tag", "drain", node)
    closed = explained(_closed(iid, start))
    assert (closed["reason"], closed["action"], closed["node"]) == ("change-closed", "return", node)
    assert (closed["owned"], closed["cluster"], closed["ec2_state"]) == (True, "blue", "running")
    # read-only: no record of the change, no cordon
    n = k8s.core.read_node(node)
    assert not n.spec.unschedulable
    assert ANN_CHANGES not in (n.metadata.annotations or {})
    assert pod_stayed(k8s, node, pod_uid)


def test_an_upcoming_change_closed_before_its_window_never_cordons(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, pod_uid = owned_node_with_a_pod(aws, k8s)
    lam.configure("blue", SCHEDULED_CHANGE_LEAD_SECONDS="0")
    start = time.time() + WINDOW_IN
    closing: dict[str, Run] = {}

    def close_it(_: CallbackApi) -> None:
        until("the upcoming update on the node", lambda: "upcoming" in _recorded(k8s, node).values())
        closing["run"] = lam.run_in_thread(_closed(iid, start))

    inst = _one(lam.run_answering(_upcoming(iid, start), close_it, timeout=180))
    assert inst["result"] == "cancelled"
    assert inst["returned"] == {"status": "not-cordoned", "reason": "change-closed"}
    assert not inst.get("cordoned")
    closed = _one(closing["run"])
    assert closed["decision"] == "change-closed" and closed["returned"]["status"] == "not-ours"
    assert set(_recorded(k8s, node).values()) == {"closed"}
    assert not k8s.core.read_node(node).spec.unschedulable
    assert pod_stayed(k8s, node, pod_uid)
    assert "NodeCordoned" not in node_events(k8s, node)


def test_an_upcoming_update_arriving_after_its_closed_one_is_not_acted_on(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    """The newest update wins by its own lastUpdatedTime, not by the order of delivery."""
    iid, node, pod_uid = owned_node_with_a_pod(aws, k8s)
    lam.configure("blue", SCHEDULED_CHANGE_LEAD_SECONDS="0")
    start = time.time() + 600
    _one(lam.run(_closed(iid, start)))
    inst = _one(lam.run(_upcoming(iid, start)))  # its wait for the window is skipped by the local runner
    assert inst["result"] == "cancelled"
    assert inst["returned"] == {"status": "not-cordoned", "reason": "change-closed"}
    assert not k8s.core.read_node(node).spec.unschedulable
    assert pod_stayed(k8s, node, pod_uid)
    assert "NodeCordoned" not in node_events(k8s, node)


def test_a_node_drained_for_an_upcoming_change_is_returned_when_the_change_closes(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, _ = owned_node_with_a_pod(aws, k8s)
    lam.configure("blue")
    start = time.time() + 600
    drained = _one(lam.run(_upcoming(iid, start)))  # its wait for the window is skipped by the local runner
    assert drained["result"] == "drained"
    # a retirement's instance goes away unless the change is closed: the node stays cordoned, marked for it
    assert drained["returned"] == {"status": "kept", "reason": "change-goes-on"}
    n = k8s.core.read_node(node)
    assert n.spec.unschedulable is True and ANN_RETURN in (n.metadata.annotations or {})

    closed = _one(lam.run(_closed(iid, start)))
    assert closed["decision"] == "change-closed"
    assert closed["returned"]["status"] == "returned" and closed["returned"]["reason"] == "change-closed"
    n = k8s.core.read_node(node)
    assert not n.spec.unschedulable
    assert ANN_RETURN not in (n.metadata.annotations or {})
    assert "ReturnedToService" in node_events(k8s, node)
    phases = [said["phase"] for said in lam.notifications()]
    assert phases[-1] == "returned-to-service"
