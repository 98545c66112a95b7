"""Escalation with an approval, through the Lambda on the real bed: with HELD_APPROVAL=on the ``held`` notification
carries an approval id; the CLI's decision, sent to the local durable runner's callback API, steers the drain
(``--force`` deletes the pods a PDB protects now, ``--continue`` completes the hook and stops), and the final
notification says who decided and when."""

from __future__ import annotations

import time
from typing import Any

import pytest

from drain_orchestrator.cli.approve import ApprovalGone, decision_of, send_decision
from testbed.aws_seed import AwsSeed
from testbed.kube import KubeScenario
from tests.integration.lambda_support import CallbackApi, LambdaHarness
from tests.integration.scenario_support import (
    assert_completed_by_function,
    blue_asg_node,
    hold_with_pdb,
    instance_summary,
    pods_on,
    terminate_event,
)

pytestmark = pytest.mark.integration

OPERATOR = "arn:aws:iam::123456789012:user/alice"


def _held_config(lam: LambdaHarness) -> None:
    lam.configure(
        "blue",
        HELD_APPROVAL="on",
        HELD_NOTIFY_SECONDS="3",
        DRAIN_PASS_SECONDS="5",
        RECHECK_MAX_SECONDS="2",
        DEADLINE_ASG_TERMINATE_SECONDS="150",
        FORCE_DELETE_ON_DEADLINE="false",
        LIFECYCLE_RESULT_ON_FAILURE="ABANDON",
    )


def _answer(lam: LambdaHarness, choice: str, notes: list[dict[str, Any]]) -> Any:
    """Wait for the held notice, check that unknown ids are refused, send ``choice``, and that a second answer to
    the same approval is refused."""

    def answer(api: CallbackApi) -> None:
        end = time.time() + 90
        while not any(n["phase"] == "held" for n in notes):
            assert time.time() < end, f"no held notification: {notes}"
            notes.extend(lam.notifications())
            time.sleep(0.5)
        (held,) = [n for n in notes if n["phase"] == "held"]
        approval_id = held["approval_id"]
        with pytest.raises(ApprovalGone):
            send_decision(api, "bm8tc3VjaC1hcHByb3ZhbA==", decision_of(choice, OPERATOR, time.time()))
        send_decision(api, approval_id, decision_of(choice, OPERATOR, time.time()))
        with pytest.raises(ApprovalGone):
            send_decision(api, approval_id, decision_of("wait", OPERATOR, time.time()))

    return answer


def test_force_deletes_the_pods_a_pdb_protects_now_and_the_hook_continues(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    hold_with_pdb(k8s, node, spare)
    held_pods = sorted(f"{k8s.ns}/{p.metadata.name}" for p in pods_on(k8s, node))
    _held_config(lam)
    notes: list[dict[str, Any]] = []
    started = time.time()
    run = lam.run_answering(terminate_event(aws, iid), _answer(lam, "force", notes))
    took = time.time() - started
    notes.extend(lam.notifications())
    inst = instance_summary(run)
    assert inst["result"] == "drained", inst
    assert sorted(inst["report"]["forced"]) == held_pods
    assert took < 100, "the decision, not the deadline (150 s), ended the hold"
    assert_completed_by_function(aws, iid, "CONTINUE")
    (held,) = [n for n in notes if n["phase"] == "held"]
    assert held["approve"].startswith(f"drain-orchestrator approve {held['approval_id']} ")
    (final,) = [n for n in notes if n["phase"] in ("completed", "failed", "stopped")]
    assert (final["phase"], final["approval"]["decision"], final["approval"]["by"]) == ("completed", "force", OPERATOR)
    assert not pods_on(k8s, node)
    assert '"approval decided"' in run.stdout and OPERATOR in run.stdout


def test_continue_completes_the_hook_with_continue_and_stops_draining(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    hold_with_pdb(k8s, node, spare)
    held_pods = sorted(f"{k8s.ns}/{p.metadata.name}" for p in pods_on(k8s, node))
    _held_config(lam)
    notes: list[dict[str, Any]] = []
    run = lam.run_answering(terminate_event(aws, iid), _answer(lam, "continue", notes))
    notes.extend(lam.notifications())
    inst = instance_summary(run)
    assert inst["result"] == "approved-continue", inst
    # CONTINUE although LIFECYCLE_RESULT_ON_FAILURE is ABANDON: the operator's word
    assert_completed_by_function(aws, iid, "CONTINUE")
    (final,) = [n for n in notes if n["phase"] in ("completed", "failed", "stopped")]
    assert final["phase"] == "stopped"
    assert (final["approval"]["decision"], final["approval"]["by"]) == ("continue", OPERATOR)
    assert final["approval"]["at"].endswith("Z")
    # nothing was forced: the pods the PDB protects are still there
    assert sorted(f"{k8s.ns}/{p.metadata.name}" for p in pods_on(k8s, node)) == held_pods


def test_a_decision_that_never_comes_leaves_the_deadline_policy_and_the_expired_id_is_refused(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    from datetime import datetime

    from drain_orchestrator.workflow.approval import MARGIN_SECONDS

    iid, node, spare = blue_asg_node(aws, k8s)
    hold_with_pdb(k8s, node, spare)
    _held_config(lam)
    lam.monkeypatch.setenv("DEADLINE_ASG_TERMINATE_SECONDS", "60")  # the notice leaves the approval open
    notes: list[dict[str, Any]] = []

    def late(api: CallbackApi) -> None:
        end = time.time() + 60
        while not any(n["phase"] == "held" for n in notes):
            assert time.time() < end, f"no held notification: {notes}"
            notes.extend(lam.notifications())
            time.sleep(0.5)
        (held,) = [n for n in notes if n["phase"] == "held"]
        assert "approval_id" in held, held
        closes = datetime.fromisoformat(held["deadline"]).timestamp() - MARGIN_SECONDS
        while time.time() < closes + 3:  # past the approval's timeout, before the drain's deadline
            time.sleep(0.5)
        with pytest.raises(ApprovalGone):
            send_decision(api, held["approval_id"], decision_of("force", OPERATOR, time.time()))

    run = lam.run_answering(terminate_event(aws, iid), late)
    notes.extend(lam.notifications())
    inst = instance_summary(run)
    assert inst["result"] == "deadline-missed", inst
    assert "approval" not in inst and not inst["report"]["forced"]
    assert_completed_by_function(aws, iid, "ABANDON")
    assert '"approval over without a decision"' in run.stdout
