"""A held drain acts only on the Node object it located, through the Lambda on the real bed with real waits: the
Node is deleted and another registered under its name (a new instance's providerID) while the drain waits durably
between held passes; the drain never writes on the replacement nor evicts its pods (the apiserver's audit log shows
every request the function sent after the replacement), and ends ``node-gone`` naming the replacement."""

from __future__ import annotations

import secrets
import time
from typing import Any

import pytest

from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.kube import KubeScenario
from tests.integration.audit_support import at, audit_offset, function_requests
from tests.integration.lambda_support import LambdaHarness
from tests.integration.scenario_support import (
    Background,
    assert_completed_by_function,
    blue_asg_node,
    final_notification,
    hold_with_pdb,
    instance_summary,
    pods_on,
    terminate_event,
)

pytestmark = pytest.mark.integration
HELD_NOTE = "drain-orchestrator.io/held"


def test_a_node_replaced_under_its_name_during_a_held_wait_is_never_touched_and_the_drain_ends_node_gone(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    hold_with_pdb(k8s, node, spare)
    zone = aws.describe(iid)["Placement"]["AvailabilityZone"]
    lam.configure(
        "blue",
        HELD_NOTIFY_SECONDS="3",
        DRAIN_PASS_SECONDS="5",
        HELD_RECHECK_MAX_SECONDS="20",
        DEADLINE_ASG_TERMINATE_SECONDS="240",
        FORCE_DELETE_ON_DEADLINE="false",
    )
    replacement = f"i-{secrets.token_hex(8)}"  # a new instance's
    replacement_pid = f"aws:///{zone}/{replacement}"
    offset = audit_offset(testbed)

    def replace_while_held() -> tuple[float, str]:
        # the held note is the drain's last write before its durable wait
        k8s.wait_for(lambda: HELD_NOTE in (k8s.core.read_node(node).metadata.annotations or {}), timeout=180)
        replaced_at = time.time()
        k8s.core.delete_node(node)
        k8s.wait_for(lambda: node not in {n.metadata.name for n in k8s.core.list_node().items}, what="node deleted")
        k8s.add_nodes(1, zone=zone, names=[node], provider_ids=[replacement_pid])
        return replaced_at, str(k8s.core.read_node(node).metadata.uid)

    background = Background(replace_while_held)
    run = lam.run(terminate_event(aws, iid), timeout=360, skip_time=False)
    replaced_at, new_uid = background.outcome(timeout=60)

    inst = instance_summary(run)
    assert inst["result"] == "node-gone", inst
    assert inst["replaced_by"] == {"uid": new_uid, "provider_id": replacement_pid, "instance_id": replacement}
    assert_completed_by_function(aws, iid, "CONTINUE")  # the old instance's node is gone: its hook goes on
    notes = final_notification(lam, "completed", "node-gone")
    (final,) = [n for n in notes if n["phase"] == "completed"]
    assert final["replaced_by"]["uid"] == new_uid

    # the replacement: not cordoned, tainted or annotated; its pods (the old ones, bound to the name) not evicted
    now = k8s.core.read_node(node)
    assert now.metadata.uid == new_uid
    assert not now.spec.unschedulable and not now.spec.taints, now.spec
    assert [k for k in now.metadata.annotations or {} if k.startswith("drain-orchestrator.io/")] == []
    assert len(pods_on(k8s, node)) == 2
    after = [e for e in function_requests(testbed, offset) if at(e) >= replaced_at]
    assert after, "the drain sent no request after the replacement: it did not look again"
    evictions = [e for e in after if (e.get("objectRef") or {}).get("subresource") == "eviction"]
    assert evictions == [], _brief(evictions)
    on_node = [e for e in after if _names(e, "nodes", node) and e["verb"] in ("patch", "update", "delete")]
    # a write that starts from the drain's view of the old node is sent with its UID and refused by the apiserver
    accepted = [e for e in on_node if (e.get("responseStatus") or {}).get("code", 0) < 300]
    assert accepted == [], _brief(on_node)


def _names(event: dict[str, Any], resource: str, name: str) -> bool:
    ref = event.get("objectRef") or {}
    return bool(ref.get("resource") == resource and ref.get("name") == name and not ref.get("subresource"))


def _brief(events: list[dict[str, Any]]) -> list[str]:
    return [
        f"{e['verb']} {e['objectRef'].get('resource')}/{e['objectRef'].get('name')} "
        f"{(e.get('responseStatus') or {}).get('code')}"
        for e in events
    ]
