"""One drain per node through the Lambda on the real bed: three events of one instance at once (its lifecycle hook,
a Spot warning, a state change) give one drain: every pod evicted exactly once (counted from the apiserver's audit
log), the hook completed once, the two other executions answering from the holder's verdict. A claim whose holder
stopped renewing it is taken over once it expires; a waiter whose own deadline comes first says who drains."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from typing import Any

import pytest

from drain_orchestrator.drain_claim import NodeClaim
from drain_orchestrator.kube.node_claim import ANN_DRAINER
from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.control_plane import AUDIT_GROUP
from testbed.kube import KubeScenario
from tests.integration.lambda_support import LambdaHarness
from tests.integration.scenario_support import blue_asg_node, instance_summary, pods_on, spread

pytestmark = pytest.mark.integration


def evictions_accepted(testbed: Testbed, offset: int, namespace: str) -> Counter[str]:
    """Pod name -> evictions the apiserver accepted (2xx) for the function's group since ``offset``."""
    with testbed.audit_log.open("rb") as f:
        f.seek(offset)
        events = [json.loads(line) for line in f.read().decode().splitlines() if line.strip()]
    return Counter(
        e["objectRef"]["name"]
        for e in events
        if AUDIT_GROUP in e.get("user", {}).get("groups", [])
        and e["objectRef"].get("subresource") == "eviction"
        and e["objectRef"].get("namespace") == namespace
        and e["verb"] == "create"
        and 200 <= e.get("responseStatus", {}).get("code", 0) < 300
    )


def test_three_events_of_one_instance_drain_it_once_and_evict_each_pod_once(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    pods = spread(k8s, node, spare, replicas=6)
    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    aws.stop_instance(iid)  # what the state change says: EC2 bears it out
    lam.configure("blue", DRAIN_PASS_SECONDS="5")
    lam.collect()
    offset = testbed.audit_log.stat().st_size
    events = [
        samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook="drain", token=token),
        samples.ec2_event("spot-interruption-terminate.json", instance_id=iid),
        samples.ec2_event("state-change-stopping.json", instance_id=iid),
    ]
    runs: list[Any] = [None] * len(events)
    start = threading.Barrier(len(events))

    def go(i: int) -> None:
        start.wait()
        runs[i] = lam.run_in_thread(events[i], skip_time=False)  # real waits: the waiters' polls take real time

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(events))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    assert all(r is not None and r.status == "SUCCEEDED" for r in runs), [r and r.error for r in runs]
    printed = lam.collect()
    assert not pods_on(k8s, node)
    evicted = evictions_accepted(testbed, offset, k8s.ns)
    assert evicted == Counter(dict.fromkeys(pods, 1)), evicted  # each pod once, by one execution
    summaries = [r.result["instances"][0] for r in runs]
    assert [s["result"] for s in summaries] == ["drained"] * 3, json.dumps(summaries)
    waiters = [s for s in summaries if "drained_by" in s]
    assert len(waiters) == 2, summaries  # two answered from the holder's verdict
    (holder,) = [s for s in summaries if "drained_by" not in s]
    assert holder["report"]["evicted"] == len(pods)
    assert printed.metric_total("PodsEvicted") == len(pods)
    (action,) = aws.lifecycle_actions()
    assert action["state"] == "COMPLETED" and action["result"] == "CONTINUE"
    assert printed.metric_total("LifecycleActionsCompleted") == 1
    assert sorted(n["phase"] for n in lam.notifications()) == ["completed", "started"]
    # the claim records every execution's deadline (the holder drained to the earliest) and the verdict
    claim = NodeClaim.from_json(k8s.core.read_node(node).metadata.annotations[ANN_DRAINER])
    assert claim is not None and claim.verdict == "drained" and len(claim.deadlines) == 3


def test_a_claim_its_holder_stopped_renewing_is_waited_on_then_taken_over_and_the_node_drained(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    spread(k8s, node, spare, replicas=2)
    now = time.time()
    # an execution that took the claim and died: its claim expires in 8 s
    dead = NodeClaim(holder="dead-run", expires=now + 8, deadlines={"dead-run": now + 3600}, since=now - 100)
    k8s.core.patch_node(node, {"metadata": {"annotations": {ANN_DRAINER: dead.to_json()}}})
    lam.configure("blue", DRAIN_PASS_SECONDS="5")
    # terminated, not stopped: a stopped instance's node is watched, in real time here, until the instance runs again
    aws.terminate_instance(iid)
    run = lam.run(samples.ec2_event("state-change-terminated.json", instance_id=iid), skip_time=False)
    inst = instance_summary(run)
    assert (inst["result"], inst["took_over_from"]) == ("drained", "dead-run"), inst
    assert time.time() >= now + 8  # it waited for the expiry, then drained
    assert not pods_on(k8s, node)
    claim = NodeClaim.from_json(k8s.core.read_node(node).metadata.annotations[ANN_DRAINER])
    assert claim is not None and claim.holder != "dead-run" and claim.verdict == "drained"
    assert set(claim.deadlines) == {"dead-run", claim.holder}


def test_a_waiter_whose_deadline_comes_first_ends_deadline_missed_naming_the_holder(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    pods = spread(k8s, node, spare, replicas=2)
    now = time.time()
    live = NodeClaim(holder="busy-run", expires=now + 3600, deadlines={"busy-run": now + 3600}, since=now)
    k8s.core.patch_node(node, {"metadata": {"annotations": {ANN_DRAINER: live.to_json()}}})
    lam.configure("blue", DRAIN_PASS_SECONDS="5", DEADLINE_STATE_CHANGE_SECONDS="10")
    aws.stop_instance(iid)
    run = lam.run(samples.ec2_event("state-change-stopping.json", instance_id=iid))
    inst = instance_summary(run)
    assert (inst["result"], inst["drained_by"]) == ("deadline-missed", "busy-run"), inst
    assert "busy-run" in inst["error"]["message"]
    assert {p.metadata.name for p in pods_on(k8s, node)} == pods  # it evicted nothing: the holder drains
    claim = NodeClaim.from_json(k8s.core.read_node(node).metadata.annotations[ANN_DRAINER])
    assert claim is not None and claim.holder == "busy-run" and len(claim.deadlines) == 2
    assert min(claim.deadlines.values()) < now + 60  # the holder would drain to this waiter's deadline
