"""The command line's shared conventions (cli/args.py): durations as kubectl takes them, refusals that say what
was expected, and help whose examples are commands the parser takes."""

from __future__ import annotations

import argparse
import shlex

import pytest

from drain_orchestrator.cli import build_parser
from drain_orchestrator.cli.args import duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("300", 300.0),
        ("1.5", 1.5),
        ("0", 0.0),
        ("-1", -1.0),
        ("90s", 90.0),
        ("5m", 300.0),
        ("1h30m", 5400.0),
        ("1h30m15s", 5415.0),
        ("1.5h", 5400.0),
        (".5s", 0.5),
        ("250ms", 0.25),
        ("1m0.5s", 60.5),
        ("2h45m0s", 9900.0),
        ("-1.5s", -1.5),
        ("+5m", 300.0),
        (" 5m ", 300.0),
        ("100us", 0.0001),
    ],
)
def test_durations_go_and_plain_seconds(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "m", "5 m", "5min", "1d", "1h30", "h1", "--5s", "5s-", "1.2.3s", "five"])
def test_what_is_not_a_duration_is_refused_saying_what_was_expected(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not a duration: expected seconds \(300\) or a duration such as 90s"):
        parse_duration(text)


def test_the_argparse_type_bounds_and_rounds() -> None:
    assert duration()("5m") == 300.0
    assert duration(whole=True)("2m") == 120 and isinstance(duration(whole=True)("2m"), int)
    with pytest.raises(argparse.ArgumentTypeError, match=r"^'1\.5s' is 1\.5 s: expected whole seconds$"):
        duration(whole=True)("1.5s")
    with pytest.raises(argparse.ArgumentTypeError, match=r"^'-5s': expected at least 0s$"):
        duration()("-5s")
    with pytest.raises(argparse.ArgumentTypeError, match=r"^'0s': expected at least 1s$"):
        duration(minimum=1)("0s")


def _examples(parser: argparse.ArgumentParser) -> list[str]:
    """The example command lines of a parser's help and of its subcommands' (comments and pipes cut)."""
    lines = [line.strip() for line in (parser.epilog or "").splitlines()[1:]]
    found = [shlex.split(line.split("#", 1)[0].split("|", 1)[0]) for line in lines]
    commands = [" ".join(words[1:]) for words in found if words and words[0] == "drain-orchestrator"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                commands += _examples(sub)
    return commands


def test_every_example_in_the_help_is_a_command_the_parser_takes() -> None:
    parser = build_parser()
    examples = [e for e in _examples(parser) if "--help" not in e]
    assert len(examples) >= 8 and any(e.startswith("history ") for e in examples)
    for example in examples:
        try:
            args = parser.parse_args(shlex.split(example))
        except SystemExit:
            pytest.fail(f"the help's example is refused: drain-orchestrator {example}")
        assert callable(args.func), example


def _subcommand_actions(parser: argparse.ArgumentParser, path: str = "") -> list[tuple[str, argparse.Action]]:
    """Every option of every subcommand, with the subcommand's name ("surge restore")."""
    found: list[tuple[str, argparse.Action]] = [(path, action) for action in parser._actions if action.option_strings]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _subcommand_actions(sub, f"{path} {name}".strip())
    return found


def test_every_timeout_flag_takes_a_duration() -> None:
    timeouts = [(command, a) for command, a in _subcommand_actions(build_parser()) if "--timeout" in a.option_strings]
    assert {command for command, _ in timeouts} >= {"drain", "invoke", "replay"}
    for command, action in timeouts:
        assert getattr(action.type, "__name__", None) == "duration", f"{command} --timeout takes {action.type!r}"


@pytest.mark.parametrize(
    "command",
    [["invoke", "event.json"], ["replay", "message.json", "--local"]],
    ids=["invoke", "replay"],
)
def test_an_execution_timeout_takes_whole_seconds_as_a_duration(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    parser = build_parser()
    assert parser.parse_args([*command, "--timeout", "15m"]).timeout == 900
    assert parser.parse_args([*command, "--timeout", "300"]).timeout == 300
    assert parser.parse_args(command).timeout == 3600
    for bad, expected in [("1.5s", "'1.5s' is 1.5 s: expected whole seconds"), ("0", "'0': expected at least 1s")]:
        with pytest.raises(SystemExit):
            parser.parse_args([*command, "--timeout", bad])
        assert f"argument --timeout: {expected}" in capsys.readouterr().err
