"""A record of every AWS call an assumed role makes on the emulator: the IAM action, the resource ARN it acts
on and that resource's tags, one JSON line each in ``<bed dir>/aws-calls.jsonl``.

The function runs with an assumed role's credentials (testbed/aws_seed.py), the test set-up with the
emulator's root keys, so only the function's calls are recorded. A test evaluates the records against the IAM
policy synthesized by the CDK app (tests/integration/test_iam_policy.py). An operation this module cannot name
is recorded as ``unknown:<method> <path>`` so a new kind of call fails that test instead of passing unseen.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from testbed.aws import sts

CALLS_FILE = "aws-calls.jsonl"
_CREDENTIAL = re.compile(r"Credential=([^/]+)/[^/]+/[^/]+/([^/]+)/aws4_request")
_EKS_CLUSTER = re.compile(r"^/clusters/([^/]+)$")
_LIFECYCLE = {"CompleteLifecycleAction", "RecordLifecycleActionHeartbeat"}
_lock = threading.Lock()


@dataclass(frozen=True)
class AwsCall:
    role_arn: str
    action: str  # IAM action, e.g. "autoscaling:CompleteLifecycleAction"
    resource: str  # the ARN IAM authorizes the call against ("*" for actions without resource-level permissions)
    tags: dict[str, str] = field(default_factory=dict)
    status: int = 0

    @classmethod
    def from_json(cls, line: str) -> AwsCall:
        return cls(**json.loads(line))


def read_calls(bed_dir: Path) -> list[AwsCall]:
    path = bed_dir / CALLS_FILE
    if not path.exists():
        return []
    return [AwsCall.from_json(line) for line in path.read_text().splitlines() if line.strip()]


def _role_of(access_key_id: str) -> str | None:
    role = sts.assumed_role(access_key_id)
    return None if role is None else str(role.role_arn)


def _operation(environ: dict[str, Any], params: dict[str, str]) -> str | None:
    if "Action" in params:  # query protocol (EC2, Auto Scaling, SNS, STS)
        return params["Action"]
    target = environ.get("HTTP_X_AMZ_TARGET")
    if target:  # JSON protocol
        return str(target).rsplit(".", 1)[-1]
    if environ.get("REQUEST_METHOD") == "GET" and _EKS_CLUSTER.match(environ.get("PATH_INFO", "")):
        return "DescribeCluster"
    return None


def _table_named(body: bytes) -> str | None:
    """The table a DynamoDB call acts on: ``TableName``, or for BatchWriteItem / BatchGetItem the one table of
    ``RequestItems`` (the function writes one table; with several, the first by name stands for them)."""
    try:
        request = json.loads(body or b"{}")
    except ValueError:
        return None
    if isinstance(request.get("TableName"), str):
        return str(request["TableName"])
    tables = sorted(request.get("RequestItems") or {})
    return tables[0] if tables else None


def _resource(
    service: str, operation: str, params: dict[str, str], environ: dict[str, Any], body: bytes = b""
) -> tuple[str, dict[str, str]]:
    from moto.core import DEFAULT_ACCOUNT_ID

    region = "us-east-1"
    if service == "dynamodb":  # every table call names its table (ListTables, not made by the function, names none)
        table = _table_named(body)
        return (f"arn:aws:dynamodb:{region}:{DEFAULT_ACCOUNT_ID}:table/{table}", {}) if table else ("*", {})
    if service == "autoscaling" and operation in _LIFECYCLE:
        from moto.autoscaling.models import autoscaling_backends

        group = autoscaling_backends[DEFAULT_ACCOUNT_ID][region].autoscaling_groups[params["AutoScalingGroupName"]]
        tags = {str(t.get("key", t.get("Key"))): str(t.get("value", t.get("Value"))) for t in group.tags}
        return str(group.arn), tags
    if service == "eks" and operation == "DescribeCluster":
        from moto.eks.models import eks_backends

        name = urllib.parse.unquote(_EKS_CLUSTER.match(environ["PATH_INFO"]).group(1))  # type: ignore[union-attr]
        cluster = eks_backends[DEFAULT_ACCOUNT_ID][region].clusters[name]
        return str(cluster.arn), dict(cluster.tags or {})
    if service == "sns" and operation == "Publish":
        return params["TopicArn"], {}
    return "*", {}


def call_of(environ: dict[str, Any], body: bytes) -> AwsCall | None:
    """The call a request makes, when an assumed role signed it (None: the test set-up's root keys, unsigned)."""
    found = _CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
    if not found:
        return None
    role_arn = _role_of(found.group(1))
    if role_arn is None:
        return None
    service = found.group(2)
    params = dict(urllib.parse.parse_qsl(environ.get("QUERY_STRING", "")))
    if "x-www-form-urlencoded" in environ.get("CONTENT_TYPE", ""):
        params.update(urllib.parse.parse_qsl(body.decode(errors="replace")))
    operation = _operation(environ, params)
    if operation is None:
        return AwsCall(role_arn, f"unknown:{environ.get('REQUEST_METHOD')} {environ.get('PATH_INFO')}", "*")
    try:
        resource, tags = _resource(service, operation, params, environ, body)
    except (KeyError, AttributeError):  # e.g. an unknown group: AWS authorizes against the named ARN anyway
        resource, tags = "*", {}
    return AwsCall(role_arn, f"{service}:{operation}", resource, tags)


def record(bed_dir: Path, call: AwsCall | None, status: int) -> None:
    """Append the call to the record when an assumed role made it (after the emulator answered it)."""
    if call is None:
        return
    with _lock, (bed_dir / CALLS_FILE).open("a") as f:
        f.write(json.dumps(asdict(replace(call, status=status)), sort_keys=True) + "\n")
