"""`make demo` keeps working: the same seeding and replay, on the session's bed, with its outcomes asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.testbed import demo
from tests.testbed.bed import Testbed

pytestmark = pytest.mark.integration


def test_demo_replay(testbed: Testbed, tmp_path: Path) -> None:
    outcomes, notes = demo.replay(testbed, tmp_path / "demo.log", cleanup=True)
    by_title = {o["title"]: o for o in outcomes}
    assert [o["status"] for o in outcomes] == ["SUCCEEDED"] * 9 + ["FAILED"]

    def results(title: str) -> list[str]:
        return [i["result"] for i in by_title[title]["result"]["instances"]]

    def reasons(title: str) -> set[str]:
        return {d["reason"] for d in by_title[title]["result"]["not_acted_on"]}

    assert results("ASG scale-in of a blue node") == ["drained"]
    assert by_title["ASG scale-in of a blue node"]["result"]["instances"][0]["lifecycle"]["outcome"] == "completed"
    assert reasons("ASG scale-in of another team's node") == {"other-cluster"}
    assert results("Spot interruption warning, blue node") == ["drained"]
    assert results("Same warning delivered twice") == ["drained"]
    assert results("Rebalance recommendation") == ["cordoned"]
    title = "Scheduled maintenance in 30 min: blue, green, unknown"
    assert results(title) == ["drained"] and reasons(title) == {"other-cluster", "unknown-instance"}
    assert results("ASG scale-out: wait for the node to join") == ["ready"]
    assert by_title["Unsupported event"]["result"]["ignored"] == "unsupported"
    assert "detail.EC2InstanceId" in by_title["Malformed event"]["error"].message
    # three drained nodes, each announced once (the duplicate Spot warning adds nothing)
    assert sorted(n["phase"] for n in notes) == ["completed"] * 3 + ["started"] * 3
