"""What `drain-orchestrator status` found, and its table: the drains and what holds each, the instances kept in
``Terminating:Retained``, the surges no drain will take back, and the clusters that could not be read."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from drain_orchestrator.cli.args import table

RETAINED_STATE = "Terminating:Retained"


@dataclass
class PendingReturn:
    """A node cordoned for an event whose instance may stay: which execution may return it, for which event, when
    it looks again (None: when something happens) and on what terms."""

    run: str
    kind: str
    event: str
    cordoned_at: str
    returns_at: str | None
    terms: str


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
    held_since: str | None = None  # the drain's "held" notice: since when PDBs (or failing evictions) hold it
    held_by: list[str] = field(default_factory=list)  # the PDBs named then
    held_reasons: list[str] = field(default_factory=list)  # pdb, multiple-pdbs, webhook-failed, …
    at_deadline: str | None = None  # force-delete | continue | abandon | stop
    drained_by: str | None = None  # run id of the execution holding the node's drain claim
    waiting: int = 0  # other executions waiting for its verdict
    # the node's return mark (returns.py): the execution that may return it to service, and when it looks again
    pending_return: PendingReturn | None = None

    @property
    def holds(self) -> list[str]:
        out = []
        if self.held_since:
            by = ", ".join(self.held_by) or ", ".join(self.held_reasons)
            out.append(
                f"held since {self.held_since} by {by} ({', '.join(self.held_reasons)}; at the deadline: "
                f"{self.at_deadline})"
            )
        out += [f"pod {p} blocked by PDB" for p in self.blocked_pods]
        out += [f"target {t}" for t in self.targets]
        out += [f"volume {v}" for v in self.volumes]
        return out or ([f"{self.pods_left} pods left"] if self.pods_left else [])


@dataclass
class ClusterRead:
    """Whether a cluster could be read at all: an unreadable one is reported, never shown as "no drains"."""

    cluster: str
    reachable: bool
    error: str | None = None
    retained_error: str | None = None  # the Auto Scaling lookup failed: retained instances unknown
    surges_error: str | None = None  # the Deployment / HPA lookup failed: surges left behind unknown
    grants_error: str | None = None  # the lifecycle permissions of the nodes' groups could not be judged


@dataclass
class Retained:
    cluster: str
    asg_name: str
    instance_id: str
    availability_zone: str
    health_status: str
    node: str | None  # the instance's node, when it carries the orchestrator's marks


@dataclass
class LeftSurge:
    """A surge no drain will take back (its execution lost: expired, or its node gone)."""

    cluster: str
    deployment: str  # "namespace/name"
    node: str
    count: int
    via: str  # "deployment" or "hpa"
    why: str


@dataclass
class StatusReport:
    version: str
    clusters: list[ClusterRead]
    drains: list[NodeStatus]
    retained: list[Retained]
    left_surges: list[LeftSurge] = field(default_factory=list)
    # groups whose lifecycle hooks IAM would not let the function answer (cli/status_grants.py)
    lifecycle_warnings: list[str] = field(default_factory=list)

    @property
    def unreadable(self) -> list[ClusterRead]:
        return [c for c in self.clusters if not c.reachable]

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "clusters": [asdict(c) for c in self.clusters],
            "drains": [{**asdict(s), "holds": s.holds} for s in self.drains],
            "retained_instances": [asdict(r) for r in self.retained],
            "surges_left_behind": [asdict(s) for s in self.left_surges],
            "lifecycle_warnings": list(self.lifecycle_warnings),
        }


def render_report(report: StatusReport) -> str:
    """A title line with the version and what was read, the drains' table, retained instances, unreadable clusters."""
    read = [c.cluster for c in report.clusters if c.reachable]
    unreadable = report.unreadable
    title = f"drain-orchestrator {report.version}: read {len(read)} of {len(report.clusters)} clusters"
    out = [title + (f" ({', '.join(read)})" if read else "")]
    if report.drains or not unreadable:
        out.append(render(report.drains))
    elif read:
        out.append("no drains in the clusters read: no node carries drain-orchestrator.io/ annotations")
    returns = [(s, s.pending_return) for s in report.drains if s.pending_return is not None]
    if returns:
        out.append("pending returns to service (cordoned for an interruption that may not come):")
        out.append(
            table(
                ("CLUSTER", "NODE", "KIND", "EXECUTION", "CORDONED", "RETURNS", "TERMS"),
                [(s.cluster, s.node, r.kind, r.run, r.cordoned_at, r.returns_at or "-", r.terms) for s, r in returns],
            )
        )
    if report.retained:
        out.append(f"retained instances ({RETAINED_STATE}: inspect, then terminate):")
        out.append(
            table(
                ("CLUSTER", "ASG", "INSTANCE", "ZONE", "HEALTH", "NODE"),
                [
                    (
                        r.cluster,
                        r.asg_name,
                        r.instance_id,
                        r.availability_zone or "-",
                        r.health_status or "-",
                        r.node or "-",
                    )
                    for r in report.retained
                ],
            )
        )
    if report.left_surges:
        out.append("surges left behind (no drain will take them back: drain-orchestrator surge restore):")
        out.append(
            table(
                ("CLUSTER", "DEPLOYMENT", "NODE", "SURGE", "WHY"),
                [(s.cluster, s.deployment, s.node, f"+{s.count} ({s.via})", s.why) for s in report.left_surges],
            )
        )
    out += [f"warning: {w}" for w in report.lifecycle_warnings]
    out += [
        f"warning: cluster {c.cluster}: surges left behind unknown: {c.surges_error}"
        for c in report.clusters
        if c.surges_error
    ]
    out += [
        f"warning: cluster {c.cluster}: retained instances unknown: {c.retained_error}"
        for c in report.clusters
        if c.retained_error
    ]
    out += [f"error: cluster {c.cluster} could not be read, its drains are unknown: {c.error}" for c in unreadable]
    return "\n".join(out)


def render(rows: list[NodeStatus]) -> str:
    if not rows:
        return "no drains: no node carries drain-orchestrator.io/ annotations"
    lines = []
    for s in rows:
        left = "-" if s.seconds_left is None else (f"{s.seconds_left}s" if s.seconds_left > 0 else "passed")
        holds = "; ".join(s.holds + [f"error: {e}" for e in s.errors]) or "-"
        lines.append((s.cluster, s.node, s.phase, s.kind or "-", s.deadline or "-", left, holds))
    return table(("CLUSTER", "NODE", "PHASE", "KIND", "DEADLINE", "LEFT", "HOLDS"), lines)
