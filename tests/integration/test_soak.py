"""A short chaos soak with a fixed seed: events and faults at random for three minutes, then every invariant of
testbed/soak_check.py checked on the bed and the emulator (`make soak` runs the long one)."""

from __future__ import annotations

import pytest

from testbed.bed import Testbed
from testbed.soak import Soak

# a three-minute soak, then the checks: more than the default 300 s on a loaded machine
pytestmark = [pytest.mark.integration, pytest.mark.long_running, pytest.mark.timeout(600)]
SEED = 20261201


def test_three_minutes_of_events_and_faults_lose_nothing(
    testbed: Testbed, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    from drain_orchestrator.workflow import runtime

    def env(values: dict[str, str]) -> None:
        for key, value in values.items():
            monkeypatch.setenv(key, value)

    lines: list[str] = []
    soak = Soak(testbed, seed=SEED, minutes=3, fleet=8, log=lines.append)
    try:
        report = soak.run(env)
    finally:
        runtime.fault_injection = None
        runtime.reset_config()
        soak.k8s.cleanup()
    with capfd.disabled():
        print("\n" + report.text(), flush=True)
    assert report.executions >= 8 and sum(report.faults.values()) >= 2, report.text()
    assert not report.violations, report.text()
