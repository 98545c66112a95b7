"""Deployment configuration read from CDK context, validated before any resource is built.

Pure: no aws_cdk import, so the validation rules are unit-testable without jsii. Every error names the
context key (`ConfigError.key`) so `cdk synth -c clusters=...` tells the user exactly what to fix.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

# Lifecycle hooks have a global timeout of at most 48 h; scheduled-change events arrive ~2 weeks before
# their window and the workflow waits durably until then, so the default execution timeout covers both.
MIN_EXECUTION_TIMEOUT_HOURS = 48
DEFAULT_EXECUTION_TIMEOUT_HOURS = 24 * 21

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

_CLUSTER_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$")
_HOOK_NAME = re.compile(r"^[A-Za-z0-9\-_/]{1,255}$")
# ASG names are almost free text; ':' would make them ARNs and ',' is our list separator.
_ASG_NAME = re.compile(r"^[^:,\s][^:,]{0,254}$")
_TAG_KEY = re.compile(r"^[^=,]{1,128}$")
_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8,17}$")
_SUBNET_ID = re.compile(r"^subnet-[0-9a-f]{8,17}$")
_SG_ID = re.compile(r"^sg-[0-9a-f]{8,17}$")
_OUR_KEY_SHAPE = re.compile(r"^[a-z][A-Za-z0-9]*$")
_EMAIL = re.compile(r"^[^@\s,]+@[^@\s,]+\.[^@\s,]+$")


class ConfigError(ValueError):
    """Invalid CDK context; the message starts with the offending key."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"invalid CDK context '{key}': {problem}")
        self.key = key


@dataclass(frozen=True)
class KindActions:
    """What the Lambda does per event kind (lifecycle hooks and state changes of owned nodes always drain)."""

    rebalance: str = "cordon"
    spot_interruption: str = "drain"
    state_change: str = "drain"
    scheduled_change: str = "drain"
    foreign_hook: str = "ignore"  # an owned node whose terminate hook is another's: left to that hook's owner
    capacity_reservation_interruption: str = "drain"  # last: positional use of the fields above keeps working


@dataclass(frozen=True)
class VpcPlacement:
    vpc_id: str
    subnet_ids: tuple[str, ...]
    security_group_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class OrchestratorConfig:
    clusters: tuple[str, ...]
    asg_names: tuple[str, ...] = ()
    lifecycle_hook_names: tuple[str, ...] = ()
    ownership_tag: str | None = None
    actions: KindActions = field(default_factory=KindActions)
    vpc: VpcPlacement | None = None
    alarm_email: str | None = None
    create_lifecycle_hooks: tuple[str, ...] = ()
    created_hook_name: str = "drain-orchestrator"
    heartbeat_timeout_seconds: int = 1800
    create_access_entries: bool = True
    reserved_concurrency: int | None = None
    memory_size: int = 512
    timeout_seconds: int = 600
    execution_timeout_hours: int = DEFAULT_EXECUTION_TIMEOUT_HOURS
    log_retention_days: int = 30
    log_level: str = "INFO"
    drain_settings: tuple[tuple[str, str], ...] = ()
    drain_controller_managed_nodes: tuple[str, ...] = ()

    @property
    def served_asg_names(self) -> tuple[str, ...]:
        """ASGs the lifecycle rules and IAM are scoped to; empty means every ASG of the served clusters."""
        return _unique((*self.asg_names, *self.create_lifecycle_hooks)) if self.asg_names else ()

    @property
    def served_hook_names(self) -> tuple[str, ...]:
        """The hooks the function answers (LIFECYCLE_HOOK_NAMES) and the lifecycle rules match: the configured
        names and the created hook's name, which also names a hook made by hand for the orchestrator."""
        return _unique((*self.lifecycle_hook_names, self.created_hook_name))


ContextGetter = Callable[[str], object]

# Every key the app reads, so unknown or misspelled keys can be reported (see `unknown_keys`).
CONTEXT_KEYS = (
    "clusters",
    "asgNames",
    "lifecycleHookNames",
    "ownershipTag",
    "actionRebalance",
    "actionSpotInterruption",
    "actionCapacityReservationInterruption",
    "actionStateChange",
    "actionScheduledChange",
    "vpcId",
    "subnetIds",
    "securityGroupIds",
    "alarmEmail",
    "createLifecycleHooks",
    "createdHookName",
    "heartbeatTimeoutSeconds",
    "createAccessEntries",
    "reservedConcurrency",
    "memorySize",
    "timeoutSeconds",
    "executionTimeoutHours",
    "logRetentionDays",
    "logLevel",
    "drainSettings",
    "actionForeignHook",
    "drainControllerManagedNodes",
)

