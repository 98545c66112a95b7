"""The Node object a drain acts on (node_identity.py), on the real apiserver as the product's RBAC identity: a Node
deleted and registered again under the same name (another UID, another instance's providerID) is never cordoned,
annotated, claimed or tainted by a write pinned to the old one — each raises NodeReplaced naming the replacement —,
even when the write starts from a view of the old node (the UID condition refuses it at the apiserver); the node
watch and the drain engine see the replacement as the node gone; an identity that knows only the instance (a drain
located before identities were recorded) still refuses another instance's Node and learns the UID of its own."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.engine.drainer import drain_node
from drain_orchestrator.kube.cordon import cordon
from drain_orchestrator.kube.errors import NodeGone, NodeReplaced
from drain_orchestrator.kube.node_claim import look_at
from drain_orchestrator.kube.node_lookup import identity_of, read_node
from drain_orchestrator.kube.node_marks import add_taint, patch_node
from drain_orchestrator.kube.node_records import claim
from drain_orchestrator.kube.node_watch import NodePresence
from drain_orchestrator.node_identity import NodeIdentity
from testbed.kube import NOT_READY_TAINT, KubeScenario
from tests.integration.drain_support import drainer

pytestmark = pytest.mark.integration
ZONE = "us-east-1a"


def _instance() -> str:
    return f"i-{secrets.token_hex(8)}"


def _node(k8s: KubeScenario, name: str | None = None, instance: str | None = None) -> tuple[str, str]:
    iid = instance or _instance()
    names = [name] if name else None
    (node,) = k8s.add_nodes(1, zone=ZONE, names=names, provider_ids=[f"aws:///{ZONE}/{iid}"], wait_ready=False)
    return node, iid


def _replace(k8s: KubeScenario, node: str, instance: str | None = None) -> NodeIdentity:
    """Delete ``node`` and register another Node under its name (a new instance unless ``instance``)."""
    k8s.core.delete_node(node)
    k8s.wait_for(lambda: node not in {n.metadata.name for n in k8s.core.list_node().items}, what=f"{node} deleted")
    _node(k8s, node, instance)
    return NodeIdentity.of(k8s.api_client.sanitize_for_serialization(k8s.core.read_node(node)))


def _untouched(k8s: KubeScenario, node: str) -> None:
    n = k8s.core.read_node(node)
    # the only taint is the apiserver's admission's on a new node until it is Ready (TaintNodesByCondition)
    taints = [t.key for t in n.spec.taints or [] if t.key != NOT_READY_TAINT]
    assert not n.spec.unschedulable and taints == [], n.spec
    ours = [k for k in (n.metadata.annotations or {}) if k.startswith("drain-orchestrator.io/")]
    assert ours == [], ours


def test_writes_pinned_to_a_node_leave_its_replacement_untouched_and_name_it(testbed: Any, k8s: KubeScenario) -> None:
    node, _ = _node(k8s)
    with drainer(testbed) as kube:
        old = identity_of(kube, node)
        assert old.uid and old.provider_id and old.instance_id
        cordon(kube, node, reason="test", pin=old)  # the pinned node itself is written as before
        new = _replace(k8s, node)
        assert new.uid != old.uid
        writes = {
            # each starts from this client's view of the old node (the cordon's answer): the UID refuses it
            "cordon": lambda: cordon(kube, node, reason="test", taint=("t", "NoSchedule"), pin=old),
            "claim": lambda: claim(kube, node, "drain-started", "run-1", pin=old),
            "drain claim": lambda: look_at(kube, node, "run-1", 2e9, 1e9, 60.0, pin=old),
            "taint": lambda: add_taint(kube, node, {"key": "k", "value": "v", "effect": "NoExecute"}, pin=old),
            "note": lambda: patch_node(
                kube, node, {"metadata": {"annotations": {"drain-orchestrator.io/held": "x"}}}, pin=old
            ),
        }
        for what, write in writes.items():
            with pytest.raises(NodeReplaced) as raised:
                write()
            assert raised.value.replacement == new, what
            assert isinstance(raised.value, NodeGone)  # every caller's "node gone" path handles it
        _untouched(k8s, node)
        # unpinned (the command line's drain by name), the same write acts on whatever carries the name
        cordon(kube, node, reason="test")
        assert k8s.core.read_node(node).spec.unschedulable


def test_the_node_watch_and_the_drain_engine_see_a_replacement_as_the_node_gone(
    testbed: Any, k8s: KubeScenario
) -> None:
    node, _ = _node(k8s)
    with drainer(testbed) as kube:
        old = identity_of(kube, node)
        presence = NodePresence(kube, node, old)
        presence.check(waiting=True)  # opens a watch of the node
        assert presence.watching
        new = _replace(k8s, node)
        k8s.wait_for(lambda: _gone(presence), what="the watch to see the node go")
        presence.close()
        # a drain pinned to the old node: its cordon reads the replacement and stops before listing pods
        with pytest.raises(NodeReplaced) as raised:
            drain_node(kube, node, DrainOptions(node_pin=old, reason="test"), timeout=10)
        assert raised.value.replacement == new
    _untouched(k8s, node)


def _gone(presence: NodePresence) -> bool:
    try:
        presence.check(waiting=True)
    except NodeGone:
        return True
    return False


def test_an_identity_that_knows_only_the_instance_refuses_another_instances_node_and_learns_its_own(
    testbed: Any, k8s: KubeScenario
) -> None:
    node, iid = _node(k8s)
    legacy = NodeIdentity(instance_id=iid)  # what a drain located before identities were recorded knows
    with drainer(testbed) as kube:
        learned = identity_of(kube, node, legacy)
        assert read_node(kube, node) is not None
        assert (learned.instance_id, learned.uid) == (iid, k8s.core.read_node(node).metadata.uid)
        # the same instance registering again is another object: the learned UID tells them apart
        again = _replace(k8s, node, instance=iid)
        with pytest.raises(NodeReplaced):
            cordon(kube, node, pin=learned)
        assert identity_of(kube, node, legacy) == again  # by the instance alone, it is still this instance's
        other = _replace(k8s, node)
        with pytest.raises(NodeReplaced) as raised:
            cordon(kube, node, pin=legacy)
        assert raised.value.replacement == other
    _untouched(k8s, node)
