"""Keeping the reason of every eviction that did not go through, and the pods no retry can help.

A pod selected by more than one PodDisruptionBudget is never evicted by the eviction API (it answers 500 "This pod
has more than one PodDisruptionBudget…" and names none): the budgets are looked up so the report names them, and the
pod is not retried until the deadline policy acts on it (force-delete near the deadline, or the deadline's verdict).
"""

from __future__ import annotations

from drain_orchestrator.drain.classify import PodVerdict
from drain_orchestrator.drain.report import DrainReport, HeldPod
from drain_orchestrator.drain.selector import selecting
from drain_orchestrator.engine.pass_state import DrainState
from drain_orchestrator.engine.pod_record import ident_of
from drain_orchestrator.kube.evict import EvictionResult, HoldReason
from drain_orchestrator.kube.rest import Kube


def budgets_selecting(kube: Kube, state: DrainState, v: PodVerdict) -> list[str]:
    """The PDBs selecting the pod (one LIST of its namespace's budgets, remembered for the drain)."""
    rec = state.record(ident_of(v.pod))
    if rec.pdbs:
        return rec.pdbs
    resp = kube.request("GET", f"/apis/policy/v1/namespaces/{v.pod.namespace}/poddisruptionbudgets")
    if not resp.ok:
        return []  # the reason stands without the names
    names = selecting(list(resp.body.get("items") or []), v.pod.namespace, v.pod.labels)
    rec.pdbs = names
    return names


def park_until_deadline_policy(state: DrainState, ident: str) -> None:
    """No retry before the deadline policy's time (force_at; never when it will not force)."""
    rec = state.record(ident)
    rec.waiting_on = []
    rec.not_before = float("inf") if rec.force_at is None else rec.force_at


def record_hold(report: DrainReport, state: DrainState, v: PodVerdict, res: EvictionResult, pdbs: list[str]) -> None:
    hold = HeldPod(
        pod=v.pod.key,
        reason=(res.reason or HoldReason.EVICTION_FAILED).value,
        message=res.message,
        pdbs=list(pdbs),
        status=res.status,
    )
    state.record(ident_of(v.pod)).last_hold = hold
    report.held.append(hold)


def report_waiting(report: DrainReport, state: DrainState, ident: str) -> None:
    """A pod waiting for its retry time keeps the reason it was last refused with."""
    hold = state.known(ident).last_hold
    if hold is not None and all(h.pod != hold.pod for h in report.held):
        report.held.append(hold)
