"""The local account for a shell: `make -s env` prints `export` lines for the running bed, and `make demo`
prepares the walk-through of the README (events for a blue node still in service, with a live lifecycle action).

What is exported is what the deployed function has: the emulator's endpoint, the region (both AWS_REGION and
AWS_DEFAULT_REGION: botocore reads the latter), credentials of the function's role (assumed through the emulator's
STS, so the EKS token names that role and the access entry the demo created applies), CLUSTER_NAMES and
LIFECYCLE_HOOK_NAMES (the demo's hooks), and for the kubectl-like commands the bed's kubeconfig; PATH gains
.venv/bin so `drain-orchestrator` runs as written.
"""

from __future__ import annotations

import json
import shlex
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from drain_orchestrator.restamp import restamp
from testbed import samples
from testbed.aws_seed import OUR_HOOKS, AwsSeed
from testbed.bed import REPO, Testbed

# `make cluster-up` and `make demo` end with this: how a shell reaches the local account
ENV_HINT = 'for the CLI in this shell: eval "$(make -s env)"   (endpoint, region, credentials, CLUSTER_NAMES, PATH)'
SERVED_CLUSTERS = "blue"
WALKTHROUGH_DIR = "demo"  # under the bed's directory
WALKTHROUGH_STATE = "walkthrough.json"
WALKTHROUGH_ASG, WALKTHROUGH_HOOK = "blue-nodes", "drain"


def prepare_walkthrough(bed: Testbed, blue_ids: list[str]) -> Path:
    """Write sample events about a blue node the demo left in service (its 4th instance; the 5th is the spare the
    walk-through drains by hand), with a lifecycle action started so `invoke` can complete it."""
    aws = AwsSeed(bed)
    instance, spare = blue_ids[3], blue_ids[4]
    out = bed.dir / WALKTHROUGH_DIR
    out.mkdir(exist_ok=True)
    token = aws.start_lifecycle_action(WALKTHROUGH_ASG, WALKTHROUGH_HOOK, instance)
    # sent now, like the lifecycle action just started (the samples themselves are dated 2025)
    now = datetime.now(UTC)
    lifecycle = restamp(
        samples.lifecycle_event(
            "asg-terminate.json", instance_id=instance, asg=WALKTHROUGH_ASG, hook=WALKTHROUGH_HOOK, token=token
        ),
        now,
    )
    (out / "asg-terminate.json").write_text(json.dumps(lifecycle, indent=2) + "\n")
    spot = restamp(samples.ec2_event("spot-interruption-terminate.json", instance_id=instance), now)
    (out / "spot-interruption-terminate.json").write_text(json.dumps(spot, indent=2) + "\n")
    state = {
        "events": str(out),
        "instance": instance,
        "node": aws.describe(instance)["PrivateDnsName"],
        "spare_node": aws.describe(spare)["PrivateDnsName"],
    }
    (out / WALKTHROUGH_STATE).write_text(json.dumps(state, indent=2) + "\n")
    return out


def shell_env(bed: Testbed) -> dict[str, str]:
    """Variables for the local account, in the order they are printed."""
    aws = AwsSeed(bed)
    creds = aws.lambda_session().get_credentials().get_frozen_credentials()
    env = {
        **bed.aws_env(),
        "AWS_ACCESS_KEY_ID": creds.access_key,
        "AWS_SECRET_ACCESS_KEY": creds.secret_key,
        "AWS_SESSION_TOKEN": creds.token or "",
        "CLUSTER_NAMES": SERVED_CLUSTERS,
        "LIFECYCLE_HOOK_NAMES": ",".join(OUR_HOOKS),  # the demo's hooks
        "KUBECONFIG": str(bed.kubeconfig),
    }
    topics = aws.client("sns").list_topics().get("Topics", [])
    arn = next((t["TopicArn"] for t in topics if t["TopicArn"].endswith(":drain-notifications")), None)
    if arn:  # created by the demo's seeding: the CLI's notifications go where the demo's went
        env["NOTIFICATION_TOPIC_ARN"] = arn
    state = bed.dir / WALKTHROUGH_DIR / WALKTHROUGH_STATE
    if state.exists():
        walk: dict[str, Any] = json.loads(state.read_text())
        env.update(DEMO_EVENTS=walk["events"], DEMO_NODE=walk["node"], DEMO_SPARE_NODE=walk["spare_node"])
    return env


def export_lines(env: dict[str, str]) -> list[str]:
    lines = [f"export {name}={shlex.quote(value)}" for name, value in env.items()]
    lines.append(f'export PATH={shlex.quote(str(REPO / ".venv" / "bin"))}:"$PATH"')
    return lines
