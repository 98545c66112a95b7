"""What one instance's flow ended in: the `Result` and, per result, every rule that follows from it.

Pure. The strings are a contract (execution output, notifications, the node's drain claim, log queries), so the
enum's values never change. `RULES` is the one table of what each result means downstream: the lifecycle action's
result, the phase claimed on the node, the final notification, the metric and the alarm it may fire
(docs/reliability.md shows the same table; tests/unit/test_outcome.py compares them).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, ClassVar

from drain_orchestrator.node_identity import NodeIdentity


class Result(StrEnum):
    DRAINED = "drained"  # every pod that had to go is gone
    NODE_GONE = "node-gone"  # the Node object disappeared
    CORDONED = "cordoned"  # a cordon-only action
    REFUSED = "refused"  # kubectl would refuse too
    DEADLINE_MISSED = "deadline-missed"  # pods still held at the deadline
    GATE_HELD = "gate-held"  # drained, but a gate (load-balancer targets, volumes) still held at the deadline
    FAILED = "failed"  # a step failed for good
    DRY_RUN = "dry-run"  # one pass of a dry run: what a drain would do
    APPROVED_CONTINUE = "approved-continue"  # an operator's decision: complete CONTINUE, stop draining
    APPROVED_ABANDON = "approved-abandon"  # an operator's decision: complete ABANDON, stop draining
    CLAIM_LOST = "claim-lost"  # internal to the drain loop: another execution took the node's drain claim over
    READY = "ready"  # asg-launch: the node joined and is Ready
    TIMED_OUT = "timed-out"  # asg-launch: LAUNCH_READY_TIMEOUT_SECONDS passed first
    # IAM denied a heartbeat or the completion (the group fails the policy's tag condition): not retried, the drain
    # ran until the action's life without heartbeats ended; the hook falls to its DefaultResult
    LIFECYCLE_ACCESS_DENIED = "lifecycle-access-denied"
    # a scheduled change whose newer update closed or rescheduled it before its drain began (scheduled_change.py):
    # nothing cordoned or drained by this execution
    CANCELLED = "cancelled"


ON_FAILURE = "on-failure"  # the lifecycle action gets LIFECYCLE_RESULT_ON_FAILURE (or LAUNCH_TIMEOUT_RESULT)
DEADLINE_ALARM = "DeadlineMissed-<cluster>"
ACCESS_DENIED_ALARM = "LifecycleAccessDenied-<cluster>"
FUNCTION_ERRORS_ALARM = "FunctionErrors"  # the execution fails after its verdicts, see event_flow.py


@dataclass(frozen=True)
class Rule:
    """What a result means downstream. ``metric``: counted once per drain by the holder of its final phase claim
    (with dimensions cluster and kind, except ``Errors`` which carries reason ``drain-failed``); None: nothing."""

    success: bool  # the instance may go: lifecycle CONTINUE, the gates apply, phase drain-completed
    lifecycle: str | None  # CONTINUE | ABANDON | ON_FAILURE | None (the flow completes no action for it)
    notification: str | None  # the final notification's phase; None: no final notification
    metric: str | None
    alarm: str | None


RULES: dict[Result, Rule] = {
    Result.DRAINED: Rule(True, "CONTINUE", "completed", "NodesDrained", None),
    Result.NODE_GONE: Rule(True, "CONTINUE", "completed", "NodesDrained", None),
    Result.CORDONED: Rule(False, None, None, None, None),
    Result.REFUSED: Rule(False, ON_FAILURE, "failed", "DrainRefused", None),
    Result.DEADLINE_MISSED: Rule(False, ON_FAILURE, "failed", "DrainDeadlineMissed", DEADLINE_ALARM),
    Result.GATE_HELD: Rule(False, ON_FAILURE, "failed", "DrainDeadlineMissed", DEADLINE_ALARM),
    Result.FAILED: Rule(False, ON_FAILURE, "failed", "Errors", FUNCTION_ERRORS_ALARM),
    Result.DRY_RUN: Rule(False, ON_FAILURE, None, None, None),
    Result.APPROVED_CONTINUE: Rule(False, "CONTINUE", "stopped", None, None),
    Result.APPROVED_ABANDON: Rule(False, "ABANDON", "stopped", None, None),
    Result.CLAIM_LOST: Rule(False, None, None, None, None),
    Result.READY: Rule(True, "CONTINUE", None, None, None),
    Result.TIMED_OUT: Rule(False, ON_FAILURE, None, None, None),
    Result.LIFECYCLE_ACCESS_DENIED: Rule(False, None, "failed", "LifecycleAccessDenied", ACCESS_DENIED_ALARM),
    Result.CANCELLED: Rule(False, None, None, None, None),
}


def rule(result: Result | str) -> Rule:
    return RULES[Result(result)]


def succeeded(result: Result | str) -> bool:
    """The instance may go: the lifecycle action is completed CONTINUE, the gates apply."""
    return rule(result).success


def report_phase(result: Result | str) -> str:
    """The node's phase claim (kube/node_records.py) that says which execution reports this result."""
    return "drain-completed" if succeeded(result) else "drain-failed"


