"""`drain-orchestrator versions`: the function's published versions, which alias routes to each, and the durable
executions still running on each; with ``--prune --yes``, delete the versions nothing needs any more.

A deploy keeps every version (the construct retains them): a durable execution is bound to the version it
started on and resumes on that version's code after each wait, for as long as its drain lasts. A version may go
only when no alias routes to it and no execution started within its execution timeout is unfinished on it
(aws/lambda_versions.py reads the listing only where Lambda's documents agree: by version, and by alias for the
executions an alias-qualified listing names); a version whose executions cannot be listed, or that an execution of
unknown version might run on, is kept. Each deletion is preceded by a fresh look at that version.
``--prune`` without ``--yes`` only says what it would delete.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from drain_orchestrator.cli.args import add_json_flag, emit_json


@dataclass(frozen=True)
class VersionRow:
    version: str
    aliases: tuple[str, ...]  # aliases routing to this version
    executions: tuple[str, ...]  # ARNs of executions not finished on it
    unjudged: str | None = None  # why its executions could not be judged (then it is kept)

    @property
    def prunable(self) -> bool:
        return not self.aliases and not self.executions and self.unjudged is None

    @property
    def why_kept(self) -> str:
        reasons = [f"alias {', '.join(self.aliases)}"] if self.aliases else []
        if self.executions:
            reasons.append(f"{len(self.executions)} execution(s) running")
        if self.unjudged is not None:
            reasons.append(f"cannot judge: {self.unjudged}")
        return "; ".join(reasons)


def plan(
    versions: list[str],
    aliases: dict[str, tuple[str, ...]],
    running: dict[str, list[str]],
    unjudged: dict[str, str] | None = None,
) -> list[VersionRow]:
    """One row per published version, oldest first (pure: the inputs are what the Lambda API answered)."""
    return [
        VersionRow(
            version=v,
            aliases=tuple(sorted(name for name, targets in aliases.items() if v in targets)),
            executions=tuple(running.get(v, ())),
            unjudged=(unjudged or {}).get(v),
        )
        for v in sorted(versions, key=int)
    ]


@dataclass
class Use:
    """What runs on each version: execution ARNs by version, and the versions that could not be judged (why)."""

    running: dict[str, list[str]] = field(default_factory=dict)
    unjudged: dict[str, str] = field(default_factory=dict)

    def add(self, version: str, arn: str) -> None:
        arns = self.running.setdefault(version, [])
        if arn not in arns:  # listed under its version and under the alias it was started through
            arns.append(arn)


def version_use(client: Any, function: str, versions: Iterable[str], aliases: Iterable[str], now: float) -> Use:
    """The executions that may still run on each of ``versions``: listed by each version, then by each alias (an
    execution started through an alias may be listed under the alias alone); never the unqualified listing, whose
    scope Lambda's documents disagree on."""
    from drain_orchestrator.aws import lambda_versions as api  # noqa: PLC0415
    from drain_orchestrator.failures import ApiError  # noqa: PLC0415

    use = Use()
    wanted = list(versions)
    timeouts: dict[str, int] = {}

    def attribute(listed: api.Listed, under: str) -> None:
        version = listed.qualifier if listed.qualifier and listed.qualifier.isdigit() else None
        if version is None and listed.qualifier is None and under.isdigit():
            version = under
        if version is None:  # an alias-qualified ARN: ask the execution
            version = api.execution_version(client, listed.arn)
        if version is None:
            for v in wanted:
                use.unjudged.setdefault(v, f"execution {listed.arn} ({listed.status}) names no version")
        else:
            use.add(version, listed.arn)

    for v in wanted:
        try:
            timeouts[v] = api.execution_timeout(client, function, v)
            for listed in api.listed_live(client, function, v, now - timeouts[v]):
                attribute(listed, v)
        except ApiError as exc:
            use.unjudged[v] = f"its executions could not be listed: {exc}"
    window = max(timeouts.values(), default=api.MAX_EXECUTION_TIMEOUT_SECONDS)
    for alias in sorted(aliases):
        try:
            for listed in api.listed_live(client, function, alias, now - window):
                attribute(listed, alias)
        except ApiError as exc:
            for v in wanted:
                use.unjudged.setdefault(v, f"the executions of alias {alias} could not be listed: {exc}")
    return use


