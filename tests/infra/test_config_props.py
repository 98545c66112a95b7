"""The construct's props (`OrchestratorConfig(...)` in a CDK app): the same validator as context, every bad prop
named in the error, props normalized like context, timing props given as a CDK Duration."""

from __future__ import annotations

from typing import Any

import pytest
from infra.config import ConfigError, KindActions, OrchestratorConfig, VpcPlacement, config_from_mapping


@pytest.mark.parametrize(
    ("props", "prop"),
    [
        ({"clusters": ("*",)}, "clusters"),
        ({"clusters": "prod"}, "clusters"),  # a string would be the clusters p, r, o, d
        ({"clusters": ()}, "clusters"),
        ({"clusters": ("bad name",)}, "clusters"),
        ({"create_lifecycle_hooks": "ng1"}, "create_lifecycle_hooks"),
        ({"asg_names": ("arn:aws:autoscaling:x",)}, "asg_names"),
        ({"lifecycle_hook_names": ("bad hook!",)}, "lifecycle_hook_names"),
        ({"created_hook_name": "no spaces"}, "created_hook_name"),
        ({"memory_size": 64}, "memory_size"),
        ({"memory_size": "512"}, "memory_size"),
        ({"heartbeat_timeout_seconds": True}, "heartbeat_timeout_seconds"),
        ({"reserved_concurrency": 0}, "reserved_concurrency"),
        ({"timeout_seconds": 120}, "timeout_seconds"),
        ({"execution_timeout_hours": 47}, "execution_timeout_hours"),
        ({"log_retention_days": 31}, "log_retention_days"),
        ({"log_level": "TRACE"}, "log_level"),
        ({"surge_sweep_minutes": 1.5}, "surge_sweep_minutes"),
        ({"alarm_email": "not-an-email"}, "alarm_email"),
        ({"create_access_entries": "false"}, "create_access_entries"),
        ({"clusters": ("a", "b"), "ownership_tag": "team=platform"}, "ownership_tag"),
        ({"ownership_tag": "a=b=c"}, "ownership_tag"),
        ({"drain_settings": {"DRAIN_GRACE": "30"}}, "drain_settings"),
        ({"drain_settings": {"WAIT_FOR_DEREGISTRATION": "nevr"}}, "drain_settings"),
        ({"drain_settings": {"DRAIN_GRACE_PERIOD": -1}}, "drain_settings"),
        ({"drain_settings": {"DRAIN_FORCE": [1]}}, "drain_settings"),
        ({"actions": "drain"}, "actions"),
        ({"vpc": "vpc-0123456789abcdef0"}, "vpc"),
    ],
)  # fmt: skip
def test_bad_props_name_the_prop(props: dict[str, Any], prop: str) -> None:
    """The documented library path, `OrchestratorConfig(...)` in a CDK app, runs the same validator as context."""
    with pytest.raises(ConfigError) as raised:
        OrchestratorConfig(**{"clusters": ("prod",), **props})
    assert raised.value.key == prop
    assert str(raised.value).startswith(f"invalid OrchestratorConfig prop '{prop}': ")


@pytest.mark.parametrize(
    ("build", "prop"),
    [
        (lambda: KindActions(rebalance="evict"), "actions.rebalance"),
        (lambda: KindActions(spot_interruption="wait"), "actions.spot_interruption"),
        (lambda: VpcPlacement("vpc-123", ("subnet-0aaaaaaaaaaaaaaa1",)), "vpc.vpc_id"),
        (lambda: VpcPlacement("vpc-0123456789abcdef0", ()), "vpc.subnet_ids"),
        (lambda: VpcPlacement("vpc-0123456789abcdef0", "subnet-0aaaaaaaaaaaaaaa1"), "vpc.subnet_ids"),
        (lambda: VpcPlacement("vpc-0123456789abcdef0", ("subnet-0aaaaaaaaaaaaaaa1",), ("x",)),
         "vpc.security_group_ids"),
    ],
)  # fmt: skip
def test_bad_nested_props_name_the_prop(build: Any, prop: str) -> None:
    with pytest.raises(ConfigError) as raised:
        build()
    assert raised.value.key == prop
    assert f"'{prop}'" in str(raised.value)


def test_props_are_normalized_like_context() -> None:
    config = OrchestratorConfig(
        clusters=["prod", "prod"],  # type: ignore[arg-type]
        create_lifecycle_hooks=["ng-1"],  # type: ignore[arg-type]
        drain_settings={"DRY_RUN": True, "DRAIN_GRACE_PERIOD": 30},  # type: ignore[arg-type]
    )
    assert config.clusters == ("prod",)
    assert config.create_lifecycle_hooks == ("ng-1",)
    assert config.drain_settings == (("DRAIN_GRACE_PERIOD", "30"), ("DRY_RUN", "true"))
    assert config == config_from_mapping(
        {
            "clusters": "prod",
            "createLifecycleHooks": "ng-1",
            "drainSettings": '{"DRY_RUN": true, "DRAIN_GRACE_PERIOD": 30}',
        }
    )


def test_timing_props_take_a_cdk_duration() -> None:
    from aws_cdk import Duration

    config = OrchestratorConfig(
        clusters=("prod",),
        heartbeat_timeout_seconds=Duration.minutes(10),  # type: ignore[arg-type]
        timeout_seconds=Duration.minutes(5),  # type: ignore[arg-type]
        execution_timeout_hours=Duration.days(7),  # type: ignore[arg-type]
        surge_sweep_minutes=Duration.hours(1),  # type: ignore[arg-type]
    )
    assert (config.heartbeat_timeout_seconds, config.timeout_seconds, config.execution_timeout_hours) == (600, 300, 168)
    assert config.surge_sweep_minutes == 60
    with pytest.raises(ConfigError) as raised:
        OrchestratorConfig(clusters=("prod",), execution_timeout_hours=Duration.minutes(90))  # type: ignore[arg-type]
    assert raised.value.key == "execution_timeout_hours" and "whole number of hours" in str(raised.value)
    with pytest.raises(ConfigError) as raised:
        OrchestratorConfig(clusters=("prod",), timeout_seconds=Duration.seconds(20))  # type: ignore[arg-type]
    assert raised.value.key == "timeout_seconds" and "out of range" in str(raised.value)
