"""`drain-orchestrator drain NODE` / `uncordon NODE`: the drain engine from a terminal, kubectl-style."""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from typing import Any

from drain_orchestrator.cli.args import add_json_flag, duration, emit_json, json_stdout
from drain_orchestrator.clip import clip
from drain_orchestrator.drain.options import DEFAULT_DRAIN_TAINT_KEY, DrainOptions
from drain_orchestrator.drain.report import DrainReport
from drain_orchestrator.engine.drainer import drain_node
from drain_orchestrator.kube.connect import connect
from drain_orchestrator.kube.cordon import uncordon
from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.surge_mode import SURGE_MODES

EXIT_USAGE = 2  # a usage or configuration error, as argparse reports its own


def add_drain_parser(subparsers: Any) -> None:
    """Register the ``drain`` and ``uncordon`` subcommands."""
    p = subparsers.add_parser("drain", help="cordon a node and evict its pods like `kubectl drain`")
    p.add_argument("node")
    _connection_args(p)
    p.add_argument("--timeout", type=duration(), default=0, help="give up after this long (0 = never, like kubectl)")
    p.add_argument(
        "--grace-period", type=_grace_period, default=-1, help="each pod's termination grace; -1 = each pod's own"
    )
    p.add_argument("--delete-emptydir-data", action="store_true", help="evict pods using emptyDir volumes")
    p.add_argument("--force", action="store_true", help="evict pods without a controller, orphaned DS pods")
    p.add_argument("--evict-daemonsets", action="store_true", help="evict DaemonSet pods last (taints the node)")
    p.add_argument(
        "--skip-wait-for-delete-timeout", type=duration(), default=0, help="skip pods terminating longer than this"
    )
    p.add_argument("--deadline-in", type=duration(), default=None, help="the node must be empty this long from now")
    p.add_argument("--force-on-deadline", action="store_true", help="near the deadline, delete PDB-blocked pods")
    p.add_argument(
        "--surge",
        choices=SURGE_MODES,
        default="annotated",
        help="PDB-refused pods of Deployments: add the replacement first (annotated: Deployments annotated "
        'drain-orchestrator.io/surge="true"); undone when the drain ends',
    )
    p.add_argument("--pod-selector", default=None)
    p.add_argument(
        "--involuntary",
        action="store_true",
        help="like a Spot interruption: evict wait-for-completion and do-not-disrupt pods at once",
    )
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--dry-run", action="store_true", help="report what would happen, change nothing")
    add_json_flag(p, help="the DrainReport as one JSON document on stdout (progress on stderr)")
    p.set_defaults(func=run_drain)

    u = subparsers.add_parser("uncordon", help="make a node schedulable again and remove the drain marks")
    u.add_argument("node")
    _connection_args(u)
    u.add_argument("--dry-run", action="store_true")
    u.set_defaults(func=run_uncordon)


def _grace_period(text: str) -> int:
    """kubectl's --grace-period: whole seconds (or a duration), a negative number for each pod's own."""
    seconds: int = duration(whole=True, minimum=-math.inf)(text)
    return max(seconds, -1)


def _connection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kubeconfig", default=None, help="default: $KUBECONFIG or ~/.kube/config")
    p.add_argument("--context", default=None)


def options_from_args(args: argparse.Namespace) -> DrainOptions:
    return DrainOptions(
        grace_period=None if args.grace_period < 0 else args.grace_period,
        delete_emptydir_data=args.delete_emptydir_data,
        force=args.force,
        evict_daemonsets=args.evict_daemonsets,
        skip_wait_for_delete_timeout=args.skip_wait_for_delete_timeout,
        deadline=time.time() + args.deadline_in if args.deadline_in is not None else None,
        force_delete_on_deadline=args.force_on_deadline,
        concurrency=args.concurrency,
        dry_run=args.dry_run,
        pod_selector=args.pod_selector,
        voluntary=not args.involuntary,
        reason="manual drain (drain-orchestrator CLI)",
        surge=args.surge,
    )


def summary(report: DrainReport) -> str:
    head = "drained" if report.drained else ("dry run of" if report.dry_run else "NOT drained:")
    parts = [
        f"{len(report.evicted)} {'would be ' if report.dry_run else ''}evicted",
        f"{len(report.skipped)} skipped",
    ]
    for label, items in (
        ("forced", report.forced),
        ("blocked by PDBs", report.blocked),
        ("refused", report.refused),
        ("failed", report.failed),
        ("let finish by their drain policy", report.held_by_policy),
        ("remaining", report.remaining if not report.drained else []),
    ):
        if items:
            parts.append(f"{len(items)} {label}")
    return (
        f"{head} node/{report.node}: {', '.join(parts)}; {report.api_calls} API requests, "
        f"{report.passes} passes, {report.elapsed:.1f} s"
    )


