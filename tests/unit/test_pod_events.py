"""A node's pods caught up from a watch of them (kube/pods.py with_events, pure): what a LIST now would show."""

from __future__ import annotations

from typing import Any

from drain_orchestrator.kube.pods import NodePods, with_events


def pod(name: str, uid: str, rv: str, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": rv}, "status": status}


def names(listing: NodePods) -> list[tuple[str, str]]:
    return [(p["metadata"]["name"], p["metadata"]["uid"]) for p in listing.items]


def test_no_event_leaves_the_list_as_it_was() -> None:
    listing = NodePods([pod("a", "u1", "10")], "12")
    assert with_events(listing, []) == listing


def test_a_pod_bound_since_is_added_a_changed_one_replaced_a_deleted_one_removed() -> None:
    listing = NodePods([pod("a", "u1", "10"), pod("b", "u2", "11")], "12")
    events = [
        {"type": "MODIFIED", "object": pod("a", "u1", "13", phase="Running", going=True)},
        {"type": "DELETED", "object": pod("b", "u2", "14")},
        {"type": "ADDED", "object": pod("late", "u3", "15")},
    ]
    caught_up = with_events(listing, events)
    assert names(caught_up) == [("a", "u1"), ("late", "u3")]
    assert caught_up.items[0]["status"] == {"phase": "Running", "going": True}
    assert caught_up.resource_version == "15"  # a watch of the caught-up list starts after the last event


def test_a_pod_recreated_under_its_name_is_another_pod() -> None:
    listing = NodePods([pod("web-0", "old", "10")], "12")
    events = [
        {"type": "DELETED", "object": pod("web-0", "old", "13")},
        {"type": "ADDED", "object": pod("web-0", "new", "14")},
    ]
    assert names(with_events(listing, events)) == [("web-0", "new")]


def test_the_deletion_of_a_pod_the_list_did_not_show_changes_nothing_but_the_version() -> None:
    listing = NodePods([pod("a", "u1", "10")], "12")
    caught_up = with_events(listing, [{"type": "DELETED", "object": pod("gone", "u9", "13")}])
    assert names(caught_up) == [("a", "u1")] and caught_up.resource_version == "13"
