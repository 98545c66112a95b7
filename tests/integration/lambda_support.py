"""Run the real Lambda handler end to end: the durable local runner + moto server + the real control plane.

The handler runs as the Lambda would: its AWS credentials are an assumed role's (moto issues them), it reads its
settings from the environment, reaches EKS through DescribeCluster + an IAM token checked by the test bed's webhook,
and acts under the shipped RBAC (the access entry maps the role to the `drain-orchestrator` group).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from drain_orchestrator.aws import reads_table
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.runtime import FunctionConfig

ROLE = "drain-orchestrator"
# The durable service refuses a checkpointed operation result over 256 KB; the local runner does not check.
CHECKPOINT_LIMIT_BYTES = 256 * 1024
_oversized: list[str] = []
_oversized_lock = threading.Lock()


def deployed_function(template: dict[str, Any], env: dict[str, str]) -> FunctionConfig:
    """The template's drain function, its references to what the stack creates (the notification topic, the
    shared-reads table) given the bed's (``AwsSeed.lambda_env``'s, taken out of ``env`` with the variables whose
    template values stay: the served clusters, the service name)."""
    resources = template["Resources"]
    topic = next(k for k, r in resources.items() if r["Type"] == "AWS::SNS::Topic" and "Notif" in k)
    refs = {topic: env.pop("NOTIFICATION_TOPIC_ARN")}
    table = env.pop(reads_table.TABLE_VARIABLE)
    refs |= {k: table for k, r in resources.items() if r["Type"] == "AWS::DynamoDB::Table"}
    for name in ("CLUSTER_NAMES", "POWERTOOLS_SERVICE_NAME"):
        env.pop(name, None)
    return FunctionConfig.from_template(template, refs)


def enforce_checkpoint_limit() -> None:
    """Make the local runner refuse what the service refuses: any checkpointed payload (a step's result, a child
    context's, the execution's) over 256 KB fails the checkpoint, hence the execution, and is recorded so the
    harness fails the test naming the operation. Installed once per test session; tests only."""
    from aws_durable_execution_sdk_python_testing.checkpoint.processor import CheckpointProcessor
    from aws_durable_execution_sdk_python_testing.exceptions import InvalidParameterValueException

    original = CheckpointProcessor.process_checkpoint
    if getattr(original, "checks_size", False):
        return

    def process_checkpoint(self: Any, checkpoint_token: str, updates: list[Any], client_token: str | None) -> Any:
        for update in updates:
            size = len((update.payload or "").encode())
            if size > CHECKPOINT_LIMIT_BYTES:
                what = f"{update.operation_type.value} {update.name or update.operation_id!r}: {size} bytes"
                with _oversized_lock:
                    _oversized.append(what)
                raise InvalidParameterValueException(f"checkpoint over {CHECKPOINT_LIMIT_BYTES} bytes: {what}")
        return original(self, checkpoint_token, updates, client_token)

    process_checkpoint.checks_size = True  # type: ignore[attr-defined]
    CheckpointProcessor.process_checkpoint = process_checkpoint  # type: ignore[method-assign]


def oversized_checkpoints() -> list[str]:
    with _oversized_lock:
        return list(_oversized)


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

    def step(self, name: str) -> Any:
        """The checkpointed result of the one step named ``name``."""
        (op,) = [op for op in self.operations if getattr(op, "name", None) == name]
        return json.loads(op.result)

    def cordoned(self) -> Any:
        """The cordon's result: its own "cordon" step's, or the "begin" step's part when the cordon ran there."""
        names = {getattr(op, "name", None) for op in self.operations}
        return self.step("cordon") if "cordon" in names else self.step("begin")["cordoned"]

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
        self.started: list[LiveRun] = []

    def configure(self, clusters: str = "blue", **env: str) -> None:
        """Served clusters, the Lambda's identity and access entries, a notification topic read through SQS."""
        values, self.queue_url = self.aws.lambda_env(clusters, ROLE)
        # lifecycle drains capped at an hour: with the tests' short passes a 48 h hook could cost more durable
        # operations than a drain may (pacing.MAX_DURABLE_OPERATIONS), and the function would refuse the settings
        cap = {"DEADLINE_ASG_TERMINATE_SECONDS": "3600"}
        # the smallest respectful minimum (the default is 30 s): scenarios with deadlines of seconds keep their pace;
        # the tests of the minimum itself set it
        respect = {"MIN_DRAIN_SECONDS": "10"}
        for k, v in {**values, "RECHECK_MIN_SECONDS": "1", **cap, **respect, **env}.items():
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
        enforce_checkpoint_limit()
        seen = len(oversized_checkpoints())
        with DurableFunctionTestRunner(handler=handler, **runner_kw) as runner:
            res = runner.run(input=json.dumps(event), execution_timeout=timeout)
            ops = list(res.get_all_operations()) if hasattr(res, "get_all_operations") else []
        oversized = oversized_checkpoints()[seen:]
        assert not oversized, f"checkpoints over the service's 256 KB limit: {oversized}"
        status = getattr(res.status, "name", str(res.status))
        result = json.loads(res.result) if res.result else None
        return Run(status=status, result=result, error=res.error, stdout="", operations=ops)

    def run_answering(self, event: dict[str, Any], answer: Callable[[CallbackApi], None], *, timeout: int = 240) -> Run:
        """Run the handler on ``event`` on the real clock (durable callbacks time out in real time), calling
        ``answer`` with the local runner's callback API from a thread while the execution runs; its failure fails
        the run."""
        from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

        from drain_orchestrator.handler import handler

        self._reset()
        self.capfd.readouterr()
        event = {**event, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        enforce_checkpoint_limit()
        failures: list[BaseException] = []
        with DurableFunctionTestRunner(handler=handler, skip_time=False) as runner:
            arn = runner.run_async(input=json.dumps(event), execution_timeout=timeout)
            api = CallbackApi(runner)

            def call() -> None:
                try:
                    answer(api)
                except BaseException as exc:  # re-raised in the test's thread
                    failures.append(exc)

            helper = threading.Thread(target=call, daemon=True, name="answer")
            helper.start()
            res = runner.wait_for_result(arn, timeout=timeout)
            helper.join(timeout=30)
            ops = list(res.get_all_operations()) if hasattr(res, "get_all_operations") else []
        if failures:
            raise failures[0]
        status = getattr(res.status, "name", str(res.status))
        result = json.loads(res.result) if res.result else None
        run = Run(status=status, result=result, error=res.error, stdout="", operations=ops)
        run.stdout, run.stderr = self.capfd.readouterr()
        return run

    def start(self, event: dict[str, Any], *, timeout: int = 240) -> LiveRun:
        """Start the handler on ``event`` (stamped now) on the real clock and return at once: the test acts on the
        bed while the execution runs, watching its finished steps (:class:`LiveRun`). Several may run at once; their
        output is shared (:meth:`collect` reads the metrics of all)."""
        from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

        from drain_orchestrator.handler import handler

        self._reset()
        enforce_checkpoint_limit()
        event = {**event, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        seen = len(oversized_checkpoints())
        runner = DurableFunctionTestRunner(handler=handler, skip_time=False)
        live = LiveRun(runner, runner.run_async(input=json.dumps(event), execution_timeout=timeout), timeout, seen)
        self.started.append(live)
        return live

    def close(self) -> None:
        """Stop the runners of started executions a failed test left running (the fixture's teardown)."""
        for live in self.started:
            live.close()

    def collect(self) -> Run:
        """Everything printed since the last capture (metrics of concurrent runs) as one Run."""
        out, err = self.capfd.readouterr()
        return Run(status="", result=None, error=None, stdout=out, stderr=err)

    def notifications(self) -> list[dict[str, Any]]:
        assert self.queue_url is not None
        return self.aws.drain_notifications(self.queue_url)


class CallbackApi:
    """The local durable runner's callback API in the shape of a boto3 Lambda client's: its errors come back as
    botocore ClientErrors with the service's error codes, as the CLI sees them from Lambda."""

    def __init__(self, runner: Any) -> None:
        self.runner = runner

    def send_durable_execution_callback_success(self, *, CallbackId: str, Result: bytes) -> dict[str, Any]:
        from aws_durable_execution_sdk_python_testing.exceptions import AwsApiException
        from botocore.exceptions import ClientError

        try:
            self.runner.send_callback_success(CallbackId, Result)
        except AwsApiException as exc:
            error = {"Code": type(exc).__name__, "Message": str(exc)}
            raise ClientError({"Error": error}, "SendDurableExecutionCallbackSuccess") from exc
        return {}


class LiveRun:
    """An execution started by :meth:`LambdaHarness.start`, still running: what its finished steps returned so far
    (read from its history, as ``get-durable-execution-history`` shows it), then its end."""

    def __init__(self, runner: Any, arn: str, timeout: int, seen: int = 0) -> None:
        self.runner, self.arn, self.timeout, self.seen = runner, arn, timeout, seen
        self.closed = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.runner.close()

    def _operations(self) -> list[Any]:
        from aws_durable_execution_sdk_python_testing.model import events_to_operations

        history = self.runner.get_execution_history(self.arn, include_execution_data=True)
        return list(events_to_operations(history.events))

    def begun(self) -> set[str]:
        """The names of the operations begun so far (steps, waits, contexts), finished or not."""
        return {op.name for op in self._operations() if op.name}

    def steps(self) -> dict[str, Any]:
        """The checkpointed result of each step that succeeded so far, by name."""
        return _succeeded_steps(self._operations())

    def step(self, name: str, timeout: float = 120) -> Any:
        """The result of the step ``name`` once it succeeded (polled until ``timeout``); fails at once when the
        execution ended without it."""
        deadline = time.monotonic() + timeout
        while True:
            ops = self._operations()
            done = _succeeded_steps(ops)
            if name in done:
                return done[name]
            assert not _ended(ops), f"the execution ended without a step {name}: {sorted(done)}"
            assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for step {name}: {sorted(done)}"
            time.sleep(0.2)

    def finish(self) -> Run:
        """Wait for the execution's end (its timeout at most); the runner is closed. The output is not captured
        here: :meth:`LambdaHarness.collect` reads it."""
        try:
            res = self.runner.wait_for_result(self.arn, timeout=self.timeout)
            ops = list(res.get_all_operations())
        finally:
            self.close()
        oversized = oversized_checkpoints()[self.seen :]
        assert not oversized, f"checkpoints over the service's 256 KB limit: {oversized}"
        status = getattr(res.status, "name", str(res.status))
        result = json.loads(res.result) if res.result else None
        return Run(status=status, result=result, error=res.error, stdout="", operations=ops)


def _succeeded_steps(ops: list[Any]) -> dict[str, Any]:
    from aws_durable_execution_sdk_python.lambda_service import OperationStatus, OperationType

    done: dict[str, Any] = {}
    for op in ops:
        if op.operation_type is OperationType.STEP and op.status is OperationStatus.SUCCEEDED and op.name:
            result = op.step_details.result if op.step_details else None
            done[op.name] = json.loads(result) if result else None
    return done


def _ended(ops: list[Any]) -> bool:
    from aws_durable_execution_sdk_python.lambda_service import OperationStatus, OperationType

    running = (OperationStatus.STARTED, OperationStatus.PENDING, OperationStatus.READY)
    return any(op.operation_type is OperationType.EXECUTION and op.status not in running for op in ops)
