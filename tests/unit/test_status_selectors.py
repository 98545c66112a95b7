"""Which pods a PodDisruptionBudget allowing no disruption holds (status command; pure, no I/O)."""

from __future__ import annotations

from drain_orchestrator.cli.status import blocked, selects


def test_label_selectors() -> None:
    labels = {"app": "db", "tier": "data"}
    assert selects({}, labels)  # a PDB's empty selector selects every pod of its namespace
    assert not selects(None, labels)
    assert selects({"matchLabels": {"app": "db"}}, labels)
    assert not selects({"matchLabels": {"app": "web"}}, labels)
    assert selects({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["data"]}]}, labels)
    assert not selects({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["data"]}]}, labels)
    assert selects({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}, labels)
    assert not selects({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}, labels)


def test_only_budgets_without_disruptions_in_the_pods_namespace_block() -> None:
    pod = {"metadata": {"name": "db-0", "namespace": "a", "labels": {"app": "db"}}}
    pdbs = [
        {"metadata": {"name": "db", "namespace": "a"}, "spec": {"selector": {}}, "status": {"disruptionsAllowed": 0}},
        {"metadata": {"name": "ok", "namespace": "a"}, "spec": {"selector": {}}, "status": {"disruptionsAllowed": 1}},
        {"metadata": {"name": "db", "namespace": "b"}, "spec": {"selector": {}}, "status": {"disruptionsAllowed": 0}},
    ]
    assert blocked([pod], pdbs) == ["a/db-0 (PDB a/db)"]
