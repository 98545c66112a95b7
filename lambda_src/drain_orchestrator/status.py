"""`drain-orchestrator status`: the drains in progress (or recently over) and what holds each one now.

Read-only, with the product's own access: for each served cluster (CLUSTER_NAMES, reached through EKS like the
Lambda) or the cluster of a kubeconfig, the nodes carrying ``drain-orchestrator.io/`` annotations: phase, event kind,
deadline and time left, and what holds the drain: pods a PodDisruptionBudget allows no disruption of, load-balancer
targets of the instance still registered or draining, VolumeAttachments left. A table, or ``--json``.
"""

from __future__ import annotations

import argparse
import calendar
import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from drain_orchestrator.kube.cordon import ANN_DEADLINE, ANN_REASON, ANNOTATION_PREFIX
from drain_orchestrator.kube.rest import Kube

PHASES = ("drain-completed", "drain-failed", "drain-started", "cordoned")  # latest first


@dataclass
class NodeStatus:
    cluster: str
    node: str
    instance_id: str | None
    phase: str
    kind: str | None
    deadline: str | None
    seconds_left: int | None
    blocked_pods: list[str] = field(default_factory=list)  # "ns/pod (PDB ns/name)"
    pods_left: int = 0
    targets: list[str] = field(default_factory=list)  # "<target group> (<id>): <state>"
    volumes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def holds(self) -> list[str]:
        out = [f"pod {p} blocked by PDB" for p in self.blocked_pods]
        out += [f"target {t}" for t in self.targets]
        out += [f"volume {v}" for v in self.volumes]
        return out or ([f"{self.pods_left} pods left"] if self.pods_left else [])


def add_status_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("status", help="drains in progress and what holds each one")
    p.add_argument("--cluster", default=None, help="one cluster (default: every cluster in CLUSTER_NAMES)")
    p.add_argument("--kubeconfig", default=None, help="read this kubeconfig's cluster instead of reaching EKS")
    p.add_argument("--context", default=None)
    p.add_argument("--json", action="store_true", help="one JSON document instead of a table")
    p.add_argument("--no-aws", action="store_true", help="skip the load-balancer lookups (no AWS credentials)")
    p.set_defaults(func=run_status)


