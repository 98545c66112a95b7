"""Request counts: every AWS request is counted by access key, service and action (``POST /_testbed/requests``),
so a benchmark can tell apart the calls of two tools running side by side."""

from __future__ import annotations

import io
import re
import threading
import urllib.parse
from typing import Any

_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/[^/]+/[^/]+/([^/]+)/")


class RequestCounter:
    """AWS requests by (access key id, service, action); cleared with moto's reset."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[tuple[str, str, str], int] = {}

    def record(self, environ: dict[str, Any]) -> None:
        m = _CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
        if not m:
            return  # unsigned: moto-api, or a presigned STS call (the token webhook's check)
        action = environ.get("HTTP_X_AMZ_TARGET", "").rpartition(".")[2]
        if not action:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            body = environ["wsgi.input"].read(length) if length else b""
            environ["wsgi.input"] = io.BytesIO(body)  # put the body back for moto
            query = urllib.parse.parse_qs(environ.get("QUERY_STRING", "") + "&" + body.decode(errors="replace"))
            action = (query.get("Action") or [environ.get("PATH_INFO", "")])[0]
        key = (m.group(1), m.group(2), action)
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + 1

    def describe(self) -> list[dict[str, Any]]:
        with self.lock:
            return [
                {"access_key": k, "service": s, "action": a, "count": n} for (k, s, a), n in sorted(self.counts.items())
            ]

    def clear(self) -> None:
        with self.lock:
            self.counts.clear()


REQUESTS = RequestCounter()
