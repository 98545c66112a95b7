"""Which pods of a node a drain removes, with kubectl's exact filter semantics (kubectl/pkg/drain/filters.go).

The filters run in kubectl's order and stop at the first one that keeps the pod:
skip-deleted → DaemonSet → mirror → local storage (emptyDir) → unreplicated. Every pod gets a verdict and
a reason. Pure: the one lookup kubectl does inside a filter (does the DaemonSet still exist?) is passed in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from drain_orchestrator.drain.options import DrainOptions

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})

# kubectl's messages, kept verbatim so users recognise them.
MSG_DAEMONSET = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
MSG_IGNORE_DAEMONSET = "ignoring DaemonSet-managed Pods"
MSG_ORPHANED_DAEMONSET = "deleting orphaned DaemonSet-managed Pods (--force)"
MSG_LOCAL_STORAGE = "Pods with local storage (use --delete-emptydir-data to override)"
MSG_DELETE_LOCAL_STORAGE = "deleting Pods with local storage"
MSG_UNREPLICATED = "Pods that declare no controller (use --force to override)"
MSG_DELETE_UNREPLICATED = "deleting Pods that declare no controller"
MSG_MIRROR = "mirror pod (managed by the kubelet)"
MSG_STUCK = "terminating for longer than the skip-wait-for-delete timeout"
MSG_TERMINATING = "already terminating; waiting for it to go"
MSG_EVICT_DAEMONSET = "DaemonSet pod, evicted last (--evict-daemonsets)"
MSG_TOLERATES_DRAIN_TAINT = "DaemonSet pod tolerates the drain taint and would be recreated"


class Verdict(StrEnum):
    EVICT = "evict"  # remove it (eviction API)
    WAIT = "wait"  # already terminating: nothing to send, wait for it to go
    SKIP = "skip"  # left on the node on purpose
    REFUSE = "refuse"  # kubectl "error": blocks the whole drain unless a flag overrides it
    HOLD = "hold"  # its drain policy lets it finish first (voluntary events): not evicted yet, still waited on


@dataclass(frozen=True)
class Toleration:
    key: str | None
    operator: str
    effect: str | None


@dataclass(frozen=True)
class Controller:
    kind: str
    api_version: str
    name: str


@dataclass(frozen=True)
class PodInfo:
    """The facts about a pod that draining needs, parsed from the API's JSON (camelCase)."""

    namespace: str
    name: str
    uid: str
    phase: str = "Running"
    deletion_timestamp: float | None = None
    controller: Controller | None = None
    annotations: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    has_emptydir: bool = False
    priority_class_name: str | None = None
    termination_grace_period: int | None = None
    tolerations: tuple[Toleration, ...] = ()
    ready: bool = False
    start_time: float | None = None  # status.startTime
    finalizers: tuple[str, ...] = ()
    claims: tuple[str, ...] = ()  # PersistentVolumeClaims it mounts (generic ephemeral ones included)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def is_terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def is_terminating(self) -> bool:
        return self.deletion_timestamp is not None

    @property
    def is_mirror(self) -> bool:
        return MIRROR_ANNOTATION in self.annotations

    @property
    def is_critical(self) -> bool:
        return self.priority_class_name in CRITICAL_PRIORITY_CLASSES

    @property
    def daemonset_name(self) -> str | None:
        c = self.controller
        if c is not None and c.kind == "DaemonSet" and c.api_version == "apps/v1":
            return c.name
        return None

    @property
    def keeps_name(self) -> bool:
        """Its controller creates its successor under the same name (a StatefulSet)."""
        c = self.controller
        return c is not None and c.kind == "StatefulSet" and c.api_version == "apps/v1"

    def tolerates(self, key: str, effect: str) -> bool:
        for t in self.tolerations:
            if t.effect not in (None, "", effect):
                continue
            if t.operator == "Exists" and not t.key:
                return True
            if t.key == key:
                return True
        return False

    @classmethod
    def from_dict(cls, pod: Mapping[str, Any]) -> PodInfo:
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        status = pod.get("status") or {}
        controller = None
        for ref in meta.get("ownerReferences") or []:
            if ref.get("controller"):
                controller = Controller(ref.get("kind", ""), ref.get("apiVersion", ""), ref.get("name", ""))
                break
        conditions = status.get("conditions") or []
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        tolerations = tuple(
            Toleration(t.get("key"), t.get("operator") or "Equal", t.get("effect"))
            for t in spec.get("tolerations") or []
        )
        name = meta.get("name", "")
        claims = []
        for v in spec.get("volumes") or []:
            if "persistentVolumeClaim" in v:
                claims.append((v.get("persistentVolumeClaim") or {}).get("claimName", ""))
            elif "ephemeral" in v:
                claims.append(f"{name}-{v.get('name', '')}")  # the ephemeral volume controller's naming
        return cls(
            namespace=meta.get("namespace", ""),
            name=name,
            uid=meta.get("uid", ""),
            phase=status.get("phase") or "Pending",
            deletion_timestamp=parse_time(meta.get("deletionTimestamp")),
            controller=controller,
            annotations=dict(meta.get("annotations") or {}),
            labels=dict(meta.get("labels") or {}),
            has_emptydir=any("emptyDir" in v for v in spec.get("volumes") or []),
            priority_class_name=spec.get("priorityClassName"),
            termination_grace_period=spec.get("terminationGracePeriodSeconds"),
            tolerations=tolerations,
            ready=ready,
            start_time=parse_time(status.get("startTime")),
            finalizers=tuple(meta.get("finalizers") or ()),
            claims=tuple(c for c in claims if c),
        )


