"""The rules for an `OrchestratorConfig`, however it was built: from CDK context (`config_from_context`) or
directly as the construct's props. `OrchestratorConfig.__post_init__` runs them, so there is one validator for
every path; errors name the prop (`ConfigError.key`), and `config_from_context` renames it to the context key.

Pure (no aws_cdk import). Drain settings are checked by the function's own settings code (function_settings).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from .function_settings import check_cluster_endpoint, check_drain_settings

if TYPE_CHECKING:
    from .config import KindActions, OrchestratorConfig, VpcPlacement

# Lifecycle hooks have a global timeout of at most 48 h: a durable execution must outlive one.
MIN_EXECUTION_TIMEOUT_HOURS = 48

# CloudWatch Logs only accepts these retention periods (RetentionDays in aws-cdk-lib).
LOG_RETENTION_DAYS = (
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
)  # fmt: skip

ACTIONS_REBALANCE = ("cordon", "drain", "ignore")
ACTIONS_DRAIN_FIRST = ("drain", "cordon", "ignore")
ACTIONS_FOREIGN_HOOK = ("ignore", "cordon", "drain")
# Node controllers whose instances the function leaves to them unless listed (drain_orchestrator.settings).
CONTROLLERS = ("karpenter", "auto-mode", "managed-node-group")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")

CLUSTER_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$")
HOOK_NAME = re.compile(r"^[A-Za-z0-9\-_/]{1,255}$")
# ASG names are almost free text; ':' would make them ARNs and ',' is our list separator.
ASG_NAME = re.compile(r"^[^:,\s][^:,]{0,254}$")
TAG_KEY = re.compile(r"^[^=,]{1,128}$")
VPC_ID = re.compile(r"^vpc-[0-9a-f]{8,17}$")
SUBNET_ID = re.compile(r"^subnet-[0-9a-f]{8,17}$")
SG_ID = re.compile(r"^sg-[0-9a-f]{8,17}$")
EMAIL = re.compile(r"^[^@\s,]+@[^@\s,]+\.[^@\s,]+$")

# (low, high) per integer prop
RANGES = {
    "heartbeat_timeout_seconds": (30, 7200),
    "reserved_concurrency": (1, 1000),
    "memory_size": (128, 10240),
    "timeout_seconds": (30, 900),
    "execution_timeout_hours": (MIN_EXECUTION_TIMEOUT_HOURS, 24 * 366),
    "surge_sweep_minutes": (0, 1440),  # the function's SURGE_SWEEP_MINUTES range
}

# How a drain runs (drain_orchestrator/workflow_settings.py reads these). TRACING is left out on purpose: it needs
# aws-xray-sdk, which the bundle does not ship.
WORKFLOW_VARIABLES = (
    "DRAIN_DELETE_EMPTYDIR_DATA",
    "DRAIN_FORCE",
    "DRAIN_EVICT_DAEMONSETS",
    "DRAIN_GRACE_PERIOD",
    "DRAIN_SKIP_WAIT_FOR_DELETE_TIMEOUT",
    "FORCE_DELETE_ON_DEADLINE",
    "MIN_DRAIN_SECONDS",
    "DRAIN_TAINT",
    "EXCLUDE_FROM_LOAD_BALANCERS",
    "DEADLINE_ASG_TERMINATE_SECONDS",
    "DEADLINE_STATE_CHANGE_SECONDS",
    "DEADLINE_REBALANCE_SECONDS",
    "REBALANCE_RETURN_SECONDS",
    "SCHEDULED_CHANGE_LEAD_SECONDS",
    "CAPACITY_BLOCK_LEAD_SECONDS",
    "LIFECYCLE_RESULT_ON_FAILURE",
    "LAUNCH_READY_TIMEOUT_SECONDS",
    "LAUNCH_TIMEOUT_RESULT",
    "MAX_CONCURRENT_NODES",
    "DRAIN_PASS_SECONDS",
    "RECHECK_MIN_SECONDS",
    "RECHECK_MAX_SECONDS",
    "HELD_RECHECK_MAX_SECONDS",
    "HELD_NOTIFY_SECONDS",
    "HELD_APPROVAL",
    "DRY_RUN",
    "WAIT_FOR_DEREGISTRATION",
    "WAIT_FOR_VOLUME_DETACH",
    "TARGET_GROUP_ARNS",
    "OUT_OF_SERVICE_TAINT",
    "SURGE_BLOCKED_PODS",
    "SURGE_MAX_REPLICAS",
    "POLICY_HOLD_MAX_SECONDS",
)
DEFAULT_DRAIN_PASS_SECONDS = 120
# One durable drain step may run DRAIN_PASS_SECONDS; the invocation needs headroom for the rest of the replay.
INVOCATION_HEADROOM_SECONDS = 60


# Lambda refuses a function whose environment variables (names and values) add up to more than 4 KB.
ENVIRONMENT_LIMIT_BYTES = 4096
# the longest ARN a topic the construct creates (or an app's own) may plausibly have; its value is a token at synth
TOPIC_ARN_BYTES = 256
CDK_TOKEN = "${Token["  # noqa: S105 - how an unresolved CDK string token reads at synth, not a secret


class ConfigError(ValueError):
    """An invalid configuration value; `key` is the prop (or, from `config_from_context`, the context key)."""

    def __init__(self, key: str, problem: str, *, source: str = "CDK context") -> None:
        super().__init__(f"invalid {source} '{key}': {problem}")
        self.key = key
        self.problem = problem
        self.source = source


def prop_error(prop: str, problem: str) -> ConfigError:
    return ConfigError(prop, problem, source="OrchestratorConfig prop")


def _set(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)  # frozen dataclasses: normalizing in __post_init__


def names(
    obj: object, prop: str, pattern: re.Pattern[str], what: str, *, required: bool = False, label: str = ""
) -> None:
    """A tuple of names: a list is accepted, a bare string is not (it would iterate as characters).
    `label` prefixes the prop's name in errors for nested props (`vpc.subnet_ids`)."""
    raw = getattr(obj, prop)
    prop_name = f"{label}{prop}"
    if isinstance(raw, str) or not isinstance(raw, Sequence):
        example = f"({raw!r},)" if isinstance(raw, str) else "('a', 'b')"
        raise prop_error(prop_name, f"expected a tuple of {what}, got {raw!r}; e.g. {example}")
    for name in raw:
        if not isinstance(name, str):
            raise prop_error(prop_name, f"{name!r} is not a string; expected {what}")
        if prop_name == "clusters" and name == "*":
            raise prop_error(
                prop,
                "'*' (any cluster found by tag) is not supported by the construct: least-privilege IAM and the "
                "EKS access entries need explicit cluster names",
            )
        if not pattern.match(name):
            raise prop_error(prop_name, f"{name!r} is not valid; expected {what}")
    value = tuple(dict.fromkeys(raw))
    if required and not value:
        raise prop_error(prop_name, "required: the EKS cluster names this deployment serves, e.g. ('prod',)")
    _set(obj, prop, value)


