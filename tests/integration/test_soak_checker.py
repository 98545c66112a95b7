"""The soak's eviction invariant on the bed: which node an evicted pod was on, when the pod is long gone.

A scheduler whose view of the nodes lags (its watch of Nodes still reconnecting after an apiserver restart) keeps
binding replacements to a node cordoned in the meantime, and the drain evicts each one: correct for the drain, and
the checker must count those evictions as that drain's, not as evictions from a node nobody drained.
"""

from __future__ import annotations

import pytest

from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.engine.drainer import drain_node
from drain_orchestrator.kube.evict import Outcome, evict_pod
from drain_orchestrator.workflow import runtime
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.soak import Soak
from testbed.soak_check import _evictions
from tests.integration.drain_support import set_unschedulable
from tests.integration.lambda_support import LambdaHarness

pytestmark = pytest.mark.integration


def test_pods_bound_to_a_node_after_its_cordon_are_its_drains_and_an_eviction_elsewhere_is_caught(
    testbed: Testbed, aws: AwsSeed, lam: LambdaHarness
) -> None:
    soak = Soak(testbed, seed=0, minutes=1, fleet=8, log=lambda _: None)
    k8s = soak.k8s
    try:
        draining, elsewhere = k8s.add_nodes(2)
        soak.expect.drained(draining)
        soak.pods_at_start = {}
        offset = testbed.audit_log.stat().st_size
        binder = soak.start_watching_bindings()
        set_unschedulable(k8s, draining, True)  # the drain's cordon
        options = DrainOptions(force=True, grace_period=0, settle_seconds=0, reason="soak-checker")
        late = []
        aws.eks_cluster("blue")
        lam.configure("blue")  # the product's own identity (EKS token, access entry): the audit log records it
        kube = runtime.kube("blue")
        for i in range(3):  # bound after the cordon (as a lagging scheduler does), evicted, gone
            name = f"late-{i}"
            k8s.bare_pod(name, node=draining)
            report = drain_node(kube, draining, options, timeout=60)
            assert report.drained and f"{k8s.ns}/{name}" in report.evicted, report
            k8s.wait_for(lambda: not k8s.pods(node=draining), what=f"{name} gone")
            late.append(name)
        # the real scheduler places this one (its Scheduled Event names the node); then someone evicts it
        # with the product's identity from a node nobody drains
        k8s.core.create_namespaced_pod(
            k8s.ns,
            {"metadata": {"name": "stray"}, "spec": k8s.pod_spec(nodes=[elsewhere])},
        )
        (stray,) = k8s.wait_for(lambda: k8s.pods(node=elsewhere), what="the stray pod bound")
        assert evict_pod(kube, k8s.ns, "stray", stray.metadata.uid, grace=0).outcome is Outcome.EVICTED
        k8s.wait_for(lambda: not k8s.pods(node=elsewhere), what="the stray pod gone")
        k8s.wait_for(lambda: "stray" in soak.scheduled_nodes(), what="the scheduler's Scheduled Event")
        k8s.wait_for(lambda: all(p in soak.pod_nodes for p in [*late, "stray"]), what="the watch saw every binding")
        soak.stop_watching_bindings(binder)

        assert {p: soak.pod_nodes.get(p) for p in late} == dict.fromkeys(late, draining)
        assert soak.scheduled_nodes()["stray"] == elsewhere
        evicted = soak.audit_evictions(offset)
        assert sorted(evicted) == [*late, "stray"]
        violations = _evictions(soak, evicted)
        assert [(v.invariant, v.detail) for v in violations] == [
            ("no pod evicted from a node nobody was draining", f"stray (on {elsewhere})")
        ]
        # without the watch, the scheduler's Events still place the stray; the late pods (bound by no scheduler
        # here) would then be counted against no drained node: the watch is what attributes them
        soak.pod_nodes.clear()
        assert [v.detail for v in _evictions(soak, ["stray", *late])] == [
            *(f"{p} (on None)" for p in late),
            f"stray (on {elsewhere})",
        ]
    finally:
        k8s.cleanup()
