"""`drain-orchestrator` command line: explain, invoke, replay, drain, uncordon, status, versions, rbac, approve,
surge.

Each subcommand registers itself through an add_*_parser function; the heavy imports (boto3, Powertools, the
durable SDK) happen only when a subcommand that needs them runs, so `drain` starts as fast as possible.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

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
}


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="drain-orchestrator", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True)
    chosen = next((a for a in args_list if not a.startswith("-")), None)
    wanted = [_SUBCOMMANDS[chosen]] if chosen in _SUBCOMMANDS else list(dict.fromkeys(_SUBCOMMANDS.values()))
    if chosen == "uncordon":
        wanted = [_SUBCOMMANDS["drain"]]  # cli/drain.py registers both drain and uncordon
    for module, register in wanted:
        getattr(importlib.import_module(module), register)(subparsers)
    args = parser.parse_args(args_list)
    try:
        result: int = args.func(args)
    except BrokenPipeError:
        # the reader went away (`status --json | head`): not an error of ours, and no traceback; stdout is
        # pointed at /dev/null so the interpreter's final flush does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return result
