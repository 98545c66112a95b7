"""Typed results of a drain's steps, as checkpointed by the durable SDK (the base and its storage:
checkpoint.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from drain_orchestrator.drain.report import DrainReport
from drain_orchestrator.node_identity import NodeIdentity
from drain_orchestrator.ownership import Decision
from drain_orchestrator.workflow.checkpoint import Checkpointed, StepFault


@dataclass(frozen=True)
class DrainPlan(Checkpointed):
    """The drain's clock: its deadline, how long completing the hook is worth retrying, the heartbeat pace.
    The fields after ``now`` are written by the "plan-now" step (deadlines.drain_clock); a "plan" checkpoint has
    their defaults, which mean what that step decided: no respectful minimum, nothing proved."""

    deadline: float
    completion_deadline: float
    heartbeat_interval: int | None
    now: float
    respect_until: float | None = None  # until then no grace is clipped and nothing force-deleted
    heartbeat_timeout: int | None = None  # the hook's (DescribeLifecycleHooks), when read
    expiry: float | None = None  # the lifecycle action's own expiry, when known
    # the heartbeat that proved the lifecycle action waits: recorded | already-done | group-gone | denied | failed;
    # None: not tried (no action, a dry run)
    proof: str | None = None
    last_beat: float | None = None  # when that heartbeat was recorded


@dataclass(frozen=True)
class Located(Checkpointed):
    _nested: ClassVar[dict[str, Any]] = {"decision": Decision, "fault": StepFault, "identity": NodeIdentity}
    decision: Decision
    now: float
    last_beat: float | None = None
    hook_done: bool = False
    fault: StepFault | None = None
    # the located Node object (node_identity.py): every later step acts on it alone (None: no node, or a checkpoint
    # written before identities were recorded)
    identity: NodeIdentity | None = None


@dataclass(frozen=True)
class ClaimCheck(Checkpointed):
    """What an execution found on the node's drain claim (drain_claim.py)."""

    _nested: ClassVar[dict[str, Any]] = {"fault": StepFault, "replaced_by": NodeIdentity}
    now: float
    role: str = "waiter"  # drain_claim.Role: holder | waiter | settled
    holder: str | None = None  # the run id draining the node
    verdict: str | None = None  # the holder's drain result (settled)
    took_over: str | None = None  # an expired holder this execution replaced
    gone: bool = False
    last_beat: float | None = None
    hook_done: bool = False
    fault: StepFault | None = None
    earliest: float | None = None  # the earliest deadline of those waiting on the claim (as this look wrote it)
    replaced_by: NodeIdentity | None = None  # gone: the Node of another identity now under its name


@dataclass(frozen=True)
class Cordoned(Checkpointed):
    _nested: ClassVar[dict[str, Any]] = {"fault": StepFault, "claim": ClaimCheck, "replaced_by": NodeIdentity}
    now: float
    cordoned: bool = False
    gone: bool = False
    changed: bool = False
    last_beat: float | None = None
    hook_done: bool = False
    fault: StepFault | None = None
    cordon_claimed: bool = False  # this execution holds the node's "cordoned" claim (it announces the cordon)
    drain_claimed: bool = False  # this execution holds the node's "drain-started" claim (it counts the pods)
    claim: ClaimCheck | None = None  # the node's drain claim as the cordon's write took or joined it (a drain's)
    replaced_by: NodeIdentity | None = None  # gone: the Node of another identity now under its name


@dataclass(frozen=True)
class PassOutcome(Checkpointed):
    _nested: ClassVar[dict[str, Any]] = {
        "report": DrainReport,
        "fault": StepFault,
        "replaced_by": NodeIdentity,
        "identity": NodeIdentity,
    }
    now: float
    report: DrainReport | None = None
    gone: bool = False
    last_beat: float | None = None
    hook_done: bool = False
    fault: StepFault | None = None
    deadline: float | None = None  # the earliest deadline of the executions waiting on this drain (node claim)
    claim_lost: bool = False  # another execution took the node's drain claim over: this one waits for it
    held: bool = False  # the pass ended early: every pod left was held (engine/held_pass.py)
    queued: bool = False  # held, and ended to wait durably for a far turn at its budgets (drain/turn_queue.py)
    wake_at: float | None = None  # epoch: when the drain's own clock acts next (force-delete, a policy's release)
    pod_ips: list[str] | None = None  # the pod IPs its LIST found, when asked (the load-balancer gate's ip targets)
    replaced_by: NodeIdentity | None = None  # gone: the Node of another identity now under its name
    # the node's identity as this pass learned it, for a drain located before identities were recorded
    identity: NodeIdentity | None = None

    def to_dict(self) -> dict[str, Any]:
        """The report of a node of many pods summarized (drain/report.py for_checkpoint): it must fit a checkpoint."""
        out = super().to_dict()
        if self.report is not None:
            out["report"] = self.report.for_checkpoint()
        return out


@dataclass(frozen=True)
class ClaimSettled(Checkpointed):
    now: float
    settled: bool = False
    waiters: int = 0  # other executions that waited for this verdict
    phase: str | None = None  # the report's phase claim, taken in the same write (None: not taken)


@dataclass(frozen=True)
class BeatOutcome(Checkpointed):
    _nested: ClassVar[dict[str, Any]] = {"fault": StepFault}
    # recorded | already-done | dry-run | failed; from "plan-now" on also group-gone (the group was deleted) and denied
    # (IAM refused it: never retried)
    outcome: str
    now: float
    fault: StepFault | None = None