def lifecycle_result(result: Result | str, on_failure: str) -> str:
    """The lifecycle action's result for a flow's result: CONTINUE once drained, an operator's decision as said,
    ``on_failure`` (LIFECYCLE_RESULT_ON_FAILURE) otherwise."""
    said = rule(result).lifecycle
    return on_failure if said in (None, ON_FAILURE) else str(said)


@dataclass
class InstanceOutcome:
    """One instance's outcome, built by its flow (drain_flow, launch_flow) and read by the report, the execution's
    result and the CLI. Its JSON (`to_dict`) is the execution output's per-instance entry: the identity always,
    every other field once set; ``report`` once the verdict ran (None when no pass ran)."""

    instance_id: str
    cluster: str | None
    node: str | None
    decision: str  # ownership.Reason
    action: str  # the configured action for the event kind (settings.Action)
    lifecycle: dict[str, Any] | None = None  # {outcome, result, error?}: the lifecycle action's completion
    cordoned: bool | None = None
    result: Result | None = None
    out_of_service: bool | None = None
    approval: dict[str, Any] | None = None  # the operator's decision (workflow/approval.py)
    took_over_from: str | None = None
    waiters: int | None = None
    drained_by: str | None = None
    gates: dict[str, Any] | None = None
    late_look: dict[str, Any] | None = None  # {late_pods} it drained, or {error}: workflow/late_look.py
    report: dict[str, Any] | None = None  # drain_flow.summary_of(DrainReport)
    error: dict[str, Any] | None = None  # StepFault.to_dict()
    surge_restored: list[str] | None = None
    # node-gone because another Node took the located node's name: the replacement's identity (node_identity.py)
    replaced_by: dict[str, Any] | None = None
    # the return to service after the verdict (workflow/return_flow.py): {status, reason?, at?}
    returned: dict[str, Any] | None = None
    heartbeats: int | None = None
    duration_seconds: float | None = None
    notified: bool | None = None
    # the report's phase claim this execution took in its drain's settle write (one_drain.py): no write to report
    phase_held: str | None = field(default=None, repr=False)
    # False while the flow has not looked for a node (a launch into the warm pool never does): `node` is left out
    node_looked: bool = field(default=True, repr=False)

    IDENTITY: ClassVar[tuple[str, ...]] = ("instance_id", "cluster", "node", "decision", "action")
    # the fields of the final notification and of the "drain did not finish" log line, in this order
    REPORTED: ClassVar[tuple[str, ...]] = (
        "result",
        "lifecycle",
        "report",
        "error",
        "gates",
        "surge_restored",
        "approval",
        "replaced_by",
    )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name in ("node_looked", "phase_held") or (
                f.name == "node" and self.node is None and not self.node_looked
            ):
                continue
            value = getattr(self, f.name)
            verdict_ran = f.name == "report" and self.duration_seconds is not None
            if f.name in self.IDENTITY or value is not None or verdict_ran:
                out[f.name] = value.value if isinstance(value, Result) else value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InstanceOutcome:
        values = dict(data)
        if "node" not in values:
            values["node"], values["node_looked"] = None, False
        if values.get("result") is not None:
            values["result"] = Result(values["result"])
        return cls(**values)

    def replaced(self, by: NodeIdentity | None) -> None:
        """The node went under another Node of its name (node_identity.py): the verdict names the replacement."""
        if by is not None:
            self.replaced_by = by.to_dict()

    def reported(self) -> dict[str, Any]:
        """What the final notification carries besides the drain's identity (docs/notifications.md)."""
        return {k: v for k in self.REPORTED if (v := self.to_dict().get(k)) is not None}

    @property
    def failed(self) -> bool:
        """A failed drain, a lifecycle action that could not be completed, or one IAM does not let the function
        answer: the execution fails after its verdicts (its event reaches the dead-letter queue, to be replayed once
        fixed)."""
        denied = self.result is Result.LIFECYCLE_ACCESS_DENIED
        return self.result is Result.FAILED or denied or bool((self.lifecycle or {}).get("error"))