# How a drain runs (drain_orchestrator/workflow_settings.py reads these; the function validates the values
# at cold start). TRACING is left out on purpose: it needs aws-xray-sdk, which the bundle does not ship.
WORKFLOW_VARIABLES = (
    "DRAIN_DELETE_EMPTYDIR_DATA",
    "DRAIN_FORCE",
    "DRAIN_EVICT_DAEMONSETS",
    "DRAIN_GRACE_PERIOD",
    "DRAIN_SKIP_WAIT_FOR_DELETE_TIMEOUT",
    "FORCE_DELETE_ON_DEADLINE",
    "DRAIN_TAINT",
    "EXCLUDE_FROM_LOAD_BALANCERS",
    "DEADLINE_ASG_TERMINATE_SECONDS",
    "DEADLINE_STATE_CHANGE_SECONDS",
    "DEADLINE_REBALANCE_SECONDS",
    "SCHEDULED_CHANGE_LEAD_SECONDS",
    "LIFECYCLE_RESULT_ON_FAILURE",
    "LAUNCH_READY_TIMEOUT_SECONDS",
    "LAUNCH_TIMEOUT_RESULT",
    "MAX_CONCURRENT_NODES",
    "DRAIN_PASS_SECONDS",
    "RECHECK_MIN_SECONDS",
    "RECHECK_MAX_SECONDS",
    "HELD_NOTIFY_SECONDS",
    "HELD_APPROVAL",
    "DRY_RUN",
    "WAIT_FOR_DEREGISTRATION",
    "WAIT_FOR_VOLUME_DETACH",
    "TARGET_GROUP_ARNS",
    "OUT_OF_SERVICE_TAINT",
    "SURGE_BLOCKED_PODS",
)
DEFAULT_DRAIN_PASS_SECONDS = 120
# One durable drain step may run DRAIN_PASS_SECONDS; the invocation needs headroom for the rest of the replay.
INVOCATION_HEADROOM_SECONDS = 60


def config_from_context(get: ContextGetter) -> OrchestratorConfig:
    """Build the configuration from `node.try_get_context`-like lookups (None = key not given)."""
    clusters = _names(get, "clusters", _CLUSTER_NAME, "EKS cluster names (letters, digits, - and _)")
    if not clusters:
        raise ConfigError("clusters", "required: the EKS cluster names this deployment serves, e.g. -c clusters=prod")
    create_hooks = _names(get, "createLifecycleHooks", _ASG_NAME, "Auto Scaling group names")
    vpc = _vpc(get)
    ownership_tag = _ownership_tag(get("ownershipTag"))
    if ownership_tag and "=" in ownership_tag and len(clusters) != 1:
        # Same rule as the function's settings: key=value marks "ours" without naming the cluster.
        raise ConfigError(
            "ownershipTag",
            f"{ownership_tag!r} (key=value) needs exactly one cluster; with several clusters use a tag key "
            "whose value names the cluster",
        )
    drain_settings = _drain_settings(get("drainSettings"))
    timeout_seconds = _int(get, "timeoutSeconds", 600, 30, 900)
    pass_seconds = dict(drain_settings).get("DRAIN_PASS_SECONDS", str(DEFAULT_DRAIN_PASS_SECONDS))
    if pass_seconds.isdigit() and timeout_seconds < int(pass_seconds) + INVOCATION_HEADROOM_SECONDS:
        raise ConfigError(
            "timeoutSeconds",
            f"{timeout_seconds} leaves no headroom for a {pass_seconds} s drain pass (DRAIN_PASS_SECONDS); "
            f"use at least {int(pass_seconds) + INVOCATION_HEADROOM_SECONDS}",
        )
    return OrchestratorConfig(
        clusters=clusters,
        asg_names=_names(get, "asgNames", _ASG_NAME, "Auto Scaling group names"),
        lifecycle_hook_names=_names(get, "lifecycleHookNames", _HOOK_NAME, "hook names ([A-Za-z0-9-_/])"),
        ownership_tag=ownership_tag,
        actions=KindActions(
            rebalance=_choice(get, "actionRebalance", ACTIONS_REBALANCE, "cordon"),
            spot_interruption=_choice(get, "actionSpotInterruption", ACTIONS_DRAIN_FIRST, "drain"),
            capacity_reservation_interruption=_choice(
                get, "actionCapacityReservationInterruption", ACTIONS_DRAIN_FIRST, "drain"
            ),
            state_change=_choice(get, "actionStateChange", ACTIONS_DRAIN_FIRST, "drain"),
            scheduled_change=_choice(get, "actionScheduledChange", ACTIONS_DRAIN_FIRST, "drain"),
            foreign_hook=_choice(get, "actionForeignHook", ACTIONS_FOREIGN_HOOK, "ignore"),
        ),
        vpc=vpc,
        alarm_email=_email(get("alarmEmail")),
        create_lifecycle_hooks=create_hooks,
        created_hook_name=_single(get, "createdHookName", _HOOK_NAME, "drain-orchestrator"),
        heartbeat_timeout_seconds=_int(get, "heartbeatTimeoutSeconds", 1800, 30, 7200),
        create_access_entries=_bool(get, "createAccessEntries", default=True),
        reserved_concurrency=_optional_int(get, "reservedConcurrency", 1, 1000),
        memory_size=_int(get, "memorySize", 512, 128, 10240),
        timeout_seconds=timeout_seconds,
        execution_timeout_hours=_int(
            get,
            "executionTimeoutHours",
            DEFAULT_EXECUTION_TIMEOUT_HOURS,
            MIN_EXECUTION_TIMEOUT_HOURS,
            24 * 366,
        ),
        log_retention_days=_retention(get),
        log_level=_choice(get, "logLevel", LOG_LEVELS, "INFO", upper=True),
        drain_settings=drain_settings,
        drain_controller_managed_nodes=_controllers(get),
    )


