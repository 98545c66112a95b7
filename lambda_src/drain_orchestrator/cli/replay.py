"""`drain-orchestrator replay MESSAGE_FILE | --queue URL`: replay a dead-letter message, only what is still true.

Reads one message of a dead-letter queue: the delivery queue's (its body is the EventBridge event) or the
failed-invocation queue's (its body is a Lambda destination record, the event its `requestPayload`); from a file
(`aws sqs receive-message` output, one message, a destination record, or the event itself) or straight from the
queue (`--queue`). Shows what `explain` decides for the event now — its age and what that changes, each instance's
EC2 state and lifecycle action (still waiting or not), the drain's clock — and which instances are still acted on.

Nothing still true: nothing is invoked (the message is obsolete). Otherwise, with `--yes`, the event, narrowed to
the instances still acted on (a Health event lists many; the other kinds name one), is sent again: to the function
`--function` (asynchronously, as EventBridge invokes it: lambda:InvokeFunction) or, with `--local`, to the handler
run here through the durable local runner (as `invoke` does). Without `--yes` it says what it would send. `--delete`
deletes the queue message once replayed or found obsolete. Exit status 0, 1 if an AWS call failed or the local
run did not succeed, 2 for bad input.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
from typing import Any

from drain_orchestrator.cli.args import duration

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
HEALTH_DETAIL_TYPE = "AWS Health Event"


class BadMessage(ValueError):
    """The message holds no event: says what was found instead."""


def add_replay_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "replay", help="replay a dead-letter message: only what is still true now", description=__doc__
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("message_file", metavar="MESSAGE_FILE", nargs="?", help="the message as JSON ('-' for stdin)")
    source.add_argument("--queue", metavar="URL", help="receive one message from this dead-letter queue")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--function", metavar="FN", help="the function (its live alias ARN) to send the event to")
    target.add_argument("--local", action="store_true", help="run the handler here (durable local runner)")
    parser.add_argument("--yes", action="store_true", help="send it (without: say what would be sent)")
    parser.add_argument("--delete", action="store_true", help="delete the queue message once replayed or obsolete")
    parser.add_argument("--kubeconfig", help="find nodes through this kubeconfig instead of EKS")
    parser.add_argument("--no-node-lookup", action="store_true", help="do not look nodes up in Kubernetes")
    parser.add_argument(
        "--timeout",
        type=duration(whole=True, minimum=1),
        default=3600,
        help="--local: give up on the execution after this long (90s, 15m; a plain number is seconds)",
    )
    parser.set_defaults(func=run_replay)


def run_replay(args: argparse.Namespace) -> int:
    from drain_orchestrator.cli.invoke import configuration_problem, local_runner_missing  # noqa: PLC0415

    problem = configuration_problem() or (local_runner_missing() if args.local and args.yes else None)
    if problem is not None:
        return _fail(problem, EXIT_BAD_INPUT)
    if args.yes and not (args.function or args.local):
        return _fail("--yes sends the event: name where, --function FN or --local", EXIT_BAD_INPUT)
    receipt: str | None = None
    try:
        if args.queue:
            message = _receive(args.queue)
            if message is None:
                print(json.dumps({"queue": args.queue, "message": None}, indent=2))
                return EXIT_OK
            receipt = message.get("ReceiptHandle")
        else:
            message = _read_json(args.message_file)
        event = event_of(message)
    except (OSError, ValueError, RecursionError) as exc:
        return _fail(f"cannot read the message: {_problem(exc)}", EXIT_BAD_INPUT)
    except Exception as exc:  # botocore: the queue cannot be read
        return _fail(f"cannot receive from {args.queue}: {exc}", EXIT_FAILED)
    report, code = replay(event, args)
    if code == EXIT_OK and args.delete and args.queue and receipt and (report["replayed"] or not report["still_true"]):
        report["deleted"] = _delete(args.queue, receipt)
    print(json.dumps(report, indent=2))
    return code


def replay(raw: dict[str, Any], args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    """explain's decision for the event now, and the event sent again when something is still true."""
    from drain_orchestrator.cli.explain import explain  # noqa: PLC0415
    from drain_orchestrator.events import MalformedEvent, parse_event  # noqa: PLC0415
    from drain_orchestrator.settings import Settings  # noqa: PLC0415

    try:
        event = parse_event(raw)
    except MalformedEvent as exc:
        return {"error": f"malformed event: {exc}", "replayed": False, "still_true": []}, EXIT_BAD_INPUT
    try:
        said = explain(event, Settings.from_env(os.environ), kubeconfig=args.kubeconfig, nodes=not args.no_node_lookup)
    except Exception as exc:  # AWS could not be read: nothing can be said to be true
        return {"error": f"cannot read instance facts from AWS: {exc}", "replayed": False, "still_true": []}, 1
    still = [d["instance_id"] for d in said["decisions"] if d.get("owned") and d.get("action") != "skip"]
    report: dict[str, Any] = {**said, "still_true": still, "replayed": False}
    if not still:
        report["why"] = "nothing in the event is still true: not sent again"
        return report, EXIT_OK
    narrowed = narrow(raw, still)
    if not args.yes:
        report["would_send"] = {"to": args.function or ("local" if args.local else None), "instance_ids": still}
        return report, EXIT_OK
    if args.local:
        from drain_orchestrator.cli.invoke import run_handler  # noqa: PLC0415

        run = run_handler(narrowed, timeout=args.timeout, skip_waits=False)
        report.update(replayed=True, execution=run)
        return report, EXIT_OK if run["status"] == "SUCCEEDED" else EXIT_FAILED
    try:
        report["invocation"] = _invoke(args.function, narrowed)
    except Exception as exc:
        report["error"] = f"lambda:InvokeFunction {args.function}: {exc}"
        return report, EXIT_FAILED
    report["replayed"] = True
    return report, EXIT_OK


