"""`drain-orchestrator explain EVENT_FILE`: what the product would decide for an event now, changing nothing.

Reads the same environment variables as the Lambda (CLUSTER_NAMES, OWNERSHIP_TAG, ACTION_*; AWS endpoints from
AWS_ENDPOINT_URL). Only read-only calls: DescribeInstances, DescribeTags, DescribeAutoScalingInstances,
DescribeLifecycleHooks, DescribeCluster, GET/LIST nodes. Besides each decision it shows the event's age and what
an event that old means (corroborate.py), what EC2 and Auto Scaling say of each instance now, the drain's clock as
the Lambda would set it (deadlines.drain_clock), and a warning when the function's IAM policy would not let it
answer an owned instance's lifecycle hook (lifecycle_grant.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from drain_orchestrator.aws.autoscaling import describe_hook
from drain_orchestrator.aws.clients import autoscaling_client, ec2_client
from drain_orchestrator.corroborate import age_effect
from drain_orchestrator.deadlines import ActionLife, Clock, drain_clock, drain_deadline, drain_start
from drain_orchestrator.decide import Assessment, BotoFacts, decide_event, locate_node, with_reservation_instances
from drain_orchestrator.events import Ignored, Interruption, MalformedEvent, parse_event
from drain_orchestrator.failures import ApiError
from drain_orchestrator.kinds import DeadlineRule, rule_of
from drain_orchestrator.lifecycle_grant import denial_warning
from drain_orchestrator.ownership import decide_ignored
from drain_orchestrator.restamp import restamp
from drain_orchestrator.settings import Settings, SettingsError
from drain_orchestrator.timefmt import deadline_fields, iso_utc
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
    event: Interruption | Ignored,
    settings: Settings,
    *,
    kubeconfig: str | None = None,
    nodes: bool = True,
    now: float | None = None,
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
    ws = WorkflowSettings.from_env(os.environ)
    at = time.time() if now is None else now
    autoscaling = autoscaling_client()
    source = BotoFacts(ec2_client(), autoscaling)
    event = with_reservation_instances(event, source)  # a Capacity Block's: the instances in it now
    assessments = decide_event(event, settings, source, now=at, ws=ws)
    decisions = []
    for a in assessments:
        shown = _with_node(a, event, kubeconfig) if nodes else a.decision.to_dict()
        decisions.append({**shown, **_facts_now(a, event, settings, source)})
    clock = _drain_clock(event, autoscaling, ws, at)
    return {
        "event": {
            "kind": event.kind,
            "instance_ids": list(event.instance_ids),
            **deadline_fields(clock.deadline, at),
            "respectful_until": iso_utc(clock.respect_until),
            "age": age_effect(event, at, ws),
            **_block(event, ws),
        },
        "decisions": decisions,
    }


def _block(event: Interruption, ws: WorkflowSettings) -> dict[str, Any]:
    """A Capacity Block's reservation, its end as the event says, and when its drain starts (the Delivered kind
    waits until then: end - 30 min - CAPACITY_BLOCK_LEAD_SECONDS)."""
    if event.capacity_reservation_id is None or event.block_end is None:
        return {}
    begins = drain_start(event, ws)
    return {
        "capacity_reservation_id": event.capacity_reservation_id,
        "block_end": iso_utc(event.block_end),
        "drain_starts": "at once" if begins is None else iso_utc(begins),
    }


def _drain_clock(event: Interruption, autoscaling: Any, ws: WorkflowSettings, now: float) -> Clock:
    """The clock the Lambda's plan would set if its drain started now (same rule, same settings, the hook's own
    timeouts when it has one; a launch's clock starts when the Lambda first looks for the node, here the event's
    time)."""
    if rule_of(event.kind).deadline is DeadlineRule.LAUNCH:
        deadline = drain_deadline(event, ws)
        return Clock(deadline, deadline, now + ws.min_drain_seconds)
    action = None
    if event.lifecycle is not None and rule_of(event.kind).deadline is DeadlineRule.HOOK:
        hook = describe_hook(autoscaling, event.lifecycle.asg_name, event.lifecycle.hook_name)
        if hook is not None:
            action = ActionLife.seen(hook.heartbeat_timeout, hook.global_timeout, event.event_time, now)
    return drain_clock(event, ws, now, action)


def _facts_now(assessment: Assessment, event: Interruption, settings: Settings, source: BotoFacts) -> dict[str, Any]:
    """What EC2 and Auto Scaling say of the instance now, and whether IAM would let the function answer its hook."""
    facts = assessment.facts
    if facts is None:
        return {}
    out: dict[str, Any] = {"ec2_state": facts.state}
    if facts.in_group is not None:
        out["group"], out["lifecycle_state"] = facts.group, facts.lifecycle_state
    lifecycle = event.lifecycle
    if lifecycle is not None and assessment.decision.owned and settings.owns_hook(lifecycle.hook_name):
        group = facts.group or lifecycle.asg_name
        tags = facts.asg_tags if facts.asg_tags is not None and group == facts.asg_name else source.asg_tags(group)
        warning = denial_warning(group, tags, settings)
        if warning is not None:
            out["warning"] = warning
    return out


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
