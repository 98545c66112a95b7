"""Given cluster endpoints (`clusterEndpoints` context or the `cluster_endpoints` prop): pure, no jsii. They become
the function's CLUSTER_ENDPOINTS setting, bad ones name the key and the cluster, they must fit Lambda's 4 KB of
environment, and endpoints known only at deploy are left to the function."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from infra.config import ClusterEndpoint, ConfigError, OrchestratorConfig, config_from_mapping
from infra.environment import lambda_environment

from testbed.pki import other_ca_pem

CA = base64.b64encode(other_ca_pem()).decode()
ENDPOINT = "https://0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com"


def test_cluster_endpoints_from_context_become_the_functions_setting() -> None:
    given = {"prod": {"endpoint": ENDPOINT, "certificateAuthorityData": CA}}
    for raw in (json.dumps(given), given):  # `-c clusterEndpoints='...'` or a JSON object in cdk.json
        config = config_from_mapping({"clusters": "prod,staging", "clusterEndpoints": raw})
        assert config.cluster_endpoints == (("prod", ClusterEndpoint(ENDPOINT, CA)),)
        env = lambda_environment(config, notification_topic_arn="arn:aws:sns:eu-west-1:123456789012:t")
        assert json.loads(env["CLUSTER_ENDPOINTS"]) == given
        from drain_orchestrator.settings import ClusterEndpoint as Given
        from drain_orchestrator.settings import Settings

        assert Settings.from_env(env).cluster_endpoints == (Given("prod", ENDPOINT, CA),)
    plain = lambda_environment(config_from_mapping({"clusters": "a"}), notification_topic_arn="t")
    assert "CLUSTER_ENDPOINTS" not in plain


@pytest.mark.parametrize(
    ("given", "fragment"),
    [
        ("{nope", "not a JSON object"),
        ({"prod": {"endpoint": ENDPOINT}}, "prod: expected exactly the keys endpoint, certificateAuthorityData"),
        ({"other": {"endpoint": ENDPOINT, "certificateAuthorityData": CA}}, "'other' is not one of clusters (prod)"),
        (
            {"prod": {"endpoint": "prod.example.com", "certificateAuthorityData": CA}},
            "CLUSTER_ENDPOINTS: prod: endpoint 'prod.example.com' is not an https:// URL",
        ),
        (
            {"prod": {"endpoint": ENDPOINT, "certificateAuthorityData": "LS0tLS1CRUdJTg=="}},
            "CLUSTER_ENDPOINTS: prod: certificateAuthorityData is not base64 of a PEM CA certificate",
        ),
    ],
)
def test_bad_cluster_endpoints_name_the_key_and_the_cluster(given: Any, fragment: str) -> None:
    raw = given if isinstance(given, str) else json.dumps(given)
    with pytest.raises(ConfigError) as raised:
        config_from_mapping({"clusters": "prod", "clusterEndpoints": raw})
    assert raised.value.key == "clusterEndpoints"
    assert fragment in str(raised.value)


def test_cluster_endpoints_must_fit_lambdas_4_kb_of_environment() -> None:
    big = base64.b64encode(other_ca_pem() * 2).decode()  # about the size of an EKS cluster's RSA CA
    given = {name: ClusterEndpoint(ENDPOINT, big) for name in ("a", "b", "c")}
    with pytest.raises(ConfigError) as raised:
        OrchestratorConfig(clusters=("a", "b", "c"), cluster_endpoints=given)
    assert raised.value.key == "cluster_endpoints"
    assert "over Lambda's 4096" in str(raised.value) and "fewer clusters" in str(raised.value)
    assert OrchestratorConfig(clusters=("a", "b", "c"), cluster_endpoints={"a": given["a"]}).cluster_endpoints


def test_cluster_endpoints_known_only_at_deploy_are_left_to_the_function() -> None:
    """An `aws_eks.Cluster` in the same app gives tokens: resolved at deploy, checked by the function at cold start."""
    token = "${Token[TOKEN.123]}"
    config = OrchestratorConfig(clusters=("prod",), cluster_endpoints={"prod": ClusterEndpoint(token, token)})
    env = lambda_environment(config, notification_topic_arn="t")
    assert json.loads(env["CLUSTER_ENDPOINTS"]) == {"prod": {"endpoint": token, "certificateAuthorityData": token}}
    with pytest.raises(ConfigError, match="is not an https:// URL"):
        OrchestratorConfig(clusters=("prod",), cluster_endpoints={"prod": ClusterEndpoint("http://x", token)})
