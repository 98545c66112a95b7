"""One Lambda endpoint for a function with published versions on the bed: what Lambda's API is to its callers.

- ``POST /2015-03-31/functions/NAME:VERSION/invocations`` goes to the emulator that runs VERSION (each version its
  own code, configuration and Runtime Interface Emulator); a version with no emulator answers 404
  ResourceNotFoundException, as Lambda answers for a deleted version. The durable-execution service invokes
  through here, so each execution runs on the version it was started on, for its whole life.
- ``/2025-12-01/...`` (durable executions: list by function, get, history, checkpoints) goes to the
  durable-execution service.
- everything else (functions, versions, aliases) goes to the AWS emulator (moto).
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_INVOKE = re.compile(r"^/2015-03-31/functions/([^/]+)/invocations$")
EMULATOR_INVOKE_PATH = "/2015-03-31/functions/function/invocations"  # the emulator's only function
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "host", "content-length"}


class LambdaFront:
    def __init__(self, aws_endpoint: str, durable_service: str) -> None:
        self.aws, self.durable = aws_endpoint, durable_service
        self.versions: dict[str, str] = {}  # version -> emulator base URL
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def route(self, method: str, path: str) -> tuple[str, str] | None:
        """(base URL, path) to forward to, or None for an invoke of a version nobody runs."""
        invoke = _INVOKE.match(urllib.parse.urlsplit(path).path)
        if invoke and method == "POST":
            _function, _, version = urllib.parse.unquote(invoke.group(1)).partition(":")
            base = self.versions.get(version)
            return (base, EMULATOR_INVOKE_PATH) if base else None
        return (self.durable if path.startswith("/2025-12-01/") else self.aws), path

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(front: LambdaFront) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            target = front.route(self.command, self.path)
            if target is None:
                self._answer(404, {"Type": "User", "Message": f"Function not found: {self.path}"}, "ResourceNotFound")
                return
            base, path = target
            parts = urllib.parse.urlsplit(base)
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=900)
            try:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                conn.request(self.command, path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in _HOP_BY_HOP:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            finally:
                conn.close()

        def _answer(self, status: int, doc: dict[str, Any], error_type: str) -> None:
            data = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("X-Amzn-ErrorType", f"{error_type}Exception")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = _forward

    return Handler
