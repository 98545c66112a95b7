"""kube/node_marks.py on the real apiserver, as the product's RBAC identity: a read-compute-write on condition
(the resourceVersion, or for annotations the annotations as read) loses no concurrent change, gives up after its
attempts, a dry run sends nothing, a gone node is NodeGone; an annotation write is not refused by a change elsewhere
on the node; a write right after a read or a write starts from that answer (kube/recent.py) without losing a change
made in between."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from drain_orchestrator.kube import node_marks
from drain_orchestrator.kube.cordon import ANN_STARTED_AT, cordon
from drain_orchestrator.kube.errors import KubeError, NodeGone
from drain_orchestrator.kube.node_lookup import read_node
from drain_orchestrator.kube.node_marks import (
    AnnotationChange,
    Write,
    patch_node,
    read_node_fresh,
    update_annotations,
)
from drain_orchestrator.kube.recent import FRESH_SECONDS
from tests.integration.drain_support import drainer

pytestmark = pytest.mark.integration

KEY = "drain-orchestrator.io/test-counter"


def _increment(annotations: Mapping[str, str]) -> AnnotationChange:
    return {KEY: str(int(annotations.get(KEY, "0")) + 1)}


def test_concurrent_updates_each_land_once(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    writers = 4
    results: list[Any] = []
    gate = threading.Barrier(writers)

    def run() -> None:
        with drainer(testbed) as kube:
            gate.wait()
            results.append(update_annotations(kube, a, _increment))

    threads = [threading.Thread(target=run) for _ in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert [r.write for r in results] == [Write.WRITTEN] * writers
    # without the resourceVersion precondition two writers reading the same count would both store count + 1
    assert k8s.core.read_node(a).metadata.annotations[KEY] == str(writers)


def test_a_node_changing_under_every_attempt_is_contended_and_nothing_is_written(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    seen = 0

    def change(annotations: Mapping[str, str]) -> AnnotationChange:
        nonlocal seen
        seen += 1  # another writer changes the node's annotations between our read and our write
        k8s.core.patch_node(a, {"metadata": {"annotations": {"other-writer": str(seen)}}})
        return _increment(annotations)

    with drainer(testbed) as kube:
        calls0 = kube.calls
        done = update_annotations(kube, a, change, attempts=3)
        assert kube.calls - calls0 == 6  # a GET and a refused PATCH per attempt
    assert done.write is Write.CONTENDED and seen == 3
    assert KEY not in (k8s.core.read_node(a).metadata.annotations or {})


def test_dry_run_reads_and_sends_nothing_and_no_change_is_unchanged(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    with drainer(testbed) as kube:
        calls0 = kube.calls
        assert update_annotations(kube, a, _increment, dry_run=True).write is Write.DRY_RUN
        assert update_annotations(kube, a, lambda _: None).write is Write.UNCHANGED
        assert kube.calls - calls0 == 1  # one GET (the second decides on the first's read of a moment ago), no PATCH
    assert KEY not in (k8s.core.read_node(a).metadata.annotations or {})


def test_a_gone_node_is_node_gone(testbed: Any) -> None:
    with drainer(testbed) as kube:
        with pytest.raises(NodeGone):
            update_annotations(kube, "no-such-node", _increment)
        with pytest.raises(NodeGone):
            patch_node(kube, "no-such-node", {"metadata": {"annotations": {KEY: "1"}}})


def test_a_write_right_after_a_read_needs_no_get_of_its_own(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    with drainer(testbed) as kube:
        assert read_node(kube, a) is not None  # the lookup of the instance's node
        calls0 = kube.calls
        done = cordon(kube, a, reason="test", now=time.time())
        assert done.changed
        assert kube.calls - calls0 == 1  # the PATCH, on the lookup's view: no GET
        calls0 = kube.calls
        written = update_annotations(kube, a, _increment)
        assert written.write is Write.WRITTEN
        assert kube.calls - calls0 == 1  # on the cordon's answer
    node = k8s.core.read_node(a)
    assert node.spec.unschedulable and node.metadata.annotations[KEY] == "1"


def test_a_view_gone_stale_loses_nothing_another_writer_set(testbed: Any, k8s: Any) -> None:
    """The lookup's view says schedulable; another drain cordons and records an earlier start before this cordon:
    the cordon (a patch that, after a GET, would need no resourceVersion) goes under the view's version, is refused
    and reads again, so the first start stays and is reported."""
    (a,) = k8s.add_nodes(1)
    earlier = "2026-01-01T00:00:00Z"
    with drainer(testbed) as kube:
        assert read_node(kube, a) is not None
        k8s.core.patch_node(
            a, {"spec": {"unschedulable": True}, "metadata": {"annotations": {ANN_STARTED_AT: earlier}}}
        )
        calls0 = kube.calls
        done = cordon(kube, a, reason="test", now=time.time())
        assert kube.calls - calls0 >= 2  # the refused PATCH, then a GET (and the reason's PATCH)
    assert k8s.core.read_node(a).metadata.annotations[ANN_STARTED_AT] == earlier
    assert done.cordoned_at == datetime.strptime(earlier, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def test_a_view_of_seconds_ago_is_the_base_of_a_write_not_of_a_read_or_of_nothing_to_do(testbed: Any, k8s: Any) -> None:
    """Within WRITE_BASE_SECONDS a view is the base of a write under its resourceVersion (one PATCH, or a refused
    one, a GET and a PATCH if the node changed meanwhile); a read, or a change found unnecessary on it, goes to the
    apiserver once the view is older than FRESH_SECONDS."""
    a, b, c = k8s.add_nodes(3)
    with drainer(testbed) as kube:
        views = {n: read_node(kube, n) for n in (a, b, c)}
        assert all(views.values())
        time.sleep(FRESH_SECONDS + 0.2)  # the views' age is what is tested

        calls0 = kube.calls
        assert read_node_fresh(kube, b)["metadata"]["name"] == b
        assert kube.calls - calls0 == 1  # a read: the GET

        calls0 = kube.calls
        assert update_annotations(kube, c, lambda _: None).write is Write.UNCHANGED
        assert kube.calls - calls0 == 1  # nothing to do, concluded from a GET, not from the older view

        calls0 = kube.calls
        assert update_annotations(kube, a, _increment).write is Write.WRITTEN
        assert kube.calls - calls0 == 1  # the PATCH on the view (kwok's heartbeat changing the node meanwhile or not)
    assert k8s.core.read_node(a).metadata.annotations[KEY] == "1"


def test_an_annotation_write_is_not_refused_by_a_change_elsewhere_on_the_node(testbed: Any, k8s: Any) -> None:
    """The node's labels and status change between the read and the write (kubelet, volumes detaching, another
    controller): the write conditioned on the annotations goes through in one PATCH and leaves those changes."""
    (a,) = k8s.add_nodes(1)
    with drainer(testbed) as kube:
        assert read_node(kube, a) is not None
        k8s.core.patch_node(a, {"metadata": {"labels": {"other-writer": "1"}}})
        calls0 = kube.calls
        assert update_annotations(kube, a, _increment).write is Write.WRITTEN
        assert kube.calls - calls0 == 1  # under the resourceVersion: refused, read, written again (3)
    node = k8s.core.read_node(a)
    assert node.metadata.annotations[KEY] == "1" and node.metadata.labels["other-writer"] == "1"


def test_a_node_without_annotations_is_written_under_its_resource_version(testbed: Any, k8s: Any) -> None:
    """No annotations to test: the first write is conditioned on the version, and a change in between is kept."""
    (a,) = k8s.add_nodes(1)
    k8s.core.patch_node(a, {"metadata": {"annotations": {"kwok.x-k8s.io/node": None}}})
    assert not k8s.core.read_node(a).metadata.annotations

    def change(annotations: Mapping[str, str]) -> AnnotationChange:
        if not annotations:  # the first read: someone else writes meanwhile
            k8s.core.patch_node(a, {"metadata": {"annotations": {"other-writer": "1"}}})
        return _increment(annotations)

    with drainer(testbed) as kube:
        assert update_annotations(kube, a, change).write is Write.WRITTEN
    assert k8s.core.read_node(a).metadata.annotations == {"other-writer": "1", KEY: "1"}


def test_a_node_without_annotations_whose_version_moved_is_read_and_written_again(testbed: Any, k8s: Any) -> None:
    """Written under the version, a node without annotations is refused by any change (here a label): the refusal
    is a race lost, read and written again, not an error because the annotations read again are still none."""
    (a,) = k8s.add_nodes(1)
    k8s.core.patch_node(a, {"metadata": {"annotations": {"kwok.x-k8s.io/node": None}}})
    moved: list[bool] = []

    def change(annotations: Mapping[str, str]) -> AnnotationChange:
        if not moved:
            k8s.core.patch_node(a, {"metadata": {"labels": {"other-writer": "1"}}})
            moved.append(True)
        return _increment(annotations)

    with drainer(testbed) as kube:
        calls0 = kube.calls
        assert update_annotations(kube, a, change).write is Write.WRITTEN
        assert kube.calls - calls0 == 4  # GET, PATCH refused (409), GET, PATCH
    node = k8s.core.read_node(a)
    assert node.metadata.annotations == {KEY: "1"} and node.metadata.labels["other-writer"] == "1"


def test_a_write_the_server_rejects_is_an_error_not_a_race(testbed: Any, k8s: Any) -> None:
    """A 422 with the annotations unchanged is the patch's own fault (here an invalid key): raised after one more
    read, not retried as a lost race until the attempts run out."""
    (a,) = k8s.add_nodes(1)
    with drainer(testbed) as kube:
        calls0 = kube.calls
        with pytest.raises(KubeError) as err:
            update_annotations(kube, a, lambda _: {"not a valid key!": "x"})
        assert err.value.status == 422 and kube.calls - calls0 == 3  # GET, refused PATCH, GET
    assert "not a valid key!" not in (k8s.core.read_node(a).metadata.annotations or {})


def test_an_annotation_write_starts_from_a_view_of_minutes_ago_and_loses_nothing_changed_since(
    testbed: Any, k8s: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A view older than a version-conditioned write may use (WRITE_BASE_SECONDS, shortened here) is still the base
    of an annotation write: one PATCH when the annotations stayed; when another writer changed them, the refused
    PATCH reads again and its change is kept."""
    monkeypatch.setattr(node_marks, "WRITE_BASE_SECONDS", 0.5)
    a, b = k8s.add_nodes(2)
    with drainer(testbed) as kube:
        assert read_node(kube, a) is not None and read_node(kube, b) is not None
        k8s.core.patch_node(b, {"metadata": {"annotations": {"other-writer": "1"}}})
        time.sleep(FRESH_SECONDS + 0.2)
        calls0 = kube.calls
        assert update_annotations(kube, a, _increment).write is Write.WRITTEN
        assert kube.calls - calls0 == 1  # the PATCH on the view
        calls0 = kube.calls
        assert update_annotations(kube, b, _increment).write is Write.WRITTEN
        assert kube.calls - calls0 == 3  # refused on the view, read, written
    assert k8s.core.read_node(a).metadata.annotations[KEY] == "1"
    assert k8s.core.read_node(b).metadata.annotations == {"kwok.x-k8s.io/node": "fake", "other-writer": "1", KEY: "1"}
