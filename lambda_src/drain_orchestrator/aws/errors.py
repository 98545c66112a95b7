"""AWS API failures as typed errors (failures.ApiError), from error codes and HTTP statuses, never message text.

botocore's own retries (standard mode) absorb short throttling; what is left when they give up, and 5xx answers
whatever their body (a plain-text 503 is not retried by botocore), reaches the workflow as THROTTLED or
UNAVAILABLE, which it retries with durable waits until the drain's deadline.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError
from botocore.parsers import ResponseParserError

from drain_orchestrator.failures import ApiError, FailureKind, kind_for_status

P = ParamSpec("P")
R = TypeVar("R")

_THROTTLING = {
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestLimitExceeded",
    "RequestThrottled",
    "RequestThrottledException",
    "TooManyRequestsException",
    "SlowDown",
    "PriorRequestNotComplete",
}
_UNAUTHORIZED = {"ExpiredToken", "ExpiredTokenException", "InvalidClientTokenId", "UnrecognizedClientException"}
_FORBIDDEN = {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "AuthorizationError"}
_UNAVAILABLE = {"ServiceUnavailable", "InternalFailure", "InternalError", "InternalServerError", "Unavailable"}


class AwsError(ApiError):
    """An AWS call failed; ``code`` is AWS's error code when it sent one."""

    def __init__(self, kind: FailureKind, service: str, message: str, status: int | None, code: str) -> None:
        super().__init__(kind, service, message, status)
        self.code = code


def from_client_error(exc: ClientError, service: str) -> AwsError:
    error = exc.response.get("Error", {})
    code = str(error.get("Code", ""))
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    message = f"{exc.operation_name}: {code or 'error'} (HTTP {status})"
    if code in _THROTTLING:
        kind = FailureKind.THROTTLED
    elif code in _UNAUTHORIZED:
        kind = FailureKind.UNAUTHORIZED
    elif code in _FORBIDDEN:
        kind = FailureKind.FORBIDDEN
    elif code in _UNAVAILABLE or (isinstance(status, int) and status >= 500):
        kind = FailureKind.UNAVAILABLE
    elif isinstance(status, int) and status >= 400:
        kind = kind_for_status(status)
    else:
        kind = FailureKind.INVALID
    return AwsError(kind, service, message, status if isinstance(status, int) else None, code)


def from_botocore_error(exc: BotoCoreError, service: str) -> AwsError:
    """Transport and configuration errors: no credentials or region is a setup fault, the rest is transient."""
    name = type(exc).__name__
    if isinstance(exc, NoCredentialsError | NoRegionError):
        return AwsError(FailureKind.UNAUTHORIZED, service, f"{name}: {exc}", None, name)
    return AwsError(FailureKind.UNAVAILABLE, service, f"{name}: {str(exc)[:200]}", None, name)


def translated(service: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate an adapter function: botocore errors leave it as AwsError."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return fn(*args, **kwargs)
            except ClientError as exc:
                raise from_client_error(exc, service) from exc
            except BotoCoreError as exc:
                raise from_botocore_error(exc, service) from exc
            except ResponseParserError as exc:  # an unparseable body (plain-text 503): transient, retried
                raise AwsError(
                    FailureKind.UNAVAILABLE, service, f"unparseable response: {str(exc)[:200]}", None, ""
                ) from exc

        return call

    return wrap
