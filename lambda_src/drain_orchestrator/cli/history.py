"""`drain-orchestrator history INSTANCE|NODE --function F`: a drain's timeline, read from its durable execution.

Every event the function handled is a durable execution, and the Lambda API keeps each one's history (14 days by
default: the construct's retention): every step, wait and operator callback with its time and checkpointed result.
This lists the function's executions started within --since (newest first), reads their histories and shows the
newest one about the instance (or the node: its EC2 private DNS name, as the function found it), or every one with
--all: when each step started, how long it took, what came of it and why (pods evicted, the budgets that held
them, the lifecycle action's answer, the verdict). The per-pod detail is in the function's logs (docs/runbook.md).

Needs lambda:ListDurableExecutionsByFunction and lambda:GetDurableExecutionHistory on the function.
Exit status: 0 shown; 1 no execution names the target, or the Lambda API failed; 2 bad input.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from drain_orchestrator.cli.args import add_command, add_json_flag, duration, emit_json, table
from drain_orchestrator.cli.timeline import Timeline, is_instance_id
from drain_orchestrator.timefmt import iso_utc

EXIT_OK, EXIT_NOT_FOUND, EXIT_BAD_INPUT = 0, 1, 2
DEFAULT_SINCE = 24 * 3600


def add_history_parser(subparsers: Any) -> None:
    p = add_command(
        subparsers,
        "history",
        help="a drain's timeline: each step with times, results and reasons (from the durable execution)",
        description=__doc__ or "",
        examples=(
            "drain-orchestrator history i-0abc123def4567890 --function drain-orchestrator-prod",
            "drain-orchestrator history ip-10-0-1-23.ec2.internal --function FUNCTION_ALIAS_ARN --since 72h",
            "drain-orchestrator history i-0abc123def4567890 --function F --all --json | jq '.executions[].verdict'",
        ),
    )
    p.add_argument("target", metavar="INSTANCE|NODE", help="an EC2 instance id, or a node name")
    p.add_argument(
        "--function", required=True, help="function name or ARN (the stack output FunctionAliasArn works as is)"
    )
    p.add_argument(
        "--since",
        type=duration(minimum=1),
        default=DEFAULT_SINCE,
        help="look at executions started this long ago or later (default 24h; 72h for 3 days)",
    )
    p.add_argument("--all", action="store_true", help="every execution about the target, newest first")
    p.add_argument("--region", help="AWS region of the function (default: the AWS configuration's)")
    add_json_flag(p, help="one JSON document: the executions with every step and its checkpointed result")
    p.set_defaults(func=run_history)


def run_history(args: argparse.Namespace) -> int:
    from drain_orchestrator.cli.versions import split_function  # noqa: PLC0415

    target = args.target.strip()
    try:
        function, _qualifier = split_function(args.function)  # every version's executions, whatever the alias
        if not target:
            raise ValueError("INSTANCE|NODE: expected an EC2 instance id or a node name")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    from drain_orchestrator.aws import executions as api  # noqa: PLC0415
    from drain_orchestrator.aws.clients import lambda_client  # noqa: PLC0415
    from drain_orchestrator.cli.timeline import build  # noqa: PLC0415
    from drain_orchestrator.failures import ApiError  # noqa: PLC0415

    since = time.time() - args.since
    found: list[Timeline] = []
    try:
        client = lambda_client(region=args.region)
        listed = api.executions_since(client, function, since)
        for summary in listed:
            timeline = build(summary, api.history(client, summary.arn), target)
            if timeline is not None:
                found.append(timeline)
                if not args.all:
                    break
    except (ApiError, ValueError) as exc:  # ValueError: botocore refuses a malformed endpoint or region
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_NOT_FOUND
    what = "instance" if is_instance_id(target) else "node"
    if args.json:
        emit_json(
            {
                "target": target,
                "function": function,
                "since": iso_utc(int(since)),
                "executions_read": len(listed),
                "executions": [t.to_json() for t in found],
            }
        )
    elif found:
        print("\n\n".join(render(t) for t in found))
    if not found:
        print(
            f"no execution of {function} started since {iso_utc(int(since))} ({len(listed)} read) names {what} "
            f"{target}: a longer --since, or the node's instance id, may find it",
            file=sys.stderr,
        )
        return EXIT_NOT_FOUND
    return EXIT_OK


def render(timeline: Timeline) -> str:
    """A title naming the execution and the verdict, then one line a step."""
    e = timeline.execution
    took = f" ({e.ended - e.started:.1f} s)" if e.ended else ""
    title = (
        f"{timeline.kind or 'event'} for {timeline.instance_id or '?'} (node {timeline.node or 'not found'}): "
        f"{timeline.verdict}\n"
        f"execution {e.name} on version {timeline.version}, {e.status}, started {_iso(e.started)}"
        + (f", ended {_iso(e.ended)}{took}" if e.ended else "")
    )
    rows = [
        (
            time.strftime("%H:%M:%S", time.gmtime(s.at)) + f".{int(s.at * 1000) % 1000:03d}",
            f"{s.at - e.started:.1f}",
            s.name,
            s.outcome,
            "-" if s.seconds is None else f"{s.seconds:.1f}s",
            s.detail or "-",
        )
        for s in timeline.steps
    ]
    return title + "\n" + table(("TIME (UTC)", "+S", "STEP", "RESULT", "TOOK", "DETAIL"), rows)


def _iso(at: float) -> str:
    return iso_utc(int(at))
