"""`make demo` keeps working: the same seeding and replay, on the session's bed, with its outcomes asserted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from testbed import demo
from testbed.bed import Testbed

pytestmark = pytest.mark.integration


def test_demo_replay(testbed: Testbed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the controller deregisters the instance at the cordon: the target must still be draining when the drain ends,
    # with room for a drain slowed down by a loaded host
    monkeypatch.setattr(demo, "DEREGISTRATION_DELAY", 15)
    outcomes, notes = demo.replay(testbed, tmp_path / "demo.log", cleanup=True)
    by_title = {o["title"]: o for o in outcomes}
    assert [o["status"] for o in outcomes] == ["SUCCEEDED"] * 10 + ["FAILED"]

    def results(title: str) -> list[str]:
        return [i["result"] for i in by_title[title]["result"]["instances"]]

    def reasons(title: str) -> set[str]:
        return {d["reason"] for d in by_title[title]["result"]["not_acted_on"]}

    (behind_lb,) = by_title[demo.BEHIND_LB]["result"]["instances"]
    assert behind_lb["result"] == "drained" and behind_lb["lifecycle"]["outcome"] == "completed"
    # the load-balancer gate held the hook while the instance's target drained, and the demo prints it
    lbs = behind_lb["gates"]["load_balancers"]
    target = f"{demo.TARGET_GROUP} ({behind_lb['instance_id']})"
    assert lbs["held"] == [target] and lbs["still_draining"] == [] and lbs["waited_seconds"] > 0
    printed = demo.summarize(demo.BEHIND_LB, "SUCCEEDED", by_title[demo.BEHIND_LB]["result"], None, 0.0)
    assert printed[2].startswith(f"    load-balancer gate: held the hook {lbs['waited_seconds']:.1f} s until {target}")
    # the other events hold no lifecycle action for termination: no gate, nothing printed for one
    assert not [o["title"] for o in outcomes[1:] if any("gate:" in x for x in _printed(o))]
    assert reasons("ASG scale-in of another team's node") == {"other-cluster"}
    assert results("Spot interruption warning, blue node") == ["drained"]
    assert results("Same warning delivered twice") == ["drained"]
    reclaimed = by_title["Capacity reservation reclaimed, another team's node"]["result"]
    assert reclaimed["kind"] == "capacity-reservation-interruption" and reclaimed["instances"] == []
    assert reasons("Capacity reservation reclaimed, another team's node") == {"other-cluster"}
    assert results("Rebalance recommendation") == ["cordoned"]
    title = "Scheduled maintenance in 30 min: blue, green, unknown"
    assert results(title) == ["drained"] and reasons(title) == {"other-cluster", "unknown-instance"}
    assert results("ASG scale-out: wait for the node to join") == ["ready"]
    assert by_title["Unsupported event"]["result"]["ignored"] == "unsupported"
    assert "detail.EC2InstanceId" in by_title["Malformed event"]["error"].message
    # three drained nodes, each announced once (the duplicate Spot warning adds nothing)
    # and the rebalance's node returned to service: nothing followed it (the demo's runner skips the hour's wait)
    assert sorted(n["phase"] for n in notes) == ["completed"] * 3 + ["returned-to-service"] + ["started"] * 3
    (rebalanced,) = by_title["Rebalance recommendation"]["result"]["instances"]
    (returned,) = [n for n in notes if n["phase"] == "returned-to-service"]
    assert returned["instance_id"] == rebalanced["instance_id"] and rebalanced["returned"]["status"] == "returned"


def _printed(outcome: dict[str, Any]) -> list[str]:
    return demo.summarize(outcome["title"], outcome["status"], outcome["result"], outcome["error"], 0.0)
