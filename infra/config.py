"""Deployment configuration: `OrchestratorConfig` (the construct's props) and how CDK context becomes one.

Pure: no aws_cdk import, so the rules are unit-testable without jsii. Every value is validated when an
`OrchestratorConfig` is built (infra.validation), whether from context or directly in a CDK app; errors name the
prop, and `config_from_context` renames it to the context key (`ConfigError.key`), so
`cdk synth -c clusters=...` tells the user exactly what to fix.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from . import validation
from .validation import (
    ACTIONS_DRAIN_FIRST,
    ACTIONS_REBALANCE,
    DEFAULT_DRAIN_PASS_SECONDS,
    INVOCATION_HEADROOM_SECONDS,
    LOG_LEVELS,
    LOG_RETENTION_DAYS,
    MIN_EXECUTION_TIMEOUT_HOURS,
    WORKFLOW_VARIABLES,
    ConfigError,
)

__all__ = [
    "ACTIONS_DRAIN_FIRST",
    "ACTIONS_REBALANCE",
    "CONTEXT_KEYS",
    "DEFAULT_DRAIN_PASS_SECONDS",
    "DEFAULT_EXECUTION_TIMEOUT_HOURS",
    "INVOCATION_HEADROOM_SECONDS",
    "LOG_LEVELS",
    "LOG_RETENTION_DAYS",
    "MIN_EXECUTION_TIMEOUT_HOURS",
    "WORKFLOW_VARIABLES",
    "ClusterEndpoint",
    "ConfigError",
    "KindActions",
    "OrchestratorConfig",
    "VpcPlacement",
    "check_no_unknown_keys",
    "config_from_context",
    "config_from_mapping",
    "unknown_keys",
]

# Scheduled-change events arrive ~2 weeks before their window and the workflow waits durably until then, so the
# default execution timeout covers both that and the lifecycle hooks' 48 h.
DEFAULT_EXECUTION_TIMEOUT_HOURS = 24 * 21

_OUR_KEY_SHAPE = re.compile(r"^[a-z][A-Za-z0-9]*$")


@dataclass(frozen=True)
class KindActions:
    """What the Lambda does per event kind (lifecycle hooks and state changes of owned nodes always drain)."""

    rebalance: str = "cordon"
    spot_interruption: str = "drain"
    state_change: str = "drain"
    scheduled_change: str = "drain"
    foreign_hook: str = "ignore"  # an owned node whose terminate hook is another's: left to that hook's owner
    capacity_reservation_interruption: str = "drain"  # last: positional use of the fields above keeps working
    capacity_block: str = "drain"  # both Capacity Block kinds (delivered, expiration warning)

    def __post_init__(self) -> None:
        validation.check_actions(self)


@dataclass(frozen=True)
class VpcPlacement:
    vpc_id: str
    subnet_ids: tuple[str, ...]
    security_group_ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        validation.check_vpc(self)


@dataclass(frozen=True)
class ClusterEndpoint:
    """A served cluster's API endpoint and CA (DescribeCluster's `endpoint` and `certificateAuthority.data`, or an
    `aws_eks.Cluster`'s `cluster_endpoint` and `cluster_certificate_authority_data`): the function then reaches the
    cluster without DescribeCluster, which stays its fallback."""

    endpoint: str
    certificate_authority_data: str


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
    heartbeat_timeout_seconds: int = 1800  # or an aws_cdk.Duration (whole seconds): an int once built
    create_access_entries: bool = True
    reserved_concurrency: int | None = None
    memory_size: int = 512
    timeout_seconds: int = 600  # or a Duration
    execution_timeout_hours: int = DEFAULT_EXECUTION_TIMEOUT_HOURS  # or a Duration (whole hours)
    log_retention_days: int = 30
    log_level: str = "INFO"
    # (name, value) pairs or a mapping; names from WORKFLOW_VARIABLES, values checked by the function's settings code
    drain_settings: tuple[tuple[str, str], ...] = ()
    drain_controller_managed_nodes: tuple[str, ...] = ()
    # a schedule looks for surges left behind this often (or a Duration of whole minutes); 0: each drain's verdict
    surge_sweep_minutes: int = 15
    # (cluster, ClusterEndpoint) pairs or a mapping; becomes CLUSTER_ENDPOINTS
    cluster_endpoints: tuple[tuple[str, ClusterEndpoint], ...] = ()
    # the stack applies the RBAC and flow schema on each cluster (infra/rbac_applier.py); None: with access entries
    apply_rbac: bool | None = None
    # the shared-reads table (infra/shared_reads.py): throttled executions share one DescribeInstances; False: none
    shared_reads: bool = True

    def __post_init__(self) -> None:
        validation.check_config(self)

    @property
    def applies_rbac(self) -> bool:
        """Whether the stack applies the Kubernetes manifests itself: its applier reaches the clusters through the
        access entries it creates, so by default exactly when it creates them."""
        return self.create_access_entries if self.apply_rbac is None else self.apply_rbac

    @property
    def surge_enabled(self) -> bool:
        """Whether the function may surge before evict (SURGE_BLOCKED_PODS is not ``never``): its RBAC then includes
        surge's rights (infra/k8s/rbac-surge.yaml)."""
        return dict(self.drain_settings).get("SURGE_BLOCKED_PODS", "annotated") != "never"

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
    "actionCapacityBlock",
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
    "surgeSweepMinutes",
    "clusterEndpoints",
    "applyRbac",
    "sharedReads",
)