def exit_code(report: DrainReport) -> int:
    if report.dry_run:
        return 0 if not (report.refused or report.blocked or report.failed) else 1
    return 0 if report.drained else 1


def _connect(args: argparse.Namespace, pool_size: int) -> Kube | None:
    try:
        return connect(kubeconfig=args.kubeconfig, context=args.context, pool_size=pool_size)
    except Exception as exc:  # unreadable, not YAML, missing context, bad key material: one line, not a traceback
        where = args.kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
        problem = clip(" ".join(str(exc).split()), 300)  # YAML errors span several lines
        print(f"error: cannot use kubeconfig {where}: {type(exc).__name__}: {problem}", file=sys.stderr)
        return None


def run_drain(args: argparse.Namespace) -> int:
    if args.concurrency < 1:
        print("error: --concurrency must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    options = options_from_args(args)
    kube = _connect(args, options.concurrency)
    if kube is None:
        return EXIT_USAGE

    def say(line: str) -> None:
        print(line, flush=True)

    try:
        report = drain_node(kube, args.node, options, timeout=args.timeout or None, progress=say)
        restored = [] if options.dry_run else _restore_surges(kube, args.node, report)
    except Exception as exc:  # one line for the operator, not a traceback
        print(f"error: unable to drain node {args.node!r}: {exc}", file=sys.stderr)
        return 1
    finally:
        kube.close()
    for n in report.surge:
        print(f"surge: {n.workload}: {n.status}: {n.detail}")
    for line in restored:
        print(f"surge: {line}")
    for b in report.blocked:
        print(f"blocked: {b.pod} by {', '.join(b.pdbs) or 'a PodDisruptionBudget'}: {b.message}")
    for r in report.refused:
        print(f"refused: {r.pod}: {r.reason}")
    for f in report.failed:
        print(f"failed: {f.pod}: {f.reason}")
    for h in report.held_by_policy:
        print(f"waiting: {h.pod}: {h.reason}")
    print(summary(report))
    if args.json:
        emit_json(report.to_dict())
    return exit_code(report)


def _restore_surges(kube: Kube, node: str, report: DrainReport) -> list[str]:
    """The drain is over (drained, timed out, refused): take back what it surged, as the Lambda's verdict does."""
    from drain_orchestrator.engine.surge_restore import restore_node  # noqa: PLC0415

    surged = {n.workload.split(" ", 1)[1] for n in report.surge if n.via}
    return [f"{n.workload}: {n.status}: {n.detail}" for n in restore_node(kube, node, surged)]


def run_uncordon(args: argparse.Namespace) -> int:
    kube = _connect(args, 1)
    if kube is None:
        return EXIT_USAGE
    try:
        # first: the node's record of what it surged goes with the uncordon's removal of the drain's annotations
        restored = [] if args.dry_run else _restore_uncordoned(kube, args.node)
    except Exception as exc:
        kube.close()
        print(f"error: node {args.node!r} left cordoned, its surges could not be taken back: {exc}", file=sys.stderr)
        return 1
    try:
        result = uncordon(kube, args.node, taint_key=DEFAULT_DRAIN_TAINT_KEY, dry_run=args.dry_run)
    except Exception as exc:
        print(f"error: unable to uncordon node {args.node!r}: {exc}", file=sys.stderr)
        return 1
    finally:
        kube.close()
    for line in restored:
        print(f"surge: {line}")
    print(f"node/{args.node} uncordoned" if result.changed else f"node/{args.node} already uncordoned")
    return 0


def _restore_uncordoned(kube: Kube, node: str) -> list[str]:
    """What drains of this node surged (its record, and entries naming it that lost their record) is taken back,
    as the verdict would: the node stays, so no replacement is needed any more."""
    from drain_orchestrator.engine.surge_sweep import restore_staying  # noqa: PLC0415

    notes = restore_staying(kube, node, time.time(), why="the node was uncordoned")
    return [f"{n.workload}: {n.status}: {n.detail}" for n in notes]


def main(argv: list[str] | None = None) -> int:
    """Just the drain/uncordon subcommands: ``python -m drain_orchestrator.cli.drain drain NODE`` starts in
    about a tenth of a second, without the event-parsing and AWS imports of the full CLI."""
    parser = argparse.ArgumentParser(prog="drain-orchestrator")
    add_drain_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    with json_stdout(bool(getattr(args, "json", False))):
        result: int = args.func(args)
    return result


if __name__ == "__main__":
    raise SystemExit(main())
