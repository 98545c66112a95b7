"""The command line's shared conventions (cli/args.py): durations as kubectl takes them, and refusals that say what
was expected."""

from __future__ import annotations

import argparse

import pytest

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
