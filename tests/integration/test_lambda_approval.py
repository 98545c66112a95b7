"""Escalation with an approval, through the Lambda on the real bed: with HELD_APPROVAL=on the ``held`` notification
carries an approval id; the CLI's decision, sent to the local durable runner's callback API, steers the drain
(``--force`` deletes the pods a PDB protects now, ``--continue`` / ``--abandon`` complete the hook and stop,
``--wait`` leaves the deadline policy), and the final notification and the log say who decided and when. A
decision naming another node is refused and changes nothing; the approval id is never in a log line.

The waits poll with generous timeouts and the assertions are about outcomes (results, the hook's answer, which
steps ran after the decision), not durations: the bed shares its two cores with other work."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from drain_orchestrator.cli.approve import ApprovalGone, decision_of, send_decision
from drain_orchestrator.workflow.approval import MARGIN_SECONDS
from testbed.aws_seed import AwsSeed
from testbed.kube import KubeScenario
from tests.integration.lambda_support import CallbackApi, LambdaHarness
from tests.integration.notification_support import assert_shaped_like_its_example
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
# how long the approval of a drain that runs to its deadline stays open (its deadline less MARGIN_SECONDS): the held
# notice, due 3 s after the first held pass (about 10 s into the drain), comes well within it on a loaded machine;
# what those drains show happens at the deadline, whose length they do not depend on
OPEN_FOR = 45


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


def _held_notice(lam: LambdaHarness, notes: list[dict[str, Any]], within: float) -> dict[str, Any]:
    """The one ``held`` notification, read from the topic's queue (polled until ``within`` seconds have passed)."""
    end = time.time() + within
    while not any(n["phase"] == "held" for n in notes):
        assert time.time() < end, f"no held notification within {within:.0f} s: {notes}"
        notes.extend(lam.notifications())
        time.sleep(0.5)
    (held,) = [n for n in notes if n["phase"] == "held"]
    return held


def _answer(lam: LambdaHarness, choice: str, notes: list[dict[str, Any]]) -> Any:
    """Wait for the held notice, check that unknown ids are refused, send ``choice`` for the notice's node, and that a
    second answer to the same approval is refused."""

    def answer(api: CallbackApi) -> None:
        held = _held_notice(lam, notes, 120)
        approval_id, node = held["approval_id"], held["node"]
        with pytest.raises(ApprovalGone):
            send_decision(api, "bm8tc3VjaC1hcHByb3ZhbA==", decision_of(choice, OPERATOR, time.time(), node))
        send_decision(api, approval_id, decision_of(choice, OPERATOR, time.time(), node, held["event_id"]))
        with pytest.raises(ApprovalGone):
            send_decision(api, approval_id, decision_of("wait", OPERATOR, time.time(), node))

    return answer


def _log_lines(run: Any) -> list[str]:
    """The function's own log lines (Powertools JSON, with a level), stdout and stderr."""
    lines = (run.stdout + "\n" + run.stderr).splitlines()
    return [x for x in lines if x.startswith("{") and '"level"' in x]