def run_status(args: argparse.Namespace) -> int:
    try:
        targets = _clusters(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    elbv2 = None if args.no_aws else _elbv2()
    found: list[NodeStatus] = []
    failed = False
    for name, connect in targets:
        try:
            kube = connect()
            found.extend(cluster_status(kube, name, elbv2, now=time.time()))
        except Exception as exc:  # one line per cluster, not a traceback
            print(f"error: cluster {name}: {str(exc)[:300]}", file=sys.stderr)
            failed = True
    if args.json:
        print(json.dumps([{**asdict(s), "holds": s.holds} for s in found], indent=2))
    else:
        print(render(found))
    return 1 if failed else 0


def _clusters(args: argparse.Namespace) -> list[tuple[str, Any]]:
    if args.kubeconfig:
        from drain_orchestrator.drain_cli import _kube  # noqa: PLC0415

        return [(args.cluster or args.context or "kubeconfig", lambda: _kube(args, 4))]
    from drain_orchestrator.settings import Settings  # noqa: PLC0415

    names = [args.cluster] if args.cluster else list(Settings.from_env(os.environ).cluster_names)
    if not names:
        raise ValueError("no cluster: set CLUSTER_NAMES, or pass --cluster NAME or --kubeconfig PATH")

    def connect(name: str) -> Any:
        from drain_orchestrator.kube.client import ClusterConnector  # noqa: PLC0415

        return lambda: Kube(ClusterConnector().api_client(name), pool_size=4)

    return [(n, connect(n)) for n in names]


def _elbv2() -> Any:
    try:
        from drain_orchestrator.aws.clients import elbv2_client  # noqa: PLC0415
        from drain_orchestrator.aws.elbv2 import Elbv2  # noqa: PLC0415

        return Elbv2(elbv2_client())
    except Exception:  # no region or credentials: the table says targets are unknown
        return None


def cluster_status(kube: Kube, cluster: str, elbv2: Any, *, now: float) -> list[NodeStatus]:
    from drain_orchestrator.kube.pods import list_node_pods  # noqa: PLC0415
    from drain_orchestrator.kube.volumes import node_attachments  # noqa: PLC0415

    resp = kube.request("GET", "/api/v1/nodes")
    if not resp.ok:
        raise resp.error("list nodes")
    ours = [n for n in resp.body.get("items") or [] if _annotations(n)]
    if not ours:
        return []
    pdbs = _pdbs(kube)
    groups = None
    out = []
    for n in ours:
        s = _node_status(cluster, n, now)
        try:
            pods = [p for p in list_node_pods(kube, s.node) if _evictable(p)]
            s.pods_left = len(pods)
            s.blocked_pods = blocked(pods, pdbs)
            s.volumes = node_attachments(kube, s.node).holding
        except Exception as exc:
            s.errors.append(f"kubernetes: {str(exc)[:200]}")
        if elbv2 is not None and s.instance_id:
            try:
                if groups is None:
                    groups = elbv2.target_groups(cluster, ())
                s.targets = _targets(elbv2, groups, s.instance_id)
            except Exception as exc:
                s.errors.append(f"load balancers: {str(exc)[:200]}")
        out.append(s)
    return out


def _annotations(node: dict[str, Any]) -> dict[str, str]:
    ann = (node.get("metadata") or {}).get("annotations") or {}
    return {k: v for k, v in ann.items() if k.startswith(ANNOTATION_PREFIX)}


def _node_status(cluster: str, node: dict[str, Any], now: float) -> NodeStatus:
    ann = _annotations(node)
    phase = next((p for p in PHASES if ANNOTATION_PREFIX + p in ann), "annotated")
    deadline = ann.get(ANN_DEADLINE)
    left = None
    if deadline:
        try:
            left = int(calendar.timegm(time.strptime(deadline, "%Y-%m-%dT%H:%M:%SZ")) - now)
        except ValueError:
            left = None
    provider = (node.get("spec") or {}).get("providerID") or ""
    instance = provider.rsplit("/", 1)[-1] if provider.startswith("aws://") else None
    return NodeStatus(
        cluster=cluster,
        node=(node.get("metadata") or {}).get("name", ""),
        instance_id=instance if instance and instance.startswith("i-") else None,
        phase=phase,
        kind=ann.get(ANN_REASON),
        deadline=deadline,
        seconds_left=left,
    )


def _evictable(pod: dict[str, Any]) -> bool:
    meta = pod.get("metadata") or {}
    owners = meta.get("ownerReferences") or []
    phase = (pod.get("status") or {}).get("phase")
    return (
        meta.get("deletionTimestamp") is None
        and phase not in ("Succeeded", "Failed")
        and not any(o.get("kind") == "DaemonSet" for o in owners)
    )


def _pdbs(kube: Kube) -> list[dict[str, Any]]:
    resp = kube.request("GET", "/apis/policy/v1/poddisruptionbudgets")
    if not resp.ok:
        raise resp.error("list poddisruptionbudgets")
    return list(resp.body.get("items") or [])


def blocked(pods: list[dict[str, Any]], pdbs: list[dict[str, Any]]) -> list[str]:
    """``ns/pod (PDB ns/name)`` for each pod a budget allowing no disruption selects."""
    out = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        ns, labels = meta.get("namespace"), meta.get("labels") or {}
        for pdb in pdbs:
            pmeta = pdb.get("metadata") or {}
            if pmeta.get("namespace") != ns or int((pdb.get("status") or {}).get("disruptionsAllowed") or 0) > 0:
                continue
            if selects((pdb.get("spec") or {}).get("selector"), labels):
                out.append(f"{ns}/{meta.get('name')} (PDB {ns}/{pmeta.get('name')})")
    return sorted(out)


def selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A LabelSelector (matchLabels + matchExpressions); a PDB's empty selector selects every pod, a null one none."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        ok = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }.get(op, False)
        if not ok:
            return False
    return True


def _targets(elbv2: Any, groups: list[Any], instance_id: str) -> list[str]:
    from drain_orchestrator.aws.elbv2 import HOLDING_STATES  # noqa: PLC0415

    out = []
    for tg in groups:
        if tg.target_type != "instance":
            continue  # ip targets: the pods' IPs are gone with the pods; the Lambda recorded them at drain start
        held = [t for t in elbv2.targets(tg.arn) if t.id == instance_id and t.state in HOLDING_STATES]
        out += [f"{tg.name} ({t.id}): {t.state}" for t in held]
    return out


def render(rows: list[NodeStatus]) -> str:
    if not rows:
        return "no drains: no node carries drain-orchestrator.io/ annotations"
    head = ("CLUSTER", "NODE", "PHASE", "KIND", "DEADLINE", "LEFT", "HOLDS")
    table = [head]
    for s in rows:
        left = "-" if s.seconds_left is None else (f"{s.seconds_left}s" if s.seconds_left > 0 else "passed")
        holds = "; ".join(s.holds + [f"error: {e}" for e in s.errors]) or "-"
        table.append((s.cluster, s.node, s.phase, s.kind or "-", s.deadline or "-", left, holds))
    widths = [max(len(r[i]) for r in table) for i in range(len(head) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1] for r in table)
