"""Every eviction that does not go through keeps its reason in the DrainReport, on the real control plane: a pod
under two PodDisruptionBudgets (``multiple-pdbs``, both named, not retried until the deadline policy acts), an
eviction webhook that is down (``webhook-failed``, the apiserver's 500 and message) and a ValidatingAdmissionPolicy
that denies evictions (``admission-denied``, the policy's message)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from drain_orchestrator.kube.evict import MULTIPLE_PDBS
from tests.integration.admission_support import evictions_denied, webhook_down
from tests.integration.drain_support import Lines, drain, drainer, pods_on

pytestmark = pytest.mark.integration


def _one_pod_under_two_pdbs(k8s: Any) -> tuple[str, str]:
    (a,) = k8s.add_nodes(1)
    k8s.deployment("web", 1, grace=2)
    (pod,) = k8s.wait_pods_ready("app=web", 1)
    k8s.pdb("web-a", {"app": "web"}, max_unavailable=1)
    k8s.pdb("web-b", {"app": "web"}, max_unavailable=1)
    k8s.wait_pdb("web-a", disruptions_allowed=1)
    k8s.wait_pdb("web-b", disruptions_allowed=1)
    return a, f"{k8s.ns}/{pod.metadata.name}"


def test_a_pod_under_two_pdbs_is_its_own_reason_names_both_and_is_not_spun_on(testbed: Any, k8s: Any) -> None:
    a, key = _one_pod_under_two_pdbs(k8s)
    lines = Lines()
    with drainer(testbed) as kube:
        report = drain(kube, a, timeout=6, progress=lines)
    assert not report.drained and "timed out" in report.warnings
    (held,) = report.held
    assert (held.pod, held.reason, held.pdbs, held.status, held.message) == (
        key,
        "multiple-pdbs",
        ["web-a", "web-b"],
        500,
        MULTIPLE_PDBS,
    )
    assert [b.pdbs for b in report.blocked] == [["web-a", "web-b"]]
    # one eviction in 6 s: no retry can help, so none is made before the deadline policy's time
    assert [x for x in lines.lines if x.startswith("evicting pod")] == [f"evicting pod {key}"], lines.lines
    assert len(lines.matching("not retried before the deadline policy")) == 1, lines.lines
    assert len(pods_on(k8s, a)) == 1


def test_a_pod_under_two_pdbs_waits_for_the_deadline_policy_and_is_forced_naming_both(testbed: Any, k8s: Any) -> None:
    a, key = _one_pod_under_two_pdbs(k8s)
    lines = Lines()
    with drainer(testbed) as kube:
        deadline = time.time() + 10
        report = drain(kube, a, timeout=30, progress=lines, deadline=deadline, force_delete_on_deadline=True)
        assert time.time() <= deadline
    assert report.drained, report
    (forced,) = report.forced
    assert forced.pod == key and "web-a, web-b" in forced.reason and MULTIPLE_PDBS in forced.reason
    # the first refusal, then the one at the force time: nothing in between
    assert [x for x in lines.lines if x.startswith("evicting pod")] == [f"evicting pod {key}"] * 2, lines.lines


def test_an_eviction_webhook_that_is_down_is_reported_with_its_status_and_message(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    k8s.deployment("web", 2)
    pods = k8s.wait_pods_ready("app=web", 2)
    with webhook_down(k8s) as hook, drainer(testbed) as kube:
        report = drain(kube, a, timeout=4)
    assert not report.drained
    assert sorted(h.pod for h in report.held) == sorted(f"{k8s.ns}/{p.metadata.name}" for p in pods)
    for h in report.held:
        assert (h.reason, h.status, h.pdbs) == ("webhook-failed", 500, []), h
        assert f'failed calling webhook "{hook}"' in h.message, h.message
    assert len(pods_on(k8s, a)) == 2


def test_an_admission_policy_denying_evictions_is_reported_with_its_message(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    k8s.deployment("web", 1)
    (pod,) = k8s.wait_pods_ready("app=web", 1)
    frozen = "evictions are frozen for the release"
    with evictions_denied(k8s, frozen, probe=pod.metadata.name) as policy, drainer(testbed) as kube:
        report = drain(kube, a, timeout=2)
    assert not report.drained
    (held,) = report.held
    assert held.pod == f"{k8s.ns}/{pod.metadata.name}" and held.status in (403, 422), held
    assert policy in held.message and "evictions are frozen for the release" in held.message