def parse_time(value: str | None) -> float | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True)
class PodVerdict:
    pod: PodInfo
    verdict: Verdict
    reason: str = ""
    # kubectl prints these as warnings (e.g. "deleting Pods with local storage") but still removes the pod.
    warning: str | None = None
    order: int = 0  # drain-orchestrator.io/evict-order: within a tier and a namespace, lower orders go first
    hold: str = ""  # HOLD: what holds it (drain/policy.py Hold)


# DaemonSet lookups: (namespace, name) → True exists, False NotFound, str = the lookup's error message.
DaemonSetLookup = Mapping[tuple[str, str], bool | str]


def daemonsets_to_look_up(pods: Iterable[PodInfo]) -> set[tuple[str, str]]:
    """The DaemonSets whose existence the DaemonSet filter needs (only for non-terminal DS pods)."""
    out: set[tuple[str, str]] = set()
    for p in pods:
        ds = p.daemonset_name
        if ds is not None and not p.is_terminal:
            out.add((p.namespace, ds))
    return out


def _skip_deleted(p: PodInfo, o: DrainOptions, now: float) -> PodVerdict | None:
    if (
        o.skip_wait_for_delete_timeout > 0
        and p.deletion_timestamp is not None
        and int(now - p.deletion_timestamp) > o.skip_wait_for_delete_timeout
    ):
        return PodVerdict(p, Verdict.SKIP, MSG_STUCK)
    return None


def _daemonset(
    p: PodInfo, o: DrainOptions, lookup: DaemonSetLookup, drain_taint: tuple[str, str] | None
) -> PodVerdict | None:
    ds = p.daemonset_name
    if ds is None or p.is_terminal:
        return None
    found = lookup.get((p.namespace, ds), f"daemonset {ds!r} was not looked up")
    if isinstance(found, str):
        return PodVerdict(p, Verdict.REFUSE, found)
    if not found:
        if o.force:
            return PodVerdict(p, Verdict.EVICT, MSG_ORPHANED_DAEMONSET, warning=MSG_ORPHANED_DAEMONSET)
        return PodVerdict(p, Verdict.REFUSE, f'daemonsets.apps "{ds}" not found')
    if o.evict_daemonsets:
        if drain_taint is not None and p.tolerates(*drain_taint):
            return PodVerdict(p, Verdict.SKIP, MSG_TOLERATES_DRAIN_TAINT)
        # Still subject to the remaining filters, like any other pod.
        return None
    # Our drain behaves like `kubectl drain --ignore-daemonsets`: DaemonSet pods stay.
    return PodVerdict(p, Verdict.SKIP, MSG_IGNORE_DAEMONSET, warning=MSG_IGNORE_DAEMONSET)


def _mirror(p: PodInfo) -> PodVerdict | None:
    return PodVerdict(p, Verdict.SKIP, MSG_MIRROR) if p.is_mirror else None


def _local_storage(p: PodInfo, o: DrainOptions) -> tuple[PodVerdict | None, str | None]:
    if not p.has_emptydir or p.is_terminal:
        return None, None
    if not o.delete_emptydir_data:
        return PodVerdict(p, Verdict.REFUSE, MSG_LOCAL_STORAGE), None
    return None, MSG_DELETE_LOCAL_STORAGE


def _unreplicated(p: PodInfo, o: DrainOptions) -> tuple[PodVerdict | None, str | None]:
    if p.is_terminal or p.controller is not None:
        return None, None
    if not o.force:
        return PodVerdict(p, Verdict.REFUSE, MSG_UNREPLICATED), None
    return None, MSG_DELETE_UNREPLICATED


def classify_pod(
    p: PodInfo,
    options: DrainOptions,
    now: float,
    daemonsets: DaemonSetLookup,
    drain_taint: tuple[str, str] | None = None,
) -> PodVerdict:
    """Run kubectl's filter chain on one pod; ``drain_taint`` is (key, effect) when DS pods are evicted."""
    for early in (
        _skip_deleted(p, options, now),
        _daemonset(p, options, daemonsets, drain_taint),
        _mirror(p),
    ):
        if early is not None:
            return early
    warnings: list[str] = []
    for check in (_local_storage, _unreplicated):
        stop, warning = check(p, options)
        if stop is not None:
            return stop
        if warning:
            warnings.append(warning)
    warning = "; ".join(warnings) or None
    if p.is_terminating:
        # kubectl would POST another eviction, which the apiserver turns into a plain delete; waiting is
        # equivalent and cannot shorten a grace period another actor chose.
        return PodVerdict(p, Verdict.WAIT, MSG_TERMINATING, warning=warning)
    if p.daemonset_name is not None and not p.is_terminal:
        return PodVerdict(p, Verdict.EVICT, MSG_EVICT_DAEMONSET, warning=warning)
    return PodVerdict(p, Verdict.EVICT, warning or "", warning=warning)


def classify(
    pods: Sequence[PodInfo],
    options: DrainOptions,
    now: float,
    daemonsets: DaemonSetLookup,
    drain_taint: tuple[str, str] | None = None,
) -> list[PodVerdict]:
    return [classify_pod(p, options, now, daemonsets, drain_taint) for p in pods]


def refusal_errors(verdicts: Iterable[PodVerdict]) -> list[str]:
    """kubectl's aggregated message per refusal reason: ``cannot delete <msg>: ns/pod, ns/pod``."""
    groups: dict[str, list[str]] = {}
    for v in verdicts:
        if v.verdict is Verdict.REFUSE:
            groups.setdefault(v.reason, []).append(v.pod.key)
    return [f"cannot delete {msg}: {', '.join(keys)}" for msg, keys in groups.items()]