# prop -> context key where the name is not simply the prop in camelCase
_CONTEXT_KEY = {
    "actions.rebalance": "actionRebalance",
    "actions.spot_interruption": "actionSpotInterruption",
    "actions.state_change": "actionStateChange",
    "actions.scheduled_change": "actionScheduledChange",
    "actions.capacity_reservation_interruption": "actionCapacityReservationInterruption",
    "actions.capacity_block": "actionCapacityBlock",
    "actions.foreign_hook": "actionForeignHook",
    "vpc.vpc_id": "vpcId",
    "vpc.subnet_ids": "subnetIds",
    "vpc.security_group_ids": "securityGroupIds",
}


def context_key(prop: str) -> str:
    if prop in _CONTEXT_KEY:
        return _CONTEXT_KEY[prop]
    head, *rest = prop.split("_")
    return head + "".join(part.capitalize() for part in rest)


def config_from_context(get: ContextGetter) -> OrchestratorConfig:
    """Build the configuration from `node.try_get_context`-like lookups (None = key not given). Values are parsed
    here (strings from `-c`, JSON from cdk.json) and validated by `OrchestratorConfig` itself."""
    try:
        return _from_context(get)
    except ConfigError as error:
        if error.source == "CDK context":
            raise
        # the construct's validator named the prop; a context user needs the key they typed
        raise ConfigError(context_key(error.key), error.problem) from None


