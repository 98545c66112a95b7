"""The shared-reads table on the bed is the one the stack creates (its keys and TTL, as the CDK app synthesizes them),
made again after the emulator's reset; and the role policy the app synthesizes is exactly enough for the function's
calls on it: with that policy enforced by the emulator (testbed/aws/iam.py), each action the function needs
(drain_orchestrator/aws/reads_table.py ACTIONS) succeeds on the table and is denied on another table."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from drain_orchestrator.aws import reads_table
from testbed.aws.calls import read_calls
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from tests.iam_support import role_policies
from tests.integration.lambda_support import ROLE

pytestmark = pytest.mark.integration
TOPIC = "arn:aws:sns:us-east-1:123456789012:drain-notifications"


def _synthesized_table(template: dict[str, Any]) -> dict[str, Any]:
    (table,) = [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::DynamoDB::Table"]
    return table  # type: ignore[no-any-return]


def test_the_beds_table_is_the_stacks_and_outlives_a_reset(aws: AwsSeed, template: dict[str, Any]) -> None:
    synthesized = _synthesized_table(template)
    env, _ = aws.lambda_env("blue")
    name = env[reads_table.TABLE_VARIABLE]
    dynamodb = aws.client("dynamodb")
    table = dynamodb.describe_table(TableName=name)["Table"]
    assert table["KeySchema"] == synthesized["KeySchema"]
    assert sorted(table["AttributeDefinitions"], key=str) == sorted(synthesized["AttributeDefinitions"], key=str)
    assert table["BillingModeSummary"]["BillingMode"] == synthesized["BillingMode"] == "PAY_PER_REQUEST"
    ttl = dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    expiry = synthesized["TimeToLiveSpecification"]
    assert expiry == {"AttributeName": reads_table.EXPIRY_ATTRIBUTE, "Enabled": True}
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": expiry["AttributeName"]}

    assert aws.lambda_env("blue")[0][reads_table.TABLE_VARIABLE] == name  # again: the table exists, kept
    aws.reset()
    with pytest.raises(dynamodb.exceptions.ResourceNotFoundException):
        dynamodb.describe_table(TableName=name)
    aws.lambda_env("blue")
    assert dynamodb.describe_table(TableName=name)["Table"]["TableStatus"] == "ACTIVE"


def _calls(table: str) -> dict[str, Callable[[Any], object]]:
    """One call per action the function's role is granted on the table, as the function makes them."""
    key = {reads_table.PARTITION_KEY: {"S": "lease"}, reads_table.SORT_KEY: {"S": "lease"}}
    item = {**key, reads_table.EXPIRY_ATTRIBUTE: {"N": str(int(time.time()) + 600)}}
    want = {**item, reads_table.PARTITION_KEY: {"S": "want#0"}, reads_table.SORT_KEY: {"S": "000000000000001#i-1"}}
    return {
        "dynamodb:BatchGetItem": lambda c: c.batch_get_item(
            RequestItems={table: {"Keys": [key], "ConsistentRead": True}}
        ),
        "dynamodb:UpdateItem": lambda c: c.update_item(
            TableName=table, Key=key, UpdateExpression="SET holder = :h", ExpressionAttributeValues={":h": {"S": "x"}}
        ),
        "dynamodb:Query": lambda c: c.query(
            TableName=table,
            KeyConditionExpression=f"{reads_table.PARTITION_KEY} = :p",
            ExpressionAttributeValues={":p": {"S": "want#0"}},
        ),
        "dynamodb:BatchWriteItem": lambda c: c.batch_write_item(RequestItems={table: [{"PutRequest": {"Item": want}}]}),
    }


def test_the_synthesized_grant_allows_the_functions_calls_on_its_table_and_on_no_other(
    testbed: Testbed, aws: AwsSeed, template: dict[str, Any]
) -> None:
    ours = aws.lambda_env("blue")[0][reads_table.TABLE_VARIABLE]
    theirs = aws.shared_reads_table("someone-elses-table")
    assert set(_calls(ours)) == set(reads_table.ACTIONS)  # every action granted is exercised here
    aws.enforce_iam(ROLE, role_policies(template, TOPIC, table_name=ours))
    client = aws.lambda_session(ROLE).client("dynamodb", endpoint_url=aws.endpoint)
    before = len(read_calls(testbed.dir))
    try:
        for call in _calls(ours).values():
            call(client)
        denied = []
        for action, call in _calls(theirs).items():
            with pytest.raises(ClientError) as raised:
                call(client)
            error = raised.value.response
            denied.append((action, error["Error"]["Code"], error["ResponseMetadata"]["HTTPStatusCode"]))
    finally:
        aws.enforce_iam(ROLE, [])
    assert denied == [(action, "AccessDeniedException", 403) for action in _calls(theirs)]
    recorded = [c for c in read_calls(testbed.dir)[before:] if c.role_arn == aws.role_arn(ROLE)]
    # the emulator named each call's table (what IAM authorizes it against), so the policy was really evaluated
    table_arn = f"arn:aws:dynamodb:{aws.region}:{aws.account_id}:table/"
    assert [(c.action, c.resource) for c in recorded] == [
        *((a, table_arn + ours) for a in _calls(ours)),
        *((a, table_arn + theirs) for a in _calls(theirs)),
    ]
