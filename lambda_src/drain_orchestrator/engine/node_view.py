"""The node as one drain sees it: cordoned since when, still there, its pods as the last LIST showed them
(``NodeView``), and the pods on their way out that the drain waits for (``Leaving``). Times are monotonic
(engine/clock.py): the cordon's started-at and the pods' deletionTimestamps are converted as they are read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from drain_orchestrator.drain.classify import PodVerdict, Verdict
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.engine.clock import Clock
from drain_orchestrator.kube.node_watch import NodePresence
from drain_orchestrator.kube.pods import NodePods, SeenIps
from drain_orchestrator.kube.rest import Kube

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
        self.cordoned_at: float | None = None  # a drained pass only counts once it listed settle_seconds after it
        self.looked_at: float | None = None  # the node was last read (the cordon, or a look: is it still there?)
        self.presence: NodePresence | None = None  # a GET, then a watch of the node while the drain waits
        self.listing: NodePods | None = None  # the last pass's LIST of the node's pods
        self.listed_at: float | None = None
        self.seen: set[str] = set()  # every pod listed so far ("ns/name"): pods bound after the cordon are named
        self.seen_ips = seen_ips  # the caller's record of the pod IPs each LIST found (None: not wanted)

    @property
    def pods_version(self) -> str | None:
        """The resourceVersion of the last LIST: the pods going are watched from there."""
        return None if self.listing is None else self.listing.resource_version

    def cordoned_now(self, started_at: float | None) -> None:
        """The cordon's write went through; ``started_at``: the epoch the node's first cordon recorded (None: now)."""
        mono = self.clock.mono()
        self.cordoned = True
        self.cordoned_at = mono if started_at is None else self.clock.mono_at(started_at)
        self.looked_at = mono

    def look(self, options: DrainOptions, *, waiting: bool = False) -> None:
        """At most every ``node_check_seconds`` a look: a Node deleted mid-drain (instance terminated) ends the drain
        within that time (NodeGone), and passes that follow each other sooner (pods going) do not each read the node.
        A look during a wait watches the node from then on, so the looks after it send nothing (kube/node_watch.py).
        """
        presence = self.presence = self.presence or NodePresence(self.kube, self.node)
        mono = self.clock.mono()
        if not presence.watching and self.looked_at is not None and mono - self.looked_at < options.node_check_seconds:
            return
        self.looked_at = mono
        presence.check(waiting=waiting)  # a view of a moment ago (the cordon's answer) will do

    def listed(self, listing: NodePods) -> None:
        self.listing, self.listed_at = listing, self.clock.mono()
        if self.seen_ips is not None:
            self.seen_ips.note(listing.items)

    def turn_listing(self) -> NodePods | None:
        """The last LIST, when younger than TURN_LISTING_SECONDS, for a pass right after a budget's turn."""
        if self.listing is None or self.listed_at is None:
            return None
        return self.listing if self.clock.mono() - self.listed_at <= TURN_LISTING_SECONDS else None

    def late_look_wait(self, options: DrainOptions) -> float:
        """Seconds until a LIST would be ``settle_seconds`` after the cordon (the late look: pods the scheduler bound
        before it saw the cordon); 0 when the last one already was."""
        if self.cordoned_at is None or self.listed_at is None:
            return 0.0
        return max(0.0, self.cordoned_at + options.settle_seconds - self.listed_at)

    def late_look_at(self, options: DrainOptions) -> float | None:
        """When a LIST would be the late look, if that is still to come."""
        if self.cordoned_at is None:
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

    def after_pass(self, verdicts: list[PodVerdict], only_going: bool, clock: Clock) -> None:
        leaving = [v.pod for v in verdicts if v.verdict is Verdict.WAIT and v.pod.deletion_timestamp is not None]
        self.deletion_times = [clock.mono_at(t) for p in leaving if (t := p.deletion_timestamp) is not None]
        self.uids = {p.uid for p in leaving if p.uid}
        self.only_going = only_going

    def took(self) -> set[str]:
        """What the last wait watched go (once)."""
        gone, self.watched_gone = self.watched_gone, set()
        return gone
