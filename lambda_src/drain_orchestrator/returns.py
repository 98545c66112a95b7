"""Return to service: when a node this product cordoned for an interruption that did not happen is made schedulable
again, and who may do it. Pure; kube/return_marks.py writes what these rules decide, workflow/return_flow.py waits.

The truth is on the node. A cordon that set ``spec.unschedulable`` for an event whose instance may stay records it in
the annotation ``drain-orchestrator.io/return`` (the execution, its event, the node's boot id then) in the cordon's
own write. Only the execution the mark names may undo that cordon, and only while the mark is there:

- a node already unschedulable without our mark (an operator's cordon, or one of ours for an instance that goes
  away) never gets one: it is never returned;
- every later cordon of the node by another event replaces the mark: with its own mark when its instance may stay
  too (the newest event decides when the node comes back), or removes it when the instance goes away (a Spot
  termination, a lifecycle hook, a retirement): nothing returns the node any more;
- an execution holding the node's drain claim (drain_claim.py) while it drains blocks any return.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from drain_orchestrator.drain_claim import NodeClaim
from drain_orchestrator.interruption import Interruption

ANN_RETURN = "drain-orchestrator.io/return"

# How the instance of an event may stay, and so what brings its node back:
# - "rebalance": no interruption, termination or state change follows within REBALANCE_RETURN_SECONDS;
# - "reboot": a reboot scheduled change: its window passed and the node is Ready with a new boot;
# - "maintenance": system maintenance without reboot: its window passed and the node is Ready;
# - "restart": a Spot stop/hibernate or a stopping/stopped instance: EC2 runs it again and its node is Ready with
#   a new boot;
# - "closed": any other scheduled change: only if a newer update closes it.
ReturnCase = Literal["rebalance", "reboot", "maintenance", "restart", "closed"]

# Health event type codes whose instance comes back (docs/drain.md "When the instance stays").
REBOOT_CODES = frozenset(
    {
        "AWS_EC2_INSTANCE_REBOOT_MAINTENANCE_SCHEDULED",
        "AWS_EC2_SYSTEM_REBOOT_MAINTENANCE_SCHEDULED",
    }
)
MAINTENANCE_CODES = frozenset({"AWS_EC2_SYSTEM_MAINTENANCE_EVENT"})
RESTART_ACTIONS = ("stop", "hibernate")
RESTART_STATES = ("stopping", "stopped")

# A watch for a node to come back polls from RECHECK_MIN_SECONDS, doubling to RETURN_POLL_MAX_SECONDS, and gives up
# RETURN_WATCH_SECONDS after it began (the node stays cordoned, said in the result): at most about 110 polls, each a
# step and a wait, far under an execution's 3,000 operations (pacing.MAX_DURABLE_OPERATIONS).
RETURN_POLL_MAX_SECONDS = 900
RETURN_WATCH_SECONDS = 24 * 3600


def return_case(event: Interruption) -> ReturnCase | None:
    """How the event's instance may stay; None: it goes away (its cordon is never undone automatically)."""
    if event.kind == "rebalance":
        return "rebalance"
    if event.kind == "scheduled-change":
        if event.event_type_code in REBOOT_CODES:
            return "reboot"
        if event.event_type_code in MAINTENANCE_CODES:
            return "maintenance"
        return "closed"
    if event.kind == "spot-interruption" and event.instance_action in RESTART_ACTIONS:
        return "restart"
    if event.kind == "state-change" and event.state in RESTART_STATES:
        return "restart"
    return None


def event_key(event: Interruption) -> str:
    """What identifies the event across its updates: a scheduled change's eventArn, else the event's id."""
    return event.change_arn or event.event_id


