"""What every subcommand does the same way: durations, `--json`, help with examples.

- **Durations.** A flag that takes seconds also takes a Go duration, as kubectl's flags do: ``--timeout 5m``,
  ``90s``, ``1h30m``, ``1.5s``, ``250ms``; a plain number is seconds (``--timeout 300``). Use ``type=duration()``
  (``whole=True`` for a flag that takes whole seconds); a bad value is refused by argparse with the flag's name.
- **`--json`.** ``add_json_flag(parser)``; the command prints its one document with :func:`emit_json`. While a
  command with ``args.json`` set runs, everything else written to stdout (progress lines, a library's log lines,
  the Lambda handler's EMF metrics under `invoke`) goes to stderr, so stdout is exactly one JSON document.
- **Help.** ``add_command(subparsers, name, help=…, description=…, examples=[…])``: the description as written and
  an "examples:" section, as the top-level help shows them.
- **Tables.** :func:`table`: columns padded to their widest cell.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

# Go's time.ParseDuration units (no days: neither Go nor kubectl has them)
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_NUMBER = re.compile(r"[-+]?(\d+(?:\.\d*)?|\.\d+)")
_EXPECTED = "expected seconds (300) or a duration such as 90s, 5m, 1h30m (units h, m, s, ms)"


def parse_duration(text: str) -> float:
    """Seconds from ``text``: a plain number of seconds, or a Go duration (a sequence of number+unit, optionally
    signed: ``1h30m``, ``-1.5s``). Raises ValueError saying what was expected."""
    value = text.strip()
    if _NUMBER.fullmatch(value):
        return float(value)
    sign, body = (-1.0, value[1:]) if value.startswith("-") else (1.0, value.removeprefix("+"))
    total, at = 0.0, 0
    while at < len(body):
        part = _PART.match(body, at)
        if part is None:
            raise ValueError(f"{text!r} is not a duration: {_EXPECTED}")
        total += float(part.group(1)) * _UNITS[part.group(2)]
        at = part.end()
    if not body:
        raise ValueError(f"{text!r} is not a duration: {_EXPECTED}")
    return sign * total


def duration(*, whole: bool = False, minimum: float = 0.0) -> Callable[[str], Any]:
    """An argparse ``type`` for a flag taking seconds: float seconds (int with ``whole``), at least ``minimum``."""

    def parse(text: str) -> float | int:
        try:
            seconds = parse_duration(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        if seconds < minimum:
            raise argparse.ArgumentTypeError(f"{text!r}: expected at least {_shown(minimum)}")
        if whole:
            if seconds != int(seconds):
                raise argparse.ArgumentTypeError(f"{text!r} is {seconds:g} s: expected whole seconds")
            return int(seconds)
        return seconds

    parse.__name__ = "duration"  # argparse names the type in its message: "invalid duration value"
    return parse


def _shown(seconds: float) -> str:
    return f"{seconds:g}s"


def add_json_flag(parser: argparse.ArgumentParser, help: str = "one JSON document on stdout instead of text") -> None:
    parser.add_argument("--json", action="store_true", help=help)


class _Output:
    stream: TextIO | None = None  # the real stdout while a --json command runs


def emit_json(document: Any, *, indent: int | None = 2) -> None:
    """The command's one JSON document, on stdout."""
    stream = _Output.stream or sys.stdout
    stream.write(json.dumps(document, indent=indent) + "\n")
    stream.flush()


@contextlib.contextmanager
def json_stdout(enabled: bool) -> Iterator[None]:
    """While the command runs, file descriptor 1 is stderr (so whatever else prints, here or in a library or a
    subprocess, cannot mix into the document); :func:`emit_json` writes to the real stdout."""
    if not enabled:
        yield
        return
    sys.stdout.flush()
    real = os.dup(1)
    os.dup2(2, 1)
    _Output.stream = open(real, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 - closed below
    try:
        yield
    finally:
        sys.stdout.flush()
        with contextlib.suppress(BrokenPipeError):  # the reader went away: the command's own error said so
            _Output.stream.close()
        _Output.stream = None
        os.dup2(real, 1)
        os.close(real)


def add_command(
    subparsers: Any, name: str, *, help: str, description: str, examples: Sequence[str] = ()
) -> argparse.ArgumentParser:
    """A subcommand whose ``--help`` shows ``description`` as written and its ``examples``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=help,
        description=description,
        epilog=examples_text(examples),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def examples_text(examples: Sequence[str]) -> str | None:
    return "examples:\n" + "\n".join(f"  {line}" for line in examples) if examples else None


def table(head: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    """Columns padded to their widest cell; the last one is left ragged."""
    lines = [head, *rows]
    widths = [max(len(r[i]) for r in lines) for i in range(len(head) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1] for r in lines)
