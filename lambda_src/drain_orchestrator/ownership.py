"""Does this instance belong to a cluster this deployment serves? Pure; the rules are in docs/ownership.md.

EC2 events cannot be filtered per cluster in EventBridge, so every deployment sees every instance of the
account and region. Each one gets an explicit, explainable `Decision`; "not ours" is a normal outcome.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Literal, cast

from drain_orchestrator.facts import InstanceFacts
from drain_orchestrator.interruption import Ignored, Interruption
from drain_orchestrator.kinds import rule_of
from drain_orchestrator.settings import Controller, Settings

CLUSTER_TAG_PREFIX = "kubernetes.io/cluster/"
CLUSTER_TAG_VALUES = ("owned", "shared")
EKS_CLUSTER_NAME_TAG = "eks:cluster-name"  # managed node groups, eksctl
# Names the cluster on instances of Karpenter (v1 and later) and of EKS Auto Mode.
EKS_CLUSTER_NAME_V1_TAG = "eks:eks-cluster-name"
# Instances of other node controllers (docs/ownership.md, "Running beside ..."): EKS Auto Mode launches with
# `eks:kubernetes-node-pool-name` / `eks:kubernetes-node-class-name` (its IAM policy requires them on
# RunInstances), Karpenter with `karpenter.sh/nodepool`, managed node groups with `eks:nodegroup-name`.
AUTO_MODE_TAGS = ("eks:kubernetes-node-pool-name", "eks:kubernetes-node-class-name")
KARPENTER_TAG = "karpenter.sh/nodepool"
NODE_GROUP_TAG = "eks:nodegroup-name"
_CLUSTER_NAME_TAGS = (EKS_CLUSTER_NAME_TAG, EKS_CLUSTER_NAME_V1_TAG)

# "return": a closed scheduled change: nothing drained; its node is made schedulable again if it was cordoned for it
Action = Literal["drain", "cordon", "wait-ready", "complete-lifecycle", "skip", "return"]


class Reason(StrEnum):
    """Closed set of reasons; documented in docs/ownership.md (keep both in step)."""

    OWNED_INSTANCE_TAG = "owned-instance-tag"  # built-in cluster tag on the instance names a served cluster
    OWNED_ASG_TAG = "owned-asg-tag"  # built-in cluster tag on the instance's ASG names a served cluster
    OWNED_CUSTOM_TAG = "owned-custom-tag"  # OWNERSHIP_TAG on the instance or its ASG
    OTHER_CLUSTER = "other-cluster"  # tags name only clusters this deployment does not serve
    AMBIGUOUS_CLUSTER = "ambiguous-cluster"  # tags name several served clusters: touch nothing
    TAG_VALUE_MISMATCH = "tag-value-mismatch"  # a cluster/ownership tag is present with a value that does not count
    UNTAGGED = "untagged"  # no cluster tag at all, on the instance nor on its ASG
    UNKNOWN_INSTANCE = "unknown-instance"  # EC2 does not know the instance (already gone, other account/region)
    UNSUPPORTED_KIND = "unsupported-kind"  # the event itself is ignored (see events.Ignored.reason)
    KIND_IGNORED = "kind-ignored"  # owned, but settings say ACTION_<KIND>=ignore
    NO_NODE = "no-node"  # owned, but no Kubernetes node for it (never joined, already gone, warm pool)
    HOOK_NOT_OURS = "hook-not-ours"  # a lifecycle hook not in LIFECYCLE_HOOK_NAMES: never completed by us
    MANAGED_BY_KARPENTER = "managed-by-karpenter"  # Karpenter handles this instance's interruptions itself
    MANAGED_BY_AUTO_MODE = "managed-by-auto-mode"  # EKS Auto Mode handles this instance's interruptions itself
    MANAGED_BY_NODE_GROUP = "managed-by-node-group"  # rebalance of a managed node group's instance: MNG's own job
    # owned, but what AWS says now contradicts the event (corroborate.py; docs/reliability.md "What the orchestrator
    # believes"): nothing is done
    STALE_EVENT = "stale-event"  # the event's moment passed long ago and EC2 still reports the instance running
    STATE_CONTRADICTS_EVENT = "state-contradicts-event"  # EC2's state for the instance is not where the event says
    ACTION_NOT_PENDING = "action-not-pending"  # the lifecycle action is no longer waiting (done, timed out, replaced)
    GROUP_MISMATCH = "group-mismatch"  # the event's Auto Scaling group is not the instance's
    # a closed scheduled change (AWS Health statusCode closed: done or cancelled): not drained; the node returns to
    # service if it was cordoned for that change (returns.py)
    CHANGE_CLOSED = "change-closed"


@dataclass(frozen=True)
class Decision:
    instance_id: str
    owned: bool
    cluster: str | None
    reason: Reason
    action: Action
    node: str | None = None
    lifecycle_hook: str | None = None  # the hook's name when it is not ours (reason hook-not-ours)

    @property
    def acts(self) -> bool:
        """The event's flow acts on this instance: ours, and an action other than skip."""
        return self.owned and self.action != "skip"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "instance_id": self.instance_id,
            "owned": self.owned,
            "cluster": self.cluster,
            "reason": self.reason.value,
            "action": self.action,
            "node": self.node,
        }
        if self.lifecycle_hook is not None:
            data["lifecycle_hook"] = self.lifecycle_hook
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Decision:
        return cls(
            instance_id=str(data["instance_id"]),
            owned=bool(data["owned"]),
            cluster=data.get("cluster"),
            reason=Reason(data["reason"]),
            action=data["action"],
            node=data.get("node"),
            lifecycle_hook=data.get("lifecycle_hook"),
        )


