"""Kubernetes API failures as typed errors (failures.ApiError): status codes and transport errors, never text."""

from __future__ import annotations

from drain_orchestrator.failures import ApiError, FailureKind, kind_for_status
from drain_orchestrator.node_identity import NodeIdentity

SERVICE = "kubernetes"


class KubeError(ApiError):
    """The apiserver answered with an error status, or could not be reached (status None)."""

    def __init__(self, message: str, status: int | None) -> None:
        kind = FailureKind.UNAVAILABLE if status is None else kind_for_status(status)
        super().__init__(kind, SERVICE, message, status)


class NodeGone(KubeError):
    """The node no longer exists (the instance went away first, or someone deleted the Node)."""

    def __init__(self, node: str) -> None:
        super().__init__(f"node/{node} not found", 404)
        self.node = node


class NodeReplaced(NodeGone):
    """The node a drain located is gone and a Node of another identity (node_identity.py) carries its name: for that
    drain the node is gone, and the replacement is never touched."""

    def __init__(self, node: str, replacement: NodeIdentity) -> None:
        KubeError.__init__(self, f"node/{node} was replaced by another Node ({replacement.describe()})", 404)
        self.node = node
        self.replacement = replacement


def replacement_of(exc: NodeGone) -> NodeIdentity | None:
    """The Node that took the name of a node gone, when one did."""
    return exc.replacement if isinstance(exc, NodeReplaced) else None


def unreachable(exc: BaseException) -> KubeError:
    """A transport failure (refused, reset, timed out, TLS) as an UNAVAILABLE error."""
    return KubeError(f"apiserver unreachable: {type(exc).__name__}: {str(exc)[:200]}", None)
