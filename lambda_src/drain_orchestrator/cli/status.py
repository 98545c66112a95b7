"""`drain-orchestrator status`: the drains in progress (or recently over) and what holds each one now.

Read-only, with the product's own access: for each served cluster (CLUSTER_NAMES, reached through EKS like the
Lambda) or the cluster of a kubeconfig, the nodes carrying ``drain-orchestrator.io/`` annotations: phase, event kind,
deadline and time left, and what holds the drain: pods a PodDisruptionBudget allows no disruption of, load-balancer
targets of the instance still registered or draining, VolumeAttachments left. Also the instances of the clusters'
Auto Scaling groups kept in ``Terminating:Retained`` (a terminate hook abandoned under an instance lifecycle policy
that retains), the surges no drain will take back (``surge restore`` takes them back), and the pending returns to
service: nodes cordoned for an event whose instance may stay, with the execution that may return each and when. A
table, or ``--json`` (cli/status_report.py); a cluster that could not be read is said so on stdout and stderr, and
the exit status is 1: an unreachable cluster is never shown as "no drains".
"""

from __future__ import annotations

import argparse
import calendar
import functools
import json
import os
import sys
import time
from typing import Any

from drain_orchestrator import __version__
from drain_orchestrator.cli.args import add_json_flag, emit_json
from drain_orchestrator.cli.status_report import (
    ClusterRead,
    LeftSurge,
    NodeStatus,
    PendingReturn,
    Retained,
    StatusReport,
    render_report,
)
from drain_orchestrator.drain.selector import selects
from drain_orchestrator.kube.connect import connect
from drain_orchestrator.kube.cordon import ANN_DEADLINE, ANN_REASON
from drain_orchestrator.kube.node_marks import ANNOTATION_PREFIX
from drain_orchestrator.kube.rest import Kube

PHASES = ("drain-completed", "drain-failed", "drain-held", "drain-started", "cordoned")  # latest first
ANN_HELD = ANNOTATION_PREFIX + "held"
ANN_DRAINER = ANNOTATION_PREFIX + "drainer"


def add_status_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("status", help="drains in progress and what holds each one")
    p.add_argument("--cluster", default=None, help="one cluster (default: every cluster in CLUSTER_NAMES)")
    p.add_argument("--kubeconfig", default=None, help="read this kubeconfig's cluster instead of reaching EKS")
    p.add_argument("--context", default=None)
    add_json_flag(p)
    p.add_argument(
        "--no-aws", action="store_true", help="skip the load-balancer and Auto Scaling lookups (no AWS credentials)"
    )
    p.set_defaults(func=run_status)