@dataclass(frozen=True)
class _Verdict:
    """What one resource's tags say: a served cluster, only other clusters, several, or nothing usable."""

    clusters: tuple[str, ...] = ()  # served clusters named
    others: tuple[str, ...] = ()  # clusters named that this deployment does not serve
    mismatch: bool = False
    custom: bool = False  # the served cluster came from OWNERSHIP_TAG

    @property
    def decisive(self) -> bool:
        return bool(self.clusters or self.others)


def decide(instance_id: str, facts: InstanceFacts | None, settings: Settings, event: Interruption) -> Decision:
    """Decide ownership and the action for one instance of `event` (node lookup comes later: `with_node`).

    A lifecycle hook that is not ours decides first: whoever owns the instance, that hook is never completed or
    heartbeated here (`hook-not-ours`); ACTION_FOREIGN_HOOK may still drain or cordon an owned node for it."""
    decision = _decide_instance(instance_id, facts, settings, event)
    lifecycle = event.lifecycle
    if lifecycle is None or settings.owns_hook(lifecycle.hook_name):
        return decision
    action: Action = "skip"
    if decision.acts and event.kind == "asg-terminate":
        action = "skip" if settings.action_foreign_hook == "ignore" else settings.action_foreign_hook
    return replace(decision, reason=Reason.HOOK_NOT_OURS, action=action, lifecycle_hook=lifecycle.hook_name)


def _decide_instance(
    instance_id: str, facts: InstanceFacts | None, settings: Settings, event: Interruption
) -> Decision:
    if facts is None:
        return Decision(instance_id, False, None, Reason.UNKNOWN_INSTANCE, "skip")
    verdict = _read_tags(facts.instance_tags, settings)
    source = Reason.OWNED_INSTANCE_TAG
    if not verdict.decisive and facts.asg_tags is not None:
        asg_verdict = _read_tags(facts.asg_tags, settings)
        if asg_verdict.decisive:
            verdict, source = asg_verdict, Reason.OWNED_ASG_TAG
        else:
            verdict = replace(verdict, mismatch=verdict.mismatch or asg_verdict.mismatch)
    if len(verdict.clusters) > 1:
        return Decision(instance_id, False, None, Reason.AMBIGUOUS_CLUSTER, "skip")
    if verdict.clusters:
        cluster = verdict.clusters[0]
        reason = Reason.OWNED_CUSTOM_TAG if verdict.custom else source
        action = _owned_action(event, settings)
        if action == "skip":
            reason = Reason.KIND_IGNORED
        elif (managed := _managed_by(facts, event, settings)) is not None:
            reason, action = managed, "skip"
        return Decision(instance_id, True, cluster, reason, action)
    if verdict.others:
        return Decision(instance_id, False, verdict.others[0], Reason.OTHER_CLUSTER, "skip")
    reason = Reason.TAG_VALUE_MISMATCH if verdict.mismatch else Reason.UNTAGGED
    return Decision(instance_id, False, None, reason, "skip")


def owning_cluster(facts: InstanceFacts, settings: Settings) -> str | None:
    """The one served cluster the instance's tags (then its ASG's, when read) name, whatever the event: None when
    they name none, several, or only other clusters."""
    verdict = _read_tags(facts.instance_tags, settings)
    if not verdict.decisive and facts.asg_tags is not None:
        verdict = _read_tags(facts.asg_tags, settings)
    return verdict.clusters[0] if len(verdict.clusters) == 1 else None


