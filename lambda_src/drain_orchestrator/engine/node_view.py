"""The node as one drain sees it: cordoned since when, seen cordoned by the control plane since when, still there, its
pods as the last LIST showed them (``NodeView``), and the pods on their way out that the drain waits for
(``Leaving``). Times are monotonic (engine/clock.py): the cordon's started-at and the pods' deletionTimestamps are
converted as they are read.

A pod may be bound to the node after its cordon: the scheduler places pods from its own cache of the nodes, which
sees the cordon a moment after it is written, and binds a pod it placed before that a moment later still. So the node
is called drained only from a LIST sent once the control plane has seen the cordon: the **witness** is the node
lifecycle controller's ``node.kubernetes.io/unschedulable`` taint on the node (kube/node_watch.py), written as soon
as its informer sees the cordon (the scheduler's informer reads the same watch), waited for at most
``witness_seconds`` after the cordon (a cluster without that controller, a slow one). Bindings already under way
when the scheduler saw it can land later still: the late look (``settle_seconds``) watches the node's pods until that
long after the cordon; the flow runs it right before the instance may go, after the gates (workflow/late_look.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from drain_orchestrator.drain.classify import PodVerdict, Verdict
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.engine.clock import Clock
from drain_orchestrator.kube.node_watch import UNSCHEDULABLE_TAINT, NodePresence
from drain_orchestrator.kube.pods import WATCH_SECONDS, NodePods, SeenIps, watch_node_pods, with_events
from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.kube.watch import Watch

# a pass right after a budget's turn evicts from the last LIST when it is younger than this (the evictions' UID
# preconditions make a stale pod harmless: gone answers 404, replaced 409); a node is only called drained from a
# LIST of its own
TURN_LISTING_SECONDS = 10.0


class NodeView:
    """Invariants: ``cordoned_at`` is set once the drain cordoned; ``listed_at`` is when ``listing`` was made (or
    what a watch made as good as a LIST then); ``seen`` only grows."""

    def __init__(self, kube: Kube, node: str, clock: Clock, seen_ips: SeenIps | None = None) -> None:
        self.kube, self.node, self.clock = kube, node, clock
        self.cordoned = False
        self.cordoned_at: float | None = None  # the first cordon's time (the witness and the late look count from it)
        self.witness_at: float | None = None  # the control plane was seen to have the cordon (or the wait for it ended)
        self.witnessed = False  # the witness was seen (not the end of the wait for it)
        self.looked_at: float | None = None  # the node was last read (the cordon, or a look: is it still there?)
        self.presence: NodePresence | None = None  # a GET, then a watch of the node while the drain waits
        self.listing: NodePods | None = None  # the last pass's LIST of the node's pods
        self.listed_at: float | None = None
        self.list_sent_at: float | None = None  # when the last LIST of its own was sent: what it shows is from then on
        self.known_until: float | None = None  # a pod bound before then is in the last LIST or its watch's events
        self.seen: set[str] = set()  # every pod listed so far ("ns/name"): pods bound after the cordon are named
        self.seen_ips = seen_ips  # the caller's record of the pod IPs each LIST found (None: not wanted)

    @property
    def pods_version(self) -> str | None:
        """The resourceVersion of the last LIST: the pods going are watched from there."""
        return None if self.listing is None else self.listing.resource_version

    def cordoned_now(self, started_at: float | None, *, whole_second: bool = False) -> None:
        """The cordon's write went through; ``started_at``: the epoch the node's first cordon recorded (None: now),
        ``whole_second`` when read from its annotation, which keeps whole seconds: the cordon came before the next
        one, and the witness's wait and the late look count from that latest time it could have been."""
        mono = self.clock.mono()
        self.cordoned = True
        at = None if started_at is None else started_at + (1.0 if whole_second else 0.0)
        self.cordoned_at = mono if at is None else min(mono, self.clock.mono_at(at))
        self.looked_at = mono

    def look(self, options: DrainOptions, *, waiting: bool = False) -> None:
        """At most every ``node_check_seconds`` a look: a Node deleted mid-drain (instance terminated) ends the drain
        within that time (NodeGone), and passes that follow each other sooner (pods going) do not each read the node.
        A look during a wait watches the node from then on, so the looks after it send nothing (kube/node_watch.py).
        """
        presence = self.presence = self.presence or NodePresence(self.kube, self.node, options.node_pin)
        mono = self.clock.mono()
        if not presence.watching and self.looked_at is not None and mono - self.looked_at < options.node_check_seconds:
            return
        self.looked_at = mono
        presence.check(waiting=waiting)  # a view of a moment ago (the cordon's answer) will do

    def listed(self, listing: NodePods, sent_at: float) -> None:
        self.listing, self.listed_at, self.list_sent_at = listing, self.clock.mono(), sent_at
        self.known_until = sent_at
        if self.seen_ips is not None:
            self.seen_ips.note(listing.items)

    def watched_empty(self, at: float, evicted_at: float | None) -> None:
        """The watch from the last LIST saw every pod that LIST left go, and none arrive, by ``at``: as good as a LIST
        made then (for the late look). ``evicted_at``: when the last pass sent the evictions of some of those pods.
        The watch delivers in order and saw them go, and each went after its eviction was sent, so what it shows is
        the node after then: as good as a LIST sent then, which counts when the witness was seen before it (the
        final LIST after the cordon's witness is not needed)."""
        self.listed_at = self.known_until = at
        if evicted_at is not None and (self.list_sent_at is None or evicted_at > self.list_sent_at):
            self.list_sent_at = evicted_at

    def caught_up(self, listing: NodePods) -> None:
        """The last LIST with what the pods' watch from it saw since (Leaving.catch_up): the node's pods now, for a
        pass right after a budget's turn. Not a LIST of its own: ``list_sent_at`` stays (a node is called drained only
        from a LIST, or a watch that saw the last pods go)."""
        self.listing, self.listed_at = listing, self.clock.mono()
        if self.seen_ips is not None:
            self.seen_ips.note(listing.items)

    def turn_listing(self) -> NodePods | None:
        """The last LIST, when younger than TURN_LISTING_SECONDS, for a pass right after a budget's turn."""
        if self.listing is None or self.listed_at is None:
            return None
        return self.listing if self.clock.mono() - self.listed_at <= TURN_LISTING_SECONDS else None

    def note_witness(self) -> None:
        """The witness, if the node as this drain sees it already carries it: the cordon's answer, or what the
        node's watch queued (opened at the first call, from the cordon's answer: no GET; later looks read it). A
        node whose cordon's answer carries it already (the late look, a held drain's later passes, a node cordoned
        long ago) opens no watch for it."""
        if self.witness_at is not None:
            return
        presence = self.presence = self.presence or NodePresence(self.kube, self.node)
        if presence.watchable and not presence.tainted(UNSCHEDULABLE_TAINT):
            presence.check(waiting=True)
        if presence.tainted(UNSCHEDULABLE_TAINT):
            self.witness_at, self.witnessed = self.clock.mono(), True

    def await_witness(self, options: DrainOptions, end: float) -> float:
        """When the control plane was seen to have the cordon: its witness, waited for on the node's watch until
        ``witness_seconds`` after the cordon (and ``end``); when none came by then, that time stands for it."""
        if self.witness_at is not None:
            return self.witness_at
        self.note_witness()
        if self.witness_at is None:
            presence = self.presence = self.presence or NodePresence(self.kube, self.node)
            cordoned = self.cordoned_at if self.cordoned_at is not None else self.clock.mono()
            until = min(end, cordoned + options.witness_seconds)
            self.witnessed = presence.await_taint(UNSCHEDULABLE_TAINT, max(0.0, until - self.clock.mono()))
            self.witness_at = self.clock.mono()
        return self.witness_at

    def listed_since_witness(self) -> bool:
        """The last LIST was sent once the control plane had the cordon: a pod bound before then is in it."""
        return self.witness_at is not None and self.list_sent_at is not None and self.list_sent_at >= self.witness_at

    def late_look_at(self, options: DrainOptions) -> float | None:
        """When the late look ends (``settle_seconds`` after the cordon), if that is still to come."""
        if self.cordoned_at is None or options.settle_seconds <= 0:
            return None
        at = self.cordoned_at + options.settle_seconds
        return at if at > self.clock.mono() else None

    def close(self) -> None:
        if self.presence is not None:
            self.presence.close()


