"""The one writer of a Node's marks: cordon, taints, labels and the ``drain-orchestrator.io/`` annotations.

Every write is a PATCH. A write that depends on what the node carries (a claim set only if absent, a record, the
taints list, which has no merge key) reads the node, computes its patch and sends it on a condition: the
resourceVersion it read (:func:`update_node`), or for the annotations the annotations it read
(:func:`update_annotations`). Of concurrent writers exactly one wins each change, the others read again and decide
on what is there now.
A node that is gone raises ``NodeGone``; any other failure the typed error of its response.

``pin`` (node_identity.py): the Node object a drain acts on. With it, every read checks the object it got (another
object under the name raises ``NodeReplaced``, a ``NodeGone``) and every write is conditioned on the UID (a strategic
merge carries ``metadata.uid``, which the apiserver refuses to change; a JSON Patch ``test``s it): a Node replaced
between the read and the write refuses the write, and the read that follows names the replacement.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from drain_orchestrator.kube.errors import KubeError, NodeGone, NodeReplaced
from drain_orchestrator.kube.recent import (
    ANNOTATIONS_BASE_SECONDS,
    FRESH_SECONDS,
    NODES,
    WRITE_BASE_SECONDS,
    remember_node,
)
from drain_orchestrator.kube.rest import JSON_PATCH, STRATEGIC_MERGE, Kube, Response
from drain_orchestrator.node_identity import NodeIdentity

ANNOTATION_PREFIX = "drain-orchestrator.io/"
# the name the apiserver records in a node's managedFields for this product's writes: a return to service tells by it
# whether another tool set spec.unschedulable after this product's cordon (returns.cordoned_by_another)
FIELD_MANAGER = "drain-orchestrator"
CONFLICT_RETRIES = 5

# An annotation change: key → new value, or None to remove the key.
type AnnotationChange = Mapping[str, str | None]


class Write(Enum):
    """What an update did."""

    UNCHANGED = "unchanged"  # the node already was as wanted: nothing sent
    WRITTEN = "written"  # the PATCH was accepted (dry_run of update_node: validated by the apiserver, not stored)
    DRY_RUN = "dry-run"  # update_annotations with dry_run: a change was due and not sent
    CONTENDED = "contended"  # the node changed under every attempt (409 each time): nothing written


@dataclass(frozen=True)
class NodeUpdate:
    write: Write
    node: dict[str, Any]  # the Node as last read (empty only if nothing was read)

    @property
    def annotations(self) -> Mapping[str, str]:
        return (self.node.get("metadata") or {}).get("annotations") or {}


def node_path(name: str) -> str:
    return f"/api/v1/nodes/{name}"


def get_node(kube: Kube, node: str, pin: NodeIdentity | None = None) -> dict[str, Any]:
    """The Node's JSON; NodeGone if it does not exist, NodeReplaced if it is not the ``pin``ned object."""
    current = kube.request("GET", node_path(node))
    if current.status == 404:
        NODES.drop(kube, node)
        raise NodeGone(node)
    if not current.ok:
        raise current.error(f"get node/{node}")
    remember_node(kube, current.body)
    check_pin(node, current.body, pin)
    return current.body


def check_pin(node: str, body: dict[str, Any], pin: NodeIdentity | None) -> None:
    """NodeReplaced when ``body``, the apiserver's answer for ``node``, is not the ``pin``ned object."""
    if pin is not None and not pin.matches(body):
        raise NodeReplaced(node, NodeIdentity.of(body))


def read_node_fresh(kube: Kube, node: str, pin: NodeIdentity | None = None) -> dict[str, Any]:
    """The Node as this client saw it within the last moment (kube/recent.py), else :func:`get_node`."""
    seen = NODES.get(kube, node)
    if seen is not None and (pin is None or pin.matches(seen)):
        return seen
    return get_node(kube, node, pin)


def list_node(kube: Kube, node: str, pin: NodeIdentity | None = None) -> tuple[dict[str, Any], str | None]:
    """The Node as a LIST of it answers (``metadata.name`` field selector: one key read) and the LIST's
    resourceVersion, where a watch of it may start: the collection's, current when answered, where the Node's own (a
    GET's) is that of its last change, which the server may no longer hold (410) for a node unchanged for longer than
    its history. NodeGone if it does not exist, NodeReplaced if it is not the ``pin``ned object."""
    resp = kube.request("GET", "/api/v1/nodes", query={"fieldSelector": f"metadata.name={node}"})
    if not resp.ok:
        raise resp.error(f"list node/{node}")
    items = resp.body.get("items") or []
    if not items:
        NODES.drop(kube, node)
        raise NodeGone(node)
    body: dict[str, Any] = items[0]
    remember_node(kube, body)
    check_pin(node, body, pin)
    rv = (resp.body.get("metadata") or {}).get("resourceVersion")
    return body, str(rv) if rv else None


