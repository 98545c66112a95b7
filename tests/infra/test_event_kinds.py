"""The infra's kind table against the function's (kinds.KINDS), column by column: every kind the parser produces
has a rule that matches its samples and a series in the deadline-missed alarm. Pure, no jsii (infra never imports
lambda_src; the test does)."""

from __future__ import annotations

from typing import Any, get_args

import pytest
from infra.config import KindActions, config_from_mapping
from infra.event_rules import DRAIN_STATES, KIND_TABLE, SWEEP_EVENT, rule_specs
from infra.observability import EVENT_KINDS

from drain_orchestrator.events import DRAINING_STATES, Interruption, parse_event
from drain_orchestrator.interruption import Kind
from drain_orchestrator.kinds import KINDS
from drain_orchestrator.settings import Settings
from drain_orchestrator.workflow import schedules
from testbed import samples


def _matches(pattern: dict[str, Any], event: dict[str, Any]) -> bool:
    """EventBridge matching for the patterns we write: nested objects of lists of exact values."""
    for key, wanted in pattern.items():
        if key not in event:
            return False
        if isinstance(wanted, dict):
            if not isinstance(event[key], dict) or not _matches(wanted, event[key]):
                return False
        elif event[key] not in wanted:
            return False
    return True


INTERRUPTIONS = [
    (name, raw)
    for name in samples.names()
    if not name.startswith(("malformed-", "unsupported-"))
    and isinstance(parse_event(raw := samples.load(name)), Interruption)
]


def test_the_alarm_and_dashboard_list_every_kind_the_function_names() -> None:
    assert get_args(Kind) == EVENT_KINDS


def test_the_infra_table_is_the_function_table_column_by_column() -> None:
    assert tuple(KINDS) == get_args(Kind) == tuple(row.kind for row in KIND_TABLE)
    defaults = Settings.from_env({"CLUSTER_NAMES": "prod"})
    for row in KIND_TABLE:
        fn = KINDS[row.kind]  # type: ignore[index]
        assert (row.source, row.detail_type, row.label) == (fn.source, fn.detail_type, fn.label), row.kind
        assert row.default_action == fn.default_action, row.kind
        if row.action is None:
            assert fn.action_variable is None, row.kind
        else:  # the context key's field and the function's ACTION_* variable name one setting with one default
            assert fn.action_variable == f"ACTION_{row.action.upper()}", row.kind
            assert getattr(KindActions(), row.action) == fn.default_action == getattr(defaults, f"action_{row.action}")
        assert (row.lifecycle == "terminate") == fn.lifecycle, row.kind
        assert (row.lifecycle == "launch") == (fn.flow == "launch"), row.kind
    assert DRAIN_STATES == DRAINING_STATES


def test_by_default_every_kind_has_one_rule() -> None:
    kinds = [kind for spec in rule_specs(config_from_mapping({"clusters": "prod"})) for kind in spec.kinds]
    assert sorted(kinds) == sorted(get_args(Kind))


def test_the_capacity_block_kinds_share_one_rule_with_both_detail_types() -> None:
    """Two more rules would take the construct past the 10 FailedInvocations one alarm may sum (failure_alarms)."""
    specs = rule_specs(config_from_mapping({"clusters": "prod"}))
    (block,) = [s for s in specs if "capacity-block-delivered" in s.kinds]
    assert block.kinds == ("capacity-block-delivered", "capacity-block-expiring")
    assert block.construct_id == "CapacityBlockRule"
    assert block.pattern == {
        "source": ["aws.ec2"],
        "detail-type": ["Capacity Block Delivered", "Capacity Block Expiration Warning"],
    }
    assert len(specs) == len({s.construct_id for s in specs}) == len(get_args(Kind)) - 1
    ignored = rule_specs(config_from_mapping({"clusters": "prod", "actionCapacityBlock": "ignore"}))
    assert not [s for s in ignored if s.construct_id == "CapacityBlockRule"]


@pytest.mark.parametrize(("name", "raw"), INTERRUPTIONS, ids=[n for n, _ in INTERRUPTIONS])
def test_each_sample_is_matched_by_the_rule_of_its_kind_only(name: str, raw: dict[str, Any]) -> None:
    parsed = parse_event(raw)
    assert isinstance(parsed, Interruption)
    config = config_from_mapping({"clusters": "prod", "lifecycleHookNames": "drain"})  # the samples' hook
    matching = [spec.kinds for spec in rule_specs(config) if _matches(spec.pattern, raw)]
    assert len(matching) == 1 and parsed.kind in matching[0], name


def test_an_ignored_capacity_reservation_warning_gets_no_rule() -> None:
    config = config_from_mapping({"clusters": "prod", "actionCapacityReservationInterruption": "ignore"})
    assert "capacity-reservation-interruption" not in [spec.kind for spec in rule_specs(config)]
    cordon = config_from_mapping({"clusters": "prod", "actionCapacityReservationInterruption": "cordon"})
    assert "capacity-reservation-interruption" in [spec.kind for spec in rule_specs(cordon)]


def test_the_surge_sweeps_input_is_what_the_function_branches_on_and_no_kinds_rule_matches_it() -> None:
    event = {**SWEEP_EVENT, "id": "schedule-tick", "time": "2026-12-01T00:00:00Z"}
    assert schedules.is_sweep(event)
    assert not any(schedules.is_sweep(samples.load(name)) for name in samples.names())
    config = config_from_mapping({"clusters": "prod"})
    assert [spec.kind for spec in rule_specs(config) if _matches(spec.pattern, event)] == []
