"""What a later `cdk deploy` or `cdk destroy` leaves in place: the function version in-flight durable executions
resume on, and the dead-letter queues with their messages."""

from __future__ import annotations

from tests.infra.conftest import Synthesized


def test_function_version_is_retained_and_is_the_alias_target(single: Synthesized) -> None:
    (version_id,) = single.resources("AWS::Lambda::Version")
    version = single.raw["Resources"][version_id]
    # a new version replaces this one on the next deploy; the old one must stay for the executions bound to it
    assert version["DeletionPolicy"] == "Retain"
    assert version["UpdateReplacePolicy"] == "Retain"
    alias = single.only("AWS::Lambda::Alias")
    assert alias["FunctionVersion"] == {"Fn::GetAtt": [version_id, "Version"]}


def test_dead_letter_queues_outlive_the_stack(single: Synthesized) -> None:
    queues = single.resources("AWS::SQS::Queue")
    assert len(queues) == 2
    for queue_id, queue in queues.items():
        assert (queue["DeletionPolicy"], queue["UpdateReplacePolicy"]) == ("Retain", "Retain"), queue_id
