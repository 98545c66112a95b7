"""Run the real Lambda handler end to end: the durable local runner + moto server + the real control plane.

The handler runs as the Lambda would: its AWS credentials are an assumed role's (moto issues them), it reads its
settings from the environment, reaches EKS through DescribeCluster + an IAM token checked by the test bed's webhook,
and acts under the shipped RBAC (the access entry maps the role to the `drain-orchestrator` group).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.testbed.aws_seed import AwsSeed
from tests.testbed.bed import Testbed

ROLE = "drain-orchestrator"


@dataclass
class Run:
    status: str
    result: dict[str, Any] | None
    error: Any
    stdout: str
    stderr: str = ""
    operations: list[Any] = field(default_factory=list)

    def emf(self) -> list[dict[str, Any]]:
        """Every EMF metric line the run printed: {"name", "value", "dims"}."""
        out = []
        for raw in self.stdout.splitlines():
            line = raw.strip()
            if not line.startswith("{") or '"_aws"' not in line:
                continue
            doc = json.loads(line)
            meta = doc["_aws"]["CloudWatchMetrics"][0]
            for m in meta["Metrics"]:
                dims = {d: doc[d] for group in meta["Dimensions"] for d in group}
                out.append({"name": m["Name"], "value": doc[m["Name"]], "dims": dims, "namespace": meta["Namespace"]})
        return out

    def metric_total(self, name: str, **dims: str) -> float:
        total = 0.0
        for m in self.emf():
            if m["name"] == name and all(m["dims"].get(k) == v for k, v in dims.items()):
                value = m["value"]
                total += sum(value) if isinstance(value, list) else value
        return total


class LambdaHarness:
    def __init__(self, testbed: Testbed, aws: AwsSeed, monkeypatch: pytest.MonkeyPatch, capfd: Any) -> None:
        self.testbed, self.aws, self.monkeypatch, self.capfd = testbed, aws, monkeypatch, capfd
        self.queue_url: str | None = None

    def configure(self, clusters: str = "blue", **env: str) -> None:
        """Served clusters, the Lambda's identity and access entries, a notification topic read through SQS."""
        values, self.queue_url = self.aws.lambda_env(clusters, ROLE)
        for k, v in {**values, "RECHECK_MIN_SECONDS": "1", **env}.items():
            self.monkeypatch.setenv(k, v)
        self._reset()

    def _reset(self) -> None:
        from drain_orchestrator.workflow import runtime

        runtime.reset_config()

    def run(self, event: dict[str, Any], *, timeout: int = 240, now: bool = True, **runner_kw: Any) -> Run:
        """Run the handler on ``event``; ``now`` stamps the event with the current time (samples are old)."""
        self._reset()
        self.capfd.readouterr()
        run = self.run_in_thread(event, timeout=timeout, now=now, **runner_kw)
        run.stdout, run.stderr = self.capfd.readouterr()
        return run

    def run_in_thread(self, event: dict[str, Any], *, timeout: int = 240, now: bool = True, **runner_kw: Any) -> Run:
        """Like :meth:`run` but without capturing output, so several runs can go at once (see :meth:`collect`)."""
        from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

        from drain_orchestrator.handler import handler

        if now:
            event = {**event, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        with DurableFunctionTestRunner(handler=handler, **runner_kw) as runner:
            res = runner.run(input=json.dumps(event), execution_timeout=timeout)
            ops = list(res.get_all_operations()) if hasattr(res, "get_all_operations") else []
        status = getattr(res.status, "name", str(res.status))
        result = json.loads(res.result) if res.result else None
        return Run(status=status, result=result, error=res.error, stdout="", operations=ops)

    def collect(self) -> Run:
        """Everything printed since the last capture (metrics of concurrent runs) as one Run."""
        out, err = self.capfd.readouterr()
        return Run(status="", result=None, error=None, stdout=out, stderr=err)

    def notifications(self) -> list[dict[str, Any]]:
        assert self.queue_url is not None
        return self.aws.drain_notifications(self.queue_url)
