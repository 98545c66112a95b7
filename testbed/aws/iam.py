"""IAM on the emulator, for the roles a test asks it of: their calls on a resource are allowed or denied by the
identity policies the test installed, as AWS's IAM would decide them.

moto authorizes nothing by default and ignores resource-tag conditions when it does, so the decision is made by
@cloud-copilot/iam-simulate (testbed/iam_simulate.mjs, the same evaluator tests/integration/test_iam_policy.py uses)
against the call's resource ARN and that resource's tags (calls.py). Only calls on a named resource are evaluated
(lifecycle calls on a group, DescribeCluster, Publish, DynamoDB calls on a table); Describe calls on `*` are left to
test_iam_policy.py.
A denied call is answered as AWS answers it: HTTP 403, code AccessDenied (query protocol) or
AccessDeniedException (JSON protocols). ``POST /_testbed/iam/policies`` ``{"role_arn", "policies": [{name,
policy}]}`` installs a role's policies (an empty list removes them); moto's reset clears them all.
"""

from __future__ import annotations

import json
import subprocess
import threading
import uuid
from pathlib import Path
from typing import Any

from testbed.aws.calls import AwsCall

REPO = Path(__file__).resolve().parents[2]
NODE = REPO / "node_modules" / "node" / "bin" / "node"
SIMULATOR = REPO / "testbed" / "iam_simulate.mjs"
ACCOUNT_ID = "123456789012"
_JSON_SERVICES = ("eks", "dynamodb")


class Enforcer:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.policies: dict[str, list[dict[str, Any]]] = {}
        self.decided: dict[str, bool] = {}

    def install(self, role_arn: str, policies: list[dict[str, Any]]) -> dict[str, Any]:
        with self.lock:
            if policies:
                self.policies[role_arn] = list(policies)
            else:
                self.policies.pop(role_arn, None)
            self.decided.clear()
        return {"role_arn": role_arn, "policies": len(policies)}

    def clear(self) -> None:
        with self.lock:
            self.policies.clear()
            self.decided.clear()

    def allows(self, call: AwsCall) -> bool:
        with self.lock:
            policies = self.policies.get(call.role_arn)
        if policies is None or call.resource == "*":
            return True
        key = json.dumps([call.role_arn, call.action, call.resource, sorted(call.tags.items())])
        with self.lock:
            if key in self.decided:
                return self.decided[key]
        allowed = _simulate(policies, call) == "Allowed"
        with self.lock:
            self.decided[key] = allowed
        return allowed


def _simulate(policies: list[dict[str, Any]], call: AwsCall) -> str:
    payload = {
        "account": ACCOUNT_ID,
        "principal": call.role_arn,
        "policies": policies,
        "calls": [{"action": call.action, "resource": call.resource, "tags": call.tags}],
    }
    out = subprocess.run(
        [str(NODE), str(SIMULATOR)], input=json.dumps(payload), capture_output=True, text=True, timeout=60, check=False
    )
    if out.returncode != 0:  # a broken evaluator must not pass for an allow
        raise RuntimeError(f"the IAM simulator failed: {out.stderr[-500:]}")
    (result,) = json.loads(out.stdout)
    if result["errors"]:
        raise RuntimeError(f"the IAM simulator could not evaluate {call.action}: {result['errors']}")
    return str(result["result"])


def denial(call: AwsCall) -> tuple[str, list[tuple[str, str]], bytes]:
    """AWS's answer to a call IAM denies: status line, headers, body."""
    service = call.action.split(":", 1)[0]
    message = (
        f"User: {call.role_arn} is not authorized to perform: {call.action} on resource: {call.resource} "
        f"because no identity-based policy allows the {call.action} action"
    )
    rid = str(uuid.uuid4())
    if service in _JSON_SERVICES:  # REST-JSON (EKS) reads the header, JSON (DynamoDB) the body's __type
        body = json.dumps({"__type": "com.amazon.coral.service#AccessDeniedException", "message": message}).encode()
        headers = [("Content-Type", "application/json"), ("x-amzn-ErrorType", "AccessDeniedException")]
        return "403 Forbidden", headers, body
    xml = (
        f"<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>{message}</Message></Error>"
        f"<RequestId>{rid}</RequestId></ErrorResponse>"
    )
    return "403 Forbidden", [("Content-Type", "text/xml")], xml.encode()


IAM = Enforcer()
