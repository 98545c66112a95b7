"""The test harness refuses checkpoints the durable service would refuse (over 256 KB), like the service."""

from __future__ import annotations

import json

import pytest
from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution, durable_step
from aws_durable_execution_sdk_python.config import StepConfig
from aws_durable_execution_sdk_python.retries import RetryPresets
from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

from tests.integration.lambda_support import CHECKPOINT_LIMIT_BYTES, enforce_checkpoint_limit, oversized_checkpoints

pytestmark = pytest.mark.integration


@durable_step
def _result_of(step_ctx: StepContext, size: int) -> str:
    return "x" * size


def _run(size: int) -> tuple[str, str | None]:
    @durable_execution
    def handler(event: dict[str, int], context: DurableContext) -> int:
        config = StepConfig(retry_strategy=RetryPresets.none())
        return len(context.step(_result_of(event["size"]), name="result", config=config))

    enforce_checkpoint_limit()
    with DurableFunctionTestRunner(handler=handler) as runner:
        res = runner.run(input=json.dumps({"size": size}), execution_timeout=60)
    return getattr(res.status, "name", str(res.status)), res.error.message if res.error else None


def test_a_step_result_over_256_kb_fails_the_execution_and_is_named() -> None:
    seen = len(oversized_checkpoints())
    status, error = _run(CHECKPOINT_LIMIT_BYTES)  # the JSON quotes make it 2 bytes over
    assert status == "FAILED"
    assert error is not None and "checkpoint over 262144 bytes" in error
    assert oversized_checkpoints()[seen:][0] == "STEP 'result': 262146 bytes"


def test_a_step_result_at_the_limit_is_accepted() -> None:
    assert _run(CHECKPOINT_LIMIT_BYTES - 2) == ("SUCCEEDED", None)
