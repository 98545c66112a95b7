"""Drain notifications to an SNS topic: one message per phase of a node's drain (docs/notifications.md)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from drain_orchestrator.aws.errors import translated

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient


@translated("sns")
def publish(sns: SNSClient, topic_arn: str, subject: str, message: dict[str, Any]) -> str:
    resp = sns.publish(
        TopicArn=topic_arn,
        Subject=subject[:100],  # SNS limit
        Message=json.dumps(message, sort_keys=True, default=str),
        MessageAttributes={
            "phase": {"DataType": "String", "StringValue": str(message.get("phase", ""))},
            "cluster": {"DataType": "String", "StringValue": str(message.get("cluster", ""))},
        },
    )
    return str(resp["MessageId"])


def sns_client() -> SNSClient:
    from drain_orchestrator.aws.clients import _client  # noqa: PLC0415 - one place builds clients

    client: SNSClient = _client("sns", None, None)
    return client
