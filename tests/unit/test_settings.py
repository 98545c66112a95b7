from __future__ import annotations

import pytest

from drain_orchestrator.settings import OwnershipTag, Settings, SettingsError


def test_one_cluster_and_defaults_from_the_design_table() -> None:
    s = Settings.from_env({"CLUSTER_NAMES": "prod"})
    assert s.cluster_names == ("prod",)
    assert not s.any_cluster
    assert s.ownership_tag is None
    assert (s.action_rebalance, s.action_spot_interruption) == ("cordon", "drain")
    assert (s.action_state_change, s.action_scheduled_change) == ("drain", "drain")
    assert s.serves("prod") and not s.serves("staging")


def test_several_clusters_are_trimmed_and_deduplicated() -> None:
    s = Settings.from_env({"CLUSTER_NAMES": " prod, staging ,prod"})
    assert s.cluster_names == ("prod", "staging")


def test_star_serves_any_cluster() -> None:
    s = Settings.from_env({"CLUSTER_NAMES": "*"})
    assert s.any_cluster and s.serves("whatever")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("team/cluster", OwnershipTag("team/cluster")), ("drain-me=yes", OwnershipTag("drain-me", "yes"))],
)
def test_ownership_tag_key_or_key_value(raw: str, expected: OwnershipTag) -> None:
    assert Settings.from_env({"CLUSTER_NAMES": "prod", "OWNERSHIP_TAG": raw}).ownership_tag == expected


def test_actions_are_case_insensitive() -> None:
    s = Settings.from_env({"CLUSTER_NAMES": "prod", "ACTION_REBALANCE": "Drain", "ACTION_STATE_CHANGE": "ignore"})
    assert (s.action_rebalance, s.action_state_change) == ("drain", "ignore")


@pytest.mark.parametrize(
    ("env", "variable", "fragment"),
    [
        ({}, "CLUSTER_NAMES", "required"),
        ({"CLUSTER_NAMES": "  "}, "CLUSTER_NAMES", "required"),
        ({"CLUSTER_NAMES": "prod,*"}, "CLUSTER_NAMES", "stand alone"),
        ({"CLUSTER_NAMES": "prod,,x"}, "CLUSTER_NAMES", "not an EKS cluster name"),
        ({"CLUSTER_NAMES": "-bad"}, "CLUSTER_NAMES", "not an EKS cluster name"),
        ({"CLUSTER_NAMES": "prod", "OWNERSHIP_TAG": "=v"}, "OWNERSHIP_TAG", "'key' or 'key=value'"),
        ({"CLUSTER_NAMES": "a,b", "OWNERSHIP_TAG": "k=v"}, "OWNERSHIP_TAG", "exactly one cluster"),
        ({"CLUSTER_NAMES": "*", "OWNERSHIP_TAG": "k=v"}, "OWNERSHIP_TAG", "exactly one cluster"),
        ({"CLUSTER_NAMES": "prod", "ACTION_REBALANCE": "evict"}, "ACTION_REBALANCE", "drain, cordon, ignore"),
        ({"CLUSTER_NAMES": "prod", "NOTIFICATION_TOPIC_ARN": "topic"}, "NOTIFICATION_TOPIC_ARN", "SNS topic"),
    ],
)
def test_invalid_values_name_the_variable(env: dict[str, str], variable: str, fragment: str) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(env)
    assert caught.value.variable == variable
    assert str(caught.value).startswith(f"{variable}: ")
    assert fragment in str(caught.value)


def test_a_huge_value_is_clipped_in_the_error() -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"CLUSTER_NAMES": "prod", "ACTION_REBALANCE": "x" * 100_000})
    assert "(100000 chars)" in str(caught.value) and len(str(caught.value)) < 200
