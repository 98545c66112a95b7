"""Run the real Lambda handler end to end: the durable local runner + moto server + the real control plane.

The handler runs as the Lambda would: its AWS credentials are an assumed role's (moto issues them), it reads its
settings from the environment, reaches EKS through DescribeCluster + an IAM token checked by the test bed's webhook,
and acts under the shipped RBAC (the access entry maps the role to the `drain-orchestrator` group).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
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
    operations: list[Any] = field(default_factory=list)

    def emf(self) -> list[dict[str, Any]]:
        """Every EMF metric line the run printed: {"name", "value", "dims"}."""
        out = []
        for line in self.stdout.splitlines():
            line = line.strip()
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
        self.topic_arn: str | None = None

    def configure(self, clusters: str = "blue", **env: str) -> None:
        """Served clusters, the Lambda's identity and access entries, a notification topic read through SQS."""
        for name in [c for c in clusters.split(",") if c and c != "*"]:
            self.testbed.put_access_entry(name, self.aws.role_arn(ROLE), "drain-orchestrator", ["drain-orchestrator"])
        sns, sqs = self.aws.client("sns"), self.aws.client("sqs")
        self.topic_arn = sns.create_topic(Name="drain-notifications")["TopicArn"]
        self.queue_url = sqs.create_queue(QueueName="drain-notifications")["QueueUrl"]
        qarn = sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(TopicArn=self.topic_arn, Protocol="sqs", Endpoint=qarn,
                      Attributes={"RawMessageDelivery": "true"})
        session = self.aws.lambda_session(ROLE)
        creds = session.get_credentials().get_frozen_credentials()
        values = {
            "AWS_ACCESS_KEY_ID": creds.access_key,
            "AWS_SECRET_ACCESS_KEY": creds.secret_key,
            "AWS_SESSION_TOKEN": creds.token,
            "CLUSTER_NAMES": clusters,
            "NOTIFICATION_TOPIC_ARN": self.topic_arn,
            "POWERTOOLS_SERVICE_NAME": "drain-orchestrator",
            "RECHECK_MIN_SECONDS": "1",
            **env,
        }
        for k, v in values.items():
            self.monkeypatch.setenv(k, v)
        self._reset()

    def _reset(self) -> None:
        from drain_orchestrator import workflow

        workflow.reset_config()

    def run(self, event: dict[str, Any], *, timeout: int = 240, now: bool = True, **runner_kw: Any) -> Run:
        """Run the handler on ``event``; ``now`` stamps the event with the current time (samples are old)."""
        from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

        from drain_orchestrator.handler import handler

        if now:
            event = {**event, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        self._reset()
        self.capfd.readouterr()
        with DurableFunctionTestRunner(handler=handler, **runner_kw) as runner:
            res = runner.run(input=json.dumps(event), execution_timeout=timeout)
            ops = list(res.get_all_operations()) if hasattr(res, "get_all_operations") else []
        out, _ = self.capfd.readouterr()
        status = getattr(res.status, "name", str(res.status))
        result = json.loads(res.result) if res.result else None
        return Run(status=status, result=result, error=res.error, stdout=out, operations=ops)

    def notifications(self) -> list[dict[str, Any]]:
        sqs = self.aws.client("sqs")
        got: list[dict[str, Any]] = []
        while True:
            msgs = sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get(
                "Messages", []
            )
            if not msgs:
                return got
            for m in msgs:
                got.append(json.loads(m["Body"]))
                sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])


@pytest.fixture
def lam(testbed: Testbed, aws: AwsSeed, monkeypatch: pytest.MonkeyPatch, capfd: Any) -> Iterator[LambdaHarness]:
    h = LambdaHarness(testbed, aws, monkeypatch, capfd)
    yield h
    from drain_orchestrator import workflow

    workflow.fault_injection = None
    workflow.reset_config()
    os.environ.pop("AWS_SESSION_TOKEN", None)
