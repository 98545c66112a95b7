"""A deploy while a drain is held (testbed/versioned_runtime.py): the function as Lambda runs it, with two
published versions side by side. An execution waiting under a PodDisruptionBudget on version 1 keeps running on
version 1's code and configuration after version 2 is published and the alias moved; a new event runs on
version 2; `drain-orchestrator versions --prune` keeps version 1 while its execution runs — under each reading of
ListDurableExecutionsByFunction that Lambda's documents allow (testbed/durable_listing.py) — and deletes it after.
The bed's listing itself answers as the documents say (qualifier, statuses, MaxItems, unknown versions)."""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.durable_listing import ALIAS_ARNS, API_REFERENCE, BEHAVIOURS
from testbed.kube import KubeScenario
from testbed.runtime import FunctionConfig
from testbed.versioned_runtime import VersionedRuntime
from tests.integration.cli_support import run_cli
from tests.integration.lambda_support import deployed_function

pytestmark = [pytest.mark.integration, pytest.mark.long_running]
SERVED = "blue"
FUNCTION = "drain-orchestrator"
OWNED = {"kubernetes.io/cluster/blue": "owned"}
HOOK = {"name": "drain", "transition": "autoscaling:EC2_INSTANCE_TERMINATING", "heartbeat_timeout": 300}
# version 2 is a new release: published with a changed configuration that every one of its log lines carries
SERVICE_V1, SERVICE_V2 = "drain-orchestrator", "drain-orchestrator-next"


@pytest.fixture
def versioned(
    testbed: Testbed, aws: AwsSeed, template: dict[str, Any], tmp_path: Path
) -> Iterator[tuple[VersionedRuntime, FunctionConfig, dict[str, str]]]:
    env, _queue = aws.lambda_env(SERVED)
    function = deployed_function(template, env)
    # short passes are only accepted with a short lifecycle cap (the durable-operation bound, pacing.py)
    env.update(
        DRAIN_PASS_SECONDS="5", RECHECK_MIN_SECONDS="2", RECHECK_MAX_SECONDS="2", DEADLINE_ASG_TERMINATE_SECONDS="3600"
    )
    trust = {
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]
    }
    role = aws.client("iam").create_role(
        RoleName="drain-orchestrator-function", AssumeRolePolicyDocument=json.dumps(trust)
    )
    rt = VersionedRuntime.start(testbed, tmp_path, FUNCTION, aws.client("lambda"), role["Role"]["Arn"])
    try:
        yield rt, function, env
    finally:
        rt.stop()


