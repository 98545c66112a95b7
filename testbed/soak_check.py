"""The soak's invariant checker: what must hold after any mix of events and faults, read only from the bed (the
apiserver, its audit log) and the emulator (lifecycle actions, the notification queue), never from the product's
own account of what it did."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from testbed.soak import Soak

OPERATIONS_LIMIT = 3000  # durable operations per execution, a hard service quota


@dataclass(frozen=True)
class Violation:
    invariant: str
    detail: str


@dataclass
class Expectation:
    """What the plan makes true whatever the faults: built while the events are delivered."""

    hooks: dict[str, str] = field(default_factory=dict)  # owned instance -> the lifecycle result the rules give
    untouched_instances: set[str] = field(default_factory=set)  # other clusters' instances: their hooks not ours
    foreign_hooks: set[str] = field(default_factory=set)  # our instances whose other tool's hook was started too
    drained_nodes: set[str] = field(default_factory=set)  # nodes some event asked to drain
    cordoned_nodes: set[str] = field(default_factory=set)  # nodes a rebalance recommendation asked to cordon
    deleted_nodes: set[str] = field(default_factory=set)  # nodes a fault deleted mid-drain
    failed_executions: int = 0  # malformed events: their executions fail (and go to the dead-letter queue)

    def hook_completed(self, instance: str, result: str) -> None:
        self.hooks[instance] = result

    def untouched(self, instance: str) -> None:
        self.untouched_instances.add(instance)

    def drained(self, node: str) -> None:
        self.drained_nodes.add(node)

    def cordoned(self, node: str) -> None:
        self.cordoned_nodes.add(node)


def check(soak: Soak, audit_offset: int) -> list[Violation]:
    out: list[Violation] = []
    expect, role = soak.expect, soak.aws.role_arn("drain-orchestrator")
    actions = soak.aws.lifecycle_actions()
    out += _hooks(expect, actions, role)
    out += _executions(soak)
    out += _notifications(soak, soak.aws.drain_notifications(soak.queue))
    out += _evictions(soak, soak.audit_evictions(audit_offset))
    out += _cordons(soak)
    out += [Violation("the harness itself ran", error) for error in soak.harness_errors]
    return out


def _hooks(expect: Expectation, actions: list[dict[str, Any]], role: str) -> list[Violation]:
    out = []
    for a in actions:
        if a["hook"] == "other-tool" and (a["completed_by"] == role or a["heartbeats"]):
            out.append(Violation("another tool's hook left to its owner", f"{a['instance_id']}: {a}"))
    actions = [a for a in actions if a["hook"] != "other-tool"]
    for instance, result in sorted(expect.hooks.items()):
        mine = [a for a in actions if a["instance_id"] == instance and a["state"] != "SUPERSEDED"]
        if len(mine) != 1:
            out.append(Violation("hook completed exactly once", f"{instance}: {len(mine)} lifecycle actions: {mine}"))
            continue
        (a,) = mine
        if (a["state"], a["result"], a["completed_by"]) != ("COMPLETED", result, role):
            out.append(Violation("hook completed by the orchestrator with the rules' result",
                                 f"{instance}: want COMPLETED {result} by {role}, got {a['state']} {a['result']} "
                                 f"by {a['completed_by']}"))  # fmt: skip
    for a in actions:
        if a["instance_id"] in expect.untouched_instances and (a["completed_by"] == role or a["heartbeats"]):
            out.append(Violation("other clusters' hooks untouched", f"{a['instance_id']}: {a}"))
        if a["instance_id"] in expect.hooks and a["state"] in ("ACTIVE", "TIMED_OUT"):
            out.append(Violation("no lifecycle action left ACTIVE or TIMED_OUT", f"{a['instance_id']}: {a['state']}"))
    return out


def _executions(soak: Soak) -> list[Violation]:
    """Bad input fails its execution at once, naming the field; a drain's execution may fail only after its
    instance's verdict (the hook invariants check that verdict), and the harness itself never fails."""
    out = []
    malformed = [e for e in soak.executions if e.what == "malformed"]
    for e in malformed:
        if e.status != "FAILED" or "instance-id" not in (e.error or ""):
            out.append(Violation("a malformed event fails its execution naming the field", f"{e.status} {e.error}"))
    if len(malformed) != soak.expect.failed_executions:
        out.append(Violation("every malformed event delivered", f"{len(malformed)} of {soak.expect.failed_executions}"))
    for e in soak.executions:
        if e.status in ("RUNNING", "HARNESS-ERROR", "TIMED_OUT"):
            out.append(Violation("every execution ends", f"{e.what} {e.instance}: {e.status} {e.error}"))
        if e.operations > OPERATIONS_LIMIT:
            out.append(Violation("durable operations within the quota", f"{e.what} {e.instance}: {e.operations}"))
    return out


