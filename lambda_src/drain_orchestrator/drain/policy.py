"""Per-pod drain policy: annotations on a pod or its controller, and Karpenter's ``do-not-disrupt``. Pure.

- ``drain-orchestrator.io/drain-policy``: ``evict`` (default), ``skip`` (never evicted; the node goes with it) or
  ``wait-for-completion`` (not evicted on a voluntary event until it finishes or the deadline).
- ``drain-orchestrator.io/evict-order``: an integer; within a criticality tier, lower orders go first.
- ``karpenter.sh/do-not-disrupt``: ``"true"`` or a positive Go duration (``"30m"``, ``"1h30m"``) counted from the
  pod's start, read from the pod only, as Karpenter does (pkg/utils/pod/scheduling.go IsDoNotDisruptActive). It
  holds the pod on voluntary events like ``wait-for-completion``; involuntary ones (Spot, state change) proceed.

The pod's own annotation wins over its controller's, key by key. An invalid value is reported with the pod and the
value and treated as absent (the default), as Karpenter treats an invalid do-not-disrupt value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from drain_orchestrator.drain.classify import Controller, PodInfo, PodVerdict, Verdict
from drain_orchestrator.drain.plan import force_delete_at
from drain_orchestrator.kinds import KINDS

POLICY_ANNOTATION = "drain-orchestrator.io/drain-policy"
ORDER_ANNOTATION = "drain-orchestrator.io/evict-order"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
KEYS = (POLICY_ANNOTATION, ORDER_ANNOTATION)

# Voluntary: the instance goes because someone chose it (scale-in, rebalance, maintenance); there is time to let
# work finish. Spot interruptions and state changes are involuntary: the instance goes regardless.
VOLUNTARY_KINDS = frozenset(k for k, rule in KINDS.items() if rule.voluntary)  # kinds.KINDS's column

_ORDER = re.compile(r"[+-]?[0-9]{1,9}")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")


class Policy(StrEnum):
    EVICT = "evict"
    SKIP = "skip"
    WAIT_FOR_COMPLETION = "wait-for-completion"


class Hold(StrEnum):
    """What an annotation holds a pod for: the report's ``held_by_policy[].policy`` and the held notice's reasons."""

    WAIT_FOR_COMPLETION = "wait-for-completion"  # drain-policy: wait-for-completion
    DO_NOT_DISRUPT = "do-not-disrupt"  # karpenter.sh/do-not-disrupt
    EVICT_ORDER = "evict-order"  # an earlier evict-order of its namespace is held


# Controllers whose annotations count: (kind, apiVersion). A ReplicaSet's are read through to its Deployment.
OWNER_KINDS = frozenset(
    {
        ("ReplicaSet", "apps/v1"),
        ("Deployment", "apps/v1"),
        ("StatefulSet", "apps/v1"),
        ("DaemonSet", "apps/v1"),
        ("Job", "batch/v1"),
    }
)

OwnerKey = tuple[str, str, str]  # (namespace, kind, name)


@dataclass(frozen=True)
class Owner:
    """What a lookup of a pod's controller found: ``found`` True, False (404) or the error message."""

    found: bool | str
    annotations: Mapping[str, str]
    controller: Controller | None = None  # its own controller (a ReplicaSet's Deployment)


def owner_of(found: Mapping[str, Any] | str | None) -> Owner:
    """The lookup's answer (kube/owners.py: the controller's metadata, None when it does not exist, or the failed
    lookup's message) as the policy reads it."""
    if found is None:
        return Owner(False, {})
    if isinstance(found, str):
        return Owner(found, {})
    controller = None
    for ref in found.get("ownerReferences") or []:
        if ref.get("controller"):
            controller = Controller(ref.get("kind", ""), ref.get("apiVersion", ""), ref.get("name", ""))
            break
    return Owner(True, dict(found.get("annotations") or {}), controller)


@dataclass(frozen=True)
class PodPolicy:
    policy: Policy = Policy.EVICT
    source: str = ""  # where the policy came from: "pod" or "Deployment ns/name"
    order: int = 0
    # do-not-disrupt: epoch seconds until which it holds the pod (inf: "true"); None: not set or invalid
    do_not_disrupt_until: float | None = None
    problems: tuple[str, ...] = ()  # invalid annotation values, for the report

    def holds(self, voluntary: bool, now: float) -> tuple[Hold, str] | None:
        """What holds the pod on this event, and why in words (None: evict it)."""
        if not voluntary:
            return None
        if self.policy is Policy.WAIT_FOR_COMPLETION:
            why = f"{POLICY_ANNOTATION}=wait-for-completion ({self.source}): waiting for it to finish"
            return Hold.WAIT_FOR_COMPLETION, why
        until = self.do_not_disrupt_until
        if until is not None and now < until:
            left = "" if math.isinf(until) else f" for {until - now:.0f}s more"
            return Hold.DO_NOT_DISRUPT, f"{DO_NOT_DISRUPT} on the pod: not evicted on a voluntary disruption{left}"
        return None


