"""Surges left behind (drain/surge_expiry.py) and what the surge records for finding them (drain/surge.py): each
holder's expiry, the workload's label while a surge is in place. Pure."""

from __future__ import annotations

import json
from typing import Any

from drain_orchestrator.drain.surge import (
    HELD_LABEL,
    HOLDERS,
    SURGE_ANNOTATION,
    DeploymentFacts,
    Holder,
    HpaFacts,
    decide,
    dump_holders,
    parse_holders,
    restore,
)
from drain_orchestrator.drain.surge_expiry import (
    EXPIRY_MARGIN_SECONDS,
    LeftBehind,
    expiry_of,
    left_behind,
    sweeps_at_verdict,
)
from drain_orchestrator.timefmt import iso_utc

NOW = 1_800_000_000.0


def deployment(holders: dict[str, Holder] | None = None, replicas: int = 1) -> DeploymentFacts:
    annotations = {SURGE_ANNOTATION: "true"}
    if holders:
        annotations[HOLDERS] = dump_holders(holders) or ""
    return DeploymentFacts.from_dict(
        {
            "metadata": {"namespace": "ns", "name": "web", "resourceVersion": "1", "annotations": annotations},
            "spec": {"replicas": replicas},
            "status": {"replicas": replicas, "updatedReplicas": replicas},
        }
    )


def test_the_expiry_is_the_deadline_plus_the_margin_and_none_without_a_deadline() -> None:
    assert expiry_of(NOW) == iso_utc(NOW + EXPIRY_MARGIN_SECONDS)
    assert EXPIRY_MARGIN_SECONDS > 600  # past the verdict's 10 minutes of restore retries
    assert expiry_of(None) is None


def test_a_surge_records_its_expiry_and_labels_the_workload() -> None:
    d = decide("annotated", deployment(), None, "node-a", "run-1", 1, expires="2027-01-15T08:00:00Z")
    assert d.patch is not None
    meta = d.patch.body["metadata"]
    assert json.loads(meta["annotations"][HOLDERS]) == {
        "node-a": {"count": 1, "run": "run-1", "expires": "2027-01-15T08:00:00Z"}
    }
    assert meta["labels"] == {HELD_LABEL: "true"}


def test_an_hpa_surge_labels_the_hpa() -> None:
    h = HpaFacts.from_dict({"metadata": {"name": "web", "resourceVersion": "2"}, "spec": {"minReplicas": 1}})
    d = decide("annotated", deployment(), h, "node-a", "run-1", 1, expires="2027-01-15T08:00:00Z")
    assert d.patch is not None and d.patch.via == "hpa"
    assert d.patch.body["metadata"]["labels"] == {HELD_LABEL: "true"}


def test_the_label_goes_with_the_last_holder_only() -> None:
    two = deployment({"node-a": Holder(1, "r1", "x"), "node-b": Holder(1, "r2", "y")}, replicas=3)
    first = restore(two, None, "node-a")
    assert first is not None and "labels" not in first.body["metadata"]  # node-b's surge is still in place
    last = restore(deployment({"node-b": Holder(1, "r2", "y")}, replicas=2), None, "node-b")
    assert last is not None and last.body["metadata"]["labels"] == {HELD_LABEL: None}


def test_holders_keep_their_expiry_and_older_entries_have_none() -> None:
    raw = json.dumps({"a": {"count": 1, "run": "r", "expires": "2027-01-15T08:00:00Z"}, "b": {"count": 2, "run": "s"}})
    holders = parse_holders(raw)
    assert holders == {"a": Holder(1, "r", "2027-01-15T08:00:00Z"), "b": Holder(2, "s", None)}
    assert parse_holders(dump_holders(holders)) == holders
    assert "expires" not in json.loads(dump_holders({"b": Holder(2, "s")}) or "{}")["b"]


