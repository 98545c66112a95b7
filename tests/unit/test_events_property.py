"""Property tests: whatever a sample is mutated into, parse_event answers Interruption, Ignored or
MalformedEvent, never anything else (an unhandled exception would make the Lambda retry-loop)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drain_orchestrator.events import Ignored, Interruption, MalformedEvent, parse_event
from tests import samples

SAMPLES = [samples.load(n) for n in samples.names()]

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(
        [
            "i-0123456789abcdef0",
            "2025-03-28T10:00:00Z",
            "Fri, 28 Mar 2025 22:00:00 GMT",
            "Mon, 99 Foo 0000 99:99:99 GMT",
            "EC2",
            "scheduledChange",
            "autoscaling:TEST_NOTIFICATION",
            "WarmPool",
            "stopping",
            "",
        ]
    ),
)
json_value = st.recursive(
    json_leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found.extend(_paths(value, (*prefix, key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.extend(_paths(value, (*prefix, index)))
    return found


@st.composite
def mutated_events(draw: st.DrawFn) -> object:
    event: Any = copy.deepcopy(draw(st.sampled_from(SAMPLES)))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        paths = _paths(event)
        path = draw(st.sampled_from(paths))
        if not path:
            return draw(json_value)  # replace the whole event
        parent = event
        for part in path[:-1]:
            parent = parent[part]
        operation = draw(st.sampled_from(["replace", "delete", "add"]))
        if operation == "replace":
            parent[path[-1]] = draw(json_value)
        elif operation == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=12))] = draw(json_value)
    return event


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_events())
def test_mutated_samples_never_raise_anything_unexpected(raw: object) -> None:
    try:
        result = parse_event(raw)
    except MalformedEvent as exc:
        assert exc.path
        return
    assert isinstance(result, Interruption | Ignored)
    if isinstance(result, Interruption):
        assert result.instance_ids  # never act on an event that names no instance
        assert all(i.startswith("i-") for i in result.instance_ids)


@settings(max_examples=300, deadline=None)
@given(json_value)
def test_arbitrary_json_never_raises_anything_unexpected(raw: object) -> None:
    try:
        result = parse_event(raw)
    except MalformedEvent:
        return
    assert isinstance(result, Ignored)
