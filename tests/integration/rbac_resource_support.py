"""Running the stack's RBAC resource handler (drain_orchestrator/rbac_resource.py) as Lambda would for
CloudFormation: in a process of its own, from a task root laid out like the code asset (the package with its
``k8s/`` manifests), with the applier role's credentials, answering to a ResponseURL this module serves."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from drain_orchestrator.cli.rbac import MANIFESTS, SURGE_MANIFEST
from testbed.aws_seed import AwsSeed
from testbed.bed import REPO

STACK_ID = "arn:aws:cloudformation:us-east-1:123456789012:stack/drain-orchestrator-blue/0f1e2d3c"
LOGICAL_ID = "DrainOrchestratorRbacAppliedblue1A2B3C4D"
_RUN = """
import json, sys
from drain_orchestrator.rbac_resource import handler

class Context:
    def get_remaining_time_in_millis(self):
        return int(sys.argv[2])

handler(json.loads(sys.argv[1]), Context())
"""


class Answers:
    """The answers PUT to the ResponseURL, in order."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()


@contextmanager
def response_url() -> Iterator[tuple[str, Answers]]:
    answers = Answers()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_PUT(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            with answers.lock:
                answers.bodies.append(body)
            self.send_response(200)
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/answer", answers
    finally:
        server.shutdown()
        server.server_close()


def task_root(directory: Path, manifests: dict[str, list[dict[str, Any]]]) -> Path:
    """The package as the code asset holds it, with ``manifests`` (file name -> documents) as its k8s/."""
    task = directory / "task"
    shutil.rmtree(task, ignore_errors=True)
    shutil.copytree(
        REPO / "lambda_src" / "drain_orchestrator",
        task / "drain_orchestrator",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (task / "drain_orchestrator" / "k8s").mkdir()
    for name, docs in manifests.items():
        (task / "drain_orchestrator" / "k8s" / name).write_text(yaml.safe_dump_all(docs))
    return task


def shipped(suffix: str = "") -> dict[str, list[dict[str, Any]]]:
    """The shipped manifests (surge before evict's too) as documents; with ``suffix``, every object (and every
    reference between them) renamed, so a test can create and delete them without touching the RBAC the bed's other
    tests run under."""
    out = {}
    for name in (*MANIFESTS, SURGE_MANIFEST):
        docs = [d for d in yaml.safe_load_all((REPO / "infra" / "k8s" / name).read_text()) if d]
        if suffix:
            for doc in docs:
                doc["metadata"]["name"] += suffix
                if doc["kind"] == "ClusterRoleBinding":
                    doc["roleRef"]["name"] += suffix
                if doc["kind"] == "FlowSchema":
                    doc["spec"]["priorityLevelConfiguration"]["name"] += suffix
        out[name] = docs
    return out


def event(kind: str, url: str, cluster: str = "blue", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "RequestType": kind,
        "ResponseURL": url,
        "StackId": STACK_ID,
        "RequestId": f"request-{kind.lower()}",
        "LogicalResourceId": LOGICAL_ID,
        "ResourceType": "Custom::DrainOrchestratorRbac",
        "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:applier",
        "ResourceProperties": {"ClusterName": cluster, "ManifestsSha256": "0" * 64},
    }
    if kind != "Create":
        body["PhysicalResourceId"] = f"drain-orchestrator-rbac/{cluster}"
    return {**body, **extra}


def invoke(
    task: Path, request: dict[str, Any], aws: AwsSeed, role: str, remaining_ms: int = 120_000
) -> subprocess.CompletedProcess[str]:
    """The handler with ``role``'s credentials, as the applier function runs it."""
    creds = aws.lambda_session(role).get_credentials().get_frozen_credentials()
    env = {
        **aws.bed.aws_env(),
        "AWS_ACCESS_KEY_ID": creds.access_key,
        "AWS_SECRET_ACCESS_KEY": creds.secret_key,
        "AWS_SESSION_TOKEN": creds.token or "",
        "PYTHONPATH": str(task),
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        [sys.executable, "-c", _RUN, json.dumps(request), str(remaining_ms)],
        cwd=task,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )
