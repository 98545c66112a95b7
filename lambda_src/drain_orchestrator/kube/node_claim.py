"""The node's drain claim (drain/node_claim.py) as the annotation ``drain-orchestrator.io/drainer``, written with a
resourceVersion precondition so of concurrent writers exactly one wins each change; the others read again."""

from __future__ import annotations

from collections.abc import Callable

from drain_orchestrator.drain.node_claim import Look, NodeClaim, look, renew, settle
from drain_orchestrator.failures import ApiError, FailureKind
from drain_orchestrator.kube.cordon import ANNOTATION_PREFIX
from drain_orchestrator.kube.errors import NodeGone
from drain_orchestrator.kube.rest import STRATEGIC_MERGE, Kube

ANN_DRAINER = ANNOTATION_PREFIX + "drainer"
CAS_RETRIES = 10


def _contended(node: str) -> ApiError:
    """The node kept changing under every attempt: a conflict, retried by the flow like any 409."""
    return ApiError(
        FailureKind.CONFLICT, "kubernetes", f"node/{node}: the drain claim changed under every attempt", 409
    )


def _update[T](kube: Kube, node: str, change: Callable[[NodeClaim | None], tuple[NodeClaim | None, T]]) -> T:
    """Read the claim, let ``change`` decide what to store (None: nothing), write it if it changed."""
    for _ in range(CAS_RETRIES):
        cur = kube.request("GET", f"/api/v1/nodes/{node}")
        if cur.status == 404:
            raise NodeGone(node)
        if not cur.ok:
            raise cur.error(f"get node/{node}")
        meta = cur.body.get("metadata") or {}
        current = NodeClaim.from_json((meta.get("annotations") or {}).get(ANN_DRAINER))
        new, answer = change(current)
        if new is None or new == current:
            return answer
        patch = {
            "metadata": {"resourceVersion": meta.get("resourceVersion"), "annotations": {ANN_DRAINER: new.to_json()}}
        }
        resp = kube.request("PATCH", f"/api/v1/nodes/{node}", body=patch, content_type=STRATEGIC_MERGE)
        if resp.ok:
            return answer
        if resp.status == 404:
            raise NodeGone(node)
        if resp.status != 409:  # 409: the node changed in between; decide again on what is there now
            raise resp.error(f"patch node/{node}")
    raise _contended(node)


def look_at(kube: Kube, node: str, run: str, deadline: float, now: float, ttl: float) -> Look:
    """Take the node's claim, wait on it (recording ``deadline``), or find the verdict this execution waited for."""

    def change(current: NodeClaim | None) -> tuple[NodeClaim | None, Look]:
        seen = look(current, run, deadline, now, ttl)
        return seen.claim, seen

    return _update(kube, node, change)


def renew_claim(kube: Kube, node: str, run: str, now: float, ttl: float) -> NodeClaim | None:
    """Renew the holder's claim; the claim (with every waiter's deadline), or None when it was taken over."""

    def change(current: NodeClaim | None) -> tuple[NodeClaim | None, NodeClaim | None]:
        new = renew(current, run, now, ttl)
        return new, new

    return _update(kube, node, change)


def settle_claim(kube: Kube, node: str, run: str, result: str) -> NodeClaim | None:
    """Write the holder's drain result for its waiters; the settled claim, or None if not (or no longer) held."""

    def change(current: NodeClaim | None) -> tuple[NodeClaim | None, NodeClaim | None]:
        new = settle(current, run, result)
        return new, new

    return _update(kube, node, change)
