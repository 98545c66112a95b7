"""`drain-orchestrator explain EVENT_FILE`: what the product would decide for an event, changing nothing.

Reads the same environment variables as the Lambda (CLUSTER_NAMES, OWNERSHIP_TAG, ACTION_*; AWS endpoints from
AWS_ENDPOINT_URL). Only read-only calls: DescribeInstances, DescribeTags, DescribeCluster, GET/LIST nodes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from drain_orchestrator.aws.autoscaling import describe_hook
from drain_orchestrator.aws.clients import autoscaling_client, ec2_client
from drain_orchestrator.deadlines import drain_deadline
from drain_orchestrator.decide import Assessment, BotoFacts, decide_event, locate_node
from drain_orchestrator.events import Ignored, Interruption, MalformedEvent, parse_event
from drain_orchestrator.failures import ApiError
from drain_orchestrator.kinds import DeadlineRule, rule_of
from drain_orchestrator.ownership import decide_ignored
from drain_orchestrator.restamp import restamp
from drain_orchestrator.settings import Settings, SettingsError
from drain_orchestrator.timefmt import deadline_fields
from drain_orchestrator.workflow_settings import WorkflowSettings

EXIT_OK = 0
EXIT_AWS_ERROR = 1
EXIT_BAD_INPUT = 2


def add_explain_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="print the decision for each instance of an EventBridge event, changing nothing",
        description=__doc__,
    )
    parser.add_argument("event_file", metavar="EVENT_FILE", help="EventBridge event JSON ('-' for stdin)")
    parser.add_argument(
        "--kubeconfig", help="find nodes through this kubeconfig instead of EKS (DescribeCluster + IAM token)"
    )
    parser.add_argument("--no-node-lookup", action="store_true", help="do not look nodes up in Kubernetes")
    parser.add_argument(
        "--now", action="store_true", help="replay the event as if sent now: its times move, offsets kept"
    )
    parser.set_defaults(func=run_explain)


def run_explain(args: argparse.Namespace) -> int:
    try:
        settings = Settings.from_env(os.environ)
        WorkflowSettings.from_env(os.environ)  # the deadline settings are checked before any AWS call
        raw = _read_json(args.event_file)
        if args.now:
            raw = restamp(raw, datetime.now(UTC))
        event = parse_event(raw)
    except (SettingsError, MalformedEvent, OSError, ValueError) as exc:
        print(f"drain-orchestrator explain: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except RecursionError:
        print(f"drain-orchestrator explain: {args.event_file}: JSON nested too deeply", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        report = explain(event, settings, kubeconfig=args.kubeconfig, nodes=not args.no_node_lookup)
    except (BotoCoreError, ClientError, ApiError) as exc:
        print(f"drain-orchestrator explain: cannot read instance facts from AWS: {exc}", file=sys.stderr)
        return EXIT_AWS_ERROR
    except ValueError as exc:  # botocore rejects a malformed AWS_ENDPOINT_URL / region when building a client
        print(f"drain-orchestrator explain: AWS client configuration: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(json.dumps(report, indent=2))
    return EXIT_OK


def explain(
    event: Interruption | Ignored, settings: Settings, *, kubeconfig: str | None = None, nodes: bool = True
) -> dict[str, Any]:
    if isinstance(event, Ignored):
        return {
            "event": {
                "kind": None,
                "instance_ids": list(event.instance_ids),
                **deadline_fields(None),
                "ignored": event.reason,
                "message": event.message,
            },
            "decisions": [d.to_dict() for d in decide_ignored(event)],
        }
    autoscaling = autoscaling_client()
    assessments = decide_event(event, settings, BotoFacts(ec2_client(), autoscaling))
    decisions = [_with_node(a, event, kubeconfig) if nodes else a.decision.to_dict() for a in assessments]
    return {
        "event": {
            "kind": event.kind,
            "instance_ids": list(event.instance_ids),
            **deadline_fields(_drain_deadline(event, autoscaling)),
        },
        "decisions": decisions,
    }


def _drain_deadline(event: Interruption, autoscaling: Any) -> float | None:
    """The deadline the Lambda would use (same rule, same settings, the hook's own timeouts when it has one; a
    launch's clock starts when the Lambda first looks for the node, here taken as the event's time)."""
    lifetime = None
    if event.lifecycle is not None and rule_of(event.kind).deadline is DeadlineRule.HOOK:
        hook = describe_hook(autoscaling, event.lifecycle.asg_name, event.lifecycle.hook_name)
        lifetime = hook.global_timeout if hook is not None else None
    return drain_deadline(event, WorkflowSettings.from_env(os.environ), lifetime)


_connectors: dict[str, Any] = {}


def _with_node(assessment: Assessment, event: Interruption, kubeconfig: str | None) -> dict[str, Any]:
    decision = assessment.decision
    if not decision.owned or decision.cluster is None:
        return decision.to_dict()
    from drain_orchestrator.kube.connect import connect  # noqa: PLC0415 - only owned instances need it

    try:
        if kubeconfig:
            kube = connect(kubeconfig=kubeconfig, pool_size=1)
            try:
                return locate_node(kube, assessment, event).to_dict()
            finally:
                kube.close()
        if "eks" not in _connectors:
            from drain_orchestrator.kube.client import ClusterConnector  # noqa: PLC0415

            _connectors["eks"] = ClusterConnector()
        kube = connect(cluster=decision.cluster, pool_size=1, connector=_connectors["eks"])
        return locate_node(kube, assessment, event).to_dict()
    except Exception as exc:  # explain reports what it could not see instead of failing
        return {**decision.to_dict(), "node_error": f"{type(exc).__name__}: {exc}"}


def _read_json(path: str) -> object:
    if path == "-":
        return json.load(sys.stdin)
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)