# props that also take an aws_cdk.Duration, and the unit their integer is in
DURATION_UNITS = {
    "heartbeat_timeout_seconds": "seconds",
    "timeout_seconds": "seconds",
    "execution_timeout_hours": "hours",
    "surge_sweep_minutes": "minutes",
}


def integer(obj: object, prop: str, *, optional: bool = False) -> None:
    value = getattr(obj, prop)
    if optional and value is None:
        return
    unit = DURATION_UNITS.get(prop)
    if unit is not None and hasattr(value, f"to_{unit}"):  # an aws_cdk.Duration (duck-typed: no jsii import here)
        try:
            value = int(getattr(value, f"to_{unit}")())  # whole units only: Duration refuses a fractional result
        except Exception as exc:  # jsii raises a plain error for e.g. Duration.minutes(90).to_hours()
            raise prop_error(prop, f"{value!r} is not a whole number of {unit}: {exc}") from None
        _set(obj, prop, value)
    if isinstance(value, bool) or not isinstance(value, int):
        kind = "an integer or a Duration" if unit else "an integer"
        raise prop_error(prop, f"expected {kind}, got {value!r}")
    low, high = RANGES[prop]
    if not low <= value <= high:
        raise prop_error(prop, f"{value} is out of range {low}..{high}")


def choice(obj: object, prop: str, allowed: tuple[str, ...], *, label: str = "") -> None:
    value = getattr(obj, prop)
    if not isinstance(value, str) or value not in allowed:
        raise prop_error(f"{label}{prop}", f"{value!r} is not one of {', '.join(allowed)}")


def check_actions(actions: KindActions) -> None:
    choice(actions, "rebalance", ACTIONS_REBALANCE, label="actions.")
    kinds = ("spot_interruption", "state_change", "scheduled_change", "capacity_reservation_interruption")
    for prop in (*kinds, "capacity_block"):
        choice(actions, prop, ACTIONS_DRAIN_FIRST, label="actions.")
    choice(actions, "foreign_hook", ACTIONS_FOREIGN_HOOK, label="actions.")


