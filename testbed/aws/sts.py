"""STS extension: presigned requests (query-string SigV4, as EKS tokens carry them) routed and attributed like
header-signed ones, and the assumed-role identity behind an access key, which moto issued."""

from __future__ import annotations

import re
import urllib.parse
from typing import Any


def assumed_role(access_key_id: str) -> Any | None:
    """moto's assumed role that issued ``access_key_id`` (AssumeRole), else None."""
    from moto.sts.models import sts_backends

    for account in list(sts_backends.keys()):
        try:
            backend = sts_backends[account]["aws"]
        except KeyError:
            continue
        role = backend.get_assumed_role_from_access_key(access_key_id)
        if role is not None:
            return role
    return None


def find_secret(access_key_id: str) -> tuple[str, str | None] | None:
    """Secret and session token of an access key moto issued (AssumeRole), else None."""
    role = assumed_role(access_key_id)
    return None if role is None else (role.secret_access_key, role.session_token)


def caller_principal(authorization: str) -> str:
    """Who signed a request: the IAM role ARN behind an assumed-role access key (as CloudTrail names the caller of
    an assumed role), else the access key id itself."""
    m = re.search(r"Credential=([^/,\s]+)/", authorization)
    if not m:
        return "anonymous"
    access_key = m.group(1)
    role = assumed_role(access_key)
    return f"access-key:{access_key}" if role is None else str(role.role_arn)


def presigned_as_header_signed(environ: dict[str, Any]) -> None:
    """moto routes requests and reads the caller's access key from the Authorization header only; a presigned
    request carries them in the query string. Restate them as a header so moto serves it like a signed call."""
    if environ.get("HTTP_AUTHORIZATION"):
        return
    query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
    cred = query.get("X-Amz-Credential")
    if cred:
        sig = query.get("X-Amz-Signature", [""])[0]
        signed = query.get("X-Amz-SignedHeaders", [""])[0]
        environ["HTTP_AUTHORIZATION"] = (
            f"AWS4-HMAC-SHA256 Credential={cred[0]}, SignedHeaders={signed}, Signature={sig}"
        )
