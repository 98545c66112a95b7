"""Session fixtures of the integration tests that need the synthesized template or the real Lambda runtime."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.runtime import FunctionConfig, LambdaRuntime, build_runtime_root, build_task_root

SERVED = "blue"


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The CloudFormation template the CDK app synthesizes for the cluster the tests serve (no asset bundling)."""
    from tests.infra.conftest import synthesize

    raw: dict[str, Any] = synthesize({"clusters": SERVED}, Path(tmp_path_factory.mktemp("cdk-out"))).raw
    return raw


@pytest.fixture(scope="session")
def lambda_roots(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The code asset for this machine (the CDK bundler's recipe) and the runtime client, built once."""
    directory = tmp_path_factory.mktemp("lambda")
    return build_task_root(directory), build_runtime_root(directory)


@pytest.fixture
def real_lambda(
    testbed: Testbed, aws: AwsSeed, template: dict[str, Any], lambda_roots: tuple[Path, Path]
) -> Iterator[Callable[..., LambdaRuntime]]:
    """Start the function under the Runtime Interface Emulator with the template's handler and environment,
    the role's credentials and access entry on the served cluster, and ``settings`` on top; a fresh (cold)
    runtime per test. Stopped at teardown."""
    from testbed.binaries import locate_binaries

    started: list[LambdaRuntime] = []

    def start(**settings: str) -> LambdaRuntime:
        env, _queue = aws.lambda_env(SERVED)
        topic = next(k for k, r in template["Resources"].items() if r["Type"] == "AWS::SNS::Topic" and "Notif" in k)
        function = FunctionConfig.from_template(template, {topic: env.pop("NOTIFICATION_TOPIC_ARN")})
        for name in ("CLUSTER_NAMES", "POWERTOOLS_SERVICE_NAME"):  # the template's own values stay
            env.pop(name, None)
        runtime = LambdaRuntime.start(testbed, locate_binaries(), function, {**env, **settings}, lambda_roots)
        started.append(runtime)
        return runtime

    yield start
    for runtime in started:
        runtime.stop()