def test_left_behind_when_expired_or_when_the_node_is_gone() -> None:
    holders = {
        "expired": Holder(1, "r", iso_utc(NOW - 1)),
        "live": Holder(1, "r", iso_utc(NOW + 60)),
        "gone": Holder(1, "r", iso_utc(NOW + 60)),
        "old-version": Holder(1, "r", None),  # no expiry: only a gone node leaves it behind
        "old-version-gone": Holder(1, "r", None),
        "unreadable": Holder(1, "r", "soon"),
    }
    nodes = {"expired", "live", "old-version", "unreadable"}
    assert left_behind(holders, NOW, nodes) == [
        LeftBehind("expired", f"expired at {iso_utc(NOW - 1)}"),
        LeftBehind("gone", "node gone"),
        LeftBehind("old-version-gone", "node gone"),
    ]


def test_surge_restore_refuses_an_empty_node_name_before_connecting(capsys: Any) -> None:
    from drain_orchestrator.cli import main

    assert main(["surge", "restore", "--node", " ", "--kubeconfig", "/nonexistent"]) == 2
    assert capsys.readouterr().err.strip() == "error: --node: expected a node name"


def test_a_drain_alone_always_sweeps_and_about_one_drain_of_a_storm_does() -> None:
    assert sweeps_at_verdict("ip-10-0-0-1.ec2.internal", None)  # not counted: as before
    assert sweeps_at_verdict("ip-10-0-0-1.ec2.internal", 1)  # alone
    for n in (2, 20, 50):
        nodes = [f"ip-10-0-{i // 250}-{i % 250}.ec2.internal" for i in range(n)]
        sweeping = [node for node in nodes if sweeps_at_verdict(node, n)]
        assert sweeping == [node for node in nodes if sweeps_at_verdict(node, n)]  # the same answer on a replay
        assert len(sweeping) < n  # not every drain of the storm
    storms = [[f"node-{s}-{i}" for i in range(20)] for s in range(200)]
    sweeps = [sum(sweeps_at_verdict(node, 20) for node in storm) for storm in storms]
    assert 0.7 <= sum(sweeps) / len(storms) <= 1.3  # about one a storm


def test_no_verdict_sweeps_when_a_schedule_does() -> None:
    assert not sweeps_at_verdict("ip-10-0-0-1.ec2.internal", None, scheduled=True)
    assert not sweeps_at_verdict("ip-10-0-0-1.ec2.internal", 1, scheduled=True)
    assert not any(sweeps_at_verdict(f"node-{i}", 20, scheduled=True) for i in range(20))


def test_a_surge_is_the_node_objects_it_was_made_for_not_its_names() -> None:
    """Keyed by identity (node_identity.py): the entry records the Node's UID; a Node registered again under the
    name neither restores it nor keeps it alive, and the sweep takes it back as its node replaced."""
    surged = decide("annotated", deployment(), None, "n1", "run-1", 1, (), expiry_of(NOW), uid="uid-old")
    assert surged.patch is not None
    entry = parse_holders(surged.patch.body["metadata"]["annotations"][HOLDERS])["n1"]
    assert entry.uid == "uid-old"
    dep = deployment({"n1": entry}, replicas=2)
    assert restore(dep, None, "n1", uid="uid-new") is None  # the replacement's drain: not its surge
    assert restore(dep, None, "n1", uid="uid-old") is not None
    assert restore(dep, None, "n1") is not None  # a restorer that knows no UID (the sweep, the command line)
    assert left_behind({"n1": entry}, NOW, {"n1"}, {"n1": "uid-new"}) == [LeftBehind("n1", "node replaced")]
    assert left_behind({"n1": entry}, NOW, {"n1"}, {"n1": "uid-old"}) == []
    legacy = Holder(1, "run-0", expiry_of(NOW))  # written before UIDs were recorded: judged by name, as before
    assert left_behind({"n1": legacy}, NOW, {"n1"}, {"n1": "uid-new"}) == []
