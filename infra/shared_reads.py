"""The shared-reads table (DynamoDB): when EC2 throttles DescribeInstances in a fleet-wide reclaim, the function's
executions leave the instances they need read there and one of them, holding the table's lease, reads them all with
one call and publishes the facts (the function's drain_orchestrator/shared_reads.py has the protocol).

Its schema and the function's actions on it: reads_table.py.

- On-demand (PAY_PER_REQUEST): idle between reclaims, it then costs nothing but the few kilobytes it stores.
- Deleted with the stack (RemovalPolicy.DESTROY): it holds wants, a lease and facts minutes old, which the TTL
  (``expires``) deletes anyway; nothing in it is worth keeping past `cdk destroy`, and a retained table would be left
  behind under a generated name nobody deletes.
- No point-in-time recovery, for the same reason: a restored copy would hold only facts too old to act on.
- Encrypted like the construct's other resources: with the customer key when one is given (the function's role then
  uses the key through DynamoDB only), otherwise with DynamoDB's default, an AWS-owned key.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from .reads_table import ACTIONS, EXPIRY_ATTRIBUTE, PARTITION_KEY, SORT_KEY

# What DynamoDB needs of a caller's key permissions on a table under a customer key (reads decrypt, writes encrypt),
# beyond the kms:Decrypt and kms:GenerateDataKey* the role already holds on the key (construct.py).
KEY_ACTIONS = ("kms:Encrypt", "kms:ReEncrypt*", "kms:DescribeKey")


def shared_reads_table(scope: Construct, encryption_key: kms.IKey | None) -> dynamodb.Table:
    return dynamodb.Table(
        scope,
        "SharedReadsTable",
        partition_key=dynamodb.Attribute(name=PARTITION_KEY, type=dynamodb.AttributeType.STRING),
        sort_key=dynamodb.Attribute(name=SORT_KEY, type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        time_to_live_attribute=EXPIRY_ATTRIBUTE,
        encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED if encryption_key else dynamodb.TableEncryption.DEFAULT,
        encryption_key=encryption_key,
        removal_policy=cdk.RemovalPolicy.DESTROY,
    )


def grant_shared_reads(function: lambda_.Function, table: dynamodb.Table, encryption_key: kms.IKey | None) -> None:
    """Exactly the function's calls, on this table only (no index: it has none)."""
    function.add_to_role_policy(
        iam.PolicyStatement(sid="SharedReadsTable", actions=list(ACTIONS), resources=[table.table_arn])
    )
    if encryption_key is not None:
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="SharedReadsTableKey",
                actions=list(KEY_ACTIONS),
                resources=[encryption_key.key_arn],
                conditions={"StringEquals": {"kms:ViaService": f"dynamodb.{cdk.Aws.REGION}.amazonaws.com"}},
            )
        )


NAG_REASONS = {
    "AwsSolutions::AwsSolutions-DDB3": (
        "The shared-reads table holds only EC2 facts minutes old, which its TTL deletes: a point-in-time restore "
        "would bring back nothing a drain could act on."
    ),
}
