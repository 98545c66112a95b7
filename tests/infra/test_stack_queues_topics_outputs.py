"""Template assertions for the stack's queues (encrypted, TLS only, 14 days), its topics and the alarm email
subscription, and the outputs it exports in each configuration."""

from __future__ import annotations

import pytest

from tests.infra.conftest import Synthesized
from tests.infra.stack_support import logical_id

# --- queues and topics --------------------------------------------------------------------------------------


def test_queues_encrypted_tls_only_14_days(single: Synthesized) -> None:
    queues = single.resources("AWS::SQS::Queue")
    assert len(queues) == 2
    for queue in queues.values():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True
        assert queue["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600
    for policy in single.resources("AWS::SQS::QueuePolicy").values():
        deny = policy["Properties"]["PolicyDocument"]["Statement"][0]
        assert deny["Effect"] == "Deny"
        assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_topics_and_alarm_email(single: Synthesized, multi: Synthesized) -> None:
    assert len(single.resources("AWS::SNS::Topic")) == 2
    assert single.resources("AWS::SNS::Subscription") == {}
    subscription = multi.only("AWS::SNS::Subscription")
    assert subscription["Protocol"] == "email"
    assert subscription["Endpoint"] == "oncall@example.com"
    assert subscription["TopicArn"] == {"Ref": logical_id(multi, "AWS::SNS::Topic", "AlarmTopic")}


@pytest.mark.parametrize("config", ["single", "multi"])
def test_outputs(config: str, request: pytest.FixtureRequest) -> None:
    synth: Synthesized = request.getfixturevalue(config)
    in_vpc = {"FunctionSecurityGroupIds"} if config == "multi" else set()
    assert set(synth.raw["Outputs"]) == in_vpc | {
        "FunctionAliasArn",
        "FunctionRoleArn",
        "NotificationTopicArn",
        "AlarmTopicArn",
        "DashboardName",
        "LogGroupName",
        "DeliveryDeadLetterQueueUrl",
        "FailedInvocationQueueUrl",
    }
