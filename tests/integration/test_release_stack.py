"""The release's plain CloudFormation template, deployed as docs/deploy.md says (the Lambda zip uploaded to a bucket,
the stack created with parameters) in the bed's AWS emulator, and the function the stack created run as Lambda
runs it (testbed/runtime.py): its code from the S3 object the stack names, its handler, runtime, timeout, memory and
environment from GetFunction; a lifecycle hook's event drains a node of the bed and completes the action.

What the emulator does not do, and this test therefore does in its place or leaves unproven, is listed in
docs/deploy.md ("What the emulator proves"): moto skips the access entry (put on the bed here from the template's
resource), the queue and topic policies, the invoke config; EventBridge does not deliver to the function (the
event is started as a durable execution directly); the RBAC custom resource needs Docker in moto (ApplyRbac=false:
the bed's RBAC is infra/k8s/rbac.yaml, as applied by hand).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from drain_orchestrator import __version__
from infra import bundle, release_template
from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.binaries import locate_binaries
from testbed.kube import KubeScenario
from testbed.runtime import FunctionConfig, LambdaRuntime, build_runtime_root
from tests.infra.conftest import release_script  # (and the pinned Node on PATH, for the template's synths)
from tests.infra.template_resolve import resolve

# the template's synths and the zip's build come first: minutes on a loaded machine
pytestmark = [pytest.mark.integration, pytest.mark.long_running, pytest.mark.timeout(1200)]

CLUSTER = "blue"
HOOK = "drain"  # LifecycleHookName: the hook the function answers
BUCKET = "my-artifacts"
STACK = "drain-orchestrator-blue"
# the RBAC custom resource's function would need Docker in moto: the bed has infra/k8s/rbac.yaml applied
PARAMETERS = {"ClusterName": CLUSTER, "CodeBucket": BUCKET, "LifecycleHookName": HOOK, "ApplyRbac": "false"}
# what moto 5.2.5 creates nothing for (docs/deploy.md); anything else skipped fails the test
SKIPPED_BY_MOTO = {
    "AWS::EKS::AccessEntry",
    "AWS::Lambda::EventInvokeConfig",
    "AWS::SNS::TopicPolicy",
    "AWS::SQS::QueuePolicy",
}


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """The template `make release` writes, and the release's Lambda zip (its recipe, with this machine's wheels:
    the released zip's are arm64, for Lambda's Graviton), named as the template's CodeKey default names it."""
    work = tmp_path_factory.mktemp("release")
    template = release_template.build(__version__, work / "template")
    archive = work / template["Parameters"]["CodeKey"]["Default"]
    release_script().lambda_zip(archive, bundle.host_platform())
    return template, archive


@pytest.fixture(scope="module")
def runtime_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_runtime_root(tmp_path_factory.mktemp("runtime"))


def _deploy(aws: AwsSeed, template: dict[str, Any], archive: Path) -> dict[str, str]:
    """`aws s3 cp` and `aws cloudformation deploy --s3-bucket` as docs/deploy.md shows them (the template, over the
    51,200 bytes CloudFormation takes inline, from the bucket); the stack's outputs."""
    s3, cfn = aws.client("s3"), aws.client("cloudformation")
    s3.create_bucket(Bucket=BUCKET)
    s3.upload_file(str(archive), BUCKET, archive.name)
    template_key = f"drain-orchestrator-{__version__}.template.json"
    s3.put_object(Bucket=BUCKET, Key=template_key, Body=json.dumps(template, indent=1).encode())  # as released
    cfn.create_stack(
        StackName=STACK,
        TemplateURL=f"https://{BUCKET}.s3.amazonaws.com/{template_key}",
        Capabilities=["CAPABILITY_IAM"],
        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in PARAMETERS.items()],
    )
    (stack,) = cfn.describe_stacks(StackName=STACK)["Stacks"]
    assert stack["StackStatus"] == "CREATE_COMPLETE", stack.get("StackStatusReason")
    return {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}


def _created(aws: AwsSeed) -> dict[str, str]:
    """Logical id -> type of every resource the emulator created (it lists what it skipped without either)."""
    summaries = aws.client("cloudformation").list_stack_resources(StackName=STACK)["StackResourceSummaries"]
    return {r["LogicalResourceId"]: r["ResourceType"] for r in summaries if r["LogicalResourceId"]}


def _physical_id(aws: AwsSeed, logical_id: str) -> str:
    summaries = aws.client("cloudformation").list_stack_resources(StackName=STACK)["StackResourceSummaries"]
    (found,) = [r["PhysicalResourceId"] for r in summaries if r["LogicalResourceId"] == logical_id]
    return str(found)


def _function_code(aws: AwsSeed, configuration: dict[str, Any], directory: Path) -> Path:
    """The code of the created function: the S3 object the stack names, which is what the function holds
    (GetFunction's CodeSha256 is that object's), unpacked as Lambda unpacks it into /var/task."""
    body = aws.client("s3").get_object(Bucket=BUCKET, Key=f"drain-orchestrator-lambda-{__version__}.zip")["Body"]
    data = body.read()
    assert configuration["CodeSha256"] == base64.b64encode(hashlib.sha256(data).digest()).decode()
    task = directory / "task"
    zipfile.ZipFile(io.BytesIO(data)).extractall(task)
    return task


