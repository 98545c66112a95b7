"""What every step of one instance's drain needs to know, in one value."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from drain_orchestrator.drain.report import DrainReport
from drain_orchestrator.interruption import Interruption
from drain_orchestrator.node_identity import NodeIdentity
from drain_orchestrator.outcome import Result
from drain_orchestrator.ownership import Decision
from drain_orchestrator.workflow.checkpoint import StepFault
from drain_orchestrator.workflow.results import ClaimCheck, DrainPlan


class Drained(NamedTuple):
    """How one instance's drain ended, before its verdict: the result, the drain's report (None: this execution did
    not drain, or no pass reported), and the fault that ended it (None: none did). Not a checkpoint: the flow
    rebuilds it on replay from its steps' results."""

    result: Result
    report: DrainReport | None = None
    error: StepFault | None = None


@dataclass(frozen=True)
class DrainJob:
    event: Interruption
    decision: Decision
    plan: DrainPlan
    run_id: str
    # of several executions draining one node, only the holder of its "drain-started" claim counts pods
    counts_pods: bool = True
    # the node's drain claim as the cordon's write took or joined it (None: not taken there; one_drain looks itself)
    cordon_claim: ClaimCheck | None = None
    # this execution holds the node's drain claim (kube/node_claim.py): each pass renews it
    claimed: bool = False
    # when the claim was taken (epoch) and the earliest deadline it recorded: the first pass, right after, need not
    # renew it (None: unknown, as in a checkpoint written before these were kept)
    claimed_at: float | None = None
    claim_earliest: float | None = None
    # an operator's approval said --force: the next passes delete the pods PDBs still protect (grace clipped)
    force_now: bool = False
    # the located Node object (node_identity.py; None: located before identities were recorded)
    identity: NodeIdentity | None = None
    # when the drain began (the cordon step's time): annotations hold it at most POLICY_HOLD_MAX_SECONDS from then
    started_at: float | None = None

    @property
    def cluster(self) -> str:
        assert self.decision.cluster is not None  # owned decisions name their cluster
        return self.decision.cluster

    @property
    def node(self) -> str:
        assert self.decision.node is not None  # steps after locate only run when there is a node
        return self.decision.node

    @property
    def pin(self) -> NodeIdentity:
        """The Node object every step acts on: the located one; for a drain located before identities were recorded,
        any Node of this instance (its providerID), until a pass learns the UID."""
        return self.identity if self.identity is not None else NodeIdentity(instance_id=self.decision.instance_id)

    @property
    def drains_itself(self) -> bool:
        """The cordon's write made this execution the node's drainer: its own passes list the node's pods."""
        c = self.cordon_claim
        return c is not None and c.fault is None and c.role == "holder"

    def with_decision(self, decision: Decision) -> DrainJob:
        return replace(self, decision=decision)

    def drain_options(self) -> Any:
        from drain_orchestrator.drain.options import DrainOptions  # noqa: PLC0415
        from drain_orchestrator.drain.policy import is_voluntary  # noqa: PLC0415
        from drain_orchestrator.workflow.runtime import wsettings  # noqa: PLC0415

        ws = wsettings()
        return DrainOptions(
            grace_period=ws.grace_period,
            delete_emptydir_data=ws.delete_emptydir_data,
            force=ws.force,
            evict_daemonsets=ws.evict_daemonsets,
            skip_wait_for_delete_timeout=float(ws.skip_wait_for_delete_timeout),
            deadline=self.plan.deadline,
            force_delete_on_deadline=ws.force_delete_on_deadline or self.force_now,
            force_now=self.force_now,
            dry_run=ws.dry_run,
            reason=self.event.kind,
            event_id=self.event.event_id,
            taint_key=ws.taint[0] if ws.taint else None,
            taint_effect=ws.taint[1] if ws.taint else "NoSchedule",
            exclude_from_load_balancers=ws.exclude_from_load_balancers,
            surge=ws.surge_blocked_pods,
            run_id=self.run_id,
            voluntary=is_voluntary(self.event.kind),
            node_pin=self.pin,
            policy_hold_until=(self.started_at or self.plan.now) + ws.policy_hold_max_seconds,
            surge_max_replicas=ws.surge_max_replicas,
        )