def test_force_deletes_the_pods_a_pdb_protects_now_and_the_hook_continues(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    hold_with_pdb(k8s, node, spare)
    held_pods = sorted(f"{k8s.ns}/{p.metadata.name}" for p in pods_on(k8s, node))
    _held_config(lam)
    notes: list[dict[str, Any]] = []
    run = lam.run_answering(terminate_event(aws, iid), _answer(lam, "force", notes))
    notes.extend(lam.notifications())
    inst = instance_summary(run)
    assert inst["result"] == "drained", inst
    # FORCE_DELETE_ON_DEADLINE is off: only the decision can have deleted them
    assert sorted(inst["report"]["forced"]) == held_pods
    assert_completed_by_function(aws, iid, "CONTINUE")
    (held,) = [n for n in notes if n["phase"] == "held"]
    assert held["approve"].startswith(f"drain-orchestrator approve {held['approval_id']} --node {node} ")
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
    # both are what docs/notifications.md shows for their phase
    assert_shaped_like_its_example(final)
    assert_shaped_like_its_example(next(n for n in notes if n["phase"] == "held"))
    assert final["approval"]["at"].endswith("Z")
    # nothing was forced: the pods the PDB protects are still there
    assert sorted(f"{k8s.ns}/{p.metadata.name}" for p in pods_on(k8s, node)) == held_pods


def _decided_log(stdout: str) -> dict[str, Any]:
    """The ``approval decided`` log line (Powertools JSON) of the run: a replay of the execution logs it again,
    always with the same decision."""
    lines = [json.loads(x) for x in stdout.splitlines() if x.startswith("{") and '"approval decided"' in x]
    lines = [x for x in lines if x.get("message") == "approval decided"]
    assert lines, "no 'approval decided' log line"
    assert len({json.dumps(x["approval"], sort_keys=True) for x in lines}) == 1, lines
    return dict(lines[0])


def _passes_after_the_decision(run: Any) -> list[int]:
    """The drain passes that ran after the decision. Look ``approval-N`` comes just before pass ``drain-pass-N``,
    and once decided the approval is not looked at again: the last look is the one that saw the decision."""
    names = [str(getattr(op, "name", "") or "") for op in run.operations]
    looks = [int(name.rsplit("-", 1)[1]) for name in names if name.startswith("approval-")]
    passes = [int(name.rsplit("-", 1)[1]) for name in names if name.startswith("drain-pass-")]
    assert looks and passes, names
    return sorted(n for n in passes if n >= max(looks))


def test_abandon_completes_the_hook_with_abandon_and_stops_draining(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    hold_with_pdb(k8s, node, spare)
    held_pods = sorted(f"{k8s.ns}/{p.metadata.name}" for p in pods_on(k8s, node))
    _held_config(lam)
    lam.monkeypatch.setenv("LIFECYCLE_RESULT_ON_FAILURE", "CONTINUE")  # ABANDON can only be the operator's word
    notes: list[dict[str, Any]] = []
    run = lam.run_answering(terminate_event(aws, iid), _answer(lam, "abandon", notes))
    notes.extend(lam.notifications())
    inst = instance_summary(run)
    assert inst["result"] == "approved-abandon", inst
    assert_completed_by_function(aws, iid, "ABANDON")
    assert (inst["approval"]["decision"], inst["approval"]["by"]) == ("abandon", OPERATOR)
    assert inst["approval"]["node"] == node
    (final,) = [n for n in notes if n["phase"] in ("completed", "failed", "stopped")]
    assert final["phase"] == "stopped" and final["result"] == "approved-abandon", final
    assert final["approval"] == inst["approval"] and final["approval"]["at"].endswith("Z")
    logged = _decided_log(run.stdout)
    assert logged["approval"] == inst["approval"] and "approval_id" not in logged, logged
    # the approval id answers the drain: it is in the held notification only, in no log line of the function
    approval_id = next(n for n in notes if n["phase"] == "held")["approval_id"]
    lines = _log_lines(run)
    assert any('"drain held"' in x for x in lines) and any('"approval decided"' in x for x in lines)
    assert [x for x in lines if approval_id in x] == []
    # it stopped: no drain pass after the decision, nothing forced, the pods the PDB protects still there
    assert _passes_after_the_decision(run) == []
    assert not inst["report"]["forced"]
    assert sorted(f"{k8s.ns}/{p.metadata.name}" for p in pods_on(k8s, node)) == held_pods


def test_wait_keeps_draining_and_the_deadline_brings_its_policy(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    hold_with_pdb(k8s, node, spare)
    held_pods = sorted(f"{k8s.ns}/{p.metadata.name}" for p in pods_on(k8s, node))
    _held_config(lam)
    # the deadline's policy: the pods the PDB protects are deleted just before it, then the hook continues
    lam.monkeypatch.setenv("FORCE_DELETE_ON_DEADLINE", "true")
    lam.monkeypatch.setenv("DEADLINE_ASG_TERMINATE_SECONDS", str(OPEN_FOR + MARGIN_SECONDS))
    notes: list[dict[str, Any]] = []
    run = lam.run_answering(terminate_event(aws, iid), _answer(lam, "wait", notes))
    notes.extend(lam.notifications())
    inst = instance_summary(run)
    (held,) = [n for n in notes if n["phase"] == "held"]
    assert held["at_deadline"] == "force-delete", held
    assert inst["result"] == "drained", inst
    assert sorted(inst["report"]["forced"]) == held_pods
    assert_completed_by_function(aws, iid, "CONTINUE")
    assert (inst["approval"]["decision"], inst["approval"]["by"]) == ("wait", OPERATOR)
    (final,) = [n for n in notes if n["phase"] in ("completed", "failed", "stopped")]
    assert final["phase"] == "completed" and final["approval"] == inst["approval"], final
    assert _decided_log(run.stdout)["approval"]["decision"] == "wait"
    # it went on draining after the decision: passes ran after the last look, one of them the deadline's
    assert _passes_after_the_decision(run), [getattr(op, "name", "") for op in run.operations]
    assert not pods_on(k8s, node)


def _as_without_approval(aws: AwsSeed, iid: str, inst: dict[str, Any]) -> None:
    """The drain ended as it would have without approval: FORCE_DELETE_ON_DEADLINE is off, so the deadline leaves
    the pods (nothing forced) and the hook is answered LIFECYCLE_RESULT_ON_FAILURE (ABANDON)."""
    assert inst["result"] == "deadline-missed", inst
    assert "approval" not in inst and not inst["report"]["forced"]
    assert_completed_by_function(aws, iid, "ABANDON")


def test_a_decision_that_never_comes_leaves_the_deadline_policy_and_the_expired_id_is_refused(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    from datetime import datetime

    iid, node, spare = blue_asg_node(aws, k8s)
    hold_with_pdb(k8s, node, spare)
    _held_config(lam)
    # the approval stays open until MARGIN_SECONDS before the deadline: the held notice (due after 3 s held) has
    # OPEN_FOR seconds to come with an approval id even when the machine is slow
    lam.monkeypatch.setenv("DEADLINE_ASG_TERMINATE_SECONDS", str(OPEN_FOR + MARGIN_SECONDS))
    notes: list[dict[str, Any]] = []

    def late(api: CallbackApi) -> None:
        held = _held_notice(lam, notes, 120)
        assert "approval_id" in held, held
        closes = datetime.fromisoformat(held["deadline"]).timestamp() - MARGIN_SECONDS
        while time.time() < closes + 10:  # well past the approval's timeout, still before the drain's deadline
            time.sleep(0.5)
        with pytest.raises(ApprovalGone):
            send_decision(api, held["approval_id"], decision_of("force", OPERATOR, time.time(), node))

    run = lam.run_answering(terminate_event(aws, iid), late, timeout=300)
    notes.extend(lam.notifications())
    _as_without_approval(aws, iid, instance_summary(run))
    assert '"approval over without a decision"' in run.stdout


def test_a_decision_naming_another_node_is_refused_and_changes_nothing(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    """A relayed or mis-pasted approval id answered for another node: the drain refuses it, forces nothing, and goes
    on under its deadline policy as without approval; the approval is over (a second answer is refused)."""
    iid, node, spare = blue_asg_node(aws, k8s)
    hold_with_pdb(k8s, node, spare)
    held_pods = sorted(f"{k8s.ns}/{p.metadata.name}" for p in pods_on(k8s, node))
    _held_config(lam)
    lam.monkeypatch.setenv("DEADLINE_ASG_TERMINATE_SECONDS", str(OPEN_FOR + MARGIN_SECONDS))
    notes: list[dict[str, Any]] = []
    other = f"{node}-other"

    def misdirected(api: CallbackApi) -> None:
        held = _held_notice(lam, notes, 120)
        assert held["node"] == node, held
        send_decision(api, held["approval_id"], decision_of("force", OPERATOR, time.time(), other))
        # a callback takes one answer: the right one now comes too late
        with pytest.raises(ApprovalGone):
            send_decision(api, held["approval_id"], decision_of("force", OPERATOR, time.time(), node))

    run = lam.run_answering(terminate_event(aws, iid), misdirected, timeout=300)
    notes.extend(lam.notifications())
    _as_without_approval(aws, iid, instance_summary(run))
    assert sorted(f"{k8s.ns}/{p.metadata.name}" for p in pods_on(k8s, node)) == held_pods
    (final,) = [n for n in notes if n["phase"] in ("completed", "failed", "stopped")]
    assert final["phase"] == "failed" and "approval" not in final, final
    refused = [json.loads(x) for x in _log_lines(run) if '"approval refused"' in x]
    assert (
        refused and refused[0]["reason"] == f"refused: the decision names node {other!r}; this drain is node {node!r}"
    )
    assert run.metric_total("Errors", reason="approval-refused") == 1