@dataclass
class Leaving:
    """The pods on their way out as the last pass left them, and what the wait for them watched."""

    uids: set[str] = field(default_factory=set)  # pods terminating at the last pass
    deletion_times: list[float] = field(default_factory=list)  # when their grace runs out, still to come or not
    only_going: bool = False  # every pod the last pass left is on its way out: nothing to retry, hold or wait on
    # some namespace's later evict-order waits only for pods of its own on their way out (none of them held): its
    # next stage is due when they are gone, whatever budget another namespace's pods wait on
    next_stage_waits: bool = False
    watchable: bool = True  # False once a watch of pods was refused (a role without watch pods)
    # uids the last wait watched go with no pod arriving, and when: the node as a LIST then would show it
    watched_gone: set[str] = field(default_factory=set)
    watched_at: float | None = None
    evicted_at: float | None = None  # when the last pass sent its evictions that went through (None: none did)
    # the node's pods watched from the pass's LIST (at ``early_since``) since its first eviction went through (or, in
    # a storm, since its first wave was put to wait for its turns: engine/first_wave.py), for the wait for pods to go
    # to read on from (engine/evictions.py), kept open through waits on budgets for the passes at their turns
    # (catch_up)
    early: Watch | None = None
    early_since: str | None = None

    def after_pass(
        self, verdicts: list[PodVerdict], only_going: bool, clock: Clock, *, evicted_at: float | None = None
    ) -> None:
        leaving = [v.pod for v in verdicts if v.verdict is Verdict.WAIT and v.pod.deletion_timestamp is not None]
        self.deletion_times = [clock.mono_at(t) for p in leaving if (t := p.deletion_timestamp) is not None]
        self.uids = {p.uid for p in leaving if p.uid}
        self.only_going = only_going
        self.evicted_at = evicted_at

    def watch_early(self, kube: Kube, node: str, since: str | None) -> None:
        if since and self.watchable and self.early is None:
            self.early, self.early_since = watch_node_pods(kube, node, since, WATCH_SECONDS), since

    def adopt_early(self, watch: Watch, since: str | None) -> None:
        """A watch of the node's pods from the LIST at ``since`` that came with that LIST (a streaming list): the
        pods' watch from now on, in place of any from an earlier LIST."""
        if self.early is not None:
            self.early.close()
        self.early, self.early_since = watch, since

    def catch_up(self, view: NodeView) -> NodePods | None:
        """The node's pods now: the last LIST with every event the pods' watch from it queued since applied (the watch
        delivers every change in order, so this is what a LIST now would show), for the pass after a budget's turn,
        however long the wait was. None when no watch reads from that LIST, or it ended (its time ran out, it was cut,
        its version is gone: 410, the role may not watch pods): then a LIST says what is on the node."""
        early, listing = self.early, view.listing
        if early is None or listing is None or self.early_since != listing.resource_version:
            return None
        if early.status is None:  # not answered yet: what it will show is not known (a LIST of a moment ago may do)
            return None
        events: list[dict[str, Any]] = []
        while (event := early.next(0.0)) is not False:
            if not isinstance(event, dict) or event.get("type") == "ERROR":
                self.watchable = self.watchable and early.status != HTTPStatus.FORBIDDEN
                self.early = None
                early.close()
                return None
            events.append(event)
        caught_up = with_events(listing, events)
        self.early_since = caught_up.resource_version
        view.caught_up(caught_up)
        return caught_up

    def drop_early_unless(self, since: str | None) -> None:
        """A new LIST: the pods' watch from an earlier one is of no more use (a wait or a turn reads from the last)."""
        if self.early is not None and self.early_since != since:
            self.early.close()
            self.early = None

    def take_early(self, since: str | None) -> Watch | None:
        """The early watch, if it reads from ``since`` (the last LIST's version); the caller closes it."""
        early, self.early = self.early, None
        if early is not None and (since is None or self.early_since != since):
            early.close()
            return None
        return early

    def took(self) -> set[str]:
        """What the last wait watched go (once)."""
        gone, self.watched_gone = self.watched_gone, set()
        return gone
