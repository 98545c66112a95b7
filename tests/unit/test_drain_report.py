"""DrainReport round-trips through JSON (the workflow checkpoints it) and folds passes together."""

from __future__ import annotations

import json

from drain_orchestrator.drain.plan import Tier
from drain_orchestrator.drain.report import (
    CHECKPOINT_REPORT_BYTES,
    FORCED_REASON_CHARS,
    MESSAGE_CHARS,
    BlockedPod,
    DrainReport,
    ForcedPod,
    HeldPod,
    PodReason,
    forced_reasons,
    held_reasons,
)
from drain_orchestrator.workflow.checkpoint import StepSerDes
from drain_orchestrator.workflow.results import PassOutcome


def test_report_round_trips_through_json() -> None:
    r = DrainReport(
        node="n",
        evicted=["a/b"],
        blocked=[BlockedPod("a/c", ["pdb"], "needs 2")],
        skipped=[PodReason("a/d", "mirror pod")],
        forced=[ForcedPod("a/e", 3, "deadline")],
        grace_sent={"a/b": 5},
        held=[HeldPod("a/c", "multiple-pdbs", "more than one", ["p1", "p2"], 500)],
        active_tier=Tier.DAEMONSET,
    )
    again = DrainReport.from_dict(json.loads(json.dumps(r.to_dict())))
    assert again == r


def test_the_active_tier_is_stored_as_a_plain_number_and_an_old_checkpoint_loads_as_a_tier() -> None:
    d = DrainReport(node="n", active_tier=Tier.CRITICAL).to_dict()
    assert type(d["active_tier"]) is int and '"active_tier":1' in json.dumps(d, separators=(",", ":"))
    old = {"node": "n", "active_tier": 2}  # checkpointed before the tier had a type
    assert DrainReport.from_dict(old).active_tier is Tier.DAEMONSET
    assert DrainReport.from_dict({"node": "n", "active_tier": None}).active_tier is None


def test_absorb_accumulates_actions_and_takes_latest_state() -> None:
    first = DrainReport(node="n", evicted=["a/x"], blocked=[BlockedPod("a/y", ["p"], "m")], api_calls=5)
    second = DrainReport(node="n", evicted=["a/y"], drained=True, api_calls=3)
    first.absorb(second)
    assert first.evicted == ["a/x", "a/y"]
    assert first.blocked == [] and first.drained
    assert (first.api_calls, first.passes) == (8, 2)


def test_a_checkpoint_from_before_holds_were_kept_still_loads() -> None:
    old = DrainReport(node="n", blocked=[BlockedPod("a/c", ["pdb"], "needs 2")]).to_dict()
    del old["held"]  # a drain in flight across an upgrade
    assert DrainReport.from_dict(old).held == []


def test_held_reasons_are_bounded_for_the_checkpointed_summary() -> None:
    r = DrainReport(node="n", held=[HeldPod(f"a/p{i}", "pdb", "x" * 5000, ["web"], 429) for i in range(50)])
    out = held_reasons(r)
    assert len(out) == 10 and all(len(h["message"]) == 200 for h in out)
    assert out[0] == {"pod": "a/p0", "reason": "pdb", "message": "x" * 200, "pdbs": ["web"], "status": 429}


def test_forced_pods_keep_what_held_them_clipped_and_the_first_ten_only() -> None:
    report = DrainReport(node="n")
    report.forced = [
        ForcedPod(f"shop/p{i}", 3, f"web-a, web-b still refused eviction: {'x' * 1000}") for i in range(12)
    ]
    found = forced_reasons(report)
    assert len(found) == 10 and found[0]["pod"] == "shop/p0" and found[0]["grace_seconds"] == 3
    assert found[0]["reason"].startswith("web-a, web-b still refused eviction: ")
    assert len(found[0]["reason"]) == FORCED_REASON_CHARS


def _denied(n: int, message: str, gone: str = "gone") -> DrainReport:
    pods = [f"ns/p{i:03d}" for i in range(n)]
    return DrainReport(
        node="n",
        evicted=[f"ns/{gone}{i}" for i in range(n)],
        failed=[PodReason(p, f"HTTP 403: {message}") for p in pods],
        held=[HeldPod(p, "admission-denied", message, [], 403) for p in pods],
        remaining=list(pods),
        warnings=["Warning: deleting Pods that declare no controller: " + ", ".join(pods)],
    )


def test_a_report_of_many_pods_is_summarized_for_its_checkpoint_and_counts_what_it_left_out() -> None:
    small = _denied(3, "denied")
    assert small.for_checkpoint() == small.to_dict()  # under the size: as it is
    big = _denied(500, "x" * 500)
    data = big.for_checkpoint()
    assert len(json.dumps(data, separators=(",", ":"))) <= CHECKPOINT_REPORT_BYTES
    kept = DrainReport.from_dict(data)
    assert kept.count("held") == kept.count("failed") == kept.count("remaining") == kept.count("evicted") == 500
    assert kept.held[0] == HeldPod("ns/p000", "admission-denied", "x" * MESSAGE_CHARS, [], 403)
    # passes fold together: what is added up adds up, what is the state now comes from the later pass
    total = DrainReport.from_dict(data)
    total.absorb(DrainReport.from_dict(_denied(500, "y", gone="later").for_checkpoint()))
    assert total.count("evicted") == 1000 and total.count("remaining") == 500


def test_a_checkpointed_pass_outcome_carries_the_summary() -> None:
    out = PassOutcome(now=1.0, report=_denied(500, "z" * 2000))
    data = StepSerDes(PassOutcome).serialize(out, None)  # type: ignore[arg-type]
    assert len(data) < 40 * 1024
    assert StepSerDes(PassOutcome).deserialize(data, None).report.count("held") == 500  # type: ignore[arg-type, union-attr]


def test_a_drained_pass_s_list_time_is_the_latest_pass_s_and_an_old_checkpoint_has_none() -> None:
    """The late look goes by the drained verdict's LIST: a pass that did not drain says none (it is not drained)."""
    first = DrainReport(node="n", drained=False, listed_at=None)
    first.absorb(DrainReport(node="n", drained=True, listed_at=1_010.0))
    assert first.listed_at == 1_010.0
    written = DrainReport(node="n", drained=True, listed_at=1_010.0).to_dict()
    written.pop("listed_at")
    assert DrainReport.from_dict(written).listed_at is None
