"""How the Lambda drains and reports, from environment variables (pure, validated at cold start).

`settings.py` says *which* instances are ours and what each event kind asks for; this module says *how* a drain
runs: kubectl-like drain flags, deadlines per kind, lifecycle-hook results, pacing of durable passes. Every
variable and its default is listed in README.md ("Configuration"). A bad value raises `SettingsError` naming the
variable and what was expected. Stdlib, `clip`, `settings`, `failures`, `pacing` and `surge_mode` only: loaded at
`cdk synth` by the construct, which validates the drain settings it deploys with this module (settings_seam.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from drain_orchestrator import pacing
from drain_orchestrator.clip import clip
from drain_orchestrator.failures import RETRY_POLICIES
from drain_orchestrator.settings import SettingsError
from drain_orchestrator.surge_mode import SURGE_MODES, SurgeMode

LifecycleResult = Literal["CONTINUE", "ABANDON"]
# which drains wait on a gate (load-balancer deregistration, volume detach) before their verdict
GateScope = Literal["lifecycle", "always", "never"]
_TARGET_GROUP_ARN = re.compile(r"^arn:aws[a-z-]*:elasticloadbalancing:[a-z0-9-]+:\d{12}:targetgroup/[\w-]+/[0-9a-f]+$")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# A lifecycle hook holds an instance at most 48 h: no deadline or wait of a drain can usefully be longer.
MAX_SECONDS = 48 * 3600
# Scheduled changes are announced days ahead; starting a drain more than a week early is a typo.
MAX_LEAD_SECONDS = 7 * 24 * 3600
MAX_RECHECK_SECONDS = 3600
# MIN_DRAIN_SECONDS: below 10 s a PDB's replacement pod could not even start; above an hour no Spot, state-change
# or rebalance drain would ever get its deadline policy
MIN_DRAIN_FLOOR = 10
MAX_MIN_DRAIN = 3600
MAX_SURGE_REPLICAS = 1000  # a bound on SURGE_MAX_REPLICAS: more is a typo, not a plan
_ASCII_INT = re.compile(r"[+-]?[0-9]{1,12}")  # int() also takes full-width digits, "1_000" and 4000-digit numbers
# Kubernetes taint keys are qualified names: [DNS-1123 subdomain prefix "/"] name (validation.IsQualifiedName).
_NAME_PART = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_LOG_LEVEL_ALIASES = ("WARN", "FATAL", "NOTSET")


@dataclass(frozen=True)
class WorkflowSettings:
    # kubectl drain flags (NTH's defaults for a node that is going away: emptyDir data and unmanaged pods go too)
    delete_emptydir_data: bool = True
    force: bool = True
    evict_daemonsets: bool = False
    grace_period: int | None = None  # None: each pod's own terminationGracePeriodSeconds
    skip_wait_for_delete_timeout: int = 120  # a pod terminating longer than this no longer holds the drain
    force_delete_on_deadline: bool = True  # near the deadline, delete pods a PDB still protects (grace >= 1 s)
    # a drain's first seconds are kubectl's: PDBs respected, each pod's own grace; the deadline policy (grace clipped
    # to the deadline, force-delete) only after, and the drain's deadline is never sooner (deadlines.drain_clock)
    min_drain_seconds: int = 30
    taint: tuple[str, str] | None = None  # optional NoSchedule-like taint put on cordon
    exclude_from_load_balancers: bool = True
    # deadlines (seconds after the event) where the event does not carry one; None = no deadline
    deadline_asg_terminate: int | None = None  # cap below the hook's global timeout (min(48 h, 100 x heartbeat))
    deadline_state_change: int = 60
    deadline_rebalance: int = 7200
    # a node cordoned for a rebalance recommendation that no interruption, termination or state change followed
    # this long after it is made schedulable again (docs/drain.md "When the instance stays"); 0: never
    rebalance_return: int = 3600
    scheduled_change_lead: int = 1800  # start draining this long before a scheduled change's window
    capacity_block_lead: int = 1800  # a delivered Capacity Block's drain starts this long before EC2's (end - 30 min)
    # lifecycle hooks
    lifecycle_result_on_failure: LifecycleResult = "CONTINUE"
    launch_ready_timeout: int = 900
    launch_timeout_result: LifecycleResult = "ABANDON"
    # pacing of the durable workflow
    max_concurrent_nodes: int = 4
    drain_pass_seconds: int = 120  # one durable step's drain budget; keep well under the Lambda timeout
    recheck_min_seconds: int = 5
    recheck_max_seconds: int = 120
    held_recheck_max_seconds: int = 900  # the wait after a pass that ended held grows to this (no compute billed)
    held_notify_seconds: int = 600  # a drain held this long by PDBs or failing evictions is notified ("held")
    held_approval: bool = False  # the "held" notification carries an approval id an operator answers (approve)
    dry_run: bool = False
    # gates between the drain and the verdict (docs/gates.md)
    wait_for_deregistration: GateScope = "lifecycle"
    wait_for_volume_detach: GateScope = "lifecycle"
    target_group_arns: tuple[str, ...] = ()  # checked besides the controller's; the instance is deregistered
    out_of_service_taint: bool = False  # taint a terminated instance's leftover Node (non-graceful shutdown)
    # surge before evict for PDB-refused pods of Deployments (docs/drain.md)
    surge_blocked_pods: SurgeMode = "annotated"
    surge_max_replicas: int = 5  # extra replicas of one Deployment, over every node's surge (and within its maxSurge)
    # how long a namespace user's annotations (wait-for-completion, do-not-disrupt, evict-order) may hold a drain
    policy_hold_max_seconds: int = 3600

    def gate_applies(self, scope: GateScope, lifecycle: bool) -> bool:
        """Whether a drain (holding a lifecycle action or not) waits on a gate with this scope."""
        return not self.dry_run and (scope == "always" or (scope == "lifecycle" and lifecycle))

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> WorkflowSettings:
        d = cls()
        s = cls(
            delete_emptydir_data=_bool(env, "DRAIN_DELETE_EMPTYDIR_DATA", d.delete_emptydir_data),
            force=_bool(env, "DRAIN_FORCE", d.force),
            evict_daemonsets=_bool(env, "DRAIN_EVICT_DAEMONSETS", d.evict_daemonsets),
            grace_period=_int_or_none(env, "DRAIN_GRACE_PERIOD", 0),
            skip_wait_for_delete_timeout=_int(
                env, "DRAIN_SKIP_WAIT_FOR_DELETE_TIMEOUT", d.skip_wait_for_delete_timeout, 0
            ),
            force_delete_on_deadline=_bool(env, "FORCE_DELETE_ON_DEADLINE", d.force_delete_on_deadline),
            min_drain_seconds=_int(env, "MIN_DRAIN_SECONDS", d.min_drain_seconds, MIN_DRAIN_FLOOR, MAX_MIN_DRAIN),
            taint=_taint(env.get("DRAIN_TAINT")),
            exclude_from_load_balancers=_bool(env, "EXCLUDE_FROM_LOAD_BALANCERS", d.exclude_from_load_balancers),
            deadline_asg_terminate=_int_or_none(env, "DEADLINE_ASG_TERMINATE_SECONDS", 1),
            deadline_state_change=_int(env, "DEADLINE_STATE_CHANGE_SECONDS", d.deadline_state_change, 1),
            deadline_rebalance=_int(env, "DEADLINE_REBALANCE_SECONDS", d.deadline_rebalance, 1),
            rebalance_return=_int(env, "REBALANCE_RETURN_SECONDS", d.rebalance_return, 0),
            scheduled_change_lead=_int(
                env, "SCHEDULED_CHANGE_LEAD_SECONDS", d.scheduled_change_lead, 0, MAX_LEAD_SECONDS
            ),
            capacity_block_lead=_int(env, "CAPACITY_BLOCK_LEAD_SECONDS", d.capacity_block_lead, 0, MAX_LEAD_SECONDS),
            lifecycle_result_on_failure=_result(env, "LIFECYCLE_RESULT_ON_FAILURE", d.lifecycle_result_on_failure),
            launch_ready_timeout=_int(env, "LAUNCH_READY_TIMEOUT_SECONDS", d.launch_ready_timeout, 1),
            launch_timeout_result=_result(env, "LAUNCH_TIMEOUT_RESULT", d.launch_timeout_result),
            max_concurrent_nodes=_int(env, "MAX_CONCURRENT_NODES", d.max_concurrent_nodes, 1, 100),
            drain_pass_seconds=_int(env, "DRAIN_PASS_SECONDS", d.drain_pass_seconds, 5, 840),
            recheck_min_seconds=_int(env, "RECHECK_MIN_SECONDS", d.recheck_min_seconds, 1, MAX_RECHECK_SECONDS),
            recheck_max_seconds=_int(env, "RECHECK_MAX_SECONDS", d.recheck_max_seconds, 1, MAX_RECHECK_SECONDS),
            held_recheck_max_seconds=_int(
                env, "HELD_RECHECK_MAX_SECONDS", d.held_recheck_max_seconds, 1, MAX_RECHECK_SECONDS
            ),
            held_notify_seconds=_int(env, "HELD_NOTIFY_SECONDS", d.held_notify_seconds, 1),
            held_approval=_on_off(env, "HELD_APPROVAL", d.held_approval),
            dry_run=_bool(env, "DRY_RUN", d.dry_run),
            wait_for_deregistration=_scope(env, "WAIT_FOR_DEREGISTRATION", d.wait_for_deregistration),
            wait_for_volume_detach=_scope(env, "WAIT_FOR_VOLUME_DETACH", d.wait_for_volume_detach),
            target_group_arns=_target_groups(_raw(env, "TARGET_GROUP_ARNS")),
            out_of_service_taint=_bool(env, "OUT_OF_SERVICE_TAINT", d.out_of_service_taint),
            surge_blocked_pods=_surge(env, "SURGE_BLOCKED_PODS", d.surge_blocked_pods),
            surge_max_replicas=_int(env, "SURGE_MAX_REPLICAS", d.surge_max_replicas, 1, MAX_SURGE_REPLICAS),
            policy_hold_max_seconds=_int(env, "POLICY_HOLD_MAX_SECONDS", d.policy_hold_max_seconds, 0),
        )
        if s.recheck_max_seconds < s.recheck_min_seconds:
            raise SettingsError("RECHECK_MAX_SECONDS", "must be >= RECHECK_MIN_SECONDS")
        if s.held_recheck_max_seconds < s.recheck_min_seconds:
            raise SettingsError("HELD_RECHECK_MAX_SECONDS", "must be >= RECHECK_MIN_SECONDS")
        if env.get(BOUND_CHECKED_VARIABLE) != bound_digest(s):
            check_bound(s)
        check_log_level(env)
        return s


# the variables that set how often a drain's durable loop steps, and until when
PACING_VARIABLES = (
    "DRAIN_PASS_SECONDS",
    "RECHECK_MIN_SECONDS",
    "RECHECK_MAX_SECONDS",
    "HELD_RECHECK_MAX_SECONDS",
)
HORIZON_VARIABLES = (
    "DEADLINE_ASG_TERMINATE_SECONDS",
    "DEADLINE_REBALANCE_SECONDS",
    "DEADLINE_STATE_CHANGE_SECONDS",
    "SCHEDULED_CHANGE_LEAD_SECONDS",
)


# Set by the construct at synth (infra/environment.py) to the bound_digest of the settings whose bound it checked
# there: the container's init then skips the model's simulation (tens of milliseconds at every cold start). Settings
# changed since (a console edit, another deploy tool) no longer match it and are checked again at cold start.
BOUND_CHECKED_VARIABLE = "DRAIN_SETTINGS_BOUND_CHECKED"


def bound_digest(s: WorkflowSettings) -> str:
    """Names what check_bound accepted: these settings under this pacing model (its limits, costs and retry
    policies; the construct and the bundle it deploys are one release, so the model's code is the same)."""
    model = (
        pacing.MAX_DURABLE_OPERATIONS,
        pacing.MAX_CHECKPOINT_BYTES,
        pacing.CHECKPOINT_BYTES_PER_OPERATION,
        pacing.FIXED_OPERATIONS,
        pacing.FAULT_LOOP_OPERATIONS,
        pacing.HEARTBEAT_TIMEOUTS,
        sorted((str(kind), policy) for kind, policy in RETRY_POLICIES.items()),
    )
    material = repr((model, sorted(dataclasses.asdict(s).items())))
    return hashlib.sha256(material.encode()).hexdigest()[:32]


def check_bound(s: WorkflowSettings) -> None:
    """Refuse settings under which one drain could exceed MAX_DURABLE_OPERATIONS or MAX_CHECKPOINT_BYTES in the
    worst case the pacing allows (pacing.worst_case_any_hook), naming the variables that set it."""
    b = pacing.worst_case_any_hook(s)
    if b.operations <= pacing.MAX_DURABLE_OPERATIONS and b.checkpoint_bytes <= pacing.MAX_CHECKPOINT_BYTES:
        return
    hook = f"a hook with HeartbeatTimeout {b.heartbeat_timeout} s" if b.heartbeat_timeout else "an event without hook"
    raise SettingsError(
        "DRAIN_PASS_SECONDS",
        f"a drain could use {b.operations} durable operations ({b.checkpoint_bytes // 2**20} MB of checkpoints) "
        f"over {b.horizon} s ({hook}, {b.path}); at most {pacing.MAX_DURABLE_OPERATIONS} operations and "
        f"{pacing.MAX_CHECKPOINT_BYTES // 2**20} MB are allowed: raise {', '.join(PACING_VARIABLES)} "
        f"or shorten {', '.join(HORIZON_VARIABLES)}",
    )


def _raw(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    return None if value is None or not value.strip() else value.strip()


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = _raw(env, name)
    if raw is None:
        return default
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise SettingsError(name, f"{clip(raw)!r}: expected true or false")


def _int(env: Mapping[str, str], name: str, default: int, minimum: int, maximum: int = MAX_SECONDS) -> int:
    raw = _raw(env, name)
    if raw is None:
        return default
    if not _ASCII_INT.fullmatch(raw):
        raise SettingsError(
            name, f"{clip(raw)!r}: expected a whole number of seconds between {minimum} and {maximum} (digits 0-9)"
        )
    value = int(raw)
    if value < minimum or value > maximum:
        raise SettingsError(name, f"{value}: expected a number between {minimum} and {maximum}")
    return value


def _int_or_none(env: Mapping[str, str], name: str, minimum: int) -> int | None:
    return None if _raw(env, name) is None else _int(env, name, 0, minimum)


def check_log_level(env: Mapping[str, str]) -> str | None:
    """The Powertools log level the environment asks for (None: default). Checked before the logger is built:
    Powertools raises ValueError on an unknown level, which at import time would fail every cold start."""
    for name in ("POWERTOOLS_LOG_LEVEL", "LOG_LEVEL"):  # Powertools' order: the second is its legacy name
        raw = _raw(env, name)
        if raw is None:
            continue
        if raw.upper() not in LOG_LEVELS + _LOG_LEVEL_ALIASES:
            raise SettingsError(name, f"{clip(raw)!r}: expected one of {', '.join(LOG_LEVELS)}")
        return raw.upper()
    return None


def _result(env: Mapping[str, str], name: str, default: LifecycleResult) -> LifecycleResult:
    raw = _raw(env, name)
    if raw is None:
        return default
    if raw.upper() == "CONTINUE":
        return "CONTINUE"
    if raw.upper() == "ABANDON":
        return "ABANDON"
    raise SettingsError(name, f"{clip(raw)!r}: expected CONTINUE or ABANDON")


def _taint(raw: str | None) -> tuple[str, str] | None:
    """``key[:effect]``, checked as the API server would check it: a bad taint must fail at cold start, not as a
    422 on the node patch minutes into a drain. The taint's value is always "true"."""
    if raw is None or not raw.strip():
        return None
    key, _, effect = raw.strip().rpartition(":") if ":" in raw else (raw.strip(), "", "NoSchedule")
    form = f"expected 'key' or 'key:{'|'.join(_EFFECTS)}', key a Kubernetes qualified name ([prefix/]name)"
    if effect not in _EFFECTS:
        raise SettingsError("DRAIN_TAINT", f"{clip(raw)!r}: effect {clip(effect)!r} is unknown; {form}")
    problem = _qualified_name_problem(key)
    if problem:
        raise SettingsError("DRAIN_TAINT", f"{clip(raw)!r}: {problem}; {form}")
    return key, effect


def _qualified_name_problem(key: str) -> str | None:
    if "=" in key:
        return "a value cannot be set (the taint's value is always 'true')"
    prefix, slash, name = key.rpartition("/")
    if slash and not (0 < len(prefix) <= 253 and _DNS_SUBDOMAIN.fullmatch(prefix)):
        return f"prefix {clip(prefix)!r} is not a DNS subdomain (lower-case letters, digits, '-', '.'; <= 253)"
    if not (len(name) <= 63 and _NAME_PART.fullmatch(name)):
        return (
            f"name {clip(name)!r} must be 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter "
            "or digit"
        )
    return None


def _on_off(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = _raw(env, name)
    if raw is None:
        return default
    if raw.lower() == "on":
        return True
    if raw.lower() == "off":
        return False
    raise SettingsError(name, f"{clip(raw)!r}: expected on or off")


def _scope(env: Mapping[str, str], name: str, default: GateScope) -> GateScope:
    """lifecycle (drains holding a lifecycle action), always, never; true/false mean lifecycle/never."""
    raw = _raw(env, name)
    if raw is None:
        return default
    value = raw.lower()
    if value in ("lifecycle", *_TRUE):
        return "lifecycle"
    if value == "always":
        return "always"
    if value in ("never", *_FALSE):
        return "never"
    raise SettingsError(name, f"{clip(raw)!r}: expected lifecycle, always or never (true = lifecycle, false = never)")


def _surge(env: Mapping[str, str], name: str, default: SurgeMode) -> SurgeMode:
    raw = _raw(env, name)
    if raw is None:
        return default
    for mode in SURGE_MODES:
        if raw.lower() == mode:
            return mode
    raise SettingsError(
        name, f"{clip(raw)!r}: expected never, annotated (Deployments annotated drain-orchestrator.io/surge) or always"
    )


def surge_mode(env: Mapping[str, str]) -> SurgeMode:
    """SURGE_BLOCKED_PODS as the function reads it from ``env`` (``rbac apply --function`` reads a deployed one's)."""
    return _surge(env, "SURGE_BLOCKED_PODS", WorkflowSettings().surge_blocked_pods)


def _target_groups(raw: str | None) -> tuple[str, ...]:
    arns = tuple(a.strip() for a in (raw or "").split(",") if a.strip())
    for arn in arns:
        if not _TARGET_GROUP_ARN.match(arn):
            raise SettingsError(
                "TARGET_GROUP_ARNS",
                f"{clip(arn)!r}: expected comma-separated target group ARNs "
                "(arn:aws:elasticloadbalancing:<region>:<account>:targetgroup/<name>/<id>)",
            )
    return arns
