"""A chaos soak on the local bed: a fleet of ASG instances with nodes and workloads, events arriving at random
(each one durable execution of the real handler, as EventBridge delivers them), faults injected at random with the
bed's fault tools, and an invariant checker that reads only the bed and the emulator at the end.

    python -m testbed.soak --minutes 60 --seed 7 --json .local/soak.json      (make soak)

The same seed replays the same plan: which instance gets which events, when, and which faults strike when (the
executions' own timing still varies with the machine). docs/reliability.md lists the invariants and a full run.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from testbed import samples
from testbed.aws_seed import TERMINATING, AwsSeed
from testbed.bed import Testbed
from testbed.faultproxy import FaultProxy
from testbed.faults import BedFaults
from testbed.kube import KubeScenario
from testbed.soak_check import Expectation, check
from testbed.soak_plan import (
    ASG,
    FOREIGN_HOOK,
    HOOK,
    HOOK_HEARTBEAT_TIMEOUT,
    INVOCATION_TIMEOUT,
    KILL_POINT,
    OTHER,
    OTHER_ASG,
    ROLE,
    SERVED,
    SETTINGS,
    UNKNOWN,
    Execution,
    Planned,
    SoakReport,
    plan,
)
from testbed.soak_records import audit_evictions, retry, scheduled_nodes


class Killed(BaseException):
    """A Lambda process dying mid-step (the lambda-killed fault): a BaseException, so nothing catches it on the way."""


class Soak:
    def __init__(self, bed: Testbed, *, seed: int, minutes: float, fleet: int, log: Callable[[str], None]) -> None:
        self.bed, self.seed, self.minutes, self.fleet, self.say = bed, seed, minutes, fleet, log
        self.aws = AwsSeed(bed)
        self.k8s = KubeScenario(bed.admin_api_client(), prefix="soak")
        self.faults = BedFaults(bed)
        self.rng = random.Random(seed + 1)
        self.executions: list[Execution] = []
        self.expect = Expectation()
        self.fault_counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._crash_armed = threading.Event()
        self.killed_invocations = 0  # lambda-killed faults that reached an invocation (armed ones wait for a pass)
        self._draining_nodes: list[str] = []
        self.harness_errors: list[str] = []
        self.duplicate_finals: dict[str, int] = {}  # nodes reported more than once where no claim could arbitrate
        self.pod_nodes: dict[str, str] = {}  # every pod of the run and the node it was bound to (a watch)
        self._watching = threading.Event()

    # ---- the fleet ----------------------------------------------------------------------------------------------
    def setup(self, env: Callable[[dict[str, str]], None], proxy: FaultProxy) -> None:
        self.aws.reset()
        self.aws.eks_cluster(SERVED)
        self.aws.eks_cluster(OTHER)
        # a killed invocation is retried after the runner's backoff (5 s), up to a third of the timeout after its last
        # beat, and its retry replays first (and may meet an apiserver outage): 60 s outlasts that on a loaded machine
        hooks = [{"name": HOOK, "transition": TERMINATING, "heartbeat_timeout": HOOK_HEARTBEAT_TIMEOUT}]
        ours = [*hooks, {"name": FOREIGN_HOOK, "transition": TERMINATING, "heartbeat_timeout": 600}]
        owned = self.aws.asg(ASG, size=self.fleet, tags={f"kubernetes.io/cluster/{SERVED}": "owned"}, hooks=ours)
        others = self.aws.asg(OTHER_ASG, size=2, tags={f"kubernetes.io/cluster/{OTHER}": "owned"}, hooks=hooks)
        # an instance Karpenter launched for the served cluster: its interruptions are Karpenter's to handle
        self.karpenter = self.aws.instance(tags={f"kubernetes.io/cluster/{SERVED}": "owned",
                                                 "karpenter.sh/nodepool": "default"})  # fmt: skip
        (self.karpenter_node,) = self.aws.nodes_for(self.k8s, [self.karpenter])
        self.nodes = dict(zip(owned, self.aws.nodes_for(self.k8s, owned), strict=True))
        self.others = others
        spares = self.k8s.add_nodes(3)
        for spare in spares:
            self.k8s.core.patch_node(spare, {"spec": {"unschedulable": True}})
        for i, node in enumerate(self.nodes.values()):
            self.k8s.deployment(f"w{i}", 2, nodes=[node, *spares], grace=1)
            self.k8s.pdb(f"w{i}", {"app": f"w{i}"}, max_unavailable=1)
            if i % 3 == 0:  # a singleton no budget ever lets go: held until the deadline, then forced
                self.k8s.deployment(f"h{i}", 1, nodes=[node, *spares], grace=1)
                self.k8s.pdb(f"h{i}", {"app": f"h{i}"}, min_available=1)
        self.k8s.wait_for(lambda: all(self.k8s.pod_ready(p) for p in self.k8s.pods()) and len(self.k8s.pods()) >= 2
                          * len(self.nodes), timeout=180, what="the fleet's pods Ready")  # fmt: skip
        self.pods_at_start = {p.metadata.name: p.spec.node_name for p in self.k8s.pods()}
        for spare in spares:
            self.k8s.core.patch_node(spare, {"spec": {"unschedulable": False}})
        values, self.queue = self.aws.lambda_env(SERVED, ROLE)
        env({**values, **SETTINGS, **proxy.env()})
        self.proxy = proxy

    # ---- events -------------------------------------------------------------------------------------------------
    def deliver(self, pool: ThreadPoolExecutor, p: Planned) -> list[Future[None]]:
        now = time.time()
        events: list[tuple[str, dict[str, Any]]] = []
        iid = p.instance
        if p.what in ("asg-terminate", "asg-terminate-duplicate", "three-at-once"):
            token = self.aws.start_lifecycle_action(ASG, HOOK, iid or "")
            hook = samples.lifecycle_event("asg-terminate.json", instance_id=iid or "", asg=ASG, hook=HOOK, token=token)
            events.append(("asg-terminate", hook))
            self.expect.hook_completed(iid or "", CONTINUE_RESULT)
            # a scale-in starts every terminate hook of the group: the other tool's too, announced on its own
            foreign = self.aws.start_lifecycle_action(ASG, FOREIGN_HOOK, iid or "")
            events.append(("foreign-hook", samples.lifecycle_event(
                "asg-terminate.json", instance_id=iid or "", asg=ASG, hook=FOREIGN_HOOK, token=foreign)))  # fmt: skip
            self.expect.foreign_hooks.add(iid or "")
            if p.what == "asg-terminate-duplicate":
                events.append(("asg-terminate", hook))
            if p.what == "three-at-once":
                events.append(("spot", samples.ec2_event("spot-interruption-terminate.json", instance_id=iid or "")))
                state = samples.ec2_event("state-change-shutting-down.json", instance_id=iid or "")
                events.append(("state-change", state))
        elif p.what == "spot":
            events.append(("spot", samples.ec2_event("spot-interruption-terminate.json", instance_id=iid or "")))
        elif p.what == "state-change":
            self.aws.terminate_instance(iid or "")  # what the event says; the function checks it with EC2
            events.append(("state-change", samples.ec2_event("state-change-shutting-down.json", instance_id=iid or "")))
        elif p.what == "capacity-reservation":
            warning = samples.ec2_event("capacity-reservation-interruption.json", instance_id=iid or "")
            warning["detail"]["instance-termination-time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 120))
            events.append(("capacity-reservation", warning))
        elif p.what == "rebalance":
            events.append(("rebalance", samples.ec2_event("rebalance-recommendation.json", instance_id=iid or "")))
        elif p.what == "scheduled-change":
            health = samples.health_event([iid or ""])
            start = now + 60
            health["detail"]["startTime"] = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(start))
            health["detail"]["endTime"] = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(start + 3600))
            events.append(("scheduled-change", health))
        elif p.what == "other-cluster-hook":
            other = self.rng.choice(self.others)
            token = self.aws.start_lifecycle_action(OTHER_ASG, HOOK, other)
            events.append(("other-cluster", samples.lifecycle_event(
                "asg-terminate.json", instance_id=other, asg=OTHER_ASG, hook=HOOK, token=token)))  # fmt: skip
            self.expect.untouched(other)
        elif p.what == "karpenter-node":
            kind = self.rng.choice(["spot-interruption-terminate.json", "rebalance-recommendation.json"])
            events.append(("karpenter", samples.ec2_event(kind, instance_id=self.karpenter)))
        elif p.what == "unknown-instance":
            events.append(("unknown", samples.ec2_event("spot-interruption-terminate.json", instance_id=UNKNOWN)))
        else:
            bad = samples.ec2_event("spot-interruption-terminate.json", instance_id=UNKNOWN)
            bad["detail"].pop("instance-id")
            events.append(("malformed", bad))
            self.expect.failed_executions += 1
        if iid is not None and p.what != "rebalance":
            self.expect.drained(self.nodes[iid])
            with self._lock:
                self._draining_nodes.append(self.nodes[iid])
        elif iid is not None:
            self.expect.cordoned(self.nodes[iid])
        futures = []
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
        for kind, event in events:
            ex = Execution(kind, iid, now)
            with self._lock:
                self.executions.append(ex)
            futures.append(pool.submit(self._run, ex, {**event, "time": stamp}))
        return futures

    def _run(self, ex: Execution, event: dict[str, Any]) -> None:
        from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

        from drain_orchestrator.handler import handler

        def invocation(event: Any, context: Any) -> Any:
            try:
                return handler(event, context)
            except Killed as killed:  # the process died: Lambda reports an invocation error and the service retries
                raise RuntimeError(f"Runtime.ExitError: {killed}") from None

        try:
            with DurableFunctionTestRunner(handler=invocation, invocation_timeout=INVOCATION_TIMEOUT) as runner:
                res = runner.run(input=json.dumps(event), execution_timeout=600)
                ex.operations = len(list(res.get_all_operations()))
            ex.status = getattr(res.status, "name", str(res.status))
            ex.result = json.loads(res.result) if res.result else None
            ex.error = None if res.error is None else str(res.error)[:300]
        except Exception as exc:  # the harness's own failure is a finding too, not a crash of the soak
            ex.status, ex.error = "HARNESS-ERROR", f"{type(exc).__name__}: {exc}"[:300]
        ex.ended_at = time.time()

    # ---- faults -------------------------------------------------------------------------------------------------
    def strike(self, what: str) -> None:
        self.fault_counts[what] += 1
        self.say(f"fault: {what}")
        if what in ("apiserver-restart", "etcd-restart"):
            name = "kube-apiserver" if what == "apiserver-restart" else "etcd"
            self.faults.stop(name)
            time.sleep(self.rng.uniform(3, 12))  # the outage itself
            self.faults.restart(name)
        elif what == "access-revoked":
            self.faults.revoke_access_entry(SERVED, self.aws.role_arn(ROLE))
            time.sleep(self.rng.uniform(5, 20))
            self.faults.restore_access_entry(SERVED, self.aws.role_arn(ROLE))
        elif what in ("aws-throttle", "aws-5xx", "sns-down"):
            kind = {"aws-throttle": "throttle", "aws-5xx": "server-error", "sns-down": "server-error"}[what]
            actions = ["Publish"] if what == "sns-down" else self.rng.sample(
                ["CompleteLifecycleAction", "DescribeInstances", "RecordLifecycleActionHeartbeat",
                 "DescribeLifecycleHooks", "DescribeCluster"], 2)  # fmt: skip
            self.proxy.inject(kind, actions, seconds=self.rng.uniform(5, 25))  # type: ignore[arg-type]
        elif what == "lambda-killed":
            self._crash_armed.set()  # the next execution to reach a drain pass dies there (runtime.fault_injection)
        elif what == "node-deleted":
            with self._lock:
                candidates = [n for n in self._draining_nodes if n not in self.expect.deleted_nodes]
            if candidates:
                node = self.rng.choice(candidates)
                self.expect.deleted_nodes.add(node)
                retry(lambda: self.k8s.core.delete_node(node))

    def crash_point(self, point: str) -> None:
        """runtime.fault_injection: an armed crash kills the invocation that reaches a drain pass. ``Killed`` is no
        ``Exception``, so neither the step nor the SDK catches it: nothing after this point runs or is checkpointed,
        as when a Lambda's process dies, and the invocation ends in an error the runner retries."""
        if not point.startswith(KILL_POINT):
            return
        with self._lock:  # one armed crash kills one invocation, however many reach a pass at once
            if not self._crash_armed.is_set():
                return
            self._crash_armed.clear()
            self.killed_invocations += 1
        self.say(f"killed an invocation at {point}")
        raise Killed(f"killed at {point}")

    # ---- the run ------------------------------------------------------------------------------------------------
    def run(self, env: Callable[[dict[str, str]], None]) -> SoakReport:
        from drain_orchestrator.workflow import runtime

        started = time.time()
        audit_offset = self.bed.audit_log.stat().st_size if self.bed.audit_log.exists() else 0
        with FaultProxy(self.bed.aws_endpoint) as proxy:
            self.setup(env, proxy)
            runtime.reset_config()
            runtime.fault_injection = self.crash_point
            events, faults = plan(self.seed, self.minutes, list(self.nodes), strays=max(3, self.fleet // 2))
            self.say(f"soak: {len(events)} deliveries and {len(faults)} faults over {self.minutes} min")
            binder = self.start_watching_bindings()
            t0 = time.time()
            striker = threading.Thread(target=self._strike_guarded, args=(faults, t0), daemon=True)
            striker.start()
            futures: list[Future[None]] = []
            with ThreadPoolExecutor(max_workers=64, thread_name_prefix="execution") as pool:
                for p in events:
                    time.sleep(max(0.0, t0 + p.at - time.time()))
                    futures += self.deliver(pool, p)
                striker.join()
                for f in futures:
                    f.result()
            runtime.fault_injection = None
            self.proxy.clear()
            self.stop_watching_bindings(binder)
        report = SoakReport(seed=self.seed, minutes=self.minutes)
        report.events = dict(Counter(e.what for e in self.executions))
        report.executions = len(self.executions)
        report.faults = dict(self.fault_counts)
        report.verdicts = dict(Counter(_verdict(e) for e in self.executions))
        report.failed_executions = sum(e.status == "FAILED" for e in self.executions)
        durations = sorted((e.ended_at or time.time()) - e.sent_at for e in self.executions if e.instance)
        if durations:
            report.event_to_verdict_p50_s = round(durations[len(durations) // 2], 1)
            report.event_to_verdict_p99_s = round(durations[min(len(durations) - 1, int(len(durations) * 0.99))], 1)
        report.max_operations = max((e.operations for e in self.executions), default=0)
        report.killed_invocations = self.killed_invocations
        report.violations = check(self, audit_offset)
        report.duplicate_finals = dict(self.duplicate_finals)
        report.wall_s = time.time() - started
        return report

    def _strike_guarded(self, faults: list[Planned], t0: float) -> None:
        try:
            self._strike_all(faults, t0)
        except Exception as exc:  # a fault tool that failed: reported as a finding, the soak goes on
            self.harness_errors.append(f"fault injection: {type(exc).__name__}: {exc}"[:300])

    def _strike_all(self, faults: list[Planned], t0: float) -> None:
        for p in faults:
            time.sleep(max(0.0, t0 + p.at - time.time()))
            try:
                self.strike(p.what)
            except Exception as exc:  # a fault tool that failed: a finding, and the rest of the plan still strikes
                # the component's own log comes first in the message: keep enough of it to say why
                self.harness_errors.append(f"fault injection ({p.what}): {type(exc).__name__}: {exc}"[:3000])
        for proc in self.bed.state.procs:  # whatever a fault stopped is running again for the verdicts
            if not self.faults.running(proc.name):
                self.faults.restart(proc.name)

    def start_watching_bindings(self) -> threading.Thread:
        self._watching.set()
        binder = threading.Thread(target=self._watch_bindings, daemon=True)
        binder.start()
        return binder

    def stop_watching_bindings(self, binder: threading.Thread) -> None:
        self._watching.clear()
        binder.join(60)

    def _watch_bindings(self) -> None:
        """Which node each pod of the run was bound to, replacements included: a pod bound to a node being drained
        after its cordon (the scheduler had not seen it yet) is that drain's to evict. Survives apiserver restarts:
        an outage resumes the watch where it stopped; only an expired resourceVersion lists again (a pod bound and
        gone in between is then found by scheduled_nodes)."""
        from kubernetes import client, watch
        from kubernetes.client.exceptions import ApiException

        core = client.CoreV1Api(self.k8s.api_client)
        version = None
        while self._watching.is_set():
            try:
                for ev in watch.Watch().stream(core.list_namespaced_pod, self.k8s.ns, timeout_seconds=10,
                                               resource_version=version):  # fmt: skip
                    pod = ev["object"]
                    version = pod.metadata.resource_version
                    if pod.spec.node_name:
                        self.pod_nodes[pod.metadata.name] = pod.spec.node_name
                    if not self._watching.is_set():
                        return
            except ApiException as exc:
                if exc.status == 410:  # too old to resume from: list again
                    version = None
                time.sleep(1)
            except Exception:  # the apiserver (or etcd) down: resume from the last version seen
                time.sleep(1)

    def scheduled_nodes(self) -> dict[str, str]:
        return scheduled_nodes(self.k8s)

    def audit_evictions(self, offset: int) -> list[str]:
        return audit_evictions(self.bed.audit_log, offset)


CONTINUE_RESULT = "CONTINUE"


def _verdict(e: Execution) -> str:
    if e.status != "SUCCEEDED" or not e.result:
        return e.status.lower()
    results = [str(i.get("result")) for i in e.result.get("instances", [])]
    return ",".join(results) or "no-instance"


def main(argv: list[str] | None = None) -> int:
    import argparse
    import os
    import sys
    import tempfile
    from pathlib import Path

    from testbed.output import stdout_into

    parser = argparse.ArgumentParser(prog="python -m testbed.soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=float(os.environ.get("SOAK_MINUTES") or 60))
    parser.add_argument("--seed", type=int, default=int(os.environ.get("SOAK_SEED") or time.time()) % 100000)
    parser.add_argument("--fleet", type=int, default=0, help="owned instances (default: 2 per minute, 8 to 60)")
    parser.add_argument("--json", type=Path, help="write the report here too")
    args = parser.parse_args(argv)
    fleet = args.fleet or max(8, min(60, int(args.minutes * 2)))
    log = Path(".local/soak-handler.log")
    reuse = os.environ.get("DRAIN_TESTBED_DIR")
    bed = Testbed.attach(Path(reuse)) if reuse else None
    owned = bed is None
    if bed is None:
        bed = Testbed.start(Path(tempfile.mkdtemp(prefix="soak-bed-")))
    os.environ.update(bed.aws_env())
    print(f"soak: seed {args.seed}, {args.minutes} min, {fleet} instances; the handler's logs in {log}", flush=True)
    try:
        # progress on stderr: stdout is the handler's while the soak runs
        soak = Soak(bed, seed=args.seed, minutes=args.minutes, fleet=fleet, log=lambda s: print(s, file=sys.stderr))
        with stdout_into(log):
            report = soak.run(os.environ.update)
    finally:
        if owned:
            bed.stop()
    print(report.text())
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report.to_dict(), indent=2, default=str))
    return 1 if report.violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