def _from_context(get: ContextGetter) -> OrchestratorConfig:
    clusters = _list(get, "clusters")
    if not clusters:
        raise ConfigError("clusters", "required: the EKS cluster names this deployment serves, e.g. -c clusters=prod")
    defaults = KindActions()
    return OrchestratorConfig(
        clusters=clusters,
        asg_names=_list(get, "asgNames"),
        lifecycle_hook_names=_list(get, "lifecycleHookNames"),
        ownership_tag=_optional_str(get, "ownershipTag"),
        actions=KindActions(
            rebalance=_str(get, "actionRebalance", defaults.rebalance),
            spot_interruption=_str(get, "actionSpotInterruption", defaults.spot_interruption),
            state_change=_str(get, "actionStateChange", defaults.state_change),
            scheduled_change=_str(get, "actionScheduledChange", defaults.scheduled_change),
            capacity_reservation_interruption=_str(
                get, "actionCapacityReservationInterruption", defaults.capacity_reservation_interruption
            ),
            foreign_hook=_str(get, "actionForeignHook", defaults.foreign_hook),
            capacity_block=_str(get, "actionCapacityBlock", defaults.capacity_block),
        ),
        vpc=_vpc(get),
        alarm_email=_optional_str(get, "alarmEmail"),
        create_lifecycle_hooks=_list(get, "createLifecycleHooks"),
        created_hook_name=_str(get, "createdHookName", "drain-orchestrator"),
        heartbeat_timeout_seconds=_int(get, "heartbeatTimeoutSeconds", 1800),
        create_access_entries=_bool(get, "createAccessEntries", default=True),
        reserved_concurrency=_optional_int(get, "reservedConcurrency"),
        memory_size=_int(get, "memorySize", 512),
        timeout_seconds=_int(get, "timeoutSeconds", 600),
        execution_timeout_hours=_int(get, "executionTimeoutHours", DEFAULT_EXECUTION_TIMEOUT_HOURS),
        log_retention_days=_int(get, "logRetentionDays", 30),
        log_level=_level(get, "logLevel", "INFO"),
        drain_settings=_drain_settings(get("drainSettings")),
        drain_controller_managed_nodes=_list(get, "drainControllerManagedNodes"),
        surge_sweep_minutes=_int(get, "surgeSweepMinutes", 15),
        cluster_endpoints=_cluster_endpoints(get("clusterEndpoints")),
        apply_rbac=_optional_bool(get, "applyRbac"),
        shared_reads=_bool(get, "sharedReads", default=True),
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


def _str(get: ContextGetter, key: str, default: str) -> str:
    raw = get(key)
    if raw is None:
        return default
    if not isinstance(raw, str):
        raise ConfigError(key, f"expected a string, got {raw!r}")
    return raw


def _optional_str(get: ContextGetter, key: str) -> str | None:
    raw = get(key)
    return None if raw is None or raw == "" else _str(get, key, "")


def _level(get: ContextGetter, key: str, default: str) -> str:
    return _str(get, key, default).strip().upper()


def _parse_int(key: str, raw: object) -> int:
    if isinstance(raw, bool):
        raise ConfigError(key, f"expected an integer, got {raw!r}")
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and re.fullmatch(r"\s*-?\d+\s*", raw):
        return int(raw)
    raise ConfigError(key, f"expected an integer, got {raw!r}")


def _int(get: ContextGetter, key: str, default: int) -> int:
    raw = get(key)
    return default if raw is None else _parse_int(key, raw)


def _optional_int(get: ContextGetter, key: str) -> int | None:
    raw = get(key)
    return None if raw is None or raw == "" else _parse_int(key, raw)


def _bool(get: ContextGetter, key: str, *, default: bool) -> bool:
    raw = get(key)
    if raw is None:
        return default
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise ConfigError(key, f"expected true or false, got {raw!r}")


def _optional_bool(get: ContextGetter, key: str) -> bool | None:
    raw = get(key)
    return None if raw is None or raw == "" else _bool(get, key, default=False)


def _json_object(key: str, raw: object, what: str) -> dict[str, object]:
    """A JSON object given as a string (`-c key='{...}'`) or as an object in cdk.json; empty when not given."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as error:
            raise ConfigError(key, f"not a JSON object: {error}") from None
    if not isinstance(raw, dict):
        raise ConfigError(key, f"expected a JSON object of {what}, got {raw!r}")
    return raw


def _drain_settings(raw: object) -> Mapping[str, object]:
    """`-c drainSettings='{"DRAIN_GRACE_PERIOD": 30}'` or a JSON object in cdk.json; the names and values are
    checked by `OrchestratorConfig` (values by the function's own settings code)."""
    return _json_object("drainSettings", raw, "variables")


def _cluster_endpoints(raw: object) -> tuple[tuple[str, ClusterEndpoint], ...]:
    """`-c clusterEndpoints='{"prod": {"endpoint": "https://...", "certificateAuthorityData": "LS0t..."}}'` or a JSON
    object in cdk.json: the shape of the function's CLUSTER_ENDPOINTS."""
    given = _json_object("clusterEndpoints", raw, "clusters")
    pairs: list[tuple[str, ClusterEndpoint]] = []
    for cluster, value in given.items():
        if not isinstance(value, dict) or sorted(value) != ["certificateAuthorityData", "endpoint"]:
            raise ConfigError(
                "clusterEndpoints", f"{cluster}: expected exactly the keys endpoint, certificateAuthorityData"
            )
        pairs.append((cluster, ClusterEndpoint(value["endpoint"], value["certificateAuthorityData"])))
    return tuple(pairs)


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
    if not isinstance(vpc_id, str):
        raise ConfigError("vpcId", f"{vpc_id!r} is not a VPC id (vpc-...)")
    return VpcPlacement(vpc_id=vpc_id, subnet_ids=subnets, security_group_ids=groups)