def event_of(message: Any) -> dict[str, Any]:
    """The EventBridge event in a dead-letter message, whichever form it was saved in."""
    if isinstance(message, dict) and isinstance(message.get("Messages"), list):
        if not message["Messages"]:
            raise BadMessage("no message in it (an empty receive-message answer)")
        message = message["Messages"][0]
    if isinstance(message, dict) and "Body" in message:
        body = message["Body"]
        message = json.loads(body) if isinstance(body, str) else body
    if isinstance(message, dict) and "requestPayload" in message:  # a Lambda destination record
        message = message["requestPayload"]
        if isinstance(message, str):
            message = json.loads(message)
    if not isinstance(message, dict) or "detail-type" not in message:
        raise BadMessage("no EventBridge event in it (expected a detail-type)")
    return message


def narrow(raw: dict[str, Any], instance_ids: list[str]) -> dict[str, Any]:
    """The event naming only these instances: a Health event's affected entities and resources are filtered;
    every other kind names one instance, kept as it is."""
    if raw.get("detail-type") != HEALTH_DETAIL_TYPE:
        return raw
    keep = set(instance_ids)
    event = copy.deepcopy(raw)
    detail = event.get("detail") or {}
    entities = detail.get("affectedEntities")
    if isinstance(entities, list):
        detail["affectedEntities"] = [e for e in entities if isinstance(e, dict) and e.get("entityValue") in keep]
    if isinstance(event.get("resources"), list):
        event["resources"] = [r for r in event["resources"] if r in keep]
    return event


def _invoke(function: str, event: dict[str, Any]) -> dict[str, Any]:
    from drain_orchestrator.aws.clients import lambda_client  # noqa: PLC0415

    out = lambda_client().invoke(FunctionName=function, InvocationType="Event", Payload=json.dumps(event).encode())
    return {"function": function, "status_code": out.get("StatusCode")}


def _receive(queue: str) -> dict[str, Any] | None:
    import boto3  # noqa: PLC0415

    from drain_orchestrator.aws.clients import RETRY_CONFIG  # noqa: PLC0415

    sqs = boto3.Session().client("sqs", config=RETRY_CONFIG)
    got = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=1, AttributeNames=["All"])
    messages: list[dict[str, Any]] = got.get("Messages", [])
    return messages[0] if messages else None


def _delete(queue: str, receipt: str) -> bool:
    import boto3  # noqa: PLC0415

    from drain_orchestrator.aws.clients import RETRY_CONFIG  # noqa: PLC0415

    try:
        boto3.Session().client("sqs", config=RETRY_CONFIG).delete_message(QueueUrl=queue, ReceiptHandle=receipt)
    except Exception as exc:
        print(f"drain-orchestrator replay: the message was not deleted: {exc}", file=sys.stderr)
        return False
    return True


def _read_json(path: str) -> Any:
    if path == "-":
        return json.load(sys.stdin)
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _problem(exc: BaseException) -> str:
    return "JSON nested too deeply" if isinstance(exc, RecursionError) else str(exc)


def _fail(message: str, code: int) -> int:
    print(f"drain-orchestrator replay: {message}", file=sys.stderr)
    return code