def patch_node(
    kube: Kube, node: str, patch: dict[str, Any], *, dry_run: bool = False, pin: NodeIdentity | None = None
) -> bool:
    """One strategic-merge PATCH of the node (``dry_run``: validated by the apiserver, not stored). True when
    accepted, False when its resourceVersion precondition lost a race (409); NodeGone if the node is gone (or,
    ``pin``ned, replaced)."""
    query = {"fieldManager": FIELD_MANAGER, **({"dryRun": "All"} if dry_run else {})}
    body = _with_uid(patch, pin)
    resp = kube.request("PATCH", node_path(node), query=query, body=body, content_type=STRATEGIC_MERGE)
    return _accepted(kube, node, resp, lost=(409,), remember=not dry_run, pin=pin)


def _with_uid(patch: dict[str, Any], pin: NodeIdentity | None) -> dict[str, Any]:
    """The patch conditioned on the pinned object: ``metadata.uid`` is immutable, so a patch naming another UID than
    the Node's is refused (422) instead of applied to the object now under the name."""
    if pin is None or pin.uid is None:
        return patch
    return {**patch, "metadata": {**(patch.get("metadata") or {}), "uid": pin.uid}}


def update_node(
    kube: Kube,
    node: str,
    change: Callable[[dict[str, Any]], dict[str, Any] | None],
    *,
    dry_run: bool = False,
    attempts: int = CONFLICT_RETRIES,
    pin: NodeIdentity | None = None,
) -> NodeUpdate:
    """Read the node, let ``change`` compute the patch from it (None: nothing to do), send it; on a 409 read again.
    A patch that depends on what was read carries ``metadata.resourceVersion`` (``change`` sets it). The first
    attempt may start from this client's view of the last half minute (a read or a write's answer) instead of a
    GET; a patch computed from a view always carries the view's resourceVersion, so it is written only if the node
    is still exactly as seen (else 409, and the next attempt reads)."""

    def send(body: dict[str, Any], patch: dict[str, Any], from_view: bool) -> Refused | None:
        if from_view:
            meta = {**(patch.get("metadata") or {}), "resourceVersion": _version(body)}
            patch = {**patch, "metadata": meta}
        return None if patch_node(kube, node, patch, dry_run=dry_run, pin=pin) else Refused(None, None)

    seen = NODES.aged(kube, node, WRITE_BASE_SECONDS)
    return _conditional_update(kube, node, seen, change, send, attempts, pin)


def update_annotations(
    kube: Kube,
    node: str,
    change: Callable[[Mapping[str, str]], AnnotationChange | None],
    *,
    dry_run: bool = False,
    attempts: int = CONFLICT_RETRIES,
    pin: NodeIdentity | None = None,
) -> NodeUpdate:
    """Read the node's annotations, let ``change`` say what to set or remove (None or empty: nothing), write it on
    condition that the annotations are still as read; when they are not, read again and ask ``change`` again.
    ``dry_run``: nothing is sent after the read, the result says whether a change was due (Write.DRY_RUN).

    The condition is the annotations themselves (a JSON Patch ``test``), not the node's resourceVersion: a node
    changes under a drain all the time (its status as volumes detach, kubelet's and other controllers' writes), and
    each such change refused a write conditioned on the version, at the cost of a GET and a second PATCH. The first
    attempt may start from this client's view of the last minutes (ANNOTATIONS_BASE_SECONDS; a node without
    annotations, written under the version: of the last half minute, as :func:`update_node`'s)."""

    def plan(body: dict[str, Any]) -> AnnotationChange | None:
        return change(_annotations(body)) or None

    def send(body: dict[str, Any], changes: AnnotationChange, _from_view: bool) -> Refused | None:
        return _patch_annotations(kube, node, body, changes, pin)

    seen = NODES.aged(kube, node, ANNOTATIONS_BASE_SECONDS)
    if seen is not None and seen[0] > WRITE_BASE_SECONDS and not _annotations(seen[1]):
        seen = None
    return _conditional_update(kube, node, seen, plan, None if dry_run else send, attempts, pin)


@dataclass(frozen=True)
class Refused:
    """A conditional write turned away. For an annotation write, the annotations it was conditioned on and the error
    to raise if a read finds them unchanged (not a race lost: a patch the server rejects); for a write under the
    version, neither (a 409 says the version moved)."""

    annotations: Mapping[str, str] | None
    error: KubeError | None

    def again(self, body: dict[str, Any]) -> bool:
        """Refused with the node as it is in ``body``: sending the same write again would be refused again."""
        return self.annotations is not None and self.annotations == _annotations(body)


