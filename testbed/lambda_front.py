"""One Lambda endpoint for a function with published versions on the bed: what Lambda's API is to its callers.

- ``POST /2015-03-31/functions/NAME:VERSION/invocations`` goes to the emulator that runs VERSION (each version its
  own code, configuration and Runtime Interface Emulator); a version with no emulator answers 404
  ResourceNotFoundException, as Lambda answers for a deleted version. The durable-execution service invokes
  through here, so each execution runs on the version it was started on, for its whole life.
- ``GET /2025-12-01/functions/NAME/durable-executions`` (ListDurableExecutionsByFunction) is answered here, by
  AWS's documented rules (durable_listing.py: the qualifier, the valid statuses, defaults, pagination, errors) over
  the durable-execution service's listing, which ignores both qualifier and statuses; ``listing`` picks which of
  the documents' readings it plays (``durable_listing.BEHAVIOURS``).
- the rest of ``/2025-12-01/...`` (durable executions: get, history, checkpoints) goes to the durable-execution
  service.
- everything else (functions, versions, aliases) goes to the AWS emulator (moto).
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import urllib.parse
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from testbed.durable_listing import API_REFERENCE, Behaviour, Execution, ListingError, list_page

_INVOKE = re.compile(r"^/2015-03-31/functions/([^/]+)/invocations$")
_LISTING = re.compile(r"^/2025-12-01/functions/([^/]+)/durable-executions$")
EMULATOR_INVOKE_PATH = "/2015-03-31/functions/function/invocations"  # the emulator's only function
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "host", "content-length"}


class LambdaFront:
    def __init__(self, aws_endpoint: str, durable_service: str) -> None:
        self.aws, self.durable = aws_endpoint, durable_service
        self.versions: dict[str, str] = {}  # version -> emulator base URL
        self.listing: Behaviour = API_REFERENCE  # how ListDurableExecutionsByFunction reads (durable_listing.py)
        self.invoked_as: dict[str, str] = {}  # execution ARN -> the alias it was started through
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

    def list_executions(self, path: str, auth: str) -> dict[str, Any]:
        """ListDurableExecutionsByFunction by the documented rules; ListingError for an error answer. ``auth``: the
        caller's Authorization header (moto answers in the account and region it names)."""
        parts = urllib.parse.urlsplit(path)
        match = _LISTING.match(parts.path)
        assert match is not None
        query = urllib.parse.parse_qs(parts.query)
        # a name, a partial or full ARN, either optionally qualified: NAME[:QUALIFIER] after the last "function:"
        name, _, suffix = urllib.parse.unquote(match.group(1)).rpartition("function:")[2].partition(":")
        qualifier = (query.get("Qualifier") or [suffix or ""])[0] or None
        self._exists(name, qualifier, auth)
        if qualifier is not None:
            query["Qualifier"] = [qualifier]
        return list_page(self._all_executions(name), query, self.listing)

    def _exists(self, name: str, qualifier: str | None, auth: str) -> None:
        """ResourceNotFoundException for a function, version or alias Lambda does not know (as moto says)."""
        quoted = urllib.parse.quote(name, safe="")
        if qualifier is not None and not (qualifier.isdigit() or qualifier.startswith("$")):
            status, _ = _request(self.aws, "GET", f"/2015-03-31/functions/{quoted}/aliases/{qualifier}", auth)
        else:
            suffix = f"?Qualifier={urllib.parse.quote(qualifier)}" if qualifier else ""
            status, _ = _request(self.aws, "GET", f"/2015-03-31/functions/{quoted}{suffix}", auth)
        if status == 404:
            what = f"{name}:{qualifier}" if qualifier else name
            raise ListingError(404, "ResourceNotFoundException", f"Function not found: {what}")

    def _all_executions(self, name: str) -> list[Execution]:
        """Every execution of the function the durable-execution service knows (it filters on the name only)."""
        out: list[Execution] = []
        marker = ""
        while True:
            query = "?MaxItems=1000" + (f"&Marker={urllib.parse.quote(marker)}" if marker else "")
            path = f"/2025-12-01/functions/{urllib.parse.quote(name, safe='')}/durable-executions{query}"
            status, doc = _request(self.durable, "GET", path)
            if status != 200:
                raise ListingError(500, "ServiceException", f"durable-execution service: {status} {doc}")
            for e in doc.get("DurableExecutions") or []:
                arn = str(e["DurableExecutionArn"])
                out.append(
                    Execution(
                        arn=arn,
                        name=str(e.get("DurableExecutionName", "")),
                        function_arn=str(e.get("FunctionArn", "")),
                        status=str(e["Status"]),
                        started=_epoch(e["StartTimestamp"]),
                        ended=_epoch(e["EndTimestamp"]) if e.get("EndTimestamp") is not None else None,
                        invoked_as=self.invoked_as.get(arn),
                    )
                )
            marker = str(doc.get("NextMarker") or "")
            if not marker:
                return out

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
            if self.command == "GET" and _LISTING.match(urllib.parse.urlsplit(self.path).path):
                try:
                    self._answer(200, front.list_executions(self.path, self.headers.get("Authorization", "")), "")
                except ListingError as exc:
                    self._answer(exc.status, {"Type": "User", "Message": exc.message}, exc.error_type)
                return
            target = front.route(self.command, self.path)
            if target is None:
                message = {"Type": "User", "Message": f"Function not found: {self.path}"}
                self._answer(404, message, "ResourceNotFoundException")
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
            if error_type:
                self.send_header("X-Amzn-ErrorType", error_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = _forward

    return Handler


def _request(base: str, method: str, path: str, auth: str = "") -> tuple[int, dict[str, Any]]:
    parts = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        # the caller's signature, as it came (moto reads its account and region; the durable service checks none)
        conn.request(method, path, headers={"Authorization": auth} if auth else {})
        resp = conn.getresponse()
        data = resp.read()
    finally:
        conn.close()
    try:
        doc = json.loads(data) if data else {}
    except ValueError:
        doc = {"raw": data[:200].decode(errors="replace")}
    return resp.status, doc if isinstance(doc, dict) else {"items": doc}


def _epoch(value: Any) -> float:
    if isinstance(value, int | float):
        return float(value)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
