"""kubectl's drain filter chain (`k8s.io/kubectl/pkg/drain/filters.go`), pod by pod, with verdicts and reasons."""

from __future__ import annotations

from typing import Any

import pytest

from drain_orchestrator.drain.classify import (
    MSG_DAEMONSET,
    MSG_IGNORE_DAEMONSET,
    MSG_LOCAL_STORAGE,
    MSG_MIRROR,
    MSG_STUCK,
    MSG_TOLERATES_DRAIN_TAINT,
    MSG_UNREPLICATED,
    PodInfo,
    Verdict,
    classify,
    classify_pod,
    daemonsets_to_look_up,
    refusal_errors,
)
from drain_orchestrator.drain.options import DEFAULT_DRAIN_TAINT_KEY, DrainOptions

NOW = 1_800_000_000.0


def pod(
    name: str = "p",
    *,
    owner: str | None = "ReplicaSet",
    phase: str = "Running",
    deleted_ago: float | None = None,
    emptydir: bool = False,
    mirror: bool = False,
    priority: str | None = None,
    tolerations: list[dict[str, Any]] | None = None,
) -> PodInfo:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}"}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner, "name": f"{owner.lower()}-1", "controller": True}
        ]
    if mirror:
        meta["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    if deleted_ago is not None:
        from datetime import UTC, datetime

        meta["deletionTimestamp"] = datetime.fromtimestamp(NOW - deleted_ago, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    spec: dict[str, Any] = {"volumes": [{"name": "v", "emptyDir": {}}] if emptydir else []}
    if priority:
        spec["priorityClassName"] = priority
    if tolerations:
        spec["tolerations"] = tolerations
    return PodInfo.from_dict({"metadata": meta, "spec": spec, "status": {"phase": phase}})


DS_EXISTS = {("ns", "daemonset-1"): True}
DS_GONE = {("ns", "daemonset-1"): False}


def verdict(p: PodInfo, **opts: Any) -> tuple[Verdict, str]:
    ds = opts.pop("ds", DS_EXISTS)
    v = classify_pod(p, DrainOptions(**opts), NOW, ds, DrainOptions(**opts).drain_taint)
    return v.verdict, v.reason


def test_replicated_pod_is_evicted() -> None:
    assert verdict(pod())[0] is Verdict.EVICT


def test_daemonset_pod_is_skipped_like_ignore_daemonsets() -> None:
    assert verdict(pod(owner="DaemonSet")) == (Verdict.SKIP, MSG_IGNORE_DAEMONSET)


def test_orphaned_daemonset_pod_needs_force() -> None:
    v, reason = verdict(pod(owner="DaemonSet"), ds=DS_GONE)
    assert v is Verdict.REFUSE and "not found" in reason
    assert verdict(pod(owner="DaemonSet"), ds=DS_GONE, force=True)[0] is Verdict.EVICT


def test_daemonset_lookup_error_refuses_with_the_error() -> None:
    v, reason = verdict(pod(owner="DaemonSet"), ds={("ns", "daemonset-1"): "get daemonset: 500 boom"})
    assert (v, reason) == (Verdict.REFUSE, "get daemonset: 500 boom")


def test_terminal_daemonset_pod_is_removed_without_lookup() -> None:
    p = pod(owner="DaemonSet", phase="Succeeded")
    assert daemonsets_to_look_up([p]) == set()
    assert verdict(p, ds={})[0] is Verdict.EVICT


def test_evict_daemonsets_evicts_them_unless_they_tolerate_the_drain_taint() -> None:
    assert verdict(pod(owner="DaemonSet"), evict_daemonsets=True)[0] is Verdict.EVICT
    everything = [{"operator": "Exists"}]
    assert verdict(pod(owner="DaemonSet", tolerations=everything), evict_daemonsets=True) == (
        Verdict.SKIP,
        MSG_TOLERATES_DRAIN_TAINT,
    )
    ours = [{"key": DEFAULT_DRAIN_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]
    assert verdict(pod(owner="DaemonSet", tolerations=ours), evict_daemonsets=True)[0] is Verdict.SKIP
    other = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
    assert verdict(pod(owner="DaemonSet", tolerations=other), evict_daemonsets=True)[0] is Verdict.EVICT


def test_mirror_pod_is_skipped_even_with_force() -> None:
    assert verdict(pod(owner=None, mirror=True), force=True) == (Verdict.SKIP, MSG_MIRROR)


def test_emptydir_pod_refused_without_flag_removed_with_it() -> None:
    assert verdict(pod(emptydir=True)) == (Verdict.REFUSE, MSG_LOCAL_STORAGE)
    v = classify_pod(pod(emptydir=True), DrainOptions(delete_emptydir_data=True), NOW, DS_EXISTS)
    assert v.verdict is Verdict.EVICT and v.warning == "deleting Pods with local storage"


def test_terminal_pods_pass_emptydir_and_controller_checks() -> None:
    for phase in ("Succeeded", "Failed"):
        assert verdict(pod(owner=None, emptydir=True, phase=phase))[0] is Verdict.EVICT


def test_unmanaged_pod_refused_without_force() -> None:
    assert verdict(pod(owner=None)) == (Verdict.REFUSE, MSG_UNREPLICATED)
    v = classify_pod(pod(owner=None), DrainOptions(force=True), NOW, DS_EXISTS)
    assert v.verdict is Verdict.EVICT and v.warning == "deleting Pods that declare no controller"


def test_emptydir_check_runs_before_the_controller_check() -> None:
    # kubectl stops at the first refusing filter: localStorage comes before unreplicated.
    assert verdict(pod(owner=None, emptydir=True)) == (Verdict.REFUSE, MSG_LOCAL_STORAGE)


def test_terminating_pod_is_waited_on() -> None:
    assert verdict(pod(deleted_ago=5))[0] is Verdict.WAIT


def test_terminating_pod_skipped_once_stuck_past_threshold() -> None:
    assert verdict(pod(deleted_ago=5), skip_wait_for_delete_timeout=10)[0] is Verdict.WAIT
    assert verdict(pod(deleted_ago=11), skip_wait_for_delete_timeout=10) == (Verdict.SKIP, MSG_STUCK)
    # 0 disables the skip, like kubectl
    assert verdict(pod(deleted_ago=10_000))[0] is Verdict.WAIT


def test_terminating_unmanaged_pod_is_still_refused_like_kubectl() -> None:
    assert verdict(pod(owner=None, deleted_ago=1))[0] is Verdict.REFUSE


def test_daemonset_check_precedes_mirror_and_emptydir() -> None:
    assert verdict(pod(owner="DaemonSet", emptydir=True, mirror=True)) == (Verdict.SKIP, MSG_IGNORE_DAEMONSET)


def test_refusal_errors_group_like_kubectl() -> None:
    vs = classify([pod("a", owner=None), pod("b", owner=None), pod("c", emptydir=True)], DrainOptions(), NOW, {})
    assert refusal_errors(vs) == [
        f"cannot delete {MSG_UNREPLICATED}: ns/a, ns/b",
        f"cannot delete {MSG_LOCAL_STORAGE}: ns/c",
    ]


def test_from_dict_reads_the_fields_draining_needs() -> None:
    p = PodInfo.from_dict(
        {
            "metadata": {"name": "x", "namespace": "n", "uid": "u", "labels": {"a": "b"}},
            "spec": {"terminationGracePeriodSeconds": 7, "priorityClassName": "system-node-critical"},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        }
    )
    assert (p.key, p.uid, p.termination_grace_period, p.is_critical, p.ready, p.controller) == (
        "n/x",
        "u",
        7,
        True,
        True,
        None,
    )


@pytest.mark.parametrize("kind", ["ReplicaSet", "StatefulSet", "Job", "DaemonSet"])
def test_non_controller_owner_reference_does_not_count(kind: str) -> None:
    p = PodInfo.from_dict(
        {
            "metadata": {
                "name": "x",
                "namespace": "ns",
                "uid": "u",
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": kind, "name": "o"}],
            },
            "spec": {},
            "status": {"phase": "Running"},
        }
    )
    assert p.controller is None
    assert verdict(p)[0] is Verdict.REFUSE


def test_daemonset_message_constant_matches_kubectl() -> None:
    assert MSG_DAEMONSET == "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
