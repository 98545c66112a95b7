"""The gates, one small object each: whether it applies, one check (held / clear / failed, with what holds), the
IAM actions and Kubernetes RBAC rules it needs as data, and the read-only look `status` shows.

gates.py runs the configured ones in one loop; status.py asks the same objects. A new gate is one more class here
and its entry in `GATES` (plus its step in gate_steps.py and its setting in workflow_settings.py).
Step names ("gate-targets-N", "gate-volumes-N") and checkpoint types are a contract with running executions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from drain_orchestrator.outcome import Result, succeeded
from drain_orchestrator.workflow.checkpoint import StepFault, step_config
from drain_orchestrator.workflow.gate_steps import pod_ips_step, targets_step, volumes_step
from drain_orchestrator.workflow.results import PodAddresses, TargetsCheck, VolumesCheck

if TYPE_CHECKING:
    from aws_durable_execution_sdk_python import DurableContext

    from drain_orchestrator.workflow.job import DrainJob
    from drain_orchestrator.workflow.pace import Pace
    from drain_orchestrator.workflow_settings import WorkflowSettings


class State(StrEnum):
    HELD = "held"
    CLEAR = "clear"
    FAILED = "failed"


@dataclass(frozen=True)
class Check:
    """One check of a gate: what still holds the instance (empty: clear), or why it could not check."""

    now: float
    holding: list[str] = field(default_factory=list)
    fault: StepFault | None = None

    @property
    def state(self) -> State:
        return State.FAILED if self.fault is not None else State.HELD if self.holding else State.CLEAR


@dataclass(frozen=True)
class RbacRule:
    api_group: str
    resource: str
    verbs: tuple[str, ...]


@dataclass(frozen=True)
class Needs:
    """The permissions a gate's checks use: IAM actions of the function's role, RBAC rules of its ClusterRole."""

    iam: tuple[str, ...] = ()
    rbac: tuple[RbacRule, ...] = ()


@dataclass
class PodIps:
    """The node's pod IPs for the load-balancer gate's ip-mode targets (the pods are gone once drained): from the
    drain passes' first LIST when this execution drains the node (``from_passes``), else from a step of their own
    before the drain (an execution that waits on another's drain)."""

    ips: set[str] = field(default_factory=set)
    from_passes: bool = False
    recorded: bool = False  # a pass said what its LIST found

    @property
    def wanted(self) -> bool:
        """The next pass should say its LIST's pod IPs."""
        return self.from_passes and not self.recorded

    def absorb(self, found: list[str] | None) -> None:
        if found is not None:
            self.ips.update(found)
            self.recorded = True


class Run(Protocol):
    """One drain's use of a gate: its checks (each a durable step) and its part of the summary."""

    def check(self, ctx: DurableContext, pace: Pace, n: int, start: float) -> Check: ...

    def summary(self) -> dict[str, Any]: ...


class Gate(Protocol):
    key: str  # its entry in the summary's "gates" and in docs/gates.md
    still: str  # the summary's field for what still holds at the end
    holds_as: str  # the reason's words: "<holds_as>: a, b"
    setting: str  # the WorkflowSettings field of its scope (never | lifecycle | always)
    needs: Needs
    status_field: str | None  # the `status` NodeStatus field its look fills (None: not shown)
    status_label: str  # names the API in `status` errors ("load balancers: ...")

    def after(self, result: Result) -> bool: ...

    def start(self, ctx: DurableContext, job: DrainJob, pace: Pace, ips: PodIps) -> Run: ...

    def look(
        self, kube: Any, elbv2: Any, cluster: str, node: str, instance_id: str | None, cache: dict[str, Any]
    ) -> list[str]: ...


def configured(gate: Gate, ws: WorkflowSettings, lifecycle: bool) -> bool:
    return ws.gate_applies(getattr(ws, gate.setting), lifecycle)


# ---- load balancers: the instance's targets (instance mode) and its pods' (ip mode) have finished draining ------


class _TargetsRun:
    def __init__(self, job: DrainJob, ips: PodIps) -> None:
        self.job, self.ips = job, ips
        self.groups: list[dict[str, Any]] | None = None
        self.previous: list[str] = []
        self.seen: set[str] = set()
        self.deregistered: list[str] = []
        self.api_calls = 0

    def check(self, ctx: DurableContext, pace: Pace, n: int, start: float) -> Check:
        t: TargetsCheck = ctx.step(
            targets_step(self.job, sorted(self.ips.ips), self.groups, self.previous, start),
            name=f"gate-targets-{n}",
            config=step_config(TargetsCheck),
        )
        pace.absorb(t)
        self.api_calls += t.api_calls
        if t.fault is None:
            self.groups = t.groups
            self.seen.update(str(g["name"]) for g in t.groups)
            self.deregistered.extend(t.deregistered)
            self.previous = t.holding
        return Check(t.now, t.holding, t.fault)

    def summary(self) -> dict[str, Any]:
        return {
            "target_groups": sorted(self.seen),
            "deregistered": self.deregistered,  # by the orchestrator: target groups configured by ARN
            "api_calls": self.api_calls,
        }


class LoadBalancerGate:
    key = "load_balancers"
    still = "still_draining"
    holds_as = "targets still draining"
    setting = "wait_for_deregistration"
    status_field: str | None = "targets"
    status_label = "load balancers"
    needs = Needs(
        iam=(
            "elasticloadbalancing:DescribeTargetGroups",
            "elasticloadbalancing:DescribeTags",
            "elasticloadbalancing:DescribeTargetHealth",
            "elasticloadbalancing:DeregisterTargets",  # only on the target groups of TARGET_GROUP_ARNS
        ),
        rbac=(RbacRule("", "pods", ("list",)),),
    )

    def after(self, result: Result) -> bool:
        return succeeded(result)

    def start(self, ctx: DurableContext, job: DrainJob, pace: Pace, ips: PodIps) -> Run:
        """The node's pod IPs (ip-mode targets are pod IPs; the pods are gone later): the drainer's first pass says
        what its LIST found; an execution waiting on another's drain lists them now."""
        if job.drains_itself:
            ips.from_passes = True
            return _TargetsRun(job, ips)
        snap: PodAddresses = ctx.step(pod_ips_step(job), name="gate-pod-ips", config=step_config(PodAddresses))
        pace.absorb(snap)
        ips.ips.update(snap.ips)  # unknown (a fault, already logged): it still waits on instance targets
        return _TargetsRun(job, ips)

    def look(
        self, kube: Any, elbv2: Any, cluster: str, node: str, instance_id: str | None, cache: dict[str, Any]
    ) -> list[str]:
        """Instance targets only: ip targets are the pods' IPs, gone with the pods (the Lambda records them)."""
        from drain_orchestrator.aws.elbv2 import HOLDING_STATES  # noqa: PLC0415

        if elbv2 is None or not instance_id:
            return []
        if "groups" not in cache:
            cache["groups"] = elbv2.target_groups(cluster, ())
        out = []
        for tg in cache["groups"]:
            if tg.target_type != "instance":
                continue
            held = [t for t in elbv2.targets(tg.arn) if t.id == instance_id and t.state in HOLDING_STATES]
            out += [f"{tg.name} ({t.id}): {t.state}" for t in held]
        return out


# ---- volumes: the node's VolumeAttachments are gone ---------------------------------------------------------


class _VolumesRun:
    def __init__(self, job: DrainJob) -> None:
        self.job = job
        self.ignored: list[str] = []

    def check(self, ctx: DurableContext, pace: Pace, n: int, start: float) -> Check:
        v: VolumesCheck = ctx.step(volumes_step(self.job), name=f"gate-volumes-{n}", config=step_config(VolumesCheck))
        pace.absorb(v)
        if v.fault is None:
            self.ignored = v.ignored
        return Check(v.now, v.attached, v.fault)

    def summary(self) -> dict[str, Any]:
        return {"left_with_their_pods": self.ignored}


class VolumeGate:
    key = "volumes"
    still = "still_attached"
    holds_as = "volumes still attached"
    setting = "wait_for_volume_detach"
    status_field: str | None = "volumes"
    status_label = "kubernetes"
    needs = Needs(
        rbac=(
            RbacRule("storage.k8s.io", "volumeattachments", ("list",)),
            RbacRule("", "persistentvolumeclaims", ("get",)),
        )
    )

    def after(self, result: Result) -> bool:
        return result is Result.DRAINED  # a node gone takes its attachments' fate out of Kubernetes' hands

    def start(self, ctx: DurableContext, job: DrainJob, pace: Pace, ips: PodIps) -> Run:
        return _VolumesRun(job)

    def look(
        self, kube: Any, elbv2: Any, cluster: str, node: str, instance_id: str | None, cache: dict[str, Any]
    ) -> list[str]:
        from drain_orchestrator.engine.volumes import node_attachments  # noqa: PLC0415

        holding: list[str] = node_attachments(kube, node).holding
        return holding


# in this order: checked, summarised and named in a reason
GATES: tuple[Gate, ...] = (LoadBalancerGate(), VolumeGate())
