"""Return to service on the real control plane for an instance that goes down and comes back: an AWS Health reboot
change, a Spot interruption to stop. Its node is drained before it goes, kept cordoned while it is down or still
reports the boot it had before, and made schedulable again by the execution that cordoned it last once EC2 runs the
instance and its kubelet reports a new boot. The executions run on the real clock (their durable waits are real)
and the test acts on the bed between their looks, which it reads from the executions' histories."""

from __future__ import annotations

import time

import pytest

from drain_orchestrator.returns import ANN_RETURN
from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.kube import KubeScenario
from tests.integration.lambda_support import LambdaHarness, LiveRun, Run
from tests.integration.return_support import booted, mark_of, node_events, owned_node_with_a_pod

pytestmark = pytest.mark.integration
REBOOT = "health-reboot-maintenance.json"
# the reboot's window: it starts WINDOW_IN s after the event, lasts WINDOW s; the drain starts LEAD s before it
WINDOW_IN, WINDOW, LEAD = 30, 4, 15


def _names(run: Run) -> list[str]:
    return [str(getattr(op, "name", "") or "") for op in run.operations]


def _one(run: Run) -> dict[str, object]:
    assert run.status == "SUCCEEDED", run.error
    (inst,) = run.result["instances"]  # type: ignore[index]
    return dict(inst)


def _looks(run: LiveRun) -> dict[int, dict[str, object]]:
    """The return watch's looks so far, by number."""
    prefix = "return-look-"
    return {int(name[len(prefix) :]): res for name, res in run.steps().items() if name.startswith(prefix)}


def _returned_here(k8s: KubeScenario, node: str, pod_uid: str) -> None:
    """Schedulable, unmarked, said so, and the evicted pod's replacement runs on the node again."""
    n = k8s.core.read_node(node)
    assert not n.spec.unschedulable
    assert ANN_RETURN not in (n.metadata.annotations or {})
    assert "ReturnedToService" in node_events(k8s, node)
    (pod,) = k8s.wait_pods_ready("app=web", 1)
    assert pod.spec.node_name == node and pod.metadata.uid != pod_uid


def test_a_reboot_change_drains_before_its_window_and_returns_the_node_once_it_booted_again(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, pod_uid = owned_node_with_a_pod(aws, k8s)
    booted(k8s, node, "boot-before")
    lam.configure("blue", SCHEDULED_CHANGE_LEAD_SECONDS=str(LEAD))
    start = int(time.time()) + WINDOW_IN  # whole seconds, as the event's dates have them
    end = start + WINDOW
    run = lam.start(samples.health_event([iid], start=start, end=end, sample=REBOOT))

    # the window passed; the node is Ready, but with the boot it had before: not back, still cordoned for the change
    first = run.step("return-look-0")
    assert (first["verdict"], first["reason"]) == ("wait", "not-back")
    assert first["now"] > end - 1  # a watch ending less than a second before the window's end looks at once
    mark = mark_of(k8s, node)
    assert mark is not None and (mark.case, mark.boot) == ("reboot", "boot-before")
    assert k8s.core.read_node(node).spec.unschedulable is True

    booted(k8s, node, "boot-after")  # the reboot: the kubelet comes back with a new boot id
    done = run.finish()
    out = lam.collect()

    inst = _one(done)
    assert inst["result"] == "drained"
    cordon = done.cordoned()
    # drained before the window, not before its lead (the wait's seconds are whole: it may end up to one early)
    assert start - LEAD - 1 <= cordon["now"] < start
    returned = inst["returned"]
    assert isinstance(returned, dict)
    assert (returned["status"], returned["reason"]) == ("returned", "instance-back")
    assert float(returned["at"]) > end
    names = _names(done)
    assert "until-window" in names and "return-wait-0" in names and "return-look-1" in names
    _returned_here(k8s, node, pod_uid)
    assert [said["phase"] for said in lam.notifications()][-1] == "returned-to-service"
    assert out.metric_total("NodesReturned", cluster="blue", kind="scheduled-change") == 1


def test_a_spot_stop_drains_the_node_and_returns_it_only_once_ec2_runs_the_instance_again_with_a_new_boot(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, pod_uid = owned_node_with_a_pod(aws, k8s)
    booted(k8s, node, "boot-before")
    lam.configure("blue")
    warned = lam.start(samples.ec2_event("spot-interruption-stop.json", instance_id=iid))
    # drained; EC2 still runs the instance and the node reports the boot it had before: not back
    first = warned.step("return-look-0")
    assert (first["verdict"], first["reason"]) == ("wait", "not-back")
    assert k8s.core.read_node(node).spec.unschedulable is True

    aws.stop_instance(iid)  # EC2 stops it: the state change's event is borne out
    assert aws.describe(iid)["State"]["Name"] == "stopped"
    stopped = lam.start(samples.ec2_event("state-change-stopped.json", instance_id=iid))
    # the state change's cordon takes the return over (the newest event decides)
    look = stopped.step("return-look-0")
    assert (look["verdict"], look["reason"]) == ("wait", "not-back")
    mark = mark_of(k8s, node)
    assert mark is not None and (mark.kind, mark.case) == ("state-change", "restart")

    # the node's status alone brings nothing back: its kubelet says a new boot (kwok keeps the node Ready
    # throughout), EC2 still says stopped: not back, still cordoned
    booted(k8s, node, "boot-after")
    after = max(_looks(stopped)) + 2  # a look that began after the new boot (the one running now may not have)
    look = stopped.step(f"return-look-{after}")
    assert (look["verdict"], look["reason"]) == ("wait", "not-back")
    assert k8s.core.read_node(node).spec.unschedulable is True

    running_since = time.time()
    aws.start_instance(iid)
    assert aws.describe(iid)["State"]["Name"] == "running"
    done = stopped.finish()
    spot = warned.finish()
    out = lam.collect()

    inst = _one(done)
    assert inst["result"] == "drained"
    returned = inst["returned"]
    assert isinstance(returned, dict)
    assert (returned["status"], returned["reason"]) == ("returned", "instance-back")
    assert float(returned["at"]) >= running_since
    warning = _one(spot)
    assert warning["result"] == "drained"
    # the warning's watch ended on the state change's mark (or, if it looked only after the return, on none)
    assert warning["returned"] in ({"status": "kept", "reason": r} for r in ("superseded", "not-ours"))
    _returned_here(k8s, node, pod_uid)
    assert [said["phase"] for said in lam.notifications()][-1] == "returned-to-service"
    assert out.metric_total("NodesReturned") == 1
    assert out.metric_total("NodesReturned", cluster="blue", kind="state-change") == 1
