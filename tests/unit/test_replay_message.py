"""`replay`: the event found in each form a dead-letter message is saved in, and a Health event narrowed (pure)."""

from __future__ import annotations

import json

import pytest

from drain_orchestrator.cli.replay import BadMessage, event_of, narrow
from testbed import samples

A, B = "i-0aaaabbbbccccdddd", "i-0eeeeffff00001111"


def test_the_event_is_found_in_every_form_of_a_dead_letter_message() -> None:
    event = samples.ec2_event("spot-interruption-terminate.json", instance_id=A)
    message = {"MessageId": "m", "ReceiptHandle": "r", "Body": json.dumps(event)}
    record = {"requestContext": {}, "requestPayload": event, "responsePayload": {"errorMessage": "x"}}
    for form in (event, message, {"Messages": [message]}, record, {"Body": json.dumps(record)}):
        assert event_of(form) == event
    for bad, why in (({"Messages": []}, "no message"), ({"Body": "{}"}, "detail-type"), ([1], "detail-type")):
        with pytest.raises(BadMessage, match=why):
            event_of(bad)


def test_a_health_event_is_narrowed_to_the_instances_still_true_and_other_kinds_are_kept() -> None:
    health = samples.health_event([A, B])
    narrowed = narrow(health, [B])
    assert narrowed["resources"] == [B] and [e["entityValue"] for e in narrowed["detail"]["affectedEntities"]] == [B]
    assert health["resources"] == [A, B]  # the message itself is left as it was
    spot = samples.ec2_event("spot-interruption-terminate.json", instance_id=A)
    assert narrow(spot, [A]) is spot