def is_voluntary(kind: str) -> bool:
    return kind in VOLUNTARY_KINDS


def owner_key(namespace: str, controller: Controller | None) -> OwnerKey | None:
    if controller is None or (controller.kind, controller.api_version) not in OWNER_KINDS:
        return None
    return (namespace, controller.kind, controller.name)


# a Deployment's ReplicaSet is named "<deployment>-<pod-template-hash>", and its pods carry that hash as this label
TEMPLATE_HASH = "pod-template-hash"


def deployment_key(pod: PodInfo) -> OwnerKey | None:
    """The Deployment a pod's ReplicaSet is named for: ``<name>-<hash>`` where ``hash`` is the pod's
    pod-template-hash label, as the Deployment controller names and labels them. None for any other ReplicaSet."""
    c = pod.controller
    if c is None or (c.kind, c.api_version) != ("ReplicaSet", "apps/v1"):
        return None
    suffix = "-" + pod.labels.get(TEMPLATE_HASH, "")
    if suffix == "-" or not c.name.endswith(suffix) or len(c.name) == len(suffix):
        return None
    return (pod.namespace, "Deployment", c.name[: -len(suffix)])


def by_name(pod: PodInfo, known: Mapping[OwnerKey, Owner]) -> OwnerKey | None:
    """The pod's Deployment read by its ReplicaSet's name, when that lookup found it and the ReplicaSet itself was
    not read (its annotations are copies of the Deployment's, current only on the newest ReplicaSet)."""
    key, parent = owner_key(pod.namespace, pod.controller), deployment_key(pod)
    if key is None or key in known or parent is None:
        return None
    return parent if parent in known and known[parent].found is True else None


def owners_to_look_up(pods: Iterable[PodInfo], known: Mapping[OwnerKey, Owner]) -> set[OwnerKey]:
    """The controllers not looked up yet; mirror pods have no policy. A Deployment's ReplicaSet is skipped: its
    Deployment, named by the ReplicaSet's name, is looked up instead (one request a namespace, not two). The
    ReplicaSet is looked up when that finds no Deployment, and then its own controller, if a Deployment."""
    out: set[OwnerKey] = set()
    for p in pods:
        if p.is_mirror:
            continue
        key = owner_key(p.namespace, p.controller)
        if key is None:
            continue
        named = deployment_key(p)
        if key not in known and named is not None and named not in known:
            out.add(named)
            continue
        if key not in known:
            if by_name(p, known) is None:
                out.add(key)
            continue
        parent = owner_key(p.namespace, known[key].controller)
        if key[1] == "ReplicaSet" and parent is not None and parent[1] == "Deployment" and parent not in known:
            out.add(parent)
    return out


def _controller_annotations(pod: PodInfo, owners: Mapping[OwnerKey, Owner]) -> tuple[dict[str, str], str]:
    named = by_name(pod, owners)
    if named is not None:
        found = {k: v for k, v in owners[named].annotations.items() if k in KEYS}
        return found, f"{named[1]} {named[0]}/{named[2]}"
    key = owner_key(pod.namespace, pod.controller)
    if key is None or key not in owners:
        return {}, ""
    owner = owners[key]
    found = {k: v for k, v in owner.annotations.items() if k in KEYS}
    label = f"{key[1]} {key[0]}/{key[2]}"
    parent = owner_key(pod.namespace, owner.controller)
    if key[1] == "ReplicaSet" and parent is not None and parent in owners:
        # the Deployment copies its annotations to its newest ReplicaSet only: the Deployment's own are current
        mine = {k: v for k, v in owners[parent].annotations.items() if k in KEYS}
        if mine:
            found, label = {**found, **mine}, f"{parent[1]} {parent[0]}/{parent[2]}"
    return found, label


def parse_go_duration(value: str) -> float | None:
    """Seconds of a Go ``time.ParseDuration`` string ("1h30m", "90s", "1.5h"), or None if it is not one."""
    text = value[1:] if value[:1] in "+-" else value
    if text == "0":
        return 0.0
    if not text:
        return None
    total, pos = 0.0, 0
    while pos < len(text):
        m = _DURATION_PART.match(text, pos)
        if m is None or m.group(1) in ("", "."):
            return None
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return -total if value.startswith("-") else total


