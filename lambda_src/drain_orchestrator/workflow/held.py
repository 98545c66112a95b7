"""Say what holds a drain: once PodDisruptionBudgets, failing evictions or the pods' own drain policies (a namespace
user's annotations: wait-for-completion, do-not-disrupt, an evict-order behind a held pod) have held it longer than
HELD_NOTIFY_SECONDS, one ``held`` notification names the PDBs, the pods, since when, and what the deadline will
bring. The node carries a summary as the annotation ``drain-orchestrator.io/held`` for ``status``, and a DrainHeld
Event says the same: anyone who may read nodes (or the Events of the default namespace) reads them, so they count
the held pods per namespace and name no pod and no PodDisruptionBudget (docs/drain.md, "What a drain writes where").

`HeldWatch` is fed by the passes' checkpointed results (replays decide the same); `held_step` is claimed like
the other phases (``drain-orchestrator.io/drain-held``), so of several executions one notifies.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

from aws_durable_execution_sdk_python import StepContext, durable_step

from drain_orchestrator.drain.policy import Hold
from drain_orchestrator.drain.report import DrainReport, held_reasons
from drain_orchestrator.kinds import rule_of
from drain_orchestrator.observability import SECONDS, logger, metric
from drain_orchestrator.timefmt import iso_utc
from drain_orchestrator.workflow import runtime
from drain_orchestrator.workflow.checkpoint import Checkpointed
from drain_orchestrator.workflow.job import DrainJob
from drain_orchestrator.workflow.notify import notify

PHASE = "drain-held"
FORCEABLE = ("pdb", "multiple-pdbs")  # the deadline policy deletes pods refused by budgets, not failing evictions
# pods their drain policy lets finish are evicted when it stops holding (POLICY_HOLD_MAX_SECONDS, or when their grace
# only just fits before the deadline); a pod waiting for an earlier evict-order goes when that pod goes
RELEASED = (Hold.WAIT_FOR_COMPLETION.value, Hold.DO_NOT_DISRUPT.value)


@dataclass
class HeldWatch:
    """How long the drain has been held without a break, and whether it was said."""

    notify_after: int
    since: float | None = None
    said: bool = False

    def due(self, report: DrainReport, now: float) -> bool:
        """Fold one pass's report in; True once when the hold has lasted ``notify_after`` seconds."""
        return self.holding(bool(report.held or report.blocked or report.held_by_policy), now)

    def holding(self, held: bool, now: float) -> bool:
        """Fold one observation in (held or not); True once when the hold has lasted ``notify_after`` seconds."""
        if not held:
            self.since = None  # the hold broke (a pod went): a new hold starts its own clock
            return False
        if self.since is None:
            self.since = now
        if self.said or now - self.since < self.notify_after:
            return False
        self.said = True
        return True


def at_deadline(reasons: set[str], force_delete_on_deadline: bool, lifecycle: bool, result_on_failure: str) -> str:
    """What the deadline brings: ``evict`` (only drain policies hold: the pods are evicted when they stop holding, by
    the deadline at the latest), ``force-delete`` (the pods go just before it), else the lifecycle action's answer
    ``continue`` / ``abandon``, or ``stop`` (no lifecycle action: the drain ends there)."""
    if reasons and reasons <= set(RELEASED):
        return "evict"
    if force_delete_on_deadline and reasons and reasons <= {*FORCEABLE, *RELEASED, Hold.EVICT_ORDER.value}:
        return "force-delete"
    return result_on_failure.lower() if lifecycle else "stop"


@dataclass(frozen=True)
class Held(Checkpointed):
    """What holds the drain, as notified and annotated."""

    since: float
    seconds: float
    pods: list[str]
    pdbs: list[str]
    reasons: list[str]
    at_deadline: str
    deadline: float
    gates: list[str] = field(default_factory=list)  # load-balancer targets, volumes still holding the instance
    approval_id: str | None = None  # HELD_APPROVAL=on: the id an operator's decision answers (workflow/approval.py)
    node: str = ""  # the node the approval is for: its decision must name it

    def fields(self) -> dict[str, Any]:
        approval = {}
        if self.approval_id is not None:
            approval = {
                "approval_id": self.approval_id,
                "approve": (
                    f"drain-orchestrator approve {self.approval_id} --node {self.node} "
                    "--force|--continue|--abandon|--wait"
                ),
            }
        return {
            "held_since": iso_utc(int(self.since)),  # whole seconds: for people
            "held_seconds": round(self.seconds),
            "pods": self.pods,
            "pdbs": self.pdbs,
            "reasons": self.reasons,
            "at_deadline": self.at_deadline,
            "deadline": iso_utc(int(self.deadline)),
            "gates": self.gates,
            **approval,
        }