def check_controllers(config: OrchestratorConfig) -> None:
    """Controllers whose nodes are drained anyway (DRAIN_CONTROLLER_MANAGED_NODES); `("none",)` means none."""
    raw = config.drain_controller_managed_nodes
    if isinstance(raw, str) or not isinstance(raw, Sequence):
        raise prop_error("drain_controller_managed_nodes", f"expected a tuple of {', '.join(CONTROLLERS)}, got {raw!r}")
    value = () if tuple(raw) == ("none",) else tuple(dict.fromkeys(raw))
    for name in value:
        if name not in CONTROLLERS:
            raise prop_error("drain_controller_managed_nodes", f"{name!r} is not one of {', '.join(CONTROLLERS)}")
    _set(config, "drain_controller_managed_nodes", value)


def check_vpc(vpc: VpcPlacement) -> None:
    if not isinstance(vpc.vpc_id, str) or not VPC_ID.match(vpc.vpc_id):
        raise prop_error("vpc.vpc_id", f"{vpc.vpc_id!r} is not a VPC id (vpc-...)")
    names(vpc, "subnet_ids", SUBNET_ID, "subnet ids (subnet-...)", label="vpc.")
    if not vpc.subnet_ids:
        raise prop_error("vpc.subnet_ids", "required with vpc_id: the private subnets the function runs in")
    names(vpc, "security_group_ids", SG_ID, "security group ids (sg-...)", label="vpc.")


def _drain_settings(config: OrchestratorConfig) -> None:
    """Names against WORKFLOW_VARIABLES, values by the function's own settings code. A mapping is accepted and
    stored as sorted (name, value) pairs of strings, as the function's environment holds them."""
    raw = config.drain_settings
    pairs = sorted(raw.items()) if isinstance(raw, Mapping) else list(raw)
    settings: list[tuple[str, str]] = []
    for pair in pairs:
        if not (isinstance(pair, tuple | list) and len(pair) == 2 and isinstance(pair[0], str)):
            raise prop_error("drain_settings", f"expected a mapping of variable names to values, got {raw!r}")
        name, value = pair
        if name not in WORKFLOW_VARIABLES:
            raise prop_error("drain_settings", f"{name!r} is not one of {', '.join(WORKFLOW_VARIABLES)}")
        if isinstance(value, bool):
            settings.append((name, "true" if value else "false"))
        elif isinstance(value, int | str):
            settings.append((name, str(value)))
        else:
            raise prop_error("drain_settings", f"{name}: expected a string, number or boolean, got {value!r}")
    _set(config, "drain_settings", tuple(settings))
    problem = check_drain_settings(dict(settings))
    if problem is not None:
        raise prop_error("drain_settings", problem.message)


def _ownership_tag(config: OrchestratorConfig) -> None:
    raw = config.ownership_tag
    if raw is None or raw == "":
        _set(config, "ownership_tag", None)
        return
    key, _, value = raw.partition("=") if isinstance(raw, str) else ("", "", "")
    if not isinstance(raw, str) or not TAG_KEY.match(key) or ("=" in raw and not value) or "=" in value:
        raise prop_error("ownership_tag", f"{raw!r} is not 'key' or 'key=value'")
    if "=" in raw and len(config.clusters) != 1:
        # Same rule as the function's settings: key=value marks "ours" without naming the cluster.
        raise prop_error(
            "ownership_tag",
            f"{raw!r} (key=value) needs exactly one cluster; with several clusters use a tag key "
            "whose value names the cluster",
        )


def _cluster_endpoints(config: OrchestratorConfig) -> None:
    """Given endpoints and CAs: for served clusters only, each checked by the function's own settings code unless it
    is a CDK token (resolved at deploy; the function checks it at cold start); stored as sorted (cluster, given)."""
    from .config import ClusterEndpoint  # noqa: PLC0415 (config imports this module)

    raw = config.cluster_endpoints
    pairs = sorted(raw.items()) if isinstance(raw, Mapping) else list(raw)
    checked: list[tuple[str, ClusterEndpoint]] = []
    for pair in pairs:
        if not (isinstance(pair, tuple | list) and len(pair) == 2 and isinstance(pair[1], ClusterEndpoint)):
            raise prop_error("cluster_endpoints", "expected a mapping of cluster names to ClusterEndpoint")
        cluster, given = pair
        if cluster not in config.clusters:
            raise prop_error("cluster_endpoints", f"{cluster!r} is not one of clusters ({', '.join(config.clusters)})")
        fields = (given.endpoint, given.certificate_authority_data)
        if not all(isinstance(value, str) for value in fields):
            raise prop_error("cluster_endpoints", f"{cluster}: endpoint and certificate_authority_data are strings")
        known = [None if CDK_TOKEN in value else value for value in fields]
        problem = check_cluster_endpoint(cluster, *known)
        if problem is not None:
            raise prop_error("cluster_endpoints", problem.message)
        checked.append((cluster, given))
    _set(config, "cluster_endpoints", tuple(checked))


