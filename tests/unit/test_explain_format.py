"""explain's event block has the same deadline fields whether or not the event is acted on."""

from __future__ import annotations

from drain_orchestrator.cli.explain import explain
from drain_orchestrator.events import Ignored, parse_event
from drain_orchestrator.settings import Settings
from testbed import samples


def test_ignored_event_carries_empty_deadline_fields() -> None:
    event = parse_event(samples.load("unsupported-ebs-snapshot.json"))
    assert isinstance(event, Ignored)

    report = explain(event, Settings.from_env({"CLUSTER_NAMES": "blue"}))

    assert report["event"]["ignored"] == "unsupported"
    assert {k: report["event"][k] for k in ("deadline", "deadline_epoch", "seconds_left")} == {
        "deadline": None,
        "deadline_epoch": None,
        "seconds_left": None,
    }
