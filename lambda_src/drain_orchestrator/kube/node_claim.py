"""The node's drain claim (drain_claim.py) as the annotation ``drain-orchestrator.io/drainer``, written with a
resourceVersion precondition so of concurrent writers exactly one wins each change; the others read again."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from drain_orchestrator.drain_claim import Look, NodeClaim, look, renew, settle
from drain_orchestrator.failures import ApiError, FailureKind
from drain_orchestrator.kube.node_marks import ANNOTATION_PREFIX, AnnotationChange, Write, update_annotations
from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.node_identity import NodeIdentity

ANN_DRAINER = ANNOTATION_PREFIX + "drainer"
CAS_RETRIES = 10


def _contended(node: str) -> ApiError:
    """The node kept changing under every attempt: a conflict, retried by the flow like any 409."""
    return ApiError(
        FailureKind.CONFLICT, "kubernetes", f"node/{node}: the drain claim changed under every attempt", 409
    )


def _update[T](
    kube: Kube, node: str, change: Callable[[NodeClaim | None], tuple[NodeClaim | None, T]], pin: NodeIdentity | None
) -> T:
    """Read the claim, let ``change`` decide what to store (None: nothing), write it if it changed; the answer
    ``change`` gave on the claim as last read. ``pin``: the Node object the claim is on (node_identity.py): the claim
    is the object's, never another's under the same name (NodeReplaced)."""
    answers: list[T] = []

    def store(annotations: Mapping[str, str]) -> AnnotationChange | None:
        current = NodeClaim.from_json(annotations.get(ANN_DRAINER))
        new, answer = change(current)
        answers.append(answer)
        return None if new is None or new == current else {ANN_DRAINER: new.to_json()}

    if update_annotations(kube, node, store, attempts=CAS_RETRIES, pin=pin).write is Write.CONTENDED:
        raise _contended(node)
    return answers[-1]


def look_at(
    kube: Kube, node: str, run: str, deadline: float, now: float, ttl: float, pin: NodeIdentity | None = None
) -> Look:
    """Take the node's claim, wait on it (recording ``deadline``), or find the verdict this execution waited for."""

    def change(current: NodeClaim | None) -> tuple[NodeClaim | None, Look]:
        seen = look(current, run, deadline, now, ttl)
        return seen.claim, seen

    return _update(kube, node, change, pin)


def renew_claim(
    kube: Kube, node: str, run: str, now: float, ttl: float, pin: NodeIdentity | None = None
) -> NodeClaim | None:
    """Renew the holder's claim; the claim (with every waiter's deadline), or None when it was taken over."""

    def change(current: NodeClaim | None) -> tuple[NodeClaim | None, NodeClaim | None]:
        new = renew(current, run, now, ttl)
        return new, new

    return _update(kube, node, change, pin)


def settle_claim(
    kube: Kube, node: str, run: str, result: str, phase: str | None = None, pin: NodeIdentity | None = None
) -> Settled:
    """Write the holder's drain result for its waiters, and in the same write the report's ``phase`` claim
    (kube/node_records.py ``claim``: set only if absent) so the report needs no write of its own. The settled claim
    (None if not, or no longer, held) and whether ``run`` holds the phase claim."""
    key = None if phase is None else ANNOTATION_PREFIX + phase
    answers: list[Settled] = []

    def store(annotations: Mapping[str, str]) -> AnnotationChange | None:
        current = NodeClaim.from_json(annotations.get(ANN_DRAINER))
        new = settle(current, run, result)
        changes: dict[str, str | None] = {} if new is None else {ANN_DRAINER: new.to_json()}
        if key is not None and new is not None and key not in annotations:
            changes[key] = run
        answers.append(Settled(new, key is not None and (changes.get(key) or annotations.get(key)) == run))
        return changes or None

    if update_annotations(kube, node, store, attempts=CAS_RETRIES, pin=pin).write is Write.CONTENDED:
        raise _contended(node)
    return answers[-1]


@dataclass(frozen=True)
class Settled:
    claim: NodeClaim | None  # the settled claim; None: this execution did not hold it
    phase_held: bool = False  # this execution holds the report's phase claim (taken in the settle's write)