def _function_config(configuration: dict[str, Any]) -> FunctionConfig:
    environment = dict(configuration["Environment"]["Variables"])
    logging = configuration.get("LoggingConfig") or {}
    if logging.get("LogFormat") == "JSON":  # what Lambda sets for JSON logging
        environment |= {"AWS_LAMBDA_LOG_FORMAT": "JSON",
                        "AWS_LAMBDA_LOG_LEVEL": logging.get("ApplicationLogLevel", "INFO")}  # fmt: skip
    return FunctionConfig(
        configuration["Handler"],
        configuration["Runtime"],
        int(configuration["Timeout"]),
        int(configuration["MemorySize"]),
        environment,
    )


def _access_entry(testbed: Testbed, template: dict[str, Any], role_arn: str) -> None:
    """What the stack's AWS::EKS::AccessEntry creates (moto skips it): the role in the template's groups."""
    (entry,) = [
        r["Properties"]
        for k, r in template["Resources"].items()
        if r["Type"] == "AWS::EKS::AccessEntry" and not k.startswith("DrainOrchestratorRbac")
    ]
    role_name = role_arn.rsplit("/", 1)[1]
    username = f"arn:aws:sts::{testbed.account_id}:assumed-role/{role_name}/{{{{SessionName}}}}"  # EKS's default
    testbed.put_access_entry(CLUSTER, role_arn, username, list(entry["KubernetesGroups"]))


def _role_env(aws: AwsSeed, testbed: Testbed, role_arn: str) -> dict[str, str]:
    """The bed's endpoints and the credentials Lambda gives the function: its execution role's."""
    creds = aws.client("sts").assume_role(RoleArn=role_arn, RoleSessionName="drain-orchestrator")["Credentials"]
    return {
        **testbed.aws_env(),
        "AWS_ACCESS_KEY_ID": creds["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": creds["SecretAccessKey"],
        "AWS_SESSION_TOKEN": creds["SessionToken"],
    }


def test_the_released_stack_drains_a_node_in_the_emulator(
    testbed: Testbed,
    aws: AwsSeed,
    k8s: KubeScenario,
    release: tuple[dict[str, Any], Path],
    runtime_root: Path,
    tmp_path: Path,
) -> None:
    template, archive = release
    outputs = _deploy(aws, template, archive)

    expected = resolve(template, PARAMETERS)["Resources"]  # what CloudFormation would create with them
    created = _created(aws)
    assert set(created) <= set(expected)
    assert {expected[k]["Type"] for k in set(expected) - set(created)} == SKIPPED_BY_MOTO

    function_name = outputs["FunctionAliasArn"].split(":")[6]
    configuration = aws.client("lambda").get_function(FunctionName=function_name)["Configuration"]
    assert configuration["Environment"]["Variables"]["CLUSTER_NAMES"] == CLUSTER
    assert configuration["Environment"]["Variables"]["LIFECYCLE_HOOK_NAMES"] == HOOK
    assert configuration["Environment"]["Variables"]["NOTIFICATION_TOPIC_ARN"] == outputs["NotificationTopicArn"]
    assert configuration["Role"] == outputs["FunctionRoleArn"]
    # the shared-reads table, with its TTL (moto's CloudFormation drops it: testbed/aws/cloudformation.py)
    (table,) = [k for k, t in created.items() if t == "AWS::DynamoDB::Table"]
    table_name = configuration["Environment"]["Variables"]["SHARED_READS_TABLE"]
    assert table_name == _physical_id(aws, table)
    ttl = aws.client("dynamodb").describe_time_to_live(TableName=table_name)["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expires"}
    alias = aws.client("lambda").get_alias(FunctionName=function_name, Name="live")
    assert alias["AliasArn"] == outputs["FunctionAliasArn"] and alias["FunctionVersion"] != "$LATEST"
    task = _function_code(aws, configuration, tmp_path)
    _access_entry(testbed, template, outputs["FunctionRoleArn"])

    aws.eks_cluster(CLUSTER)
    owned = {f"kubernetes.io/cluster/{CLUSTER}": "owned"}
    hook = {"name": HOOK, "transition": "autoscaling:EC2_INSTANCE_TERMINATING", "heartbeat_timeout": 300}
    (iid,) = aws.asg("ng-blue", size=1, tags=owned, hooks=[hook])
    (node,) = aws.nodes_for(k8s, [iid])
    (spare,) = k8s.add_nodes(1)
    k8s.deployment_on("web", 2, [node], spare, grace=1)
    token = aws.start_lifecycle_action("ng-blue", HOOK, iid)

    runtime = LambdaRuntime.start(
        testbed,
        locate_binaries(),
        _function_config(configuration),
        _role_env(aws, testbed, outputs["FunctionRoleArn"]),
        (task, runtime_root),
    )
    try:
        event = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook=HOOK, token=token)
        event["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        done = runtime.wait(runtime.start_execution(event, "release-stack-drain"), timeout=240)
    finally:
        runtime.stop()

    assert done.status == "SUCCEEDED", (done.error, runtime.logs())
    (instance,) = done.result["instances"]
    assert instance["result"] == "drained" and instance["node"] == node
    assert k8s.core.read_node(node).spec.unschedulable is True
    left = k8s.core.list_namespaced_pod(k8s.ns, field_selector=f"spec.nodeName={node}").items
    assert [p.metadata.name for p in left if p.metadata.deletion_timestamp is None] == []
    (action,) = aws.lifecycle_actions()
    assert action["state"] == "COMPLETED" and action["result"] == "CONTINUE"
    assert action["completed_by"] == outputs["FunctionRoleArn"]  # by the stack's role, with its policy
