"""Options of a drain, with kubectl's defaults where kubectl has the same knob."""

from __future__ import annotations

from dataclasses import dataclass

from drain_orchestrator.drain.turn_queue import QUEUE_AFTER_SECONDS
from drain_orchestrator.node_identity import NodeIdentity
from drain_orchestrator.surge_mode import SURGE_MODES, SurgeMode

# Taint applied when DaemonSet pods are evicted: DaemonSet pods tolerate `unschedulable`, so without a taint
# the DaemonSet controller would put them straight back on the node.
DEFAULT_DRAIN_TAINT_KEY = "drain-orchestrator.io/draining"
# How long after its cordon a node is watched for late pods before its instance may go: Karpenter's minimum drain
# time (MinDrainTime), which it also counts from the cordon and spends before volume detach and termination.
LATE_LOOK_SECONDS = 5.0


@dataclass(frozen=True)
class DrainOptions:
    """How to drain one node.

    grace_period: seconds for every pod's SIGTERM→SIGKILL window; None keeps each pod's own
        terminationGracePeriodSeconds (kubectl's ``--grace-period=-1``).
    delete_emptydir_data / force: kubectl's ``--delete-emptydir-data`` / ``--force``.
    evict_daemonsets: evict DaemonSet pods last instead of skipping them (kubectl always skips them).
    skip_wait_for_delete_timeout: a pod terminating for longer than this many seconds is skipped
        (kubectl's ``--skip-wait-for-delete-timeout``; 0 = wait forever).
    deadline: absolute epoch seconds by which the node must be empty (e.g. Spot warning + 120 s), or None.
    deadline_margin: seconds kept free before the deadline when clipping grace periods.
    force_delete_on_deadline: near the deadline, DELETE pods still refused by a PDB (grace ≥ 1 s).
    force_now: with force_delete_on_deadline, delete pods refused by a PDB now (an operator's ``--force``), their
        grace still clipped to the deadline.
    concurrency: evictions in flight at once.
    dry_run: compute and report, change nothing (server-side dryRun=All for evictions).
    pod_selector: label selector narrowing the pods considered (kubectl's ``--pod-selector``).
    max_api_calls: cap on API requests of one ``drain_node`` call (None = no cap).
    surge: surge before evict for PDB-refused pods of Deployments: never, annotated (Deployments annotated
        ``drain-orchestrator.io/surge: "true"``) or always (docs/drain.md).
    surge_max_replicas: extra replicas one Deployment may get, over every node's surge; never more than its
        rollout's own ``maxSurge`` allows (drain/surge.py surge_room). None: no cap but maxSurge.
    run_id: who surges (recorded on the workload with the node's name); None: the node alone.
    voluntary: the node goes by someone's choice (scale-in, rebalance, maintenance, a manual drain): pods whose
        drain policy is ``wait-for-completion`` or with Karpenter's ``do-not-disrupt`` are let finish first. False
        for Spot interruptions and state changes: they are evicted at once (drain/policy.py).
    policy_hold_until: epoch second past which no annotation holds a pod (``wait-for-completion``,
        ``do-not-disrupt``) and ``evict-order`` orders nothing: the cluster's cap on how long a namespace user's
        annotations may hold a drain (POLICY_HOLD_MAX_SECONDS after it began); None: no cap but the deadline's.
    witness_seconds: a node that looks drained is listed once more after the control plane was seen to have its
        cordon (the node lifecycle controller's unschedulable taint), waited for at most this long after the cordon:
        a pod the scheduler placed before it saw the cordon is in that LIST (engine/node_view.py).
    settle_seconds: the late look: a drained node's pods are watched until this long after its cordon, and a pod
        bound meanwhile (a binding already under way when the scheduler saw the cordon) is drained too; bounded by
        the deadline. 0: none (the command line's drain, the flow's drain passes: the flow looks late right before
        the instance may go, ``LATE_LOOK_SECONDS``, workflow/late_look.py).
    queue_after: in a storm, a held pass whose turn at its budgets looks further off than this many seconds ends,
        queued, to wait durably (drain/turn_queue.py); only with a ``HoldCheck`` (the workflow's passes).
    after_queued: this pass follows one that ended queued: it reads the first wave again (the draining nodes, the
        budgets), however long after the cordon, so its pods wait for their turns and it may queue again.
    """

    grace_period: int | None = None
    delete_emptydir_data: bool = False
    force: bool = False
    evict_daemonsets: bool = False
    skip_wait_for_delete_timeout: float = 0.0
    deadline: float | None = None
    deadline_margin: float = 2.0
    force_delete_on_deadline: bool = False
    force_now: bool = False
    concurrency: int = 32
    dry_run: bool = False
    pod_selector: str | None = None
    max_api_calls: int | None = None
    surge: SurgeMode = "never"
    surge_max_replicas: int | None = None
    run_id: str | None = None
    voluntary: bool = True
    witness_seconds: float = 2.0
    policy_hold_until: float | None = None
    settle_seconds: float = 0.0
    # Cordon extras: annotations under drain-orchestrator.io/, an optional taint and the exclude-LB label.
    reason: str | None = None
    event_id: str | None = None
    taint_key: str | None = None
    taint_effect: str = "NoSchedule"
    exclude_from_load_balancers: bool = False
    # the Node object to drain (node_identity.py): another under the node's name ends the drain as NodeReplaced
    node_pin: NodeIdentity | None = None
    # Retry of pods refused by a PDB or throttled: exponential backoff with full jitter.
    retry_base: float = 0.25
    retry_cap: float = 5.0
    # Pods refused by a named PDB are retried only when it allows a disruption, at most that many per rise;
    # a drain that keeps losing the race to other drains backs off up to this long (see contention_jitter).
    budget_jitter_slot: float = 0.2
    budget_jitter_cap: float = 10.0
    queue_after: float = QUEUE_AFTER_SECONDS
    after_queued: bool = False
    # Poll cadence while waiting for evicted pods to disappear (one LIST per tick for the whole node).
    poll_min: float = 0.2
    poll_max: float = 1.0
    # Longest wait between two passes, and between two reads of the node (is it still there?).
    node_check_seconds: float = 5.0

    @property
    def drain_taint(self) -> tuple[str, str] | None:
        """The taint to put on the node: the configured one, or ours whenever DaemonSet pods are evicted."""
        if self.taint_key:
            return (self.taint_key, self.taint_effect)
        if self.evict_daemonsets:
            return (DEFAULT_DRAIN_TAINT_KEY, "NoSchedule")
        return None

    def __post_init__(self) -> None:
        if self.grace_period is not None and self.grace_period < 0:
            raise ValueError("grace_period must be >= 0 or None")
        if self.concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if self.surge not in SURGE_MODES:
            raise ValueError(f"surge must be one of {', '.join(SURGE_MODES)}")
        if self.skip_wait_for_delete_timeout < 0:
            raise ValueError("skip_wait_for_delete_timeout must be >= 0")
        if self.witness_seconds < 0 or self.settle_seconds < 0:
            raise ValueError("witness_seconds and settle_seconds must be >= 0")
