"""The bed's ListDurableExecutionsByFunction (testbed/durable_listing.py) holds to what Lambda's documents say: the
qualifier's scope (the API reference's `$LATEST` without one; the SDK model's every version; alias-qualified ARNs),
the valid statuses, MaxItems' default and bounds, newest first unless ReverseOrder, Marker pagination, the start
time filters, and the error codes of bad values."""

from __future__ import annotations

import pytest

from testbed.durable_listing import (
    ALIAS_ARNS,
    API_REFERENCE,
    SDK_MODEL,
    Behaviour,
    Execution,
    ListingError,
    list_page,
)

FN = "arn:aws:lambda:us-east-1:123456789012:function:drain"


def _exec(n: int, version: str, status: str = "RUNNING", via: str | None = None) -> Execution:
    return Execution(f"arn:exec-{n}", f"e{n}", f"{FN}:{version}", status, started=1000.0 + n, invoked_as=via)


EXECUTIONS = [
    _exec(1, "$LATEST"),
    _exec(2, "1", "SUCCEEDED"),
    _exec(3, "1"),
    _exec(4, "2", via="live"),
    _exec(5, "2"),
]


def _arns(query: dict[str, list[str]], behaviour: Behaviour = API_REFERENCE) -> list[str]:
    return [e["DurableExecutionArn"] for e in list_page(EXECUTIONS, query, behaviour)["DurableExecutions"]]


def test_without_a_qualifier_the_api_reference_lists_latest_only_and_the_sdk_model_every_version() -> None:
    assert _arns({}) == ["arn:exec-1"]
    assert _arns({}, SDK_MODEL) == ["arn:exec-5", "arn:exec-4", "arn:exec-3", "arn:exec-2", "arn:exec-1"]


def test_a_version_qualifier_lists_that_versions_executions() -> None:
    assert _arns({"Qualifier": ["1"]}) == ["arn:exec-3", "arn:exec-2"]
    assert _arns({"Qualifier": ["2"]}) == ["arn:exec-5", "arn:exec-4"]


def test_with_alias_arns_an_execution_started_through_the_alias_is_listed_under_it_alone() -> None:
    assert _arns({"Qualifier": ["2"]}, ALIAS_ARNS) == ["arn:exec-5"]
    page = list_page(EXECUTIONS, {"Qualifier": ["live"]}, ALIAS_ARNS)["DurableExecutions"]
    assert [(e["DurableExecutionArn"], e["FunctionArn"]) for e in page] == [("arn:exec-4", f"{FN}:live")]
    assert _arns({"Qualifier": ["live"]}) == []  # elsewhere an alias qualifier finds nothing: executions are by version


def test_statuses_filter_and_only_the_documented_values_are_valid() -> None:
    assert _arns({"Qualifier": ["1"], "Statuses": ["SUCCEEDED"]}) == ["arn:exec-2"]
    for value in ("PAUSED", "PAUSING", "DELETING"):
        with pytest.raises(ListingError) as refused:
            _arns({"Statuses": [value]})
        assert (refused.value.status, refused.value.error_type) == (400, "InvalidParameterValueException")
        assert value in refused.value.message
        assert _arns({"Statuses": [value]}, SDK_MODEL) == []  # the model's reading knows them
    with pytest.raises(ListingError):
        _arns({"Statuses": ["running"]}, SDK_MODEL)  # case matters


def test_newest_first_by_default_oldest_first_with_reverse_order_and_the_start_filters() -> None:
    assert _arns({"Qualifier": ["1"], "ReverseOrder": ["true"]}) == ["arn:exec-2", "arn:exec-3"]
    after = {"StartedAfter": ["1970-01-01T00:16:42Z"]}  # 1002: strictly after
    assert _arns({**after}, SDK_MODEL) == ["arn:exec-5", "arn:exec-4", "arn:exec-3"]
    assert _arns({"StartedBefore": ["1003"]}, SDK_MODEL) == ["arn:exec-2", "arn:exec-1"]


def test_max_items_defaults_to_100_pages_with_a_marker_and_is_bounded() -> None:
    many = [_exec(n, "1") for n in range(250)]
    first = list_page(many, {"Qualifier": ["1"]}, API_REFERENCE)
    assert len(first["DurableExecutions"]) == 100 and first["NextMarker"]
    seen = [e["DurableExecutionArn"] for e in first["DurableExecutions"]]
    marker = first["NextMarker"]
    while marker:
        page = list_page(many, {"Qualifier": ["1"], "Marker": [marker], "MaxItems": ["70"]}, API_REFERENCE)
        seen += [e["DurableExecutionArn"] for e in page["DurableExecutions"]]
        marker = page.get("NextMarker")
    assert sorted(seen) == sorted(e.arn for e in many) and len(seen) == len(set(seen))
    for bad in ("1001", "-1", "ten"):
        with pytest.raises(ListingError) as refused:
            list_page(many, {"MaxItems": [bad]}, API_REFERENCE)
        assert refused.value.error_type == "InvalidParameterValueException"


def test_a_malformed_qualifier_is_refused() -> None:
    with pytest.raises(ListingError) as refused:
        _arns({"Qualifier": ["a b"]})
    assert (refused.value.status, refused.value.error_type) == (400, "InvalidParameterValueException")