def needs_asg_tags(facts: InstanceFacts | None, settings: Settings) -> bool:
    """True when the instance's own tags do not decide and its ASG's tags have not been read yet."""
    if facts is None or facts.asg_name is None or facts.asg_tags is not None:
        return False
    return not _read_tags(facts.instance_tags, settings).decisive


def with_node(decision: Decision, node: str | None, event: Interruption) -> Decision:
    """Fold the node lookup into the decision: owned but nodeless means there is nothing to drain."""
    if node is not None:
        return replace(decision, node=node)
    if not decision.owned or decision.action not in ("drain", "cordon", "return"):
        return decision  # not ours, or waiting for a node to join (asg-launch)
    if decision.reason is Reason.HOOK_NOT_OURS:
        return replace(decision, action="skip")  # nothing to drain, and the hook is its owner's to answer
    action: Action = "complete-lifecycle" if event.lifecycle is not None else "skip"
    return replace(decision, reason=Reason.NO_NODE, action=action, node=None)


def decide_ignored(ignored: Ignored) -> list[Decision]:
    """Decisions for the instances an ignored event names, so `explain` shows why nothing happens."""
    return [Decision(i, False, None, Reason.UNSUPPORTED_KIND, "skip") for i in ignored.instance_ids]


def _owned_action(event: Interruption, settings: Settings) -> Action:
    """The kind's action (kinds.KINDS): its ACTION_* setting, or its fixed default."""
    rule = rule_of(event.kind)
    if rule.flow == "launch" and event.lifecycle is not None and event.lifecycle.to_warm_pool:
        return "complete-lifecycle"  # an instance entering the warm pool is stopped at once: no node now
    if rule.action_variable is None:
        return cast(Action, rule.default_action)
    configured = getattr(settings, rule.action_variable.lower())
    return "skip" if configured == "ignore" else cast(Action, configured)


def _managed_by(facts: InstanceFacts, event: Interruption, settings: Settings) -> Reason | None:
    """The controller that handles this owned instance's interruptions itself, unless settings opt in."""
    tags = {**(facts.asg_tags or {}), **facts.instance_tags}
    controller: Controller
    if any(tags.get(key) for key in AUTO_MODE_TAGS):
        controller, reason = "auto-mode", Reason.MANAGED_BY_AUTO_MODE
    elif tags.get(KARPENTER_TAG):
        controller, reason = "karpenter", Reason.MANAGED_BY_KARPENTER
    elif tags.get(NODE_GROUP_TAG) and event.kind == "rebalance":
        # A managed node group answers rebalance recommendations itself (capacity rebalancing: it launches the
        # replacement, then drains and terminates the old node); its other events are ours to drain.
        controller, reason = "managed-node-group", Reason.MANAGED_BY_NODE_GROUP
    else:
        return None
    return None if controller in settings.drain_controller_managed else reason


def _read_tags(tags: dict[str, str], settings: Settings) -> _Verdict:
    named: list[str] = []
    mismatch = False
    for name_tag in _CLUSTER_NAME_TAGS:
        if tags.get(name_tag):
            named.append(tags[name_tag])
    for key, value in tags.items():
        if key.startswith(CLUSTER_TAG_PREFIX) and len(key) > len(CLUSTER_TAG_PREFIX):
            if value in CLUSTER_TAG_VALUES:
                named.append(key[len(CLUSTER_TAG_PREFIX) :])
            else:
                mismatch = True
    if named:
        return _split(named, settings, mismatch=mismatch)
    rule = settings.ownership_tag
    if rule is not None and rule.key in tags:
        value = tags[rule.key]
        if rule.value is None:
            if value:
                return replace(_split([value], settings, mismatch=mismatch), custom=True)
        elif value == rule.value:
            # Settings guarantee exactly one served cluster when the rule carries a value.
            return _Verdict(clusters=settings.cluster_names[:1], custom=True)
        mismatch = True
    return _Verdict(mismatch=mismatch)


def _split(named: list[str], settings: Settings, *, mismatch: bool) -> _Verdict:
    unique = tuple(dict.fromkeys(named))
    return _Verdict(
        clusters=tuple(n for n in unique if settings.serves(n)),
        others=tuple(n for n in unique if not settings.serves(n)),
        mismatch=mismatch,
    )