def split_function(function: str) -> tuple[str, str | None]:
    """A name, a partial or full ARN, optionally qualified (the stack's FunctionAliasArn output) -> (function
    without qualifier, qualifier)."""
    if function.startswith("arn:"):
        parts = function.split(":")
        if len(parts) not in (7, 8) or parts[5] != "function" or not parts[6]:
            raise ValueError(
                f"--function: expected a function name or arn:aws:lambda:…:function:NAME[:QUALIFIER], got {function!r}"
            )
        return ":".join(parts[:7]), (parts[7] or None) if len(parts) == 8 else None
    name, _, qualifier = function.partition(":")
    if not name:
        raise ValueError(f"--function: expected a function name or ARN, got {function!r}")
    return name, qualifier or None


def render(function: str, rows: list[VersionRow], outcome: dict[str, str]) -> str:
    lines = [f"function {function}", f"{'version':>8}  {'aliases':<16} {'running':>7}  action"]
    for row in rows:
        action = outcome.get(row.version) or f"keep ({row.why_kept})"
        lines.append(f"{row.version:>8}  {','.join(row.aliases) or '-':<16} {len(row.executions):>7}  {action}")
    if not rows:
        lines.append("  (no published versions)")
    return "\n".join(lines)


def add_versions_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "versions", help="published versions, their aliases and running executions; --prune deletes unused ones"
    )
    p.add_argument(
        "--function", required=True, help="function name or ARN (the stack output FunctionAliasArn works as is)"
    )
    p.add_argument(
        "--prune", action="store_true", help="versions no alias routes to and nothing runs on: say they would go"
    )
    p.add_argument("--yes", action="store_true", help="with --prune: delete them")
    add_json_flag(p)
    p.set_defaults(func=run_versions)


def run_versions(args: argparse.Namespace) -> int:
    try:
        function, _qualifier = split_function(args.function)
        if args.yes and not args.prune:
            raise ValueError("--yes: only with --prune")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from drain_orchestrator.aws import lambda_versions as api  # noqa: PLC0415
    from drain_orchestrator.failures import ApiError  # noqa: PLC0415

    client = api.lambda_client()
    outcome: dict[str, str] = {}
    failed = False
    try:
        versions = api.published_versions(client, function)
        aliases = api.alias_targets(client, function)
        use = version_use(client, function, versions, aliases, time.time())
        rows = plan(versions, aliases, use.running, use.unjudged)
        for row in rows if args.prune else []:
            if not row.prunable:
                continue
            if not args.yes:
                outcome[row.version] = "would delete (--yes deletes)"
                continue
            # an execution could have started on it since the listing (a version-qualified invoke): look again
            again = version_use(client, function, [row.version], aliases, time.time())
            if again.running.get(row.version) or row.version in again.unjudged:
                outcome[row.version] = "keep (an execution started on it meanwhile, or it cannot be judged now)"
                continue
            try:
                api.delete_version(client, function, row.version)
                outcome[row.version] = "deleted"
            except ApiError as exc:
                outcome[row.version] = f"not deleted: {exc}"
                failed = True
    except ApiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    failed = failed or any(r.unjudged is not None for r in rows)  # kept, but the operator must look
    if args.json:
        doc = {
            "function": function,
            "versions": [{**asdict(r), "prunable": r.prunable, "action": outcome.get(r.version, "keep")} for r in rows],
        }
        emit_json(doc)
    else:
        print(render(function, rows, outcome))
    return 1 if failed else 0
