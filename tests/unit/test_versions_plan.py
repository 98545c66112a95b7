"""Which published versions `drain-orchestrator versions --prune` may delete, and how --function is read."""

from __future__ import annotations

import pytest

from drain_orchestrator.cli import main
from drain_orchestrator.cli.versions import plan, render, split_function

ARN = "arn:aws:lambda:eu-west-1:123456789012:function:drain-fn"


def test_only_versions_no_alias_routes_to_and_nothing_runs_on_are_prunable() -> None:
    rows = plan(
        ["10", "2", "3", "4", "9"],
        {"live": ("10", "9"), "canary": ("4",)},  # live shifts weight from 9 to 10
        {"3": ["arn:exec-a", "arn:exec-b"]},
    )
    assert [r.version for r in rows] == ["2", "3", "4", "9", "10"]  # numeric order, not text
    assert [r.version for r in rows if r.prunable] == ["2"]
    by_version = {r.version: r for r in rows}
    assert by_version["3"].why_kept == "2 execution(s) running"
    assert by_version["9"].aliases == ("live",) and by_version["4"].why_kept == "alias canary"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("drain-fn", ("drain-fn", None)),
        ("drain-fn:live", ("drain-fn", "live")),
        (ARN, (ARN, None)),
        (f"{ARN}:live", (ARN, "live")),
    ],
)
def test_function_name_or_arn_with_its_qualifier(given: str, expected: tuple[str, str | None]) -> None:
    assert split_function(given) == expected


@pytest.mark.parametrize("bad", ["", ":live", "arn:aws:lambda:eu-west-1:123456789012:layer:x", "arn:aws:s3:::bucket"])
def test_malformed_function_is_refused_naming_the_option(bad: str) -> None:
    with pytest.raises(ValueError, match="--function: expected a function name or"):
        split_function(bad)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--function", "arn:aws:s3:::bucket"], "error: --function: expected a function name or"),
        (["--function", "drain-fn", "--yes"], "error: --yes: only with --prune"),
    ],
)
def test_bad_arguments_exit_2_before_any_aws_call(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens: a call would fail, not pass
    assert main(["versions", *args]) == 2
    assert capsys.readouterr().err.startswith(message)


def test_table_says_why_each_version_stays_or_goes() -> None:
    rows = plan(["1", "2", "3"], {"live": ("3",)}, {"2": ["arn:exec"]})
    table = render("drain-fn", rows, {"1": "would delete (--yes deletes)"})
    assert table.splitlines()[2:] == [
        "       1  -                      0  would delete (--yes deletes)",
        "       2  -                      1  keep (1 execution(s) running)",
        "       3  live                   0  keep (alias live)",
    ]


def test_a_version_whose_executions_cannot_be_judged_is_kept_saying_why() -> None:
    rows = plan(["1", "2"], {}, {}, {"1": "its executions could not be listed: lambda: AccessDenied"})
    by_version = {r.version: r for r in rows}
    assert not by_version["1"].prunable and by_version["2"].prunable
    assert by_version["1"].why_kept == "cannot judge: its executions could not be listed: lambda: AccessDenied"
