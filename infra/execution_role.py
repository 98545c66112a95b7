"""The function's own runtime permissions: its log group and its durable executions, scoped to this function.

CDK gives a durable function's role the AWS-managed `AWSLambdaBasicDurableExecutionRolePolicy`: logs and the two
durable execution APIs on `Resource: "*"`, i.e. on every durable function of the account. The durable SDK calls
exactly two APIs (aws_durable_execution_sdk_python/lambda_service.py: `checkpoint_durable_execution` and
`get_durable_execution_state`), which Lambda authorizes against the execution's ARN,
`<function ARN>:<version>/durable-execution/<name>/<id>`: `<function ARN>:*` covers every version's executions
(an alias never appears in one, and the unqualified ARN matches none). Lambda writes the function's logs with the
role into the construct's own log group. So the managed policy goes, and two inline grants replace it:

- logs:CreateLogStream and logs:PutLogEvents on the log group (in the role's default policy, which the function
  waits for: logging works from its first invocation);
- the durable APIs on `<function ARN>:*`, in a policy of its own (`DurableExecutionPolicy`): it names the
  function's ARN, so the function cannot wait for it without a cycle; the published version (hence the alias, the
  only invoke target, and every rule) waits for it instead, so no execution starts before it exists.

With a customer key (`encryption_key`), `DurableConfig.KMSKeyArn` makes Lambda encrypt the executions' payloads and
checkpoints with it (the L2 `DurableConfig` has no such property: an escape hatch).
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

MANAGED_DURABLE_POLICY = "service-role/AWSLambdaBasicDurableExecutionRolePolicy"
# the durable SDK's two calls (its lambda_service.py), and nothing else
DURABLE_ACTIONS = ["lambda:CheckpointDurableExecution", "lambda:GetDurableExecutionState"]
LOG_ACTIONS = ["logs:CreateLogStream", "logs:PutLogEvents"]
_IAM5 = "AwsSolutions::AwsSolutions-IAM5"


def scope_execution_role(scope: Construct, function: lambda_.Function, log_group: logs.ILogGroup) -> iam.Policy:
    """Replace the managed durable-execution policy with grants on this function and its log group only."""
    role = function.role
    assert isinstance(role, iam.Role)  # the Function made it: no role is passed in
    _drop_managed_durable_policy(role)
    function.add_to_role_policy(
        iam.PolicyStatement(sid="FunctionLogs", actions=LOG_ACTIONS, resources=[log_group.log_group_arn])
    )
    policy = iam.Policy(
        scope,
        "DurableExecutionPolicy",
        statements=[
            iam.PolicyStatement(
                sid="OwnDurableExecutions",
                actions=DURABLE_ACTIONS,
                resources=[f"{function.function_arn}:*"],
            )
        ],
        roles=[role],
    )
    function.current_version.node.add_dependency(policy)
    return policy


def _drop_managed_durable_policy(role: iam.Role) -> None:
    """The role's ManagedPolicyArns without the durable one (the VPC access policy stays where CDK adds it)."""
    durable = iam.ManagedPolicy.from_aws_managed_policy_name(MANAGED_DURABLE_POLICY).managed_policy_arn
    stack = cdk.Stack.of(role)
    resource = role.node.default_child
    assert isinstance(resource, iam.CfnRole)
    kept = [arn for arn in stack.resolve(resource.managed_policy_arns) or [] if arn != stack.resolve(durable)]
    # the L1 property itself (not an override): cdk-nag and the template then both see the list without it
    resource.managed_policy_arns = [cdk.Token.as_string(arn) for arn in kept] or None


def encrypt_durable_state(function: lambda_.Function, key: kms.IKey) -> None:
    """DurableConfig.KMSKeyArn: executions started after the deploy use the key for their whole life (earlier
    ones keep theirs). The role already holds kms:Decrypt and kms:GenerateDataKey* on the key (construct.py)."""
    resource = function.node.default_child
    assert isinstance(resource, lambda_.CfnFunction)
    resource.add_property_override("DurableConfig.KMSKeyArn", key.key_arn)


def nag_findings(function: lambda_.Function) -> dict[str, str]:
    """The cdk-nag finding the version wildcard raises, with its reason (infra/nag.py records it)."""
    resource = function.node.default_child
    assert isinstance(resource, cdk.CfnElement)
    logical = cdk.Stack.of(function).get_logical_id(resource)
    return {
        f"{_IAM5}[Resource::<{logical}.Arn>:*]": (
            "Durable execution ARNs extend the function ARN with the version they run on "
            "(<function ARN>:<version>/durable-execution/...): the `*` stands for this function's versions."
        )
    }