def _environment_fits(config: OrchestratorConfig) -> None:
    """The function's environment within Lambda's 4 KB, as far as synth knows it (tokens count as nothing, the
    topic's ARN as TOPIC_ARN_BYTES): CAs are ~1.5 KB each, so CLUSTER_ENDPOINTS fits one or two clusters."""
    from .environment import lambda_environment  # noqa: PLC0415 (environment imports config)

    env = lambda_environment(config, notification_topic_arn="x" * TOPIC_ARN_BYTES)
    size = sum(len(name.encode()) + len(value.encode()) for name, value in env.items() if CDK_TOKEN not in value)
    if size <= ENVIRONMENT_LIMIT_BYTES:
        return
    over = f"the function's environment would take about {size} bytes, over Lambda's {ENVIRONMENT_LIMIT_BYTES}"
    endpoints = len(env.get("CLUSTER_ENDPOINTS", ""))
    if not endpoints:
        raise prop_error("drain_settings", f"{over}: shorten the drain settings' values")
    raise prop_error(
        "cluster_endpoints",
        f"{over} (CLUSTER_ENDPOINTS: {endpoints}); give the endpoint and CA of fewer clusters: the others are read "
        "with DescribeCluster",
    )


def check_config(config: OrchestratorConfig) -> None:
    """Validate (and normalize: lists to tuples, drain settings to string pairs) every prop."""
    from .config import KindActions, VpcPlacement  # noqa: PLC0415 (config imports this module)

    if not isinstance(config.actions, KindActions):
        raise prop_error("actions", f"expected a KindActions, got {config.actions!r}")
    if config.vpc is not None and not isinstance(config.vpc, VpcPlacement):
        raise prop_error("vpc", f"expected a VpcPlacement or None, got {config.vpc!r}")
    names(config, "clusters", CLUSTER_NAME, "EKS cluster names (letters, digits, - and _)", required=True)
    names(config, "asg_names", ASG_NAME, "Auto Scaling group names")
    names(config, "lifecycle_hook_names", HOOK_NAME, "hook names ([A-Za-z0-9-_/])")
    names(config, "create_lifecycle_hooks", ASG_NAME, "Auto Scaling group names")
    if not isinstance(config.created_hook_name, str) or not HOOK_NAME.match(config.created_hook_name):
        raise prop_error("created_hook_name", f"{config.created_hook_name!r} is not a hook name ([A-Za-z0-9-_/])")
    _ownership_tag(config)
    if config.alarm_email is not None and (
        not isinstance(config.alarm_email, str) or not EMAIL.match(config.alarm_email)
    ):
        raise prop_error("alarm_email", f"{config.alarm_email!r} is not an e-mail address")
    if not isinstance(config.create_access_entries, bool):
        raise prop_error("create_access_entries", f"expected True or False, got {config.create_access_entries!r}")
    if config.apply_rbac is not None and not isinstance(config.apply_rbac, bool):
        raise prop_error("apply_rbac", f"expected True, False or None, got {config.apply_rbac!r}")
    if config.apply_rbac and not config.create_access_entries:
        raise prop_error(
            "apply_rbac",
            "needs create_access_entries (clusters in API or API_AND_CONFIG_MAP authentication mode): the stack's "
            "applier reaches each cluster through an access entry it creates; in CONFIG_MAP mode apply the RBAC with "
            "`drain-orchestrator rbac apply` (docs/deploy.md)",
        )
    for prop in (
        "heartbeat_timeout_seconds",
        "memory_size",
        "timeout_seconds",
        "execution_timeout_hours",
        "surge_sweep_minutes",
    ):
        integer(config, prop)
    integer(config, "reserved_concurrency", optional=True)
    retention = config.log_retention_days
    if isinstance(retention, bool) or retention not in LOG_RETENTION_DAYS:
        allowed = ", ".join(str(d) for d in LOG_RETENTION_DAYS)
        raise prop_error("log_retention_days", f"{retention!r} is not a CloudWatch Logs retention ({allowed})")
    choice(config, "log_level", LOG_LEVELS)
    check_controllers(config)
    _drain_settings(config)
    _cluster_endpoints(config)
    _environment_fits(config)
    pass_seconds = int(dict(config.drain_settings).get("DRAIN_PASS_SECONDS", DEFAULT_DRAIN_PASS_SECONDS))
    if config.timeout_seconds < pass_seconds + INVOCATION_HEADROOM_SECONDS:
        raise prop_error(
            "timeout_seconds",
            f"{config.timeout_seconds} leaves no headroom for a {pass_seconds} s drain pass (DRAIN_PASS_SECONDS); "
            f"use at least {pass_seconds + INVOCATION_HEADROOM_SECONDS}",
        )
