"""Per-pod drain policy (drain/policy.py): annotations on the pod or its controller, precedence, Karpenter's
do-not-disrupt with its optional duration, voluntary vs involuntary events, evict-order stages, invalid values."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest

from drain_orchestrator.drain import policy
from drain_orchestrator.drain.classify import Controller, PodInfo, PodVerdict, Verdict, classify
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.plan import active_tier, to_evict_now, waiting_for_order
from drain_orchestrator.drain.policy import (
    DO_NOT_DISRUPT,
    ORDER_ANNOTATION,
    POLICY_ANNOTATION,
    Owner,
    Policy,
    apply,
    deployment_key,
    is_voluntary,
    owners_to_look_up,
    parse_go_duration,
    release_time,
    resolve,
)

NOW = 1_800_000_000.0
RS = Controller("ReplicaSet", "apps/v1", "web-5d4f")
DEPLOY = Controller("Deployment", "apps/v1", "web")


def pod(
    name: str = "p",
    *,
    annotations: dict[str, str] | None = None,
    controller: Controller | None = RS,
    phase: str = "Running",
    started_ago: float | None = 600.0,
    grace: int | None = 30,
    unmanaged: bool = False,
) -> PodInfo:
    return PodInfo(
        namespace="ns",
        name=name,
        uid=f"uid-{name}",
        phase=phase,
        controller=None if unmanaged else controller,
        annotations=annotations or {},
        start_time=None if started_ago is None else NOW - started_ago,
        termination_grace_period=grace,
    )


def owners(rs: dict[str, str] | None = None, deploy: dict[str, str] | None = None) -> dict[Any, Owner]:
    out: dict[Any, Owner] = {("ns", "ReplicaSet", "web-5d4f"): Owner(True, rs or {}, DEPLOY)}
    if deploy is not None:
        out[("ns", "Deployment", "web")] = Owner(True, deploy)
    return out


def decide(
    p: PodInfo,
    known: dict[Any, Owner] | None = None,
    *,
    voluntary: bool = True,
    deadline: float | None = NOW + 3600,
    now: float = NOW,
    **opts: Any,
) -> PodVerdict:
    o = DrainOptions(**opts)
    (v,) = classify([p], o, now, {})
    pols = {p.key: resolve(p, known or {})}
    (out,) = apply([v], pols, voluntary=voluntary, now=now, deadline=deadline, margin=2.0)
    return out


def test_default_is_evict_order_zero() -> None:
    pp = resolve(pod(), {})
    assert (pp.policy, pp.order, pp.do_not_disrupt_until, pp.problems) == (Policy.EVICT, 0, None, ())
    assert decide(pod()).verdict is Verdict.EVICT


def test_skip_from_the_pod_leaves_it_even_where_kubectl_would_refuse() -> None:
    p = pod(annotations={POLICY_ANNOTATION: "skip"}, unmanaged=True)
    v = decide(p)  # kubectl would refuse an unmanaged pod without --force: nothing is removed, so nothing refused
    assert v.verdict is Verdict.SKIP and v.reason == f"{POLICY_ANNOTATION}=skip (pod): left on the node"


def test_the_deployment_annotation_reaches_its_pods_through_the_replicaset() -> None:
    v = decide(pod(), owners(deploy={POLICY_ANNOTATION: "skip"}))
    assert v.verdict is Verdict.SKIP and "(Deployment ns/web)" in v.reason


def test_the_pods_own_annotation_wins_over_its_controllers_key_by_key() -> None:
    known = owners(deploy={POLICY_ANNOTATION: "skip", ORDER_ANNOTATION: "7"})
    pp = resolve(pod(annotations={POLICY_ANNOTATION: "evict"}), known)
    assert (pp.policy, pp.source, pp.order) == (Policy.EVICT, "pod", 7)


def test_the_deployment_wins_over_a_stale_copy_on_its_replicaset() -> None:
    known = owners(rs={POLICY_ANNOTATION: "skip"}, deploy={POLICY_ANNOTATION: "wait-for-completion"})
    assert resolve(pod(), known).policy is Policy.WAIT_FOR_COMPLETION
    # a ReplicaSet without a Deployment (or whose Deployment is unknown) counts by itself
    assert resolve(pod(), owners(rs={POLICY_ANNOTATION: "skip"})).policy is Policy.SKIP


@pytest.mark.parametrize("kind", ["voluntary", "involuntary"])
def test_wait_for_completion_holds_on_voluntary_events_only(kind: str) -> None:
    p = pod(annotations={POLICY_ANNOTATION: "wait-for-completion"}, controller=Controller("Job", "batch/v1", "j"))
    v = decide(p, voluntary=kind == "voluntary")
    assert v.verdict is (Verdict.HOLD if kind == "voluntary" else Verdict.EVICT)


def test_a_finished_job_pod_is_removed_not_held() -> None:
    p = pod(annotations={POLICY_ANNOTATION: "wait-for-completion"}, phase="Succeeded")
    assert decide(p).verdict is Verdict.EVICT


def test_a_held_pod_goes_when_its_whole_grace_just_fits_before_the_deadline() -> None:
    p = pod(annotations={POLICY_ANNOTATION: "wait-for-completion"}, grace=30)
    deadline = NOW + 100
    release = deadline - 2.0 - 30 - 1  # the deadline policy's time: force_delete_at
    assert decide(p, deadline=deadline, now=release - 0.5).verdict is Verdict.HOLD
    assert decide(p, deadline=deadline, now=release).verdict is Verdict.EVICT
    v = PodVerdict(p, Verdict.HOLD)
    assert release_time(v, {p.key: resolve(p, {})}, deadline, 2.0) == release
    assert decide(p, deadline=None).verdict is Verdict.HOLD  # no deadline: until it finishes
    assert release_time(v, {p.key: resolve(p, {})}, None, 2.0) == math.inf


def test_do_not_disrupt_true_holds_on_voluntary_and_not_on_involuntary_events() -> None:
    p = pod(annotations={DO_NOT_DISRUPT: "true"})
    held = decide(p)
    assert held.verdict is Verdict.HOLD and DO_NOT_DISRUPT in held.reason
    assert decide(p, voluntary=False).verdict is Verdict.EVICT


def test_do_not_disrupt_duration_counts_from_the_pods_start_like_karpenter() -> None:
    young = pod(annotations={DO_NOT_DISRUPT: "15m"}, started_ago=600)
    old = pod(annotations={DO_NOT_DISRUPT: "5m"}, started_ago=600)
    assert decide(young).verdict is Verdict.HOLD
    assert decide(old).verdict is Verdict.EVICT
    pp = resolve(young, {})
    assert pp.do_not_disrupt_until == NOW - 600 + 900
    v = PodVerdict(young, Verdict.HOLD)
    assert release_time(v, {young.key: pp}, NOW + 3600, 2.0) == NOW + 300  # looked at again when it runs out
    # no start time yet: Karpenter fails safe, the protection holds
    assert decide(pod(annotations={DO_NOT_DISRUPT: "5m"}, started_ago=None)).verdict is Verdict.HOLD


def test_do_not_disrupt_is_read_from_the_pod_only() -> None:
    assert decide(pod(), owners(deploy={DO_NOT_DISRUPT: "true"})).verdict is Verdict.EVICT


@pytest.mark.parametrize("value", ["false", "yes", "-5m", "0s", "5", "1x", ""])
def test_invalid_do_not_disrupt_is_reported_and_ignored(value: str) -> None:
    p = pod(annotations={DO_NOT_DISRUPT: value})
    pp = resolve(p, {})
    assert pp.do_not_disrupt_until is None
    assert pp.problems == (f'ns/p: {DO_NOT_DISRUPT}={value!r} is not "true" nor a positive duration; ignored',)
    assert decide(p).verdict is Verdict.EVICT


def test_invalid_policy_and_order_are_reported_with_pod_and_value_and_treated_as_default() -> None:
    pp = resolve(pod(annotations={POLICY_ANNOTATION: "Skip", ORDER_ANNOTATION: "first"}), {})
    assert (pp.policy, pp.order) == (Policy.EVICT, 0)
    assert pp.problems == (
        f"ns/p: {POLICY_ANNOTATION}='Skip' (pod) is not one of evict, skip, wait-for-completion; evict",
        f"ns/p: {ORDER_ANNOTATION}='first' (pod) is not an integer; 0",
    )
    deploy = resolve(pod(), owners(deploy={ORDER_ANNOTATION: "1.5"}))
    assert deploy.problems == (f"ns/p: {ORDER_ANNOTATION}='1.5' (Deployment ns/web) is not an integer; 0",)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1h30m", 5400.0), ("90s", 90.0), ("1.5h", 5400.0), ("500ms", 0.5), ("2m3s", 123.0), ("0", 0.0)],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "h", "5", "1d", "1h-", ".h", "true"])
def test_not_go_durations(text: str) -> None:
    assert parse_go_duration(text) is None


def test_evict_order_stages_within_a_tier_and_held_pods_hold_back_no_stage() -> None:
    first = pod("first", annotations={ORDER_ANNOTATION: "-1"})
    second = pod("second")
    third = pod("third", annotations={ORDER_ANNOTATION: "10"})
    job = pod("job", annotations={POLICY_ANNOTATION: "wait-for-completion", ORDER_ANNOTATION: "-5"})
    pods = [third, second, job, first]
    o = DrainOptions()
    pols = {p.key: resolve(p, {}) for p in pods}
    vs = apply(classify(pods, o, NOW, {}), pols, voluntary=True, now=NOW, deadline=None, margin=2.0)
    assert [v.pod.name for v in to_evict_now(vs)] == ["first"]
    rest = [v for v in vs if v.pod.name != "first"]
    assert [v.pod.name for v in to_evict_now(rest)] == ["second"]
    assert [v.pod.name for v in to_evict_now([v for v in rest if v.pod.name != "second"])] == ["third"]
    assert active_tier(vs) == 0


def test_evict_order_never_crosses_tiers() -> None:
    critical = PodInfo("kube-system", "dns", "u1", controller=RS, priority_class_name="system-cluster-critical")
    late = pod("late", annotations={ORDER_ANNOTATION: "100"})
    pols = {p.key: resolve(p, {}) for p in (critical, late)}
    vs = apply(
        classify([critical, late], DrainOptions(), NOW, {}), pols, voluntary=True, now=NOW, deadline=None, margin=2
    )
    assert [v.pod.name for v in to_evict_now(vs)] == ["late"]  # workloads first, whatever their order


def test_owners_to_look_up_once_each_then_the_replicasets_deployment() -> None:
    pods = [pod("a"), pod("b"), pod("m", annotations={"kubernetes.io/config.mirror": "x"})]
    assert owners_to_look_up(pods, {}) == {("ns", "ReplicaSet", "web-5d4f")}
    known = owners()
    assert owners_to_look_up(pods, known) == {("ns", "Deployment", "web")}
    known[("ns", "Deployment", "web")] = Owner(True, {})
    assert owners_to_look_up(pods, known) == set()
    odd = pod("x", controller=Controller("Rollout", "argoproj.io/v1alpha1", "r"))
    assert owners_to_look_up([odd], {}) == set()  # unknown kinds: the pod's own annotations only


def test_a_deployments_replicaset_is_looked_up_by_its_deployments_name_and_read_only_when_none_is_found() -> None:
    hashed = replace(pod("a"), labels={"pod-template-hash": "5d4f"})
    other = replace(pod("b", controller=Controller("ReplicaSet", "apps/v1", "web-9999")), labels=hashed.labels)
    dep = ("ns", "Deployment", "web")
    assert deployment_key(hashed) == dep
    assert deployment_key(other) is None  # the hash is not the ReplicaSet's suffix: not a Deployment's name
    assert deployment_key(pod("c")) is None  # no pod-template-hash label
    assert owners_to_look_up([hashed], {}) == {dep}
    found = {dep: Owner(True, {POLICY_ANNOTATION: "skip"})}
    assert owners_to_look_up([hashed], found) == set()
    assert resolve(hashed, found).policy is Policy.SKIP  # the Deployment's own annotations, current
    assert resolve(hashed, found).source == "Deployment ns/web"
    # no Deployment by that name: the ReplicaSet is read, then the Deployment it names (another, here)
    missing = {dep: Owner(False, {})}
    assert owners_to_look_up([hashed], missing) == {("ns", "ReplicaSet", "web-5d4f")}
    other_dep = Controller("Deployment", "apps/v1", "site")
    missing[("ns", "ReplicaSet", "web-5d4f")] = Owner(True, {POLICY_ANNOTATION: "skip"}, other_dep)
    assert owners_to_look_up([hashed], missing) == {("ns", "Deployment", "site")}
    assert resolve(hashed, missing).policy is Policy.SKIP


def test_a_failed_controller_lookup_is_reported_and_the_pod_drains_by_its_own_annotations() -> None:
    known = {("ns", "ReplicaSet", "web-5d4f"): Owner("get replicaset ns/web-5d4f: 403 forbidden", {})}
    assert resolve(pod(), known).policy is Policy.EVICT
    assert policy.owner_problems(known, known.keys()) == [
        "drain policy of ReplicaSet ns/web-5d4f unknown (get replicaset ns/web-5d4f: 403 forbidden): "
        "pod annotations only"
    ]


@pytest.mark.parametrize(
    ("kind", "voluntary"),
    [
        ("asg-terminate", True),
        ("rebalance", True),
        ("scheduled-change", True),
        ("spot-interruption", False),
        ("state-change", False),
    ],
)
def test_event_kinds(kind: str, voluntary: bool) -> None:
    assert is_voluntary(kind) is voluntary


def test_evict_order_orders_a_namespace_own_pods_only() -> None:
    # tenant a: a low order whose pod a budget holds; tenant b: its own stages, never behind a's
    a_first = replace(pod("a-first", annotations={ORDER_ANNOTATION: "-9"}), namespace="a")
    a_late = replace(pod("a-late"), namespace="a")
    b_first = replace(pod("b-first"), namespace="b")
    b_late = replace(pod("b-late", annotations={ORDER_ANNOTATION: "3"}), namespace="b")
    pods = [a_first, a_late, b_first, b_late]
    pols = {p.key: resolve(p, {}) for p in pods}
    vs = apply(classify(pods, DrainOptions(), NOW, {}), pols, voluntary=True, now=NOW, deadline=None, margin=2.0)
    assert sorted(v.pod.key for v in to_evict_now(vs)) == ["a/a-first", "b/b-first"]
    waiting = waiting_for_order(vs)
    assert {ns: [v.pod.name for v in vs_] for ns, vs_ in waiting.items()} == {"a": ["a-late"], "b": ["b-late"]}
    b_gone = [v for v in vs if v.pod.name != "b-first"]  # a-first is still there (held): b goes on
    assert sorted(v.pod.key for v in to_evict_now(b_gone)) == ["a/a-first", "b/b-late"]


def test_past_the_cap_no_annotation_holds_and_evict_order_orders_nothing() -> None:
    job = pod(
        "job", annotations={POLICY_ANNOTATION: "wait-for-completion"}, controller=Controller("Job", "batch/v1", "j")
    )
    pinned = pod("pinned", annotations={DO_NOT_DISRUPT: "true"})
    first = pod("first", annotations={ORDER_ANNOTATION: "-1"})
    late = pod("late", annotations={ORDER_ANNOTATION: "4"})
    pods = [job, pinned, first, late]
    pols = {p.key: resolve(p, {}) for p in pods}
    verdicts = classify(pods, DrainOptions(), NOW, {})
    before = apply(verdicts, pols, voluntary=True, now=NOW, deadline=None, margin=2.0, until=NOW + 60)
    assert {v.pod.name: v.hold for v in before if v.verdict is Verdict.HOLD} == {
        "job": "wait-for-completion",
        "pinned": "do-not-disrupt",
    }
    assert [v.pod.name for v in to_evict_now(before)] == ["first"]
    assert release_time(before[1], pols, None, 2.0, NOW + 60) == NOW + 60  # a do-not-disrupt "true" ends at the cap
    after = apply(verdicts, pols, voluntary=True, now=NOW + 60, deadline=None, margin=2.0, until=NOW + 60)
    assert all(v.verdict is Verdict.EVICT for v in after)
    assert sorted(v.pod.name for v in to_evict_now(after)) == ["first", "job", "late", "pinned"]