def held_of(
    job: DrainJob, report: DrainReport, since: float, now: float, deadline: float, approval_id: str | None = None
) -> Held:
    ws = runtime.wsettings()
    by_policy = {p.pod: p.policy or Hold.WAIT_FOR_COMPLETION.value for p in report.held_by_policy}
    pods = {h.pod for h in report.held} | {b.pod for b in report.blocked} | set(by_policy)
    pdbs = {p for h in report.held for p in h.pdbs} | {p for b in report.blocked for p in b.pdbs}
    evictions = {h.reason for h in report.held} or ({"pdb"} if report.blocked else set())
    reasons = evictions | set(by_policy.values())
    lifecycle = job.event.lifecycle is not None and rule_of(job.event.kind).lifecycle
    then = at_deadline(reasons, ws.force_delete_on_deadline, lifecycle, ws.lifecycle_result_on_failure)
    return Held(
        since,
        now - since,
        sorted(pods),
        sorted(pdbs),
        sorted(reasons),
        then,
        deadline,
        approval_id=approval_id,
        node=job.node,
    )


def per_namespace(pods: list[str]) -> dict[str, int]:
    """``namespace/name`` pods counted per namespace: what the node's readers may be told of them."""
    counts: dict[str, int] = {}
    for pod in pods:
        namespace = pod.split("/", 1)[0]
        counts[namespace] = counts.get(namespace, 0) + 1
    return dict(sorted(counts.items()))


def public_note(held: Held) -> dict[str, Any]:
    """The node annotation's summary: since when, how many pods per namespace, why, what the deadline brings, the
    gates' targets and volumes (names the cluster's readers see elsewhere). No pod, PDB or approval id."""
    info = held.fields()
    note = {k: info[k] for k in ("held_since", "reasons", "at_deadline", "gates")}
    return {**note, "pods_per_namespace": per_namespace(held.pods)}


def public_message(held: Held) -> str:
    """The DrainHeld Event's message, from the same summary as the annotation."""
    counts = per_namespace(held.pods)
    if counts:
        by = ", ".join(f"{n} pod{'s' if n > 1 else ''} in {ns}" for ns, n in counts.items())
    else:
        by = ", ".join(held.gates) or ", ".join(held.reasons)
    return f"held {round(held.seconds)} s ({', '.join(held.reasons)}): {by}; at the deadline: {held.at_deadline}"


def gate_held(job: DrainJob, holding: list[str], since: float, now: float, deadline: float) -> Held:
    """A drained node whose instance a gate still holds (targets draining, volumes attached): the deadline
    brings the lifecycle action's answer (no pod to force)."""
    ws = runtime.wsettings()
    lifecycle = job.event.lifecycle is not None and rule_of(job.event.kind).lifecycle
    then = at_deadline({"gate"}, ws.force_delete_on_deadline, lifecycle, ws.lifecycle_result_on_failure)
    return Held(since, now - since, [], [], ["gate"], then, deadline, sorted(holding))


@dataclass(frozen=True)
class HeldNotice(Checkpointed):
    now: float
    notified: bool = False


@durable_step
def held_step(step_ctx: StepContext, job: DrainJob, held: Held, report: DrainReport | None) -> HeldNotice:
    """Best effort, never raises: the claim and annotation need the apiserver, the notification SNS."""
    from drain_orchestrator.kube.errors import KubeError  # noqa: PLC0415
    from drain_orchestrator.kube.node_marks import ANNOTATION_PREFIX, patch_node  # noqa: PLC0415
    from drain_orchestrator.kube.node_records import claim, node_event  # noqa: PLC0415

    ws = runtime.wsettings()
    info = held.fields()
    first = True
    try:
        kube = runtime.kube(job.cluster)
        first = claim(kube, job.node, PHASE, job.run_id, dry_run=ws.dry_run, pin=job.pin)
        if first and not ws.dry_run:
            patch = {"metadata": {"annotations": {ANNOTATION_PREFIX + "held": json.dumps(public_note(held))}}}
            with contextlib.suppress(KubeError):  # the note is for `status`: the notice goes out without it
                patch_node(kube, job.node, patch, pin=job.pin)
            node_event(kube, job.node, "DrainHeld", public_message(held))
    except Exception as exc:  # the apiserver cannot arbitrate: say it anyway (a duplicate beats silence)
        logger.warning("held claim failed", extra={"error": str(exc)[:300]})
    if not first:
        return HeldNotice(now=time.time())
    metric("DrainHeldSeconds", held.seconds, SECONDS, cluster=job.cluster, kind=job.event.kind)
    # the approval id answers this drain's approval: it goes to the notification's subscribers, never to the log
    logged = {k: v for k, v in info.items() if k not in ("approval_id", "approve")}
    logger.warning("drain held", extra={"node": job.node, **logged, "approval": held.approval_id is not None})
    notified = notify("held", job, {**info, "held": held_reasons(report) if report is not None else []})
    return HeldNotice(now=time.time(), notified=notified)
