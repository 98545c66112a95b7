"""`drain-orchestrator approve ID --node NODE --force|--continue|--abandon|--wait [--event EVENT_ID] [--as WHO]`:
answer a held drain's approval.

With HELD_APPROVAL=on the ``held`` notification carries an ``approval_id``; this sends the decision to the waiting
execution (Lambda SendDurableExecutionCallbackSuccess; the caller needs
``lambda:SendDurableExecutionCallbackSuccess`` on the function) as JSON ``{decision, by, at, node[, event_id]}``.
``--node`` names the node the decision is for (the notification's ``node``), ``--event`` optionally its
``event_id``: the drain refuses a decision for another node or event, which then changes nothing (the drain goes
on under its deadline policy) and closes the approval.

  --force     delete the pods PodDisruptionBudgets still protect now, grace clipped to the deadline
  --continue  complete the lifecycle action with CONTINUE and stop draining
  --abandon   complete it with ABANDON and stop draining
  --wait      keep draining until the deadline, as without approval

``by`` is the caller's ARN (STS GetCallerIdentity) unless ``--as`` names someone; either is the sender's word (the
service does not tell the execution who called it: CloudTrail records the caller). Exit 0 when sent, 1 when the id
is unknown or its approval is over (decided, expired, the drain ended), 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Protocol

from drain_orchestrator.timefmt import iso_utc
from drain_orchestrator.workflow.approval import Choice, OperatorDecision

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
# the service's answers for an id that names no open callback
_GONE = {"ResourceNotFoundException", "CallbackTimeoutException", "InvalidParameterValueException"}


class CallbackSender(Protocol):
    """The part of a boto3 Lambda client this needs (the local runner's callback API has the same shape)."""

    def send_durable_execution_callback_success(self, *, CallbackId: str, Result: bytes) -> Any: ...


class ApprovalGone(Exception):
    """The approval id is unknown, or its approval is over."""


def send_decision(client: CallbackSender, approval_id: str, decision: OperatorDecision) -> None:
    """Send one decision; raises ApprovalGone when the service knows no open approval by this id."""
    from botocore.exceptions import ClientError  # noqa: PLC0415

    try:
        client.send_durable_execution_callback_success(CallbackId=approval_id, Result=decision.payload())
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in _GONE:
            message = exc.response.get("Error", {}).get("Message", "") or code
            raise ApprovalGone(f"{code}: {message}") from exc
        raise


def decision_of(choice: str, by: str, now: float, node: str, event_id: str = "") -> OperatorDecision:
    return OperatorDecision(decision=Choice(choice).value, by=by, at=iso_utc(int(now)), node=node, event_id=event_id)


def add_approve_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "approve",
        help="answer a held drain's approval (HELD_APPROVAL=on)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("approval_id", metavar="ID", help="the approval_id of the held notification")
    group = parser.add_mutually_exclusive_group(required=True)
    for choice in Choice:
        group.add_argument(f"--{choice.value}", dest="choice", action="store_const", const=choice.value)
    parser.add_argument("--node", required=True, help="the node the decision is for (the held notification's node)")
    parser.add_argument("--event", default="", metavar="EVENT_ID", help="the held notification's event_id (checked)")
    parser.add_argument("--as", dest="by", metavar="WHO", help="who decides (default: the caller's ARN)")
    parser.add_argument("--region", help="AWS region of the function (default: the AWS configuration's)")
    parser.set_defaults(func=run_approve)


def run_approve(args: argparse.Namespace) -> int:
    from drain_orchestrator.aws.clients import lambda_client, sts_client  # noqa: PLC0415

    approval_id, node = args.approval_id.strip(), args.node.strip()
    if not approval_id:
        print("drain-orchestrator approve: ID: expected the approval_id of a held notification", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not node:
        print("drain-orchestrator approve: --node: expected the held notification's node", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        by = args.by or sts_client(region=args.region).get_caller_identity()["Arn"]
        decision = decision_of(args.choice, by, time.time(), node, args.event.strip())
        send_decision(lambda_client(region=args.region), approval_id, decision)
    except ApprovalGone as exc:
        print(
            f"drain-orchestrator approve: no open approval {approval_id}: unknown, already decided, expired, or "
            f"the drain is over ({exc})",
            file=sys.stderr,
        )
        return EXIT_FAILED
    except Exception as exc:  # credentials, network, permissions: say what failed, no traceback
        print(f"drain-orchestrator approve: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(f"sent {args.choice} for node {node} as {by}")
    return EXIT_OK