@dataclass(frozen=True)
class ReturnMark:
    """Who may return the node: the execution (run id), its event (``event_key``) and kind, the node's boot id, the
    time of the cordon and what brings the node back (its ``ReturnCase``, for ``status``)."""

    run: str
    event: str
    kind: str
    at: float
    boot: str = ""
    case: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, raw: str | None) -> ReturnMark | None:
        """The stored mark; None when absent or unreadable (a hand-edited mark returns nothing)."""
        if not raw:
            return None
        try:
            data: dict[str, Any] = json.loads(raw)
            return cls(
                run=str(data["run"]),
                event=str(data["event"]),
                kind=str(data["kind"]),
                at=float(data["at"]),
                boot=str(data.get("boot") or ""),
                case=str(data.get("case") or ""),
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            return None


def cordon_mark(node: Mapping[str, Any], mine: ReturnMark | None) -> dict[str, str | None]:
    """The return mark's change in a cordon's write, from the node as read: ``mine`` when the event's instance may
    stay (None when it goes away). Ours to set when this write makes the node unschedulable, or when the node's
    cordon already carries a mark (the newest event decides); removed by an event whose instance goes away."""
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    current = annotations.get(ANN_RETURN)
    schedulable = not (node.get("spec") or {}).get("unschedulable")
    if mine is None:
        return {ANN_RETURN: None} if current is not None else {}
    if not schedulable and current is None:
        return {}  # cordoned before this event by someone else (an operator), or for an instance that goes away
    stored = ReturnMark.from_json(current)
    if stored is not None and stored.run == mine.run:
        return {}  # this execution's own mark (a replayed cordon)
    boot = str(((node.get("status") or {}).get("nodeInfo") or {}).get("bootID") or "")
    return {ANN_RETURN: replace(mine, boot=boot).to_json()}


Refusal = Literal["not-ours", "superseded", "claimed", "cordoned-by-another"]


def cordoned_by_another(node: Mapping[str, Any], manager: str) -> bool:
    """Whether a writer other than ``manager`` (this product's field manager) holds the node's ``spec.unschedulable``
    in its managedFields. An update that changes a field takes it from every other manager, so after this product's
    cordon only it holds the field; another tool that uncordoned the node (``kubectl uncordon``) and cordoned it
    again (``kubectl cordon``), or applied it, holds it now: that cordon is not ours to undo, whatever the mark
    says. A cordon of a node already unschedulable changes nothing and is not recorded: it cannot be told apart."""
    for entry in (node.get("metadata") or {}).get("managedFields") or []:
        if entry.get("manager") == manager or entry.get("subresource"):
            continue
        spec = (entry.get("fieldsV1") or {}).get("f:spec") or {}
        if "f:unschedulable" in spec:
            return True
    return False


def may_return(
    annotations: Mapping[str, str], claim: NodeClaim | None, run: str | None, event: str | None = None
) -> Refusal | None:
    """Whether the execution ``run`` (or, for a closed update, any execution of the change ``event``) may return the
    node now, given its annotations and its drain claim; None: it may, else why not."""
    mark = ReturnMark.from_json(annotations.get(ANN_RETURN))
    if mark is None:
        return "not-ours"
    if mark.run != run and (event is None or mark.event != event):
        return "superseded"
    if claim is not None and claim.verdict is None and claim.holder != mark.run:
        return "claimed"  # another execution drains the node: it goes away
    return None


@dataclass(frozen=True)
class NodeState:
    """What a return looks at on the node (kube/return_marks.py reads it)."""

    ready: bool
    boot: str
    ready_since: float | None  # the Ready condition's lastTransitionTime (epoch)
    mark: ReturnMark | None
    others_cordon: bool = False  # cordoned_by_another: another tool set spec.unschedulable after our cordon

    def new_boot(self, since: float) -> bool:
        """The node booted since its cordon: another boot id, or Ready only since ``since``."""
        mark = self.mark
        if mark is not None and self.boot and self.boot != mark.boot:
            return True
        return self.ready_since is not None and self.ready_since > since


def came_back(case: ReturnCase, node: NodeState, ec2_state: str | None, since: float) -> bool:
    """Whether the instance is back, for a watch that waits for it (``since``: when it was expected to go down)."""
    if not node.ready:
        return False
    if case == "restart":
        return ec2_state == "running" and node.new_boot(since)
    if case == "reboot":
        return node.new_boot(since)
    return True


def first_look(event: Interruption, case: ReturnCase, return_after: int, now: float) -> float:
    """When the watch first looks (epoch): a rebalance's time plus REBALANCE_RETURN_SECONDS, a scheduled change's
    window end (its start when it names none), at once otherwise."""
    if case == "rebalance":
        return event.event_time + return_after
    if case in ("reboot", "maintenance", "closed"):
        end = event.window_end if event.window_end is not None else event.window_start
        return max(now, end) if end is not None and case != "closed" else now
    return now


WHEN_BACK: dict[str, str] = {
    "rebalance": "unless an interruption, termination or state change follows",
    "reboot": "after its window, once Ready with a new boot",
    "maintenance": "after its window, once Ready",
    "restart": "once EC2 runs the instance again and its node is Ready with a new boot",
    "closed": "only if the scheduled change is closed",
}


def pending_return(mark: ReturnMark, window_end: float | None, return_after: int) -> tuple[float | None, str]:
    """For ``status``: when a node carrying ``mark`` is looked at again (epoch; None: when something happens) and
    on what terms. A rebalance's watch looks ``return_after`` seconds after its event, which came before the cordon
    (``mark.at``): by then at the latest. A reboot or maintenance change's at its window's end (``window_end``, from
    the change's newest record on the node)."""
    case = mark.case
    terms = WHEN_BACK.get(case, "")
    if case == "rebalance":
        return mark.at + return_after, terms
    if case in ("reboot", "maintenance") and window_end is not None:
        return window_end, terms
    return None, terms


def next_poll(n: int, first: int) -> int:
    """The wait before the watch's poll n+1: ``first`` seconds doubling to RETURN_POLL_MAX_SECONDS."""
    return int(min(RETURN_POLL_MAX_SECONDS, first * 2 ** min(n, 20)))


def max_polls(first: int) -> int:
    """The most polls a watch can take before it gives up (RETURN_WATCH_SECONDS)."""
    total, n = 0, 0
    while total < RETURN_WATCH_SECONDS:
        total += next_poll(n, first)
        n += 1
    return n + 1


Verdict = Literal["due", "wait", "stop"]
GONE_STATES = ("shutting-down", "terminated")


def look(
    case: ReturnCase, node: NodeState | None, run: str, ec2_state: str | None, change: str | None, since: float
) -> tuple[Verdict, str]:
    """One look of a watch: return the node now (due), look again later (wait) or never (stop), and why. ``change``:
    a scheduled change's standing on the node (scheduled_change.standing), None for other kinds."""
    if node is None:
        return "stop", "node-gone"
    if node.mark is None:
        return "stop", "not-ours"  # uncordoned by hand, or a later event whose instance goes away removed the mark
    if node.mark.run != run:
        return "stop", "superseded"  # a later event's execution returns it (or not) on its own terms
    if node.others_cordon:
        return "stop", "cordoned-by-another"  # uncordoned, or cordoned again, by another tool since our cordon
    if ec2_state in GONE_STATES:
        return "stop", f"instance-{ec2_state}"
    if change in ("closed", "superseded"):  # cancelled, done, or rescheduled: the newer update's execution drains it
        return ("due", f"change-{change}") if node.ready else ("wait", "not-ready")
    if case == "rebalance":
        if ec2_state not in (None, "running"):
            return "stop", f"instance-{ec2_state}"
        return "due", "no-interruption-followed"
    if case == "closed":
        return "stop", "change-goes-on"
    if came_back(case, node, ec2_state, since):
        return "due", "instance-back"
    return "wait", "not-back"