def config_from_mapping(context: Mapping[str, object]) -> OrchestratorConfig:
    return config_from_context(context.get)


def unknown_keys(context: Mapping[str, object]) -> list[str]:
    """Context keys shaped like ours (camelCase) that we do not read: most likely typos. CDK's own keys
    contain ':' or '-' (`aws:cdk:...`, `@aws-cdk/...`, `acknowledged-issue-numbers`)."""
    return sorted(k for k in context if _OUR_KEY_SHAPE.match(k) and k not in CONTEXT_KEYS)


def check_no_unknown_keys(context: Mapping[str, object]) -> None:
    unknown = unknown_keys(context)
    if unknown:
        key = unknown[0]
        close = difflib.get_close_matches(key, CONTEXT_KEYS, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ConfigError(key, f"unknown key{hint}")


def _unique(items: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _list(get: ContextGetter, key: str) -> tuple[str, ...]:
    """Context from `-c key=a,b` arrives as a string, from cdk.json possibly as a JSON list."""
    raw = get(key)
    if raw is None:
        return ()
    if isinstance(raw, str):
        items = [part.strip() for part in raw.split(",")]
        if raw.strip() and any(not part for part in items):
            raise ConfigError(key, f"empty item in comma-separated list {raw!r}")
        return _unique([part for part in items if part])
    if isinstance(raw, list | tuple) and all(isinstance(item, str) for item in raw):
        return _unique([item.strip() for item in raw])
    raise ConfigError(key, f"expected a comma-separated string or a list of strings, got {raw!r}")


def _names(get: ContextGetter, key: str, pattern: re.Pattern[str], what: str) -> tuple[str, ...]:
    names = _list(get, key)
    for name in names:
        if name == "*" and key == "clusters":
            raise ConfigError(
                key,
                "'*' (any cluster found by tag) is not supported by the CDK app: least-privilege IAM and the "
                "EKS access entries need explicit cluster names",
            )
        if not pattern.match(name):
            raise ConfigError(key, f"{name!r} is not valid; expected {what}")
    return names


def _single(get: ContextGetter, key: str, pattern: re.Pattern[str], default: str) -> str:
    raw = get(key)
    if raw is None:
        return default
    if not isinstance(raw, str) or not pattern.match(raw):
        raise ConfigError(key, f"{raw!r} is not a valid value")
    return raw


def _choice(get: ContextGetter, key: str, allowed: tuple[str, ...], default: str, *, upper: bool = False) -> str:
    raw = get(key)
    if raw is None:
        return default
    value = raw.strip().upper() if upper and isinstance(raw, str) else raw
    if not isinstance(value, str) or value not in allowed:
        raise ConfigError(key, f"{raw!r} is not one of {', '.join(allowed)}")
    return value


def _parse_int(key: str, raw: object) -> int:
    if isinstance(raw, bool):
        raise ConfigError(key, f"expected an integer, got {raw!r}")
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and re.fullmatch(r"\s*-?\d+\s*", raw):
        return int(raw)
    raise ConfigError(key, f"expected an integer, got {raw!r}")


def _int(get: ContextGetter, key: str, default: int, low: int, high: int) -> int:
    raw = get(key)
    if raw is None:
        return default
    value = _parse_int(key, raw)
    if not low <= value <= high:
        raise ConfigError(key, f"{value} is out of range {low}..{high}")
    return value


def _optional_int(get: ContextGetter, key: str, low: int, high: int) -> int | None:
    raw = get(key)
    if raw is None or raw == "":
        return None
    value = _parse_int(key, raw)
    if not low <= value <= high:
        raise ConfigError(key, f"{value} is out of range {low}..{high}")
    return value


def _bool(get: ContextGetter, key: str, *, default: bool) -> bool:
    raw = get(key)
    if raw is None:
        return default
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise ConfigError(key, f"expected true or false, got {raw!r}")


def _controllers(get: ContextGetter) -> tuple[str, ...]:
    names = _list(get, "drainControllerManagedNodes")
    if names == ("none",):
        return ()
    for name in names:
        if name not in CONTROLLERS:
            raise ConfigError("drainControllerManagedNodes", f"{name!r} is not one of {', '.join(CONTROLLERS)}")
    return names


def _retention(get: ContextGetter) -> int:
    raw = get("logRetentionDays")
    if raw is None:
        return 30
    value = _parse_int("logRetentionDays", raw)
    if value not in LOG_RETENTION_DAYS:
        allowed = ", ".join(str(d) for d in LOG_RETENTION_DAYS)
        raise ConfigError("logRetentionDays", f"{value} is not a CloudWatch Logs retention ({allowed})")
    return value


def _drain_settings(raw: object) -> tuple[tuple[str, str], ...]:
    """`-c drainSettings='{"DRAIN_GRACE_PERIOD": 30}'` or a JSON object in cdk.json; names are checked here,
    values by the function (the same validation the CLI and the Lambda use)."""
    if raw is None or raw == "":
        return ()
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as error:
            raise ConfigError("drainSettings", f"not a JSON object: {error}") from None
    if not isinstance(raw, dict):
        raise ConfigError("drainSettings", f"expected a JSON object of variables, got {raw!r}")
    settings: list[tuple[str, str]] = []
    for name, value in sorted(raw.items()):
        if name not in WORKFLOW_VARIABLES:
            raise ConfigError("drainSettings", f"{name!r} is not one of {', '.join(WORKFLOW_VARIABLES)}")
        if isinstance(value, bool):
            settings.append((name, "true" if value else "false"))
        elif isinstance(value, int | str):
            settings.append((name, str(value)))
        else:
            raise ConfigError("drainSettings", f"{name}: expected a string, number or boolean, got {value!r}")
    return tuple(settings)


def _ownership_tag(raw: object) -> str | None:
    if raw is None or raw == "":
        return None
    key, _, value = raw.partition("=") if isinstance(raw, str) else ("", "", "")
    if not isinstance(raw, str) or not _TAG_KEY.match(key) or ("=" in raw and not value) or "=" in value:
        raise ConfigError("ownershipTag", f"{raw!r} is not 'key' or 'key=value'")
    return raw


def _email(raw: object) -> str | None:
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str) or not _EMAIL.match(raw):
        raise ConfigError("alarmEmail", f"{raw!r} is not an e-mail address")
    return raw


def _vpc(get: ContextGetter) -> VpcPlacement | None:
    vpc_id = get("vpcId")
    subnets = _list(get, "subnetIds")
    groups = _list(get, "securityGroupIds")
    if vpc_id is None or vpc_id == "":
        if subnets:
            raise ConfigError("vpcId", "required when subnetIds is given")
        if groups:
            raise ConfigError("vpcId", "required when securityGroupIds is given")
        return None
    if not isinstance(vpc_id, str) or not _VPC_ID.match(vpc_id):
        raise ConfigError("vpcId", f"{vpc_id!r} is not a VPC id (vpc-...)")
    if not subnets:
        raise ConfigError("subnetIds", "required with vpcId: the private subnets the function runs in")
    for subnet in subnets:
        if not _SUBNET_ID.match(subnet):
            raise ConfigError("subnetIds", f"{subnet!r} is not a subnet id (subnet-...)")
    for group in groups:
        if not _SG_ID.match(group):
            raise ConfigError("securityGroupIds", f"{group!r} is not a security group id (sg-...)")
    return VpcPlacement(vpc_id=vpc_id, subnet_ids=subnets, security_group_ids=groups)
