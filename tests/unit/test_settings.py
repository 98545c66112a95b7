from __future__ import annotations

import base64
import json

import pytest

from drain_orchestrator.settings import ClusterEndpoint, OwnershipTag, Settings, SettingsError
from testbed.pki import other_ca_pem


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
        ({"CLUSTER_NAMES": "prod", "SHARED_READS_TABLE": "a b"}, "SHARED_READS_TABLE", "DynamoDB table name"),
        ({"CLUSTER_NAMES": "prod", "SHARED_READS_TABLE": "ab"}, "SHARED_READS_TABLE", "3-255"),
        ({"CLUSTER_NAMES": "prod", "SURGE_SWEEP_MINUTES": "1441"}, "SURGE_SWEEP_MINUTES", "between 0 and 1440"),
        ({"CLUSTER_NAMES": "prod", "SURGE_SWEEP_MINUTES": "15m"}, "SURGE_SWEEP_MINUTES", "whole number of minutes"),
        ({"CLUSTER_NAMES": "*", "SURGE_SWEEP_MINUTES": "15"}, "SURGE_SWEEP_MINUTES", "needs CLUSTER_NAMES"),
    ],
)
def test_invalid_values_name_the_variable(env: dict[str, str], variable: str, fragment: str) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(env)
    assert caught.value.variable == variable
    assert str(caught.value).startswith(f"{variable}: ")
    assert fragment in str(caught.value)


def test_the_shared_reads_table_is_optional_and_trimmed() -> None:
    assert Settings.from_env({"CLUSTER_NAMES": "prod"}).shared_reads_table is None
    env = {"CLUSTER_NAMES": "prod", "SHARED_READS_TABLE": " drain-shared-reads "}
    assert Settings.from_env(env).shared_reads_table == "drain-shared-reads"


def test_a_huge_value_is_clipped_in_the_error() -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"CLUSTER_NAMES": "prod", "ACTION_REBALANCE": "x" * 100_000})
    assert "(100000 chars)" in str(caught.value) and len(str(caught.value)) < 200


def test_hook_names_default_to_the_created_hook_and_are_trimmed_and_deduplicated() -> None:
    assert Settings.from_env({"CLUSTER_NAMES": "prod"}).lifecycle_hook_names == ("drain-orchestrator",)
    assert Settings.from_env({"CLUSTER_NAMES": "prod", "LIFECYCLE_HOOK_NAMES": " "}).lifecycle_hook_names == (
        "drain-orchestrator",
    )
    s = Settings.from_env({"CLUSTER_NAMES": "prod", "LIFECYCLE_HOOK_NAMES": "node-drainer, team/hook,node-drainer"})
    assert s.lifecycle_hook_names == ("node-drainer", "team/hook")
    assert s.owns_hook("team/hook") and not s.owns_hook("drain-orchestrator")


def test_controller_opt_ins_and_foreign_hook_action() -> None:
    s = Settings.from_env({"CLUSTER_NAMES": "prod"})
    assert s.drain_controller_managed == frozenset() and s.action_foreign_hook == "ignore"
    s = Settings.from_env(
        {
            "CLUSTER_NAMES": "prod",
            "DRAIN_CONTROLLER_MANAGED_NODES": "Karpenter, auto-mode",
            "ACTION_FOREIGN_HOOK": "drain",
        }
    )
    assert s.drain_controller_managed == {"karpenter", "auto-mode"} and s.action_foreign_hook == "drain"
    assert Settings.from_env(
        {"CLUSTER_NAMES": "p", "DRAIN_CONTROLLER_MANAGED_NODES": "none"}
    ).drain_controller_managed == (frozenset())


@pytest.mark.parametrize(
    ("env", "variable", "fragment"),
    [
        ({"LIFECYCLE_HOOK_NAMES": "a,,b"}, "LIFECYCLE_HOOK_NAMES", "'' is not a lifecycle hook name"),
        ({"LIFECYCLE_HOOK_NAMES": "my hook"}, "LIFECYCLE_HOOK_NAMES", "not a lifecycle hook name"),
        ({"LIFECYCLE_HOOK_NAMES": "*"}, "LIFECYCLE_HOOK_NAMES", "not a lifecycle hook name"),
        ({"LIFECYCLE_HOOK_NAMES": "h" * 256}, "LIFECYCLE_HOOK_NAMES", "1-255"),
        ({"DRAIN_CONTROLLER_MANAGED_NODES": "karpenter,cas"}, "DRAIN_CONTROLLER_MANAGED_NODES", "'cas'"),
        ({"DRAIN_CONTROLLER_MANAGED_NODES": "karpenter,"}, "DRAIN_CONTROLLER_MANAGED_NODES", "auto-mode"),
        ({"ACTION_FOREIGN_HOOK": "complete"}, "ACTION_FOREIGN_HOOK", "drain, cordon, ignore"),
    ],
)
def test_hook_and_controller_settings_name_the_variable(env: dict[str, str], variable: str, fragment: str) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"CLUSTER_NAMES": "prod", **env})
    assert caught.value.variable == variable and str(caught.value).startswith(f"{variable}: ")
    assert fragment in str(caught.value)


