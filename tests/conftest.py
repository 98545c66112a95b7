"""Shared fixtures. Integration tests run on the real local test bed (testbed): one control plane and AWS
emulator per pytest session, started on first use. Set DRAIN_TESTBED_DIR to reuse a bed started with
`make cluster-up` (faster iteration); otherwise the session starts its own and stops it at the end."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.bed import Testbed
from tests.beds import serving, start_bed


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files marked long_running first (a stable sort keeps each file's tests together): with `make test`'s
    workers taking whole files, the longest start at once instead of last."""
    items.sort(key=lambda item: item.get_closest_marker("long_running") is None)


@pytest.fixture(scope="session")
def testbed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    reuse = os.environ.get("DRAIN_TESTBED_DIR")
    bed = Testbed.attach(Path(reuse)) if reuse else None
    owned = bed is None
    with serving(bed or start_bed(tmp_path_factory), owned=owned) as served:
        yield served


@pytest.fixture
def k8s(testbed: Testbed) -> Iterator[KubeScenario]:
    from testbed.kube import KubeScenario

    api = testbed.admin_api_client()
    scenario = KubeScenario(api)
    try:
        yield scenario
    finally:
        scenario.cleanup()
        api.close()


@pytest.fixture
def aws(testbed: Testbed) -> AwsSeed:
    from testbed.aws_seed import AwsSeed

    seed = AwsSeed(testbed)
    seed.reset()
    return seed


@pytest.fixture
def lam(
    testbed: Testbed, aws: AwsSeed, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> Iterator[LambdaHarness]:
    """The real Lambda handler run by the durable local runner against the bed (tests/integration/lambda_support.py)."""
    from drain_orchestrator.workflow import runtime
    from tests.integration.lambda_support import LambdaHarness

    harness = LambdaHarness(testbed, aws, monkeypatch, capfd)
    yield harness
    harness.close()
    runtime.fault_injection = None
    runtime.reset_config()


@pytest.fixture
def bed_faults(testbed: Testbed) -> Iterator[BedFaults]:
    """Stop/restart components and revoke/restore access entries; whatever a test stopped is running again after
    it, so the rest of the session has a whole bed."""
    from testbed.faults import BedFaults

    faults = BedFaults(testbed)
    yield faults
    for proc in testbed.state.procs:
        if not faults.running(proc.name):
            faults.restart(proc.name)


@pytest.fixture
def aws_faults(testbed: Testbed) -> Iterator[FaultProxy]:
    """An AWS fault proxy in front of the emulator (testbed/faultproxy.py); pass ``aws_faults.env()`` to
    ``LambdaHarness.configure`` to route the function's AWS calls through it."""
    from testbed.faultproxy import FaultProxy

    with FaultProxy(testbed.aws_endpoint) as proxy:
        yield proxy


if False:  # for type checkers only
    from testbed.aws_seed import AwsSeed
    from testbed.faultproxy import FaultProxy
    from testbed.faults import BedFaults
    from testbed.kube import KubeScenario
    from tests.integration.lambda_support import LambdaHarness
