"""`drain-orchestrator`, the command line: one module per subcommand, each registering itself through an
add_<name>_parser function; the heavy imports (boto3, Powertools, the durable SDK) happen only when a subcommand
that needs them runs, so `drain` starts as fast as possible. Conventions every subcommand follows (durations,
`--json`, help with examples) live in cli/args.py.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from drain_orchestrator import __version__
from drain_orchestrator.cli.args import examples_text, json_stdout

# subcommand → module of this package (one per command) providing add_<name>_parser
_SUBCOMMANDS = {
    "explain": ("drain_orchestrator.cli.explain", "add_explain_parser"),
    "invoke": ("drain_orchestrator.cli.invoke", "add_invoke_parser"),
    "replay": ("drain_orchestrator.cli.replay", "add_replay_parser"),
    "drain": ("drain_orchestrator.cli.drain", "add_drain_parser"),
    "status": ("drain_orchestrator.cli.status", "add_status_parser"),
    "versions": ("drain_orchestrator.cli.versions", "add_versions_parser"),
    "rbac": ("drain_orchestrator.cli.rbac", "add_rbac_parser"),
    "approve": ("drain_orchestrator.cli.approve", "add_approve_parser"),
    "surge": ("drain_orchestrator.cli.surge", "add_surge_parser"),
    "history": ("drain_orchestrator.cli.history", "add_history_parser"),
}

DESCRIPTION = """\
EKS Drain Orchestrator drains Kubernetes nodes before their EC2 instances go away (Auto Scaling scale-in, Spot
interruptions, rebalance recommendations, scheduled maintenance). It runs as a Lambda function; these commands show
what its drains are doing and act beside it, with your AWS credentials and your kubeconfig.

AWS: the usual credential chain and region (AWS_PROFILE, AWS_REGION or AWS_DEFAULT_REGION, ~/.aws/config).
Kubernetes: an EKS cluster by name (--cluster, CLUSTER_NAMES) through your AWS credentials, or a kubeconfig
(--kubeconfig, else KUBECONFIG, several files merged as kubectl merges them, else ~/.kube/config).
Durations: seconds (300) or Go durations (90s, 5m, 1h30m). --json: stdout is one JSON document, the rest stderr."""

EXAMPLES = (
    "export CLUSTER_NAMES=prod AWS_REGION=eu-west-1",
    "drain-orchestrator status                            # what is draining now, and what holds each drain",
    "drain-orchestrator history i-0abc123def4567890 --function drain-orchestrator-prod   # one drain's steps",
    "drain-orchestrator explain event.json                # what it would decide for an EventBridge event",
    "drain-orchestrator drain ip-10-0-1-23.ec2.internal --timeout 5m   # like kubectl drain, PDB-aware",
    "drain-orchestrator approve APPROVAL_ID --node ip-10-0-1-23.ec2.internal --force  # answer a held approval",
    "drain-orchestrator rbac apply --cluster prod         # the Kubernetes RBAC it needs",
    "drain-orchestrator COMMAND --help                    # each command's options and examples",
)


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(args_list).parse_args(args_list)
    try:
        with json_stdout(bool(getattr(args, "json", False))):
            result: int = args.func(args)
    except BrokenPipeError:
        # the reader went away (`status --json | head`): not an error of ours, and no traceback; stdout is
        # pointed at /dev/null so the interpreter's final flush does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return result


def build_parser(args_list: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The command's parser, with the subcommand ``args_list`` names registered (every one when it names none)."""
    parser = argparse.ArgumentParser(
        prog="drain-orchestrator",
        description=DESCRIPTION,
        epilog=examples_text(EXAMPLES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"drain-orchestrator {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    chosen = next((a for a in args_list if not a.startswith("-")), None)
    wanted = [_SUBCOMMANDS[chosen]] if chosen in _SUBCOMMANDS else list(dict.fromkeys(_SUBCOMMANDS.values()))
    if chosen == "uncordon":
        wanted = [_SUBCOMMANDS["drain"]]  # cli/drain.py registers both drain and uncordon
    for module, register in wanted:
        getattr(importlib.import_module(module), register)(subparsers)
    return parser
