"""Storm harness: a fleet of ASG instances with kwok nodes, Deployments under PDBs spread over them, spare nodes to
receive the replacements, and an observer that times what the cluster and the emulator saw: when each node was
cordoned, when its last pod was gone, when its lifecycle hook was completed. The observer looks only at the
apiserver and the emulator, so it times any tool the same way (our handler here, aws-node-termination-handler in
bench/nth.py). Used by bench/bench_storm.py, bench/bench_nth.py and the storm smoke test.
"""

from __future__ import annotations

import functools
import json
import math
import re
import statistics
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client.rest import ApiException

from testbed.aws_seed import AwsSeed
from testbed.kube import RUN_LABEL, KubeScenario

HOOK = "drain"
SPARE_PODS = 100  # pods a spare node takes (of its 110), so the replacements always fit
# the observer's watches end this often (and resume where they were), so stop() returns within about this long:
# a quiet watch (the nodes once cordoned) would otherwise hold every phase's end for its whole timeout
WATCH_S = 1


@dataclass
class Fleet:
    """Instances of one ASG, their nodes, and one active lifecycle action (token) per instance."""

    asg: str
    instance_ids: list[str]
    nodes: list[str]
    tokens: dict[str, str] = field(default_factory=dict)

    def start_actions(self, aws: AwsSeed) -> None:
        for iid in self.instance_ids:
            self.tokens[iid] = aws.start_lifecycle_action(self.asg, HOOK, iid)

    def event(self, iid: str) -> dict[str, Any]:
        from testbed import samples

        ev = samples.lifecycle_event(
            "asg-terminate.json", instance_id=iid, asg=self.asg, hook=HOOK, token=self.tokens[iid]
        )
        ev["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return ev


def wait_for_quiet_bed(k8s: KubeScenario, timeout: float = 300) -> None:
    """Wait (at most ``timeout``, then go on) until no earlier storm's namespace is being deleted: its hundreds of
    pods being removed would load the control plane and slow the solo baseline. (Other tests' namespaces may stay
    Terminating for good: the bed runs no pod garbage collector for pods of deleted nodes.)"""
    prefix = k8s.ns.rsplit("-", 1)[0] + "-"
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        items = k8s.core.list_namespace().items
        if not [n for n in items if n.status.phase == "Terminating" and n.metadata.name.startswith(prefix)]:
            return
        time.sleep(1)


def seed_fleet(aws: AwsSeed, k8s: KubeScenario, asg: str, size: int, tags: dict[str, str]) -> Fleet:
    ids = aws.asg(asg, size=size, tags=tags, hooks=({"name": HOOK, "heartbeat_timeout": 600},))
    return Fleet(asg, ids, aws.nodes_for(k8s, ids))


def seed_workload(
    k8s: KubeScenario, nodes: list[str], pods_per_node: int, max_unavailable: str, *, grace: int = 0
) -> list[str]:
    """``pods_per_node`` Deployments of len(nodes) replicas each, under a PDB (unless ``max_unavailable`` is
    "none"), started on ``nodes`` (the scheduler
    spreads them about evenly) while new spare nodes are cordoned; the spares are uncordoned once every pod is
    Ready, so replacements go there. Returns the spares."""
    total = len(nodes) * pods_per_node
    spares = k8s.add_nodes(math.ceil(total / SPARE_PODS) + 1)
    for s in spares:
        k8s.core.patch_node(s, {"spec": {"unschedulable": True}})
    for d in range(pods_per_node):
        k8s.deployment(f"app{d}", len(nodes), nodes=[*nodes, *spares], grace=grace)
        if max_unavailable != "none":
            k8s.pdb(f"app{d}", {"app": f"app{d}"}, max_unavailable=max_unavailable)
    k8s.wait_for(
        lambda: sum(1 for p in k8s.pods() if k8s.pod_ready(p)) >= total,
        timeout=120 + total / 5,
        interval=1,
        what=f"{total} Ready pods",
    )
    for s in spares:
        k8s.core.patch_node(s, {"spec": {"unschedulable": False}})
    # every PDB has seen its pods (so no eviction is refused for an unsynced budget)
    k8s.wait_for(
        lambda: all(
            (p.status and p.status.current_healthy == len(nodes))
            for p in k8s.policy.list_namespaced_pod_disruption_budget(k8s.ns).items
        ),
        timeout=120,
        interval=1,
        what="PDBs observed",
    )
    return spares


# ---- apiserver metrics ------------------------------------------------------------------------------------------
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$")
_RV = re.compile(rb'"resourceVersion":"(\d+)"')  # the object's own: metadata comes first in its JSON
_POD_NAME = re.compile(rb'"metadata":\{"name":"([^"]+)"')
_NODE_NAME = re.compile(rb'"nodeName":"([^"]+)"')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def apiserver_metrics(api: Any) -> list[tuple[str, dict[str, str], float]]:
    resp = api.call_api("GET", api.configuration.host + "/metrics")
    resp.read()
    out = []
    for line in resp.data.decode().splitlines():
        m = _SAMPLE.match(line)
        if m and not line.startswith("#"):
            out.append((m.group(1), dict(_LABEL.findall(m.group(2) or "")), float(m.group(3))))
    return out


def metric_sum(samples: list[tuple[str, dict[str, str], float]], name: str, **labels: str) -> float:
    return sum(v for n, lab, v in samples if n == name and all(lab.get(k) == x for k, x in labels.items()))


@dataclass
class Counts:
    """Requests between two snapshots: per APF flow schema, APF rejections (429 from priority and fairness), and
    429s to evictions (a PDB refusing, which is expected)."""

    dispatched: dict[str, float]
    apf_rejected: float
    eviction_429: float
    all_429: float


def snapshot(api: Any) -> list[tuple[str, dict[str, str], float]]:
    return apiserver_metrics(api)


def diff(before: list[tuple[str, dict[str, str], float]], after: list[tuple[str, dict[str, str], float]]) -> Counts:
    def by_schema(s: list[tuple[str, dict[str, str], float]]) -> dict[str, float]:
        out: dict[str, float] = {}
        for n, lab, v in s:
            if n == "apiserver_flowcontrol_dispatched_requests_total":
                out[lab["flow_schema"]] = out.get(lab["flow_schema"], 0) + v
        return out

    b, a = by_schema(before), by_schema(after)
    return Counts(
        dispatched={k: a[k] - b.get(k, 0) for k in a if a[k] - b.get(k, 0)},
        apf_rejected=metric_sum(after, "apiserver_flowcontrol_rejected_requests_total")
        - metric_sum(before, "apiserver_flowcontrol_rejected_requests_total"),
        eviction_429=metric_sum(after, "apiserver_request_total", code="429", subresource="eviction")
        - metric_sum(before, "apiserver_request_total", code="429", subresource="eviction"),
        all_429=metric_sum(after, "apiserver_request_total", code="429")
        - metric_sum(before, "apiserver_request_total", code="429"),
    )


# ---- the observer -----------------------------------------------------------------------------------------------
class Observer:
    """Watches the fleet's nodes and the workload's pods from t0 on; times per node are epoch seconds."""

    def __init__(self, k8s: KubeScenario, nodes: list[str], budgets: bool = False) -> None:
        self.k8s, self.nodes = k8s, set(nodes)
        self.cordoned: dict[str, float] = {}
        self.pod_node: dict[str, str] = {}
        self.gone: dict[str, float] = {}
        # when each pod was first seen terminating (its eviction, as a watch delivers it)
        self.terminating: dict[str, float] = {}
        # with ``budgets``: (epoch, PDB name, disruptionsAllowed) at every status the PDB watch delivered
        self.budgets = budgets
        self.levels: list[tuple[float, str, int]] = []
        # pods that landed on one of the nodes after t0 (a replacement put on a node not cordoned yet): each has to
        # be evicted again before that node is drained
        self.relanded: set[str] = set()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.t0 = 0.0

    def start(self) -> None:
        pods = self.k8s.core.list_namespaced_pod(self.k8s.ns)
        for p in pods.items:
            if p.spec.node_name in self.nodes and p.metadata.deletion_timestamp is None:
                self.pod_node[p.metadata.name] = p.spec.node_name
        nodes = self.k8s.core.list_node(label_selector=f"{RUN_LABEL}={self.k8s.run_id}")
        self._threads = [
            threading.Thread(target=self._watch_pods, args=(pods.metadata.resource_version,), daemon=True),
            threading.Thread(target=self._watch_nodes, args=(nodes.metadata.resource_version,), daemon=True),
        ]
        if self.budgets:
            pdbs = self.k8s.policy.list_namespaced_pod_disruption_budget(self.k8s.ns)
            self._threads.append(
                threading.Thread(target=self._watch_budgets, args=(pdbs.metadata.resource_version,), daemon=True)
            )
        for t in self._threads:
            t.start()

    # The watches read raw JSON lines and parse only the few events that matter: decoding every pod event into
    # the client's models cost more CPU than all the executions together, in the same process (one GIL).
    def _events(self, list_fn: Any, rv: str, wanted: bytes, **kw: Any) -> Iterator[tuple[str, dict[str, Any], bytes]]:
        """(resourceVersion, event, raw line) of a watch from ``rv``; events whose line lacks ``wanted`` come as {}."""
        resp = list_fn(watch=True, resource_version=rv, timeout_seconds=WATCH_S, _preload_content=False, **kw)
        try:
            buf = b""
            for chunk in resp.stream(65536):
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line.startswith(b'{"type":"ERROR"'):  # e.g. 410 Gone: the watch cannot resume
                        raise ApiException(status=410, reason=line[:200].decode("utf-8", "replace"))
                    m = _RV.search(line)
                    if m:
                        yield m.group(1).decode(), json.loads(line) if wanted in line else {}, line
        finally:
            resp.release_conn()

    def _watch_pods(self, rv: str) -> None:
        while not self._stop.is_set():
            try:
                for at, ev, line in self._events(
                    functools.partial(self.k8s.core.list_namespaced_pod, self.k8s.ns), rv, b'"type":"DELETED"'
                ):
                    rv = at  # a watch that times out resumes from here
                    name = (ev.get("object") or {}).get("metadata", {}).get("name")
                    if ev.get("type") == "DELETED" and name in self.pod_node:
                        self.gone.setdefault(name, time.time())
                        self.terminating.setdefault(name, self.gone[name])
                    elif not ev:  # scheduled somewhere: a replacement that landed on a node still to drain?
                        pod, on = _POD_NAME.search(line), _NODE_NAME.search(line)
                        name = pod.group(1).decode() if pod else None
                        if name in self.pod_node and b'"deletionTimestamp"' in line:
                            self.terminating.setdefault(name, time.time())
                        if name and on and on.group(1).decode() in self.nodes and name not in self.pod_node:
                            self.relanded.add(name)
                    if self._stop.is_set():
                        return
            except ApiException:
                return  # 410 Gone after a long stall: the bench reports missing times instead of guessing

    def _watch_nodes(self, rv: str) -> None:
        while not self._stop.is_set():
            try:
                for at, ev, _ in self._events(
                    self.k8s.core.list_node,
                    rv,
                    b'"unschedulable":true',
                    label_selector=f"{RUN_LABEL}={self.k8s.run_id}",
                ):
                    rv = at
                    obj = ev.get("object") or {}
                    name = obj.get("metadata", {}).get("name")
                    if name in self.nodes and (obj.get("spec") or {}).get("unschedulable"):
                        self.cordoned.setdefault(name, time.time())
                    if self._stop.is_set():
                        return
            except ApiException:
                return

    def _watch_budgets(self, rv: str) -> None:
        while not self._stop.is_set():
            try:
                for at, ev, _ in self._events(
                    functools.partial(self.k8s.policy.list_namespaced_pod_disruption_budget, self.k8s.ns),
                    rv,
                    b'"status"',
                ):
                    rv = at
                    obj = ev.get("object") or {}
                    status = obj.get("status") or {}
                    if "disruptionsAllowed" in status or "currentHealthy" in status:
                        name = obj["metadata"]["name"]
                        self.levels.append((time.time(), name, int(status.get("disruptionsAllowed") or 0)))
                    if self._stop.is_set():
                        return
            except ApiException:
                return

    def drained(self) -> dict[str, float]:
        """Per node: when the last of its pods (present at t0) was deleted; only nodes with all pods gone."""
        last: dict[str, float] = {}
        left: dict[str, int] = {}
        for pod, node in self.pod_node.items():
            if pod in self.gone:
                last[node] = max(last.get(node, 0.0), self.gone[pod])
            else:
                left[node] = left.get(node, 0) + 1
        return {n: t for n, t in last.items() if n not in left}

    def waves(self, t0: float) -> dict[str, Any]:
        """With ``budgets``: each pod's eviction seen and each budget status, in seconds after ``t0``
        (bench/storm_waves.py); else nothing."""
        if not self.budgets:
            return {}
        return {
            "evicted_s": {p: t - t0 for p, t in self.terminating.items()},
            "levels": [(t - t0, name, allowed) for t, name, allowed in self.levels],
        }

    def finish(self, seconds: float = 10) -> None:
        """Stop once every node is drained or after ``seconds``: the pod watch may deliver the last deletions a
        moment after the drains have returned."""
        deadline = time.time() + seconds
        while time.time() < deadline and len(self.drained()) < len(self.nodes):
            time.sleep(0.2)
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(10)


def hooks_completed(aws: AwsSeed, asg: str) -> dict[str, float]:
    return {
        a["instance_id"]: a["completed_at"]
        for a in aws.lifecycle_actions()
        if a["asg"] == asg and a["state"] == "COMPLETED" and a["completed_at"]
    }


def aws_requests(aws: AwsSeed) -> dict[tuple[str, str, str], int]:
    return {(r["access_key"], r["service"], r["action"]): r["count"] for r in aws.requests()}


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of non-empty ``values``."""
    s = sorted(values)
    return s[max(0, math.ceil(q / 100 * len(s)) - 1)]


def summary(values: list[float]) -> str:
    if not values:
        return "n/a"
    return f"p50 {statistics.median(values):.2f} s, p99 {pct(values, 99):.2f} s, max {max(values):.2f} s"


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, default=str)


CORDONING_STEPS = ("begin", "cordon")  # the steps whose write cordons (a cordon step: where begin stopped short)


def checkpoints_before_cordon(operations: list[Any]) -> int | None:
    """The operations that ended before the step that cordons ended: each ended with a blocking checkpoint (a round
    trip to the durable service in AWS) on the way to the cordon's write, which that step makes before its own.
    By the ends: a step's start is checkpointed without waiting, and under load it is recorded with its end. None:
    nothing was cordoned."""
    cordoning = [op for op in operations if op.name in CORDONING_STEPS and op.end_timestamp is not None]
    if not cordoning:
        return None
    first = min(cordoning, key=lambda op: op.end_timestamp)
    return sum(1 for op in operations if op.end_timestamp is not None and op.end_timestamp < first.end_timestamp)
