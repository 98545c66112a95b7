"""Deployment settings, read from environment variables so the Lambda and the CLI share one contract.

Pure: `Settings.from_env` takes the mapping (pass `os.environ`) and either returns valid settings or raises
`SettingsError` naming the variable and what was expected. Add new knobs as fields with defaults. Stdlib and
`clip` only: loaded at `cdk synth` by the construct (settings_seam.py).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from drain_orchestrator.clip import clip

KindAction = Literal["drain", "cordon", "ignore"]
_KIND_ACTIONS: tuple[KindAction, ...] = ("drain", "cordon", "ignore")

# The hook the CDK construct creates; without LIFECYCLE_HOOK_NAMES it is the only hook this deployment answers.
DEFAULT_HOOK_NAME = "drain-orchestrator"
# Auto Scaling: LifecycleHookName is 1-255 characters of [A-Za-z0-9-_/].
_HOOK_NAME = re.compile(r"[A-Za-z0-9\-_/]{1,255}")

# Node controllers whose instances are left to them unless named in DRAIN_CONTROLLER_MANAGED_NODES
# (docs/ownership.md, "Running beside ..."). `managed-node-group` opts in to rebalance recommendations of
# managed node groups' instances only: every other kind of theirs is always handled.
Controller = Literal["karpenter", "auto-mode", "managed-node-group"]
CONTROLLERS: tuple[Controller, ...] = get_args(Controller)

# EKS CreateCluster: 1-100 characters, starts with a letter or digit.
_CLUSTER_NAME = re.compile(r"[0-9A-Za-z][A-Za-z0-9\-_]{0,99}")
ANY_CLUSTER = "*"
SHARED_READS_TABLE = "SHARED_READS_TABLE"
_TABLE_NAME = re.compile(r"[A-Za-z0-9_.-]{3,255}")


class SettingsError(ValueError):
    """An environment variable has a value the product cannot run with."""

    def __init__(self, variable: str, problem: str) -> None:
        super().__init__(f"{variable}: {problem}")
        self.variable = variable


@dataclass(frozen=True)
class OwnershipTag:
    """The user's own ownership marker (see docs/ownership.md).

    value None: the tag's value names the cluster.
    value set: the tag marks instances of the one served cluster.
    """

    key: str
    value: str | None = None

    def __str__(self) -> str:
        return self.key if self.value is None else f"{self.key}={self.value}"


@dataclass(frozen=True)
class ClusterEndpoint:
    """A served cluster's API endpoint and CA, given at deploy time (CLUSTER_ENDPOINTS): reaching it then needs no
    DescribeCluster. DescribeCluster stays the fallback, and is read again when these fail (kube/client.py)."""

    cluster: str
    endpoint: str  # https://host[:port], no trailing slash
    certificate_authority_data: str  # base64 of the PEM CA certificate, as DescribeCluster's certificateAuthority.data


ENDPOINT_FIELDS = ("endpoint", "certificateAuthorityData")


@dataclass(frozen=True)
class Settings:
    # Served clusters; empty together with any_cluster=True means "any cluster named by the built-in tags".
    cluster_names: tuple[str, ...]
    any_cluster: bool = False
    ownership_tag: OwnershipTag | None = None
    action_rebalance: KindAction = "cordon"
    action_spot_interruption: KindAction = "drain"
    action_capacity_reservation_interruption: KindAction = "drain"
    action_state_change: KindAction = "drain"
    action_scheduled_change: KindAction = "drain"
    action_capacity_block: KindAction = "drain"  # both Capacity Block kinds (delivered, expiring)
    notification_topic_arn: str | None = None
    # Lifecycle hooks this deployment completes and heartbeats; an event for any other hook is left to its owner.
    lifecycle_hook_names: tuple[str, ...] = (DEFAULT_HOOK_NAME,)
    # What to do with an owned node when the terminate hook is another's: by default nothing (its owner drains).
    action_foreign_hook: KindAction = "ignore"
    # Controllers whose instances this deployment acts on anyway (default: none, they are left to them).
    drain_controller_managed: frozenset[Controller] = frozenset()
    # A schedule looks for surges left behind this often (0: each drain's verdict looks instead); set by the
    # construct together with the schedule's rule (workflow/sweep_flow.py).
    surge_sweep_minutes: int = 0
    # Endpoints and CAs given at deploy time, per cluster: no DescribeCluster on the cold path for these.
    cluster_endpoints: tuple[ClusterEndpoint, ...] = ()
    # The DynamoDB table executions share EC2 reads through once EC2 throttles them (shared_reads.py); None: each
    # event reads on its own.
    shared_reads_table: str | None = None

    def serves(self, cluster: str) -> bool:
        return self.any_cluster or cluster in self.cluster_names

    def owns_hook(self, hook_name: str) -> bool:
        return hook_name in self.lifecycle_hook_names

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        names, any_cluster = _parse_cluster_names(env.get("CLUSTER_NAMES"))
        tag = _parse_ownership_tag(env.get("OWNERSHIP_TAG"))
        if tag is not None and tag.value is not None and (any_cluster or len(names) != 1):
            # A key=value marker says "ours" but not which cluster; only unambiguous with one served cluster.
            raise SettingsError(
                "OWNERSHIP_TAG",
                f"'{tag}' (key=value) needs CLUSTER_NAMES to name exactly one cluster; "
                "with several clusters use a key whose value names the cluster",
            )
        sweep = _parse_sweep_minutes(env.get("SURGE_SWEEP_MINUTES"))
        if sweep and any_cluster:
            raise SettingsError(
                "SURGE_SWEEP_MINUTES",
                f"{sweep}: a scheduled sweep needs CLUSTER_NAMES to name the clusters it looks in; "
                "with '*' set 0 (each drain's verdict looks)",
            )
        return cls(
            cluster_names=names,
            any_cluster=any_cluster,
            ownership_tag=tag,
            action_rebalance=_parse_action(env, "ACTION_REBALANCE", "cordon"),
            action_spot_interruption=_parse_action(env, "ACTION_SPOT_INTERRUPTION", "drain"),
            action_capacity_reservation_interruption=_parse_action(
                env, "ACTION_CAPACITY_RESERVATION_INTERRUPTION", "drain"
            ),
            action_state_change=_parse_action(env, "ACTION_STATE_CHANGE", "drain"),
            action_scheduled_change=_parse_action(env, "ACTION_SCHEDULED_CHANGE", "drain"),
            action_capacity_block=_parse_action(env, "ACTION_CAPACITY_BLOCK", "drain"),
            notification_topic_arn=_parse_topic_arn(env.get("NOTIFICATION_TOPIC_ARN")),
            lifecycle_hook_names=_parse_hook_names(env.get("LIFECYCLE_HOOK_NAMES")),
            action_foreign_hook=_parse_action(env, "ACTION_FOREIGN_HOOK", "ignore"),
            drain_controller_managed=_parse_controllers(env.get("DRAIN_CONTROLLER_MANAGED_NODES")),
            surge_sweep_minutes=sweep,
            cluster_endpoints=parse_cluster_endpoints(env.get("CLUSTER_ENDPOINTS"), names, any_cluster=any_cluster),
            shared_reads_table=_parse_table_name(env.get(SHARED_READS_TABLE)),
        )


def _parse_cluster_names(raw: str | None) -> tuple[tuple[str, ...], bool]:
    if raw is None or not raw.strip():
        raise SettingsError(
            "CLUSTER_NAMES",
            "required: comma-separated EKS cluster names, or '*' for any cluster found by tag",
        )
    items = [item.strip() for item in raw.split(",")]
    if items == [ANY_CLUSTER]:
        return (), True
    names: list[str] = []
    for item in items:
        if item == ANY_CLUSTER:
            raise SettingsError("CLUSTER_NAMES", "'*' must stand alone, not in a list of names")
        if not _CLUSTER_NAME.fullmatch(item):
            raise SettingsError(
                "CLUSTER_NAMES",
                f"{clip(item)!r} is not an EKS cluster name (1-100 letters, digits, '-' or '_', starting "
                "with a letter or digit)",
            )
        if item not in names:
            names.append(item)
    return tuple(names), False


def _parse_ownership_tag(raw: str | None) -> OwnershipTag | None:
    if raw is None or not raw.strip():
        return None
    key, sep, value = raw.strip().partition("=")
    key = key.strip()
    if not key or len(key) > 128:
        raise SettingsError("OWNERSHIP_TAG", f"{clip(raw)!r}: expected 'key' or 'key=value' with a 1-128 character key")
    if len(value) > 256:
        raise SettingsError("OWNERSHIP_TAG", "tag values are at most 256 characters")
    return OwnershipTag(key=key, value=value if sep else None)


def _parse_action(env: Mapping[str, str], variable: str, default: KindAction) -> KindAction:
    raw = env.get(variable)
    if raw is None or not raw.strip():
        return default
    value = raw.strip().lower()
    if value not in _KIND_ACTIONS:
        raise SettingsError(variable, f"{clip(raw)!r}: expected one of {', '.join(_KIND_ACTIONS)}")
    return value


def _parse_topic_arn(raw: str | None) -> str | None:
    if raw is None or not raw.strip():
        return None
    if not raw.startswith("arn:") or ":sns:" not in raw:
        raise SettingsError("NOTIFICATION_TOPIC_ARN", f"{clip(raw)!r}: expected an SNS topic ARN")
    return raw.strip()


def _parse_table_name(raw: str | None) -> str | None:
    if raw is None or not raw.strip():
        return None
    if not _TABLE_NAME.fullmatch(raw.strip()):
        raise SettingsError(
            SHARED_READS_TABLE,
            f"{clip(raw)!r}: expected a DynamoDB table name (3-255 letters, digits, '_', '-' or '.'), or nothing",
        )
    return raw.strip()


def _parse_hook_names(raw: str | None) -> tuple[str, ...]:
    if raw is None or not raw.strip():
        return (DEFAULT_HOOK_NAME,)
    names: list[str] = []
    for item in (part.strip() for part in raw.split(",")):
        if not _HOOK_NAME.fullmatch(item):
            raise SettingsError(
                "LIFECYCLE_HOOK_NAMES",
                f"{clip(item)!r} is not a lifecycle hook name (1-255 letters, digits, '-', '_' or '/'; "
                "comma-separated)",
            )
        if item not in names:
            names.append(item)
    return tuple(names)


def _parse_controllers(raw: str | None) -> frozenset[Controller]:
    if raw is None or not raw.strip() or raw.strip().lower() == "none":
        return frozenset()
    chosen: set[Controller] = set()
    for item in (part.strip().lower() for part in raw.split(",")):
        if item not in CONTROLLERS:
            raise SettingsError(
                "DRAIN_CONTROLLER_MANAGED_NODES",
                f"{clip(item)!r}: expected a comma-separated list of {', '.join(CONTROLLERS)} (or none)",
            )
        chosen.add(item)
    return frozenset(chosen)


MAX_SWEEP_MINUTES = 1440


def _parse_sweep_minutes(raw: str | None) -> int:
    if raw is None or not raw.strip():
        return 0
    value = raw.strip()
    if not value.isascii() or not value.isdigit() or int(value) > MAX_SWEEP_MINUTES:
        raise SettingsError(
            "SURGE_SWEEP_MINUTES",
            f"{clip(raw)!r}: expected a whole number of minutes between 0 and {MAX_SWEEP_MINUTES}",
        )
    return int(value)


def parse_cluster_endpoints(
    raw: str | None, served: tuple[str, ...], *, any_cluster: bool = False
) -> tuple[ClusterEndpoint, ...]:
    """CLUSTER_ENDPOINTS: a JSON object, per served cluster ``{"endpoint": "https://...", "certificateAuthorityData":
    "<base64 PEM>"}`` (DescribeCluster's ``endpoint`` and ``certificateAuthority.data``)."""
    if raw is None or not raw.strip():
        return ()
    try:
        given: Any = json.loads(raw)
    except ValueError as exc:
        raise SettingsError("CLUSTER_ENDPOINTS", f"not JSON ({exc}): expected {_ENDPOINTS_SHAPE}") from None
    if not isinstance(given, dict):
        raise SettingsError("CLUSTER_ENDPOINTS", f"expected a JSON object {_ENDPOINTS_SHAPE}, got {clip(raw)!r}")
    endpoints: list[ClusterEndpoint] = []
    for cluster, value in given.items():
        if not _CLUSTER_NAME.fullmatch(cluster) or not (any_cluster or cluster in served):
            raise SettingsError(
                "CLUSTER_ENDPOINTS", f"{clip(cluster)!r} is not a cluster of CLUSTER_NAMES ({', '.join(served)})"
            )
        if not isinstance(value, dict) or sorted(value) != sorted(ENDPOINT_FIELDS):
            raise SettingsError(
                "CLUSTER_ENDPOINTS", f"{cluster}: expected exactly the keys {', '.join(ENDPOINT_FIELDS)}"
            )
        endpoint = endpoint_url(cluster, value["endpoint"])
        endpoints.append(ClusterEndpoint(cluster, endpoint, ca_data(cluster, value["certificateAuthorityData"])))
    return tuple(endpoints)


_ENDPOINTS_SHAPE = '{"<cluster>": {"endpoint": "https://...", "certificateAuthorityData": "<base64 PEM>"}}'


def endpoint_url(cluster: str, value: object) -> str:
    """The endpoint as DescribeCluster gives it (an https:// URL of a host), normalised without a trailing slash."""
    parts = urlsplit(value) if isinstance(value, str) else None
    try:
        valid = parts is not None and parts.scheme == "https" and bool(parts.hostname) and parts.port != 0
    except ValueError:  # a port that is not a number
        valid = False
    if not valid or parts is None or parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise SettingsError(
            "CLUSTER_ENDPOINTS",
            f"{cluster}: endpoint {clip(str(value))!r} is not an https:// URL of a host, as DescribeCluster's "
            "endpoint (https://<id>.<zone>.<region>.eks.amazonaws.com)",
        )
    return f"https://{parts.netloc}"


def ca_data(cluster: str, value: object) -> str:
    """The CA as DescribeCluster gives it (base64 of PEM); checked by loading it as a TLS trust anchor."""
    import ssl  # noqa: PLC0415 - only when endpoints are given

    problem = f"{cluster}: certificateAuthorityData is not base64 of a PEM CA certificate (DescribeCluster's "
    problem += "certificateAuthority.data)"
    if not isinstance(value, str):
        raise SettingsError("CLUSTER_ENDPOINTS", problem)
    compact = "".join(value.split())
    try:
        pem = base64.b64decode(compact, validate=True).decode("ascii")
        if "-----BEGIN CERTIFICATE-----" not in pem:
            raise ValueError("no certificate")
        ssl.create_default_context(cadata=pem)
    except (binascii.Error, ValueError, ssl.SSLError):
        raise SettingsError("CLUSTER_ENDPOINTS", problem) from None
    return compact