def run_status(args: argparse.Namespace) -> int:
    try:
        targets = _clusters(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    elbv2 = None if args.no_aws else _elbv2()
    autoscaling = None if args.no_aws else _autoscaling()
    report = StatusReport(version=__version__, clusters=[], drains=[], retained=[])
    for name, reach, named in targets:
        read = ClusterRead(cluster=name, reachable=True)
        try:
            kube = reach()
            report.drains.extend(cluster_status(kube, name, elbv2, now=time.time()))
        except Exception as exc:  # one line per cluster, not a traceback
            read.reachable, read.error = False, _one_line(exc)
            print(f"error: cluster {name}: could not be read: {read.error}", file=sys.stderr)
        if read.reachable:
            try:
                report.left_surges.extend(_left_surges(kube, name, time.time()))
            except Exception as exc:
                read.surges_error = _one_line(exc)
                print(f"warning: cluster {name}: surges left behind unknown: {read.surges_error}", file=sys.stderr)
        if autoscaling is not None and named:
            try:
                report.retained.extend(_retained(autoscaling, name, report.drains))
            except Exception as exc:
                read.retained_error = _one_line(exc)
                print(f"warning: cluster {name}: retained instances unknown: {read.retained_error}", file=sys.stderr)
        if autoscaling is not None and read.reachable and named:
            _lifecycle_warnings(report, read, kube, autoscaling)
        report.clusters.append(read)
    if args.json:
        emit_json(report.to_json())
    else:
        print(render_report(report))
    return 1 if report.unreadable else 0


def _lifecycle_warnings(report: StatusReport, read: ClusterRead, kube: Any, autoscaling: Any) -> None:
    """Groups whose hooks IAM would not let the function answer (cli/status_grants.py); needs CLUSTER_NAMES (and
    OWNERSHIP_TAG) as the function has them: without them, nothing to judge ownership by."""
    from drain_orchestrator.aws.clients import ec2_client  # noqa: PLC0415
    from drain_orchestrator.cli.status_grants import lifecycle_warnings  # noqa: PLC0415
    from drain_orchestrator.settings import Settings, SettingsError  # noqa: PLC0415

    try:
        settings = Settings.from_env(os.environ)
    except SettingsError:
        return
    try:
        report.lifecycle_warnings.extend(lifecycle_warnings(kube, read.cluster, ec2_client(), autoscaling, settings))
    except Exception as exc:
        read.grants_error = _one_line(exc)
        print(f"warning: cluster {read.cluster}: lifecycle permissions unknown: {read.grants_error}", file=sys.stderr)


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def _clusters(args: argparse.Namespace) -> list[tuple[str, Any, bool]]:
    """(name, reach, named): ``named`` when the name is the EKS cluster's (its Auto Scaling groups are known)."""
    if args.kubeconfig:
        name = args.cluster or args.context or "kubeconfig"
        return [
            (name, lambda: connect(kubeconfig=args.kubeconfig, context=args.context, pool_size=4), bool(args.cluster))
        ]
    from drain_orchestrator.settings import Settings  # noqa: PLC0415

    names = [args.cluster] if args.cluster else list(Settings.from_env(os.environ).cluster_names)
    if not names:
        raise ValueError("no cluster: set CLUSTER_NAMES, or pass --cluster NAME or --kubeconfig PATH")

    def on(name: str) -> Any:
        return lambda: connect(cluster=name, pool_size=4)

    return [(n, on(n), True) for n in names]


def _autoscaling() -> Any:
    try:
        from drain_orchestrator.aws.clients import autoscaling_client  # noqa: PLC0415

        return autoscaling_client()
    except Exception:  # no region or credentials: the lookups are skipped, as for load balancers
        return None


def _retained(autoscaling: Any, cluster: str, drains: list[NodeStatus]) -> list[Retained]:
    from drain_orchestrator.aws.autoscaling import retained_instances  # noqa: PLC0415

    nodes = {s.instance_id: s.node for s in drains if s.cluster == cluster and s.instance_id}
    return [
        Retained(
            cluster=cluster,
            asg_name=r.asg_name,
            instance_id=r.instance_id,
            availability_zone=r.availability_zone,
            health_status=r.health_status,
            node=nodes.get(r.instance_id),
        )
        for r in retained_instances(autoscaling, cluster)
    ]


def _left_surges(kube: Kube, cluster: str, now: float) -> list[LeftSurge]:
    from drain_orchestrator.engine.surge_sweep import find_left_behind  # noqa: PLC0415

    return [LeftSurge(cluster, s.deployment, s.node, s.count, s.via, s.why) for s in find_left_behind(kube, now)]


def _elbv2() -> Any:
    try:
        from drain_orchestrator.aws.clients import elbv2_client  # noqa: PLC0415
        from drain_orchestrator.aws.elbv2 import Elbv2  # noqa: PLC0415

        return Elbv2(elbv2_client())
    except Exception:  # no region or credentials: the table says targets are unknown
        return None


def cluster_status(kube: Kube, cluster: str, elbv2: Any, *, now: float) -> list[NodeStatus]:
    from drain_orchestrator.kube.pods import list_node_pods  # noqa: PLC0415
    from drain_orchestrator.workflow.gate_defs import GATES  # noqa: PLC0415

    resp = kube.request("GET", "/api/v1/nodes")
    if not resp.ok:
        raise resp.error("list nodes")
    ours = [n for n in resp.body.get("items") or [] if _annotations(n)]
    if not ours:
        return []
    pdbs = _pdbs(kube)
    caches: dict[str, dict[str, Any]] = {gate.key: {} for gate in GATES}
    out = []
    for n in ours:
        s = _node_status(cluster, n, now)
        try:
            pods = [p for p in list_node_pods(kube, s.node) if _evictable(p)]
            s.pods_left = len(pods)
            s.blocked_pods = blocked(pods, pdbs)
        except Exception as exc:
            s.errors.append(f"kubernetes: {str(exc)[:200]}")
        for gate in GATES:  # what each gate would hold the instance for (the gates the Lambda checks)
            if gate.status_field is None or any(e.startswith(f"{gate.status_label}:") for e in s.errors):
                continue  # not shown, or the same API already failed for this node
            try:
                looked = gate.look(kube, elbv2, cluster, s.node, s.instance_id, caches[gate.key])
            except Exception as exc:
                s.errors.append(f"{gate.status_label}: {str(exc)[:200]}")
            else:
                setattr(s, gate.status_field, looked)
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
    status = NodeStatus(
        cluster=cluster,
        node=(node.get("metadata") or {}).get("name", ""),
        instance_id=instance if instance and instance.startswith("i-") else None,
        phase=phase,
        kind=ann.get(ANN_REASON),
        deadline=deadline,
        seconds_left=left,
    )
    _read_held(status, ann)
    status.pending_return = _pending_return(ann)
    return status


def _pending_return(ann: dict[str, str]) -> PendingReturn | None:
    """The node's return mark, and when its watch looks again: REBALANCE_RETURN_SECONDS as this shell has it (the
    function's own setting when run with its environment; the default otherwise)."""
    from drain_orchestrator.returns import ANN_RETURN, ReturnMark, pending_return  # noqa: PLC0415
    from drain_orchestrator.scheduled_change import newest_of  # noqa: PLC0415

    mark = ReturnMark.from_json(ann.get(ANN_RETURN))
    if mark is None:
        return None
    record = newest_of(ann, mark.event)
    at, terms = pending_return(mark, None if record is None else record.end, _rebalance_return())
    return PendingReturn(
        run=mark.run,
        kind=mark.kind,
        event=mark.event,
        cordoned_at=_iso(mark.at),
        returns_at=None if at is None else _iso(at),
        terms=terms,
    )


@functools.cache
def _rebalance_return() -> int:
    from drain_orchestrator.workflow_settings import WorkflowSettings  # noqa: PLC0415

    try:
        return WorkflowSettings.from_env(os.environ).rebalance_return
    except ValueError as exc:  # SettingsError: the function refuses these settings too
        default = WorkflowSettings().rebalance_return
        print(f"warning: {exc}; pending returns shown with REBALANCE_RETURN_SECONDS={default}", file=sys.stderr)
        return default


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _read_held(status: NodeStatus, ann: dict[str, str]) -> None:
    """The drain's own notes: what held it (workflow/held.py) and who drains it (kube/node_claim.py)."""
    from drain_orchestrator.drain_claim import NodeClaim  # noqa: PLC0415

    try:
        held = json.loads(ann.get(ANN_HELD) or "null")
    except ValueError:
        held = None
    if isinstance(held, dict):
        status.held_since = str(held.get("held_since") or "") or None
        # the PDBs as drains of earlier releases noted them; now only a count of pods per namespace (held.py)
        counts = held.get("pods_per_namespace") or {}
        per_ns = [f"{n} pods in {ns}" for ns, n in counts.items()] if isinstance(counts, dict) else []
        status.held_by = [str(p) for p in held.get("pdbs") or []] or per_ns
        status.held_reasons = [str(r) for r in held.get("reasons") or []]
        status.at_deadline = str(held.get("at_deadline") or "") or None
    claim = NodeClaim.from_json(ann.get(ANN_DRAINER))
    if claim is not None and claim.verdict is None:
        status.drained_by = claim.holder
        status.waiting = len(claim.deadlines) - 1


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
