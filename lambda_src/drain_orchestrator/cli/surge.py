"""`drain-orchestrator surge restore [--node NODE]… [--dry-run] [--json]`: take back surges left behind.

A drain takes back what surge before evict changed at its verdict; an execution lost before it (failed for good,
stopped, its version deleted) leaves the surge in place. Each Lambda drain's verdict takes back such surges once
they are left behind (expired: the drain's deadline plus 15 minutes passed; or their node gone); this does the same
now, from a terminal, looking at every Deployment and HPA (also surges made before expiries were recorded).
``--node NODE`` also takes back that node's surges before they expire: for a drain you know is over.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict
from typing import Any

from drain_orchestrator.cli.args import add_json_flag, emit_json
from drain_orchestrator.cli.drain import EXIT_USAGE, _connect, _connection_args


def add_surge_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "surge",
        help="surges left behind by lost drains: list or take back",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="surge_command", required=True)
    restore = actions.add_parser("restore", help="take back the surges no drain will take back")
    _connection_args(restore)
    restore.add_argument(
        "--node", action="append", default=[], metavar="NODE", help="take back this node's surges even if unexpired"
    )
    restore.add_argument("--dry-run", action="store_true", help="list them, change nothing")
    add_json_flag(restore, help="one JSON object: left_behind, restored")
    restore.set_defaults(func=run_surge_restore)


def run_surge_restore(args: argparse.Namespace) -> int:
    from drain_orchestrator.engine.surge_sweep import find_left_behind, restore_left_behind  # noqa: PLC0415

    bad = [n for n in args.node if not n.strip()]
    if bad:
        print("error: --node: expected a node name", file=sys.stderr)
        return EXIT_USAGE
    kube = _connect(args, 4)
    if kube is None:
        return EXIT_USAGE
    now = time.time()
    try:
        left = find_left_behind(kube, now, nodes=args.node, labelled=False)
        notes = [] if args.dry_run else restore_left_behind(kube, now, nodes=args.node, labelled=False)
    except Exception as exc:  # one line for the operator, not a traceback
        print(f"error: unable to restore surges: {exc}", file=sys.stderr)
        return 1
    finally:
        kube.close()
    if args.json:
        emit_json({"left_behind": [asdict(s) for s in left], "restored": [asdict(n) for n in notes]}, indent=None)
        return 0
    for s in left:
        verb = "would restore" if args.dry_run else "left behind"
        print(f"{verb}: Deployment {s.deployment} +{s.count} ({s.via}) for node {s.node}: {s.why}")
    for n in notes:
        print(f"restored: {n.workload}: {n.detail}")
    if not left:
        print("no surge left behind")
    return 0
