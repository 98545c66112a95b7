"""Kubernetes API failures as typed errors (failures.ApiError): status codes and transport errors, never text."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from drain_orchestrator.failures import ApiError, FailureKind, kind_for_status

P = ParamSpec("P")
R = TypeVar("R")
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


def translated[**P, R](fn: Callable[P, R]) -> Callable[P, R]:
    """For code on the generated client: its ApiException and urllib3 errors become KubeError."""

    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        import urllib3  # noqa: PLC0415 - already loaded with the kubernetes client
        from kubernetes.client.exceptions import ApiException  # noqa: PLC0415

        try:
            return fn(*args, **kwargs)
        except ApiException as exc:
            raise KubeError(f"{exc.status} {exc.reason}", int(exc.status or 0) or None) from exc
        except urllib3.exceptions.HTTPError as exc:
            raise unreachable(exc) from exc

    return call