def _conditional_update[P](
    kube: Kube,
    node: str,
    seen: tuple[float, dict[str, Any]] | None,
    plan: Callable[[dict[str, Any]], P | None],
    send: Callable[[dict[str, Any], P, bool], Refused | None] | None,
    attempts: int,
    pin: NodeIdentity | None,
) -> NodeUpdate:
    """The read → plan → conditional write loop of both updates. The first attempt starts from ``seen`` (this
    client's view: its age and the Node) when there is one, else from a GET; a refused write reads again. "Nothing
    to do" is only concluded from a view of a moment ago or a read: an older view that needs no change is read
    again. ``send`` None: a change that is due is not sent (Write.DRY_RUN). A view of another object than the
    ``pin``ned one is no base: the GET decides."""
    body: dict[str, Any] = {}
    view, age = (seen[1], seen[0]) if seen is not None and (pin is None or pin.matches(seen[1])) else (None, 0.0)
    refused: Refused | None = None
    for _ in range(attempts + (view is not None)):  # a view gone stale does not use up an attempt
        from_view = view is not None
        body = view if view is not None else get_node(kube, node, pin)
        view = None
        if refused is not None and refused.again(body) and refused.error is not None:
            raise refused.error
        planned = plan(body)
        if planned is None or send is None:
            if from_view and age > FRESH_SECONDS:
                continue
            return NodeUpdate(Write.UNCHANGED if planned is None else Write.DRY_RUN, body)
        refused = send(body, planned, from_view)
        if refused is None:
            return NodeUpdate(Write.WRITTEN, body)
    return NodeUpdate(Write.CONTENDED, body)


def _patch_annotations(
    kube: Kube, node: str, body: dict[str, Any], changes: AnnotationChange, pin: NodeIdentity | None
) -> Refused | None:
    """Write ``changes`` if the annotations are still as in ``body``; None when written. A node without annotations
    has nothing to test: the write is conditioned on ``body``'s resourceVersion instead. Pinned, the write also
    tests the UID (a replaced node refuses it; the next read names the replacement)."""
    annotations = _annotations(body)
    if annotations:
        ops: list[dict[str, Any]] = [{"op": "test", "path": "/metadata/annotations", "value": dict(annotations)}]
        if pin is not None and pin.uid is not None:
            ops.insert(0, {"op": "test", "path": "/metadata/uid", "value": pin.uid})
        for key, value in changes.items():
            path = "/metadata/annotations/" + key.replace("~", "~0").replace("/", "~1")
            if value is not None:
                ops.append({"op": "add", "path": path, "value": value})  # add replaces a key already there
            elif key in annotations:
                ops.append({"op": "remove", "path": path})
        resp = kube.request("PATCH", node_path(node), body=ops, content_type=JSON_PATCH)
    else:
        meta = {"resourceVersion": _version(body), "annotations": dict(changes)}
        patch = _with_uid({"metadata": meta}, pin)
        resp = kube.request("PATCH", node_path(node), body=patch, content_type=STRATEGIC_MERGE)
    # a test failed (422), or the version moved (409): read again and see which
    if _accepted(kube, node, resp, lost=(409, 422), remember=True):
        return None
    if not annotations:  # written under the version: any change to the node refuses it, the next read decides
        return Refused(None, None)
    return Refused(annotations, resp.error(f"patch node/{node}"))


def _accepted(
    kube: Kube, node: str, resp: Response, *, lost: tuple[int, ...], remember: bool, pin: NodeIdentity | None = None
) -> bool:
    """A node write's answer: True when accepted (the Node as written is remembered: the next write needs no GET),
    False when its condition lost a race (a status in ``lost``); NodeGone if the node is gone, else its error. A
    pinned write refused as invalid (422: the UID it carries is not the Node's) reads the node: NodeReplaced when
    it is another object."""
    if resp.ok:
        if remember:
            remember_node(kube, resp.body)
        return True
    NODES.drop(kube, node)
    if resp.status in lost:
        return False
    if resp.status == 404:
        raise NodeGone(node)
    if resp.status == 422 and pin is not None and pin.uid is not None:
        get_node(kube, node, pin)  # NodeGone / NodeReplaced when it is not the pinned node any more
    raise resp.error(f"patch node/{node}")


def _annotations(body: dict[str, Any]) -> Mapping[str, str]:
    return (body.get("metadata") or {}).get("annotations") or {}


def _version(body: dict[str, Any]) -> Any:
    return (body.get("metadata") or {}).get("resourceVersion")


def gave_up(node: str, attempts: int = CONFLICT_RETRIES) -> KubeError:
    """The error of an update that stayed CONTENDED: a conflict, retried by the flow like any 409."""
    return KubeError(f"node/{node}: conflicting updates, gave up after {attempts} tries", 409)


def add_taint(
    kube: Kube, node: str, taint: dict[str, str], *, dry_run: bool = False, pin: NodeIdentity | None = None
) -> bool:
    """Add one taint, idempotently: True if it was added, False if the node already had it (same key and effect)."""

    def change(body: dict[str, Any]) -> dict[str, Any] | None:
        meta: dict[str, Any] = body.get("metadata") or {}
        taints = list((body.get("spec") or {}).get("taints") or [])
        if any(t.get("key") == taint["key"] and t.get("effect") == taint["effect"] for t in taints):
            return None
        # spec.taints has no merge key: the patch replaces the list; resourceVersion turns a race into a 409
        return {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "spec": {"taints": [*taints, taint]}}

    done = update_node(kube, node, change, dry_run=dry_run, pin=pin)
    if done.write is Write.CONTENDED:
        raise gave_up(node)
    return done.write is Write.WRITTEN
