"""How `status` prints what it read: never "no drains" for a cluster it could not read; retained instances after
the drains; the version first."""

from __future__ import annotations

from drain_orchestrator.cli.status_report import (
    ClusterRead,
    LeftSurge,
    NodeStatus,
    Retained,
    StatusReport,
    render_report,
)


def _report(clusters: list[ClusterRead], drains: list[NodeStatus], retained: list[Retained]) -> StatusReport:
    return StatusReport(version="9.8.7", clusters=clusters, drains=drains, retained=retained)


def _drain(cluster: str = "blue") -> NodeStatus:
    return NodeStatus(cluster, "n1", "i-1", "cordoned", "rebalance", None, None)


def test_all_read_and_nothing_draining_says_no_drains() -> None:
    out = render_report(_report([ClusterRead("blue", True)], [], [])).splitlines()
    assert out == [
        "drain-orchestrator 9.8.7: read 1 of 1 clusters (blue)",
        "no drains: no node carries drain-orchestrator.io/ annotations",
    ]


def test_an_unreadable_cluster_is_never_no_drains() -> None:
    down = ClusterRead("green", False, error="apiserver unreachable: refused")
    out = render_report(_report([ClusterRead("blue", True), down], [], [])).splitlines()
    assert out == [
        "drain-orchestrator 9.8.7: read 1 of 2 clusters (blue)",
        "no drains in the clusters read: no node carries drain-orchestrator.io/ annotations",
        "error: cluster green could not be read, its drains are unknown: apiserver unreachable: refused",
    ]
    alone = render_report(_report([down], [], [])).splitlines()
    assert alone == ["drain-orchestrator 9.8.7: read 0 of 1 clusters", alone[-1]]
    assert "no drains" not in "\n".join(alone)


def test_retained_instances_and_lookup_warnings_follow_the_drains() -> None:
    read = ClusterRead("blue", True, retained_error=None)
    other = ClusterRead("red", True, retained_error="AccessDenied")
    kept = Retained("blue", "blue-ng", "i-9", "us-east-1a", "Healthy", "n1")
    out = render_report(_report([read, other], [_drain()], [kept])).splitlines()
    assert out[1].split()[:3] == ["CLUSTER", "NODE", "PHASE"] and out[2].split()[:3] == ["blue", "n1", "cordoned"]
    assert out[3] == "retained instances (Terminating:Retained: inspect, then terminate):"
    assert out[4].split() == ["CLUSTER", "ASG", "INSTANCE", "ZONE", "HEALTH", "NODE"]
    assert out[5].split() == ["blue", "blue-ng", "i-9", "us-east-1a", "Healthy", "n1"]
    assert out[6] == "warning: cluster red: retained instances unknown: AccessDenied"


def test_json_carries_every_cluster_read_state() -> None:
    doc = _report([ClusterRead("green", False, error="boom")], [], []).to_json()
    assert doc == {
        "version": "9.8.7",
        "clusters": [
            {
                "cluster": "green",
                "reachable": False,
                "error": "boom",
                "retained_error": None,
                "surges_error": None,
                "grants_error": None,
            }
        ],
        "drains": [],
        "retained_instances": [],
        "surges_left_behind": [],
        "lifecycle_warnings": [],
    }


def test_surges_left_behind_follow_the_drains_with_what_takes_them_back() -> None:
    report = _report([ClusterRead("blue", True), ClusterRead("red", True, surges_error="Forbidden")], [_drain()], [])
    report.left_surges = [LeftSurge("blue", "shop/web", "n2", 1, "hpa", "node gone")]
    out = render_report(report).splitlines()
    assert out[3] == "surges left behind (no drain will take them back: drain-orchestrator surge restore):"
    assert out[4].split() == ["CLUSTER", "DEPLOYMENT", "NODE", "SURGE", "WHY"]
    assert out[5].split() == ["blue", "shop/web", "n2", "+1", "(hpa)", "node", "gone"]
    assert out[6] == "warning: cluster red: surges left behind unknown: Forbidden"