def _event(iid: str, token: str) -> dict[str, Any]:
    event = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook="drain", token=token)
    return {**event, "id": str(uuid.uuid4()), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def _log_lines(path: Path) -> list[dict[str, Any]]:
    lines = []
    for raw in path.read_text(errors="replace").splitlines():
        start = raw.find("{")
        if start < 0:
            continue
        try:
            doc = json.loads(raw[start:])
        except ValueError:
            continue
        if isinstance(doc, dict) and "service" in doc:
            lines.append(doc)
    return lines


def _listed(client: Any, **params: Any) -> list[str]:
    pages = client.get_paginator("list_durable_executions_by_function").paginate(FunctionName=FUNCTION, **params)
    return [e["DurableExecutionArn"] for page in pages for e in page["DurableExecutions"]]


def _refused(call: Any, code: str) -> None:
    try:
        call()
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == code, exc.response
        return
    raise AssertionError(f"expected {code}")


def _listing_as_documented(rt: VersionedRuntime, aws: AwsSeed, v1: str, held: str) -> None:
    """The bed's ListDurableExecutionsByFunction as the API reference documents it (its default reading)."""
    client = boto3.client(
        "lambda",
        endpoint_url=rt.lambda_endpoint,
        region_name=aws.region,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    assert rt.front.listing is API_REFERENCE
    assert held not in _listed(client)  # no qualifier: $LATEST's executions only
    assert held in _listed(client, Qualifier=v1)
    assert held in _listed(client, Qualifier=v1, Statuses=["RUNNING"])
    assert held not in _listed(client, Qualifier=v1, Statuses=["SUCCEEDED"])
    _refused(lambda: _listed(client, Qualifier=v1, Statuses=["PAUSED"]), "InvalidParameterValueException")
    _refused(
        lambda: client.list_durable_executions_by_function(FunctionName=FUNCTION, MaxItems=1001),
        "InvalidParameterValueException",
    )
    _refused(lambda: _listed(client, Qualifier="99"), "ResourceNotFoundException")
    _refused(lambda: _listed(client, Qualifier="no-such-alias"), "ResourceNotFoundException")
    rt.front.listing = ALIAS_ARNS  # started through the alias: listed under it, its version named by the execution
    try:
        assert held not in _listed(client, Qualifier=v1)
        (listed,) = client.list_durable_executions_by_function(FunctionName=FUNCTION, Qualifier="live")[
            "DurableExecutions"
        ]
        assert (listed["DurableExecutionArn"], listed["FunctionArn"].rsplit(":", 1)[1]) == (held, "live")
        assert client.get_durable_execution(DurableExecutionArn=held)["Version"] == v1
    finally:
        rt.front.listing = API_REFERENCE


def _versions(rt: VersionedRuntime, *flags: str) -> dict[str, Any]:
    """`drain-orchestrator versions` as an operator runs it, against the bed's Lambda endpoint."""
    env = {**rt.bed.aws_env(), "AWS_ENDPOINT_URL_LAMBDA": rt.lambda_endpoint}
    out = run_cli("versions", "--function", FUNCTION, "--json", *flags, env=env)
    assert out.returncode == 0, out.stderr
    doc: dict[str, Any] = json.loads(out.stdout)
    return {row["version"]: row for row in doc["versions"]}


def test_held_drain_finishes_on_its_version_after_a_deploy(
    aws: AwsSeed,
    k8s: KubeScenario,
    lambda_roots: tuple[Path, Path],
    versioned: tuple[VersionedRuntime, FunctionConfig, dict[str, str]],
) -> None:
    from testbed.binaries import locate_binaries

    rt, function, env = versioned
    bins = locate_binaries()
    aws.eks_cluster(SERVED)
    held_iid, new_iid = aws.asg("ng-blue", size=2, tags=OWNED, hooks=[HOOK])
    held_node, new_node = aws.nodes_for(k8s, [held_iid, new_iid])
    (spare,) = k8s.add_nodes(1)
    k8s.deployment_on("web", 2, [held_node], spare, grace=1)
    k8s.pdb("web", {"app": "web"}, max_unavailable=0)  # holds the first drain until the test relaxes it
    k8s.wait_pdb("web", disruptions_allowed=0)

    v1_config = dataclasses.replace(
        function, environment={**function.environment, "POWERTOOLS_SERVICE_NAME": SERVICE_V1}
    )
    v1 = rt.publish(bins, v1_config, env, lambda_roots)
    rt.point_alias(v1)
    held = rt.deliver(_event(held_iid, aws.start_lifecycle_action("ng-blue", "drain", held_iid)), "held")
    k8s.wait_for(
        lambda: any(e["EventType"] == "WaitStarted" for e in rt.history(held)), timeout=90, what="the PDB hold"
    )

    # the deploy: version 2 published and the alias moved while the first drain waits
    v2_config = dataclasses.replace(
        function, environment={**function.environment, "POWERTOOLS_SERVICE_NAME": SERVICE_V2}
    )
    v2 = rt.publish(bins, v2_config, env, lambda_roots)
    rt.point_alias(v2)
    assert v2 != v1

    _listing_as_documented(rt, aws, v1, held)
    for reading in BEHAVIOURS.values():  # every reading of the listing the documents allow
        rt.front.listing = reading
        rows = _versions(rt, "--prune", "--yes")  # nothing may go: 1 runs the held drain, 2 is the alias target
        assert rows[v1]["executions"] == [held] and rows[v1]["action"] == "keep", (reading.name, rows)
        assert rows[v2]["aliases"] == ["live"] and rows[v2]["action"] == "keep", (reading.name, rows)
    rt.front.listing = API_REFERENCE

    fresh = rt.deliver(_event(new_iid, aws.start_lifecycle_action("ng-blue", "drain", new_iid)), "after-deploy")
    after_deploy = rt.wait(fresh, timeout=90)
    assert after_deploy.status == "SUCCEEDED", after_deploy.error
    assert [(i["node"], i["result"]) for i in after_deploy.result["instances"]] == [(new_node, "drained")]
    assert rt.describe(held).status == "RUNNING"  # still held, on version 1

    k8s.policy.patch_namespaced_pod_disruption_budget("web", k8s.ns, {"spec": {"maxUnavailable": 1}})
    done = rt.wait(held, timeout=90)

    assert done.status == "SUCCEEDED", done.error
    assert [(i["node"], i["result"]) for i in done.result["instances"]] == [(held_node, "drained")]
    assert done.raw["FunctionArn"].endswith(f":function:{FUNCTION}:{v1}")
    assert rt.describe(fresh).raw["FunctionArn"].endswith(f":function:{FUNCTION}:{v2}")
    actions = {a["instance_id"]: (a["state"], a["result"]) for a in aws.lifecycle_actions()}
    assert actions == {held_iid: ("COMPLETED", "CONTINUE"), new_iid: ("COMPLETED", "CONTINUE")}
    # every invocation of each execution ran on its own version: the held one's resumed passes and its verdict
    # in version 1's runtime with version 1's configuration, the new event's in version 2's
    by_instance: dict[str, set[tuple[str, str]]] = {held_iid: set(), new_iid: set()}
    for version, path in rt.logs_of.items():
        for line in _log_lines(path):
            if line.get("instance_id") in by_instance:
                by_instance[line["instance_id"]].add((version, line["service"]))
    assert by_instance == {held_iid: {(v1, SERVICE_V1)}, new_iid: {(v2, SERVICE_V2)}}
    held_v1 = [line for line in _log_lines(rt.logs_of[v1]) if line.get("instance_id") == held_iid]
    assert any(line["message"] == "drain pass" and line.get("drained") for line in held_v1)  # resumed after the hold
    assert any(line["message"] == "lifecycle action" and line.get("outcome") == "completed" for line in held_v1)

    rows = _versions(rt, "--prune", "--yes")  # the held drain is over: version 1 goes, the alias target stays
    assert rows[v1]["action"] == "deleted" and rows[v2]["action"] == "keep"
    listed = aws.client("lambda").list_versions_by_function(FunctionName=FUNCTION)["Versions"]
    assert [v["Version"] for v in listed] == ["$LATEST", v2]