def _notifications(soak: Soak, notes: list[dict[str, Any]]) -> list[Violation]:
    out = []
    sns_faults = soak.fault_counts.get("sns-down", 0)
    finals: dict[str, int] = {}
    for n in notes:
        if n.get("phase") in ("completed", "failed"):
            # a drain that could not even locate its node (the apiserver unreachable until the deadline) reports
            # node null: its instance says which node it was
            node = str(n.get("node") or soak.nodes.get(str(n.get("instance_id")), "None"))
            finals[node] = finals.get(node, 0) + 1
    by_node = {node: iid for iid, node in soak.nodes.items()}
    for node in sorted(soak.expect.drained_nodes):
        count = finals.pop(node, 0)
        # The phase claim lives on the Node: once a fault deleted it, nothing can arbitrate, and each execution that
        # drained it reports node-gone itself (a duplicate beats none, docs/reliability.md)
        executions = sum(1 for e in soak.executions if e.instance == by_node.get(node) and e.what != "foreign-hook")
        # Likewise while the apiserver could not answer (a restart of it or of etcd, the access entry revoked): the
        # final report goes out without the claim rather than not at all. Counted in the report, not hidden.
        blind = any(soak.fault_counts.get(f) for f in ("apiserver-restart", "etcd-restart", "access-revoked"))
        most = executions if node in soak.expect.deleted_nodes or blind else 1
        if count > 1:
            soak.duplicate_finals[node] = count
        # SNS down loses notifications by design (best effort, counted as Errors notify-failed): none is then allowed
        if count > most or (count == 0 and not sns_faults):
            deleted = "deleted mid-drain" if node in soak.expect.deleted_nodes else "not deleted"
            out.append(Violation("exactly one final notification per drained node",
                                 f"{node} ({deleted}, {executions} executions): {count}"))  # fmt: skip
    # a rebalance recommendation only cordons: a cordon that succeeded says nothing more, one that failed (the node
    # not located, the cordon refused) reports its failure, once per execution of that instance
    failures: dict[str, int] = {}
    for n in notes:
        if n.get("phase") == "failed":
            node = str(n.get("node") or soak.nodes.get(str(n.get("instance_id")), "None"))
            failures[node] = failures.get(node, 0) + 1
    for node in sorted(soak.expect.cordoned_nodes - soak.expect.drained_nodes):
        executions = sum(1 for e in soak.executions if e.instance == by_node.get(node))
        if node in finals and finals[node] == failures.get(node, 0) <= executions:
            del finals[node]
    for node, count in finals.items():
        out.append(Violation("no final notification for a node nobody drained", f"{node}: {count}"))
    return out


def _evictions(soak: Soak, evicted: list[str]) -> list[Violation]:
    drained = soak.expect.drained_nodes
    scheduled = soak.scheduled_nodes() if evicted else {}

    def node_of(pod: str) -> str | None:
        return soak.pod_nodes.get(pod) or scheduled.get(pod) or soak.pods_at_start.get(pod)

    return [
        Violation("no pod evicted from a node nobody was draining", f"{pod} (on {node_of(pod)})")
        for pod in sorted(set(evicted))
        if node_of(pod) not in drained
    ]


def _cordons(soak: Soak) -> list[Violation]:
    out = []
    karpenter = soak.k8s.core.read_node(soak.karpenter_node)
    if karpenter.spec.unschedulable or any(k.startswith("drain-orchestrator.io/") for k in
                                           (karpenter.metadata.annotations or {})):  # fmt: skip
        out.append(Violation("a Karpenter node left to Karpenter", soak.karpenter_node))
    allowed = soak.expect.drained_nodes | soak.expect.cordoned_nodes
    for node in soak.k8s.core.list_node().items:
        name = node.metadata.name
        if node.spec.unschedulable and name not in allowed:
            out.append(Violation("no node cordoned without a drain or a verdict that says why", name))
        elif node.spec.unschedulable and name in soak.expect.cordoned_nodes - soak.expect.drained_nodes:
            reason = (node.metadata.annotations or {}).get("drain-orchestrator.io/reason")
            if not reason:
                out.append(Violation("a cordon says why", f"{name}: no drain-orchestrator.io/reason annotation"))
    return out
