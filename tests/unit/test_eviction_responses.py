"""The eviction answer → outcome table (the apiserver's `pkg/registry/core/pod/storage/eviction.go`), on the Status
bodies the apiserver sends.

The real apiserver paths are exercised in tests/integration/test_drain_*.py; this pins the mapping for the
answers a small control plane cannot easily produce (API priority & fairness 429, 504 conflicts)."""

from __future__ import annotations

from typing import Any

import pytest

from drain_orchestrator.kube.evict import MULTIPLE_PDBS, HoldReason, Outcome, classify_response
from drain_orchestrator.kube.rest import Response


def status(code: int, message: str = "", causes: list[dict[str, Any]] | None = None, **details: Any) -> Response:
    body: dict[str, Any] = {"kind": "Status", "status": "Failure", "message": message, "code": code}
    if causes is not None or details:
        body["details"] = {**details, **({"causes": causes} if causes else {})}
    return Response(code, body, {})


def test_success_gone_replaced() -> None:
    assert classify_response(Response(201, {"status": "Success"}, {})).outcome is Outcome.EVICTED
    assert classify_response(status(404, "not found")).outcome is Outcome.GONE
    assert classify_response(status(409, "the UID in the precondition")).outcome is Outcome.REPLACED


def test_a_conflict_on_the_budget_is_the_budget_contended_not_the_pod_replaced() -> None:
    # the answer of a 200-node storm on the bed, after ~14 s of the apiserver's retries of the budget's status
    msg = (
        'Operation cannot be fulfilled on poddisruptionbudgets.policy "app0": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    res = classify_response(status(409, msg, name="app0", group="policy", kind="poddisruptionbudgets"))
    assert (res.outcome, res.pdbs, res.reason, res.message) == (Outcome.BLOCKED, ["app0"], HoldReason.PDB, msg)
    # the UID precondition's conflict names the pod: a different pod has that name now
    pod = status(409, "Precondition failed: UID in precondition: a, UID in object meta: b", name="web-0", kind="pods")
    assert classify_response(pod).outcome is Outcome.REPLACED


def test_pdb_429_keeps_the_budget_name_and_message() -> None:
    msg = "The disruption budget web-pdb needs 2 healthy pods and has 2 currently"
    r = classify_response(
        status(
            429,
            "Cannot evict pod as it would violate the pod's disruption budget.",
            [{"reason": "DisruptionBudget", "message": msg}],
        )
    )
    assert (r.outcome, r.pdbs, r.message) == (Outcome.BLOCKED, ["web-pdb"], msg)


@pytest.mark.parametrize(
    "cause",
    [
        "The disruption budget web-pdb needs 2 healthy pods and has 2 currently",
        "The disruption budget web-pdb does not allow evicting pods currently",
        "The disruption budget web-pdb is still being processed by the server.",
    ],
)
def test_every_refusal_cause_names_its_budget(cause: str) -> None:
    # a refusal whose budget is not read from it is retried on a timer instead of waiting on the budget's watch
    r = classify_response(status(429, "Cannot evict pod", [{"reason": "DisruptionBudget", "message": cause}]))
    assert (r.outcome, r.pdbs) == (Outcome.BLOCKED, ["web-pdb"])


def test_pdb_still_processing_429_is_blocked_with_retry_after() -> None:
    msg = "The disruption budget db is still being processed by the server."
    resp = status(429, "x", [{"reason": "DisruptionBudget", "message": msg}], retryAfterSeconds=10)
    r = classify_response(Response(429, resp.body, {"Retry-After": "10"}))
    assert (r.outcome, r.pdbs, r.retry_after) == (Outcome.BLOCKED, ["db"], 10.0)


def test_too_many_requests_without_a_pdb_cause_is_throttling_honouring_retry_after() -> None:
    r = classify_response(Response(429, {"message": "Too many requests"}, {"Retry-After": "3"}))
    assert (r.outcome, r.retry_after) == (Outcome.THROTTLED, 3.0)
    assert classify_response(status(504, "couldn't update PodDisruptionBudget")).outcome is Outcome.THROTTLED


def test_multiple_pdbs_500_is_blocked_other_500_failed() -> None:
    r = classify_response(status(500, MULTIPLE_PDBS))
    assert (r.outcome, r.message) == (Outcome.BLOCKED, MULTIPLE_PDBS)
    assert classify_response(status(500, "etcdserver: timeout")).outcome is Outcome.FAILED


def test_forbidden_in_a_terminating_namespace_differs_from_an_rbac_denial() -> None:
    r = classify_response(status(403, "unable to create new content", [{"reason": "NamespaceTerminating"}]))
    assert r.outcome is Outcome.NAMESPACE_TERMINATING
    rbac = classify_response(status(403, 'pods "x" is forbidden: User "u" cannot create resource'))
    assert rbac.outcome is Outcome.FAILED


def test_every_refusal_keeps_a_reason() -> None:
    budget = [{"reason": "DisruptionBudget", "message": "The disruption budget web needs 2 healthy pods"}]
    assert classify_response(status(429, "x", budget)).reason is HoldReason.PDB
    assert classify_response(status(500, MULTIPLE_PDBS)).reason is HoldReason.MULTIPLE_PDBS
    down = (
        'Internal error occurred: failed calling webhook "evict.example.com": failed to call webhook: Post '
        '"https://127.0.0.1:1/validate?timeout=5s": dial tcp 127.0.0.1:1: connect: connection refused'
    )
    r = classify_response(status(500, down))
    assert (r.outcome, r.reason, r.message) == (Outcome.FAILED, HoldReason.WEBHOOK_FAILED, down)
    denied = 'admission webhook "evict.example.com" denied the request: frozen'
    assert classify_response(status(400, denied)).reason is HoldReason.ADMISSION_DENIED
    policy = "pods \"web-0\" is forbidden: ValidatingAdmissionPolicy 'no-evict' with binding 'b' denied request: no"
    assert classify_response(status(422, policy)).reason is HoldReason.ADMISSION_DENIED
    assert classify_response(status(500, "etcdserver: timeout")).reason is HoldReason.EVICTION_FAILED
    assert classify_response(Response(201, {"status": "Success"}, {})).reason is None
