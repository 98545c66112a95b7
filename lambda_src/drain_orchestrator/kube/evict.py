"""policy/v1 Eviction (and the forced DELETE) of one pod, with every apiserver answer mapped to an outcome.

No decisions here: the caller chooses what to do with BLOCKED, THROTTLED, … (see engine/drainer.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from drain_orchestrator.clip import clip
from drain_orchestrator.kube.rest import MESSAGE_CHARS, Kube, Response

MULTIPLE_PDBS = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
# the refusal's cause names its budget in every variant the apiserver sends: "... needs 2 healthy pods and has 2
# currently", "... does not allow evicting pods currently" (its pods not all healthy), "... is still being processed"
_PDB_NAME = re.compile(r"The disruption budget (\S+) ")


class HoldReason(StrEnum):
    """Why an eviction did not go through, as reported (result, notifications, logs, ``status``)."""

    PDB = "pdb"  # a PodDisruptionBudget allows no disruption now
    MULTIPLE_PDBS = "multiple-pdbs"  # more than one PDB selects the pod: the eviction API never evicts it
    ADMISSION_DENIED = "admission-denied"  # a validating webhook or ValidatingAdmissionPolicy denied it
    WEBHOOK_FAILED = "webhook-failed"  # an admission webhook could not be called (down, timing out)
    THROTTLED = "throttled"
    EVICTION_FAILED = "eviction-failed"  # any other answer: the HTTP status and message say what


# Admission answers carry no machine-readable cause; their message prefixes are fixed in the apiserver's source
# (admission/plugin/webhook/errors, admission/plugin/policy/validating), stable since v1.16 / v1.26.
_WEBHOOK_CALL_FAILED = ("failed calling webhook", "failed to call webhook")
_ADMISSION_DENIED = ("admission webhook", "ValidatingAdmissionPolicy")


class Outcome(StrEnum):
    EVICTED = "evicted"  # 2xx: the pod is being deleted
    GONE = "gone"  # 404: nothing to do
    REPLACED = "replaced"  # 409 on our UID precondition: a different pod now has that name
    BLOCKED = "blocked"  # a PodDisruptionBudget refuses (429 DisruptionBudget, 500 multiple PDBs, 403 …, 409 on it)
    THROTTLED = "throttled"  # 429 without a PDB cause (API priority & fairness), 504 conflicts
    NAMESPACE_TERMINATING = "namespace-terminating"  # 403: the namespace controller is deleting the pod
    FAILED = "failed"  # anything else


@dataclass(frozen=True)
class EvictionResult:
    outcome: Outcome
    status: int
    message: str = ""
    pdbs: list[str] = field(default_factory=list)
    retry_after: float | None = None
    grace: int | None = None  # grace period sent with the request (None: the pod's own)
    reason: HoldReason | None = None  # why it did not go through (None: it did, or nothing to do)


def classify_response(resp: Response) -> EvictionResult:
    """Map an eviction/delete response to an outcome (the apiserver's eviction handler answers as
    `pkg/registry/core/pod/storage/eviction.go` does)."""
    status, message = resp.status, resp.message
    if resp.ok:
        return EvictionResult(Outcome.EVICTED, status)
    if status == 404:
        return EvictionResult(Outcome.GONE, status, message)
    details = (resp.body or {}).get("details") or {}
    if status == 409 and details.get("kind") == "poddisruptionbudgets":
        # the apiserver gave up its retries of the budget's status update (other evictions and the disruption
        # controller kept changing it, a storm's busiest budgets): the pod is still there, its budget contended
        return EvictionResult(Outcome.BLOCKED, status, message, [str(details.get("name", ""))], reason=HoldReason.PDB)
    if status == 409:
        return EvictionResult(Outcome.REPLACED, status, message)
    causes = resp.causes()
    reasons = {c.get("reason") for c in causes}
    pdbs = [m.group(1) for c in causes if (m := _PDB_NAME.search(str(c.get("message", ""))))]
    cause_text = clip("; ".join(str(c.get("message", "")) for c in causes if c.get("message")), MESSAGE_CHARS)
    if status == 429 and "DisruptionBudget" in reasons:
        return EvictionResult(
            Outcome.BLOCKED, status, cause_text or message, pdbs, resp.retry_after, reason=HoldReason.PDB
        )
    if status in {429, 504}:
        return EvictionResult(
            Outcome.THROTTLED, status, message, retry_after=resp.retry_after, reason=HoldReason.THROTTLED
        )
    if status == 500 and message == MULTIPLE_PDBS:
        return EvictionResult(Outcome.BLOCKED, status, message, reason=HoldReason.MULTIPLE_PDBS)
    if status == 403 and "NamespaceTerminating" in reasons:
        return EvictionResult(Outcome.NAMESPACE_TERMINATING, status, message)
    if status == 403 and ("DisruptionBudget" in reasons or "poddisruptionbudget" in message):
        # "pdb disruptions allowed is negative" / "DisruptedPods map too big": the PDB controller catches up.
        return EvictionResult(Outcome.BLOCKED, status, message, pdbs, reason=HoldReason.PDB)
    return EvictionResult(Outcome.FAILED, status, message or f"HTTP {status}", reason=_failure_reason(message))


def _failure_reason(message: str) -> HoldReason:
    if any(m in message for m in _WEBHOOK_CALL_FAILED):
        return HoldReason.WEBHOOK_FAILED
    if any(m in message for m in _ADMISSION_DENIED):
        return HoldReason.ADMISSION_DENIED
    return HoldReason.EVICTION_FAILED


def _delete_options(uid: str, grace: int | None, dry_run: bool) -> dict[str, object]:
    opts: dict[str, object] = {"preconditions": {"uid": uid}}
    if grace is not None:
        opts["gracePeriodSeconds"] = grace
    if dry_run:
        opts["dryRun"] = ["All"]
    return opts


def evict_pod(
    kube: Kube, namespace: str, name: str, uid: str, *, grace: int | None = None, dry_run: bool = False
) -> EvictionResult:
    """POST the pod's eviction subresource. The UID precondition makes a same-name successor (StatefulSet)
    answer 409 instead of being evicted by mistake."""
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
        "deleteOptions": _delete_options(uid, grace, dry_run),
    }
    query = {"dryRun": "All"} if dry_run else None
    # a 429 here is usually a budget's refusal: the drain schedules every 429 of an eviction itself (no resend here)
    path = f"/api/v1/namespaces/{namespace}/pods/{name}/eviction"
    resp = kube.request("POST", path, query=query, body=body, retry_throttled=False)
    return classify_response(resp)


def delete_pod(kube: Kube, namespace: str, name: str, uid: str, *, grace: int, dry_run: bool = False) -> EvictionResult:
    """DELETE the pod, bypassing PDBs (the deadline policy). ``grace`` ≥ 1 keeps at-most-one-pod semantics."""
    body = {"apiVersion": "v1", "kind": "DeleteOptions", **_delete_options(uid, max(1, grace), dry_run)}
    query = {"dryRun": "All"} if dry_run else None
    resp = kube.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", query=query, body=body)
    return classify_response(resp)
