"""An optional customer-managed KMS key for the topics, queues and log group, and the alarm topic's own key.

The services that write into them need the key too, and each is let in only for this account's own use, on the
conditions AWS documents for it:

- CloudWatch Logs (the function's log group): `kms:EncryptionContext:aws:logs:arn` must be a log group of this
  account and Region. (The log group's own ARN cannot be named: the group refers to the key, so the key's policy
  naming the group would be a dependency cycle.)
- EventBridge (the delivery dead-letter queue): `kms:ViaService` must be SQS in this Region. No AWS page we found says
  EventBridge's requests to KMS carry `aws:SourceArn` / `aws:SourceAccount`; a condition on an absent key would drop
  every dead letter.
- The function's role gets the key through the topic and queue grants (and for its durable executions'
  checkpoints, execution_role.py; for the shared-reads table through DynamoDB only, shared_reads.py): IAM grants on
  the role, not key policy statements.

The alarm topic never uses the customer key: with one, it gets a key of its own (`AlarmTopicKey`, rotated), which
lets CloudWatch alarms in only with `aws:SourceAccount` this account and `aws:SourceArn` an alarm of this account and
Region. A customer key disabled or deleted stops the function's logs and queues; it must not also silence the
alarms that say so. On an imported key (`Key.from_key_arn`) CDK cannot edit the key policy: add these statements
there (docs/deploy.md).
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct

ENCRYPT_DECRYPT = ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"]
DECRYPT_GENERATE = ["kms:Decrypt", "kms:GenerateDataKey*"]


def encrypt_queue(queue: sqs.Queue, key: kms.IKey) -> None:
    resource = queue.node.default_child
    assert isinstance(resource, sqs.CfnQueue)
    resource.sqs_managed_sse_enabled = None
    resource.kms_master_key_id = key.key_arn


def encrypt_log_group(log_group: logs.LogGroup, key: kms.IKey) -> None:
    resource = log_group.node.default_child
    assert isinstance(resource, logs.CfnLogGroup)
    resource.kms_key_id = key.key_arn
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="CloudWatchLogsOfThisAccount",
            principals=[iam.ServicePrincipal(f"logs.{cdk.Aws.REGION}.amazonaws.com")],
            actions=ENCRYPT_DECRYPT,
            resources=["*"],
            conditions={"ArnLike": {"kms:EncryptionContext:aws:logs:arn": _arn("logs", "log-group:*")}},
        )
    )


def grant_service_writers(key: kms.IKey) -> None:
    """EventBridge sends dead letters to the encrypted delivery queue as events.amazonaws.com, through SQS."""
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="EventBridgeDeadLettersThroughSqs",
            principals=[iam.ServicePrincipal("events.amazonaws.com")],
            actions=DECRYPT_GENERATE,
            resources=["*"],
            conditions={"StringEquals": {"kms:ViaService": f"sqs.{cdk.Aws.REGION}.amazonaws.com"}},
        )
    )


def alarm_topic_key(scope: Construct) -> kms.Key:
    """The alarm topic's own key: CloudWatch alarms of this account and Region may publish to it, nothing else of
    the customer key's fate reaches it."""
    key = kms.Key(
        scope,
        "AlarmTopicKey",
        description="EKS Drain Orchestrator alarm topic (apart from the customer key, so alarms outlive it)",
        enable_key_rotation=True,
        removal_policy=cdk.RemovalPolicy.DESTROY,
        pending_window=cdk.Duration.days(7),
    )
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="CloudWatchAlarmsOfThisAccount",
            principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
            actions=DECRYPT_GENERATE,
            resources=["*"],
            conditions={
                "StringEquals": {"aws:SourceAccount": cdk.Aws.ACCOUNT_ID},
                "ArnLike": {"aws:SourceArn": _arn("cloudwatch", "alarm:*")},
            },
        )
    )
    return key


def _arn(service: str, resource: str) -> str:
    return f"arn:{cdk.Aws.PARTITION}:{service}:{cdk.Aws.REGION}:{cdk.Aws.ACCOUNT_ID}:{resource}"
