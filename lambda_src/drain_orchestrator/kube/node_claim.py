"""The node's drain claim (drain/node_claim.py) as the annotation ``drain-orchestrator.io/drainer``, written with a
resourceVersion precondition so of concurrent writers exactly one wins each change; the others read again."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from drain_orchestrator.drain.node_claim import Look, NodeClaim, look, renew, settle
from drain_orchestrator.failures import ApiError, FailureKind
from drain_orchestrator.kube.node_marks import ANNOTATION_PREFIX, AnnotationChange, Write, update_annotations
from drain_orchestrator.kube.rest import Kube

ANN_DRAINER = ANNOTATION_PREFIX + "drainer"
CAS_RETRIES = 10


def _contended(node: str) -> ApiError:
    """The node kept changing under every attempt: a conflict, retried by the flow like any 409."""
    return ApiError(
        FailureKind.CONFLICT, "kubernetes", f"node/{node}: the drain claim changed under every attempt", 409
    )


def _update[T](kube: Kube, node: str, change: Callable[[NodeClaim | None], tuple[NodeClaim | None, T]]) -> T:
    """Read the claim, let ``change`` decide what to store (None: nothing), write it if it changed; the answer
    ``change`` gave on the claim as last read."""
    answers: list[T] = []

    def store(annotations: Mapping[str, str]) -> AnnotationChange | None:
        current = NodeClaim.from_json(annotations.get(ANN_DRAINER))
        new, answer = change(current)
        answers.append(answer)
        return None if new is None or new == current else {ANN_DRAINER: new.to_json()}

    if update_annotations(kube, node, store, attempts=CAS_RETRIES).write is Write.CONTENDED:
        raise _contended(node)
    return answers[-1]


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