@dataclass(frozen=True)
class Completion(Checkpointed):
    _nested: ClassVar[dict[str, Any]] = {"fault": StepFault}
    # completed | already-done | not-applicable | dry-run | failed; from "plan-now" on also group-gone and denied
    outcome: str
    result: str | None
    now: float
    fault: StepFault | None = None


@dataclass(frozen=True)
class PodAddresses(Checkpointed):
    _nested: ClassVar[dict[str, Any]] = {"fault": StepFault}
    now: float
    ips: list[str] = field(default_factory=list)
    fault: StepFault | None = None


@dataclass(frozen=True)
class TargetsCheck(Checkpointed):
    _nested: ClassVar[dict[str, Any]] = {"fault": StepFault}
    now: float
    groups: list[dict[str, Any]] = field(default_factory=list)  # aws.elbv2.TargetGroup.to_dict()
    holding: list[str] = field(default_factory=list)  # "<target group name> (<target id>)"
    deregistered: list[str] = field(default_factory=list)  # deregistered by this step (target groups by hand)
    api_calls: int = 0
    fault: StepFault | None = None


@dataclass(frozen=True)
class VolumesCheck(Checkpointed):
    _nested: ClassVar[dict[str, Any]] = {"fault": StepFault}
    now: float
    attached: list[str] = field(default_factory=list)
    fault: StepFault | None = None
    ignored: list[str] = field(default_factory=list)  # attachments of pods the drain leaves on purpose


@dataclass(frozen=True)
class Tainted(Checkpointed):
    _nested: ClassVar[dict[str, Any]] = {"fault": StepFault}
    now: float
    tainted: bool = False
    fault: StepFault | None = None
    ec2_state: str | None = None  # EC2's state just before ("out-of-service-ec2"): the taint needs stopped/terminated


@dataclass(frozen=True)
class SurgeRestored(Checkpointed):
    """Surges of this node taken back at the verdict: "Deployment ns/name: what changed"."""

    _nested: ClassVar[dict[str, Any]] = {"fault": StepFault}
    now: float
    restored: list[str] = field(default_factory=list)
    fault: StepFault | None = None


@dataclass(frozen=True)
class Announced(Checkpointed):
    notified: bool
    # what the drain's DrainStarted Event says it is doing ("cordoned and draining" or "draining"), written only once
    # the drain outlives its first pass; None: this execution does not announce the drain
    drain_start: str | None = None


@dataclass(frozen=True)
class Begun(Checkpointed):
    """The "begin" step (begin.py): the drain's clock, then as far as it went of locate, cordon and announce
    (None: not done there; the flow goes on with a step of its own)."""

    _nested: ClassVar[dict[str, Any]] = {
        "plan": DrainPlan,
        "located": Located,
        "cordoned": Cordoned,
        "announced": Announced,
    }
    plan: DrainPlan
    located: Located | None = None
    cordoned: Cordoned | None = None
    announced: Announced | None = None


@dataclass(frozen=True)
class EventWritten(Checkpointed):
    written: bool


@dataclass(frozen=True)
class Reported(Checkpointed):
    duration: float
    notified: bool
    now: float


@dataclass(frozen=True)
class Verdict(Checkpointed):
    """The "verdict" step (verdict.py): the lifecycle action's completion, the surges' restore and the report, as
    far as it went (None: not due, or not reached; the flow goes on with a step of its own)."""

    _nested: ClassVar[dict[str, Any]] = {"completion": Completion, "surge": SurgeRestored, "reported": Reported}
    completion: Completion | None = None
    surge: SurgeRestored | None = None
    reported: Reported | None = None


@dataclass(frozen=True)
class ReadyCheck(Checkpointed):
    _nested: ClassVar[dict[str, Any]] = {"fault": StepFault}
    now: float
    node: str | None = None
    ready: bool = False
    last_beat: float | None = None
    hook_done: bool = False
    fault: StepFault | None = None
    heartbeat_interval: int | None = None


@dataclass(frozen=True)
class ChangeStanding(Checkpointed):
    """A scheduled change's update recorded on its node ("change-record", "change-check"): what the newest update
    means for this execution (scheduled_change.standing)."""

    _nested: ClassVar[dict[str, Any]] = {"fault": StepFault}
    now: float
    standing: str = "current"  # current | superseded | closed
    gone: bool = False
    fault: StepFault | None = None


@dataclass(frozen=True)
class ReturnLook(Checkpointed):
    """One look of a return watch ("return-look-N"): returns.look's verdict and why."""

    _nested: ClassVar[dict[str, Any]] = {"fault": StepFault}
    now: float
    verdict: str = "wait"  # due | wait | stop
    reason: str = ""
    fault: StepFault | None = None


@dataclass(frozen=True)
class ReturnDone(Checkpointed):
    """The return to service ("return"): returned, or why not (kube/return_marks.Returned)."""

    _nested: ClassVar[dict[str, Any]] = {"fault": StepFault}
    now: float
    status: str = "returned"  # returned | not-ours | superseded | claimed | cordoned-by-another | node-gone | dry-run
    # | failed
    surge_restored: list[str] = field(default_factory=list)
    notified: bool = False
    fault: StepFault | None = None
