"""Kubernetes API failures as typed errors (failures.ApiError): status codes and transport errors, never text."""

from __future__ import annotations

from drain_orchestrator.failures import ApiError, FailureKind, kind_for_status

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


def unreachable(exc: BaseException) -> KubeError:
    """A transport failure (refused, reset, timed out, TLS) as an UNAVAILABLE error."""
    return KubeError(f"apiserver unreachable: {type(exc).__name__}: {str(exc)[:200]}", None)
