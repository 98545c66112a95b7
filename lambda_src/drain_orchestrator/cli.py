"""`drain-orchestrator` command line: each subcommand registers itself through an add_*_parser function."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from drain_orchestrator.drain_cli import add_drain_parser
from drain_orchestrator.explain import add_explain_parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="drain-orchestrator", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_explain_parser(subparsers)
    add_drain_parser(subparsers)
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    raise SystemExit(main())
