"""An optional customer-managed KMS key for the topics, queues and log group.

The services that write into them need the key too: CloudWatch Logs (log events), CloudWatch alarms (publish to
the alarm topic), EventBridge (the delivery dead-letter queue); the function's role gets it through the topic and
queue grants. On an imported key (`Key.from_key_arn`) CDK cannot edit the key policy: grant those principals there.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs


def encrypt_queue(queue: sqs.Queue, key: kms.IKey) -> None:
    resource = queue.node.default_child
    assert isinstance(resource, sqs.CfnQueue)
    resource.sqs_managed_sse_enabled = None
    resource.kms_master_key_id = key.key_arn


def encrypt_log_group(log_group: logs.LogGroup, key: kms.IKey) -> None:
    resource = log_group.node.default_child
    assert isinstance(resource, logs.CfnLogGroup)
    resource.kms_key_id = key.key_arn
    key.grant_encrypt_decrypt(iam.ServicePrincipal(f"logs.{cdk.Aws.REGION}.amazonaws.com"))


def grant_service_writers(key: kms.IKey) -> None:
    """Alarm actions publish as cloudwatch.amazonaws.com; EventBridge sends dead letters as events.amazonaws.com."""
    for service in ("cloudwatch.amazonaws.com", "events.amazonaws.com"):
        key.grant(iam.ServicePrincipal(service), "kms:Decrypt", "kms:GenerateDataKey*")