def test_the_surge_sweep_is_at_the_verdicts_unless_a_schedule_is_set() -> None:
    assert Settings.from_env({"CLUSTER_NAMES": "prod"}).surge_sweep_minutes == 0
    assert Settings.from_env({"CLUSTER_NAMES": "prod", "SURGE_SWEEP_MINUTES": " 15 "}).surge_sweep_minutes == 15
    assert Settings.from_env({"CLUSTER_NAMES": "*", "SURGE_SWEEP_MINUTES": "0"}).any_cluster


def _endpoints(**clusters: object) -> str:
    return json.dumps(clusters)


CA = base64.b64encode(other_ca_pem()).decode()


def test_cluster_endpoints_given_per_served_cluster() -> None:
    raw = _endpoints(
        prod={"endpoint": "https://ABC.gr7.eu-west-1.eks.amazonaws.com/", "certificateAuthorityData": CA},
        staging={"endpoint": "https://10.0.0.1:6443", "certificateAuthorityData": CA[:40] + "\n" + CA[40:]},
    )
    s = Settings.from_env({"CLUSTER_NAMES": "prod,staging", "CLUSTER_ENDPOINTS": raw})
    assert s.cluster_endpoints == (
        ClusterEndpoint("prod", "https://ABC.gr7.eu-west-1.eks.amazonaws.com", CA),
        ClusterEndpoint("staging", "https://10.0.0.1:6443", CA),
    )
    assert Settings.from_env({"CLUSTER_NAMES": "prod"}).cluster_endpoints == ()


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("{nope", "not JSON"),
        ('["prod"]', "expected a JSON object"),
        (_endpoints(other={"endpoint": "https://a", "certificateAuthorityData": CA}), "'other' is not a cluster"),
        (_endpoints(prod={"endpoint": "https://a"}), "prod: expected exactly the keys endpoint, certificateAuthority"),
        (_endpoints(prod={"endpoint": "http://a", "certificateAuthorityData": CA}), "prod: endpoint 'http://a' is not"),
        (_endpoints(prod={"endpoint": "https://a/api", "certificateAuthorityData": CA}), "is not an https:// URL"),
        (_endpoints(prod={"endpoint": "https://a:x", "certificateAuthorityData": CA}), "is not an https:// URL"),
        (_endpoints(prod={"endpoint": 7, "certificateAuthorityData": CA}), "is not an https:// URL"),
        (_endpoints(prod={"endpoint": "https://a", "certificateAuthorityData": "not base64!"}), "not base64 of a PEM"),
        (
            _endpoints(prod={"endpoint": "https://a", "certificateAuthorityData": base64.b64encode(b"hi").decode()}),
            "certificateAuthorityData is not base64 of a PEM CA certificate",
        ),
        (
            _endpoints(
                prod={
                    "endpoint": "https://a",
                    "certificateAuthorityData": base64.b64encode(b"-----BEGIN CERTIFICATE-----\nAAAA\n").decode(),
                }
            ),
            "not base64 of a PEM",
        ),
    ],
)
def test_bad_cluster_endpoints_are_refused_naming_the_variable_and_cluster(raw: str, problem: str) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"CLUSTER_NAMES": "prod", "CLUSTER_ENDPOINTS": raw})
    assert str(caught.value).startswith("CLUSTER_ENDPOINTS: ") and problem in str(caught.value)
    assert caught.value.variable == "CLUSTER_ENDPOINTS"


def test_any_cluster_takes_endpoints_of_any_cluster_name() -> None:
    raw = _endpoints(whatever={"endpoint": "https://a", "certificateAuthorityData": CA})
    (given,) = Settings.from_env({"CLUSTER_NAMES": "*", "CLUSTER_ENDPOINTS": raw}).cluster_endpoints
    assert given.cluster == "whatever"
