"""`drain-orchestrator invoke EVENT_FILE [--dry-run]`: run the Lambda handler on an event, locally.

The same handler the Lambda runs, driven by the durable-execution local runner with waits honoured in real time,
against whatever the environment points at: the settings variables of the Lambda, AWS endpoints from
AWS_ENDPOINT_URL, credentials from the usual AWS chain. `--dry-run` sets DRY_RUN=true: nothing is cordoned,
evicted, completed or published; the output says what would have happened. stdout is the execution's result as
one JSON document; the handler's log lines and metrics go to stderr.

The local runner is the package aws-durable-execution-sdk-python-testing: the extra `invoke` of the command line's
wheel (`uv tool install 'drain_orchestrator-X.Y.Z-py3-none-any.whl[invoke]'`), installed in a checkout's .venv by
`make setup`. It is never part of the function's code asset.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from typing import Any

from drain_orchestrator.cli.args import add_command, duration, emit_json
from drain_orchestrator.restamp import restamp

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def add_invoke_parser(subparsers: Any) -> None:
    parser = add_command(
        subparsers,
        "invoke",
        help="run the Lambda handler on an event through the durable local runner",
        description=__doc__ or "",
        examples=(
            "drain-orchestrator invoke events/asg-terminate.json --now --dry-run   # what the function would do",
            "drain-orchestrator invoke event.json --timeout 15m",
        ),
    )
    parser.add_argument("event_file", metavar="EVENT_FILE", help="EventBridge event JSON ('-' for stdin)")
    parser.add_argument("--dry-run", action="store_true", help="change nothing; report what would happen")
    parser.add_argument(
        "--timeout", type=duration(whole=True, minimum=1), default=3600, help="give up on the execution after this long"
    )
    parser.add_argument(
        "--now", action="store_true", help="replay the event as if sent now: its times move, offsets kept"
    )
    parser.add_argument(
        "--skip-waits", action="store_true", help="skip durable waits instead of honouring them in real time"
    )
    parser.set_defaults(func=run_invoke, json=True)  # stdout: the result document alone


def local_runner_missing() -> str | None:
    """Why the handler cannot run here (None: it can): the local runner is a development dependency."""
    try:
        import aws_durable_execution_sdk_python_testing.runner  # noqa: F401, PLC0415
    except ImportError:
        return (
            "needs the durable local runner (aws-durable-execution-sdk-python-testing): install the command line "
            "with its extra `invoke`, e.g. uv tool install 'drain_orchestrator-X.Y.Z-py3-none-any.whl[invoke]' "
            "(in a checkout: make setup)"
        )
    return None


def run_invoke(args: argparse.Namespace) -> int:
    missing = local_runner_missing()
    if missing is not None:
        print(f"drain-orchestrator invoke: {missing}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        with sys.stdin if args.event_file == "-" else open(args.event_file, encoding="utf-8") as f:
            event = json.load(f)
        if args.now:
            event = restamp(event, datetime.now(UTC))
    except (OSError, ValueError, RecursionError) as exc:
        problem = "JSON nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        print(f"drain-orchestrator invoke: cannot read {args.event_file}: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.dry_run:
        os.environ["DRY_RUN"] = "true"
    config_problem = configuration_problem()
    if config_problem:
        print(f"drain-orchestrator invoke: {config_problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    out = run_handler(event, timeout=args.timeout, skip_waits=args.skip_waits)
    emit_json(out)
    return EXIT_OK if out["status"] == "SUCCEEDED" else EXIT_FAILED


def run_handler(event: Any, *, timeout: int, skip_waits: bool) -> dict[str, Any]:
    """The Lambda handler on ``event`` through the durable local runner: {"status", "result"?, "error"?}. Needs the
    development dependency (checked by the caller) and valid settings (configuration_problem)."""
    from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner  # noqa: PLC0415

    from drain_orchestrator.handler import handler  # noqa: PLC0415
    from drain_orchestrator.workflow import runtime  # noqa: PLC0415

    runtime.reset_config()
    with DurableFunctionTestRunner(handler=handler, skip_time=skip_waits) as runner:
        result = runner.run(input=json.dumps(event), execution_timeout=timeout)
    status = getattr(result.status, "name", str(result.status))
    out: dict[str, Any] = {"status": status}
    if result.result:
        out["result"] = json.loads(result.result)
    if result.error:
        out["error"] = {"type": result.error.type, "message": result.error.message}
    return out


def configuration_problem() -> str | None:
    """Settings and AWS client configuration, checked before the run: the user gets one line naming what is
    wrong instead of a failed execution (the Lambda itself reports these through its settings step)."""
    from drain_orchestrator.settings import Settings, SettingsError  # noqa: PLC0415
    from drain_orchestrator.workflow_settings import WorkflowSettings  # noqa: PLC0415

    try:
        Settings.from_env(os.environ)
        WorkflowSettings.from_env(os.environ)
    except SettingsError as exc:
        return str(exc)
    from botocore.exceptions import BotoCoreError  # noqa: PLC0415

    from drain_orchestrator.aws.clients import ec2_client  # noqa: PLC0415

    try:
        ec2_client()
    except (BotoCoreError, ValueError) as exc:  # a malformed AWS_ENDPOINT_URL, no region
        return f"AWS client configuration: {exc}"
    return None