def _do_not_disrupt(pod: PodInfo) -> tuple[float | None, str | None]:
    value = pod.annotations.get(DO_NOT_DISRUPT)
    if value is None:
        return None, None
    if value == "true":
        return math.inf, None
    seconds = parse_go_duration(value)
    if seconds is None or seconds <= 0:
        return None, f'{pod.key}: {DO_NOT_DISRUPT}={value!r} is not "true" nor a positive duration; ignored'
    if pod.start_time is None:
        return math.inf, None  # Karpenter fails safe: without a start time the protection holds
    return pod.start_time + seconds, None


def resolve(pod: PodInfo, owners: Mapping[OwnerKey, Owner]) -> PodPolicy:
    """The pod's policy: its own annotations, else its controller's (per key); invalid values reported."""
    inherited, label = _controller_annotations(pod, owners)
    problems: list[str] = []

    def value(key: str) -> tuple[str | None, str]:
        if key in pod.annotations:
            return pod.annotations[key], "pod"
        if key in inherited:
            return inherited[key], label
        return None, ""

    raw, source = value(POLICY_ANNOTATION)
    policy = Policy.EVICT
    if raw is not None:
        try:
            policy = Policy(raw)
        except ValueError:
            allowed = ", ".join(p.value for p in Policy)
            problems.append(f"{pod.key}: {POLICY_ANNOTATION}={raw!r} ({source}) is not one of {allowed}; evict")
            source = ""
    raw_order, order_source = value(ORDER_ANNOTATION)
    order = 0
    if raw_order is not None:
        if _ORDER.fullmatch(raw_order):
            order = int(raw_order)
        else:
            problems.append(f"{pod.key}: {ORDER_ANNOTATION}={raw_order!r} ({order_source}) is not an integer; 0")
    until, problem = _do_not_disrupt(pod)
    if problem:
        problems.append(problem)
    return PodPolicy(policy, source, order, until, tuple(problems))


def owner_problems(owners: Mapping[OwnerKey, Owner], keys: Iterable[OwnerKey]) -> list[str]:
    """Lookups that failed (RBAC not updated yet, API errors): those pods fall back to their own annotations."""
    out = []
    for key in sorted(set(keys)):
        owner = owners.get(key)
        if owner is not None and isinstance(owner.found, str) and key[1] != "DaemonSet":
            out.append(f"drain policy of {key[1]} {key[0]}/{key[2]} unknown ({owner.found}): pod annotations only")
    return out


def apply(
    verdicts: Iterable[PodVerdict],
    policies: Mapping[str, PodPolicy],
    *,
    voluntary: bool,
    now: float,
    deadline: float | None,
    margin: float,
    until: float | None = None,
) -> list[PodVerdict]:
    """kubectl's verdicts (classify.py) with the drain policies on top; ``policies`` by pod key.

    ``skip`` overrides what kubectl would do (refusals included: nothing is removed, so nothing is refused); kubectl's
    own skips (DaemonSet, mirror) stay. A held pod goes anyway when the deadline policy's time comes (its whole grace
    still fits before the deadline), for do-not-disrupt with a duration when that has run out, and for every hold at
    ``until`` (epoch; POLICY_HOLD_MAX_SECONDS after the drain began): from then on no annotation holds a pod, and
    evict-order orders nothing."""
    past = until is not None and now >= until
    out = []
    for v in verdicts:
        pp = policies.get(v.pod.key)
        if pp is None:
            out.append(v)
            continue
        order = 0 if past else pp.order
        if pp.policy is Policy.SKIP and v.verdict is not Verdict.SKIP:
            reason = f"{POLICY_ANNOTATION}=skip ({pp.source}): left on the node"
            out.append(PodVerdict(v.pod, Verdict.SKIP, reason, order=order))
            continue
        evictable = v.verdict is Verdict.EVICT and not v.pod.is_terminal
        held = pp.holds(voluntary, now) if evictable and not past else None
        release = force_delete_at(v.pod.termination_grace_period, deadline, margin)
        if held is not None and (release is None or now < release):
            kind, why = held
            out.append(PodVerdict(v.pod, Verdict.HOLD, why, warning=v.warning, order=order, hold=kind.value))
            continue
        out.append(replace(v, order=order))
    return out


def release_time(
    v: PodVerdict,
    policies: Mapping[str, PodPolicy],
    deadline: float | None,
    margin: float,
    until: float | None = None,
) -> float:
    """Epoch seconds when a held pod is looked at again: its do-not-disrupt runs out, the deadline policy, or the
    cluster's cap on annotation holds (``until``)."""
    pp = policies.get(v.pod.key)
    at = force_delete_at(v.pod.termination_grace_period, deadline, margin)
    times = [t for t in (at, pp.do_not_disrupt_until if pp else None) if t is not None and not math.isinf(t)]
    if pp is not None and pp.policy is Policy.WAIT_FOR_COMPLETION:
        times = [t for t in (at,) if t is not None]
    if until is not None:
        times.append(until)
    return min(times, default=math.inf)
