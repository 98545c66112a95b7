"""The lower bound of a storm (bench/bench_nth.py): a minimal drainer in the harness (of the product's code only
its grace floor), with the bed's admin client and knowledge of every budget. It cordons all its nodes at once,
then watches the namespace's PodDisruptionBudgets and, at every status it sees, evicts exactly as many of a
budget's remaining pods as that status's ``disruptionsAllowed`` allows, less its own evictions the status does not
count yet; pods under no budget are evicted at once. So no eviction should be refused, and each budget is used as
soon as the disruption controller frees it. Evictions are sent without holding up the watch (one budget's round
trips never delay another's rise), with the orchestrator's grace floor (a pod's own grace of 0 is sent as 1 s).
No lifecycle hooks, no AWS: its time is from its start to its nodes' last pod gone.

Each eviction updates the budget's status once (the apiserver decrements ``disruptionsAllowed`` and records the pod
in ``disruptedPods``), and a watch delivers every update in order, so an eviction is counted by a status from the
first one that lists its pod. Its requests are counted here, by the same kinds as bench/audit_counts.py (the audit
log records only the two tools' identities)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from bench import storm
from bench.bench_storm import Phase
from drain_orchestrator.drain.plan import MIN_GRACE_SECONDS
from testbed.kube import KubeScenario

UNBUDGETED = ""  # the book's key for pods no budget selects
WATCH_WINDOW_SECONDS = 5  # the longest the drainer watches the budgets without looking whether it is done


def budget_of(labels: Mapping[str, str], selectors: Mapping[str, Mapping[str, str]]) -> str:
    """The budget whose matchLabels select a pod with ``labels`` (UNBUDGETED if none). A pod under two budgets
    cannot be evicted at all (the apiserver refuses), so that is an error here."""
    hits = [name for name, sel in selectors.items() if all(labels.get(k) == v for k, v in sel.items())]
    if len(hits) > 1:
        raise ValueError(f"pod labels {dict(labels)} match more than one PodDisruptionBudget: {sorted(hits)}")
    return hits[0] if hits else UNBUDGETED


def choose(allowed: int, uncounted: int, waiting: Sequence[str]) -> list[str]:
    """The pods of one budget to evict now: as many as its status allows, less the evictions that status does not
    count yet."""
    return list(waiting[: max(0, allowed - uncounted)])


@dataclass
class Book:
    """Per budget: the pods still to evict, the evictions its last status did not count yet (in flight or answered
    201 and not yet listed in ``disruptedPods``), and those still in flight. Pure."""

    waiting: dict[str, list[str]]
    uncounted: dict[str, set[str]] = field(default_factory=dict)
    in_flight: set[str] = field(default_factory=set)
    # per budget: its last status (allowed, disrupted) and how many were seen; per pod in flight: that count when
    # it was sent (a refusal answered after a newer status is decided on that status: none may come again)
    last: dict[str, tuple[int, tuple[str, ...]]] = field(default_factory=dict)
    seen: Counter[str] = field(default_factory=Counter)
    sent_at: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, pods: Iterable[tuple[str, Mapping[str, str]]], selectors: Mapping[str, Mapping[str, str]]) -> Book:
        waiting: dict[str, list[str]] = {name: [] for name in selectors}
        for pod, labels in pods:
            waiting.setdefault(budget_of(labels, selectors), []).append(pod)
        return cls(waiting, {name: set() for name in waiting})

    def on_status(self, budget: str, allowed: int, disrupted: Iterable[str]) -> list[str]:
        """A status of ``budget`` was seen: the pods to evict now (taken off its waiting list, counted as in flight
        until answered, so a status that comes before their answers does not free them twice)."""
        self.last[budget] = (allowed, tuple(disrupted))
        self.seen[budget] += 1
        return self._take(budget)

    def _take(self, budget: str) -> list[str]:
        allowed, disrupted = self.last[budget]
        uncounted = self.uncounted.setdefault(budget, set())
        uncounted.difference_update(disrupted)
        waiting = self.waiting.get(budget, [])
        chosen = choose(allowed, len(uncounted), waiting)
        del waiting[: len(chosen)]
        uncounted.update(chosen)
        self.in_flight.update(chosen)
        self.sent_at.update(dict.fromkeys(chosen, self.seen[budget]))
        return chosen

    def unbudgeted(self) -> list[str]:
        chosen, self.waiting[UNBUDGETED] = self.waiting.get(UNBUDGETED, []), []
        self.in_flight.update(chosen)
        return chosen

    def on_result(self, budget: str, pod: str, code: int) -> list[str]:
        """An eviction's answer: 201 evicted (counted until a status lists it), 429 refused (the pod waits again,
        first), 404 already gone. The pods to evict now: after a refusal answered once a newer status of its budget
        was seen, what that status allows (it was decided while the pod was in flight and may be the last one)."""
        self.in_flight.discard(pod)
        sent_at = self.sent_at.pop(pod, 0)
        if code != 201:
            self.uncounted.setdefault(budget, set()).discard(pod)
        if code == 429:
            self.waiting.setdefault(budget, []).insert(0, pod)
            if self.seen[budget] > sent_at:
                return self._take(budget)
        return []

    def relisted(self) -> None:
        """A fresh list of the budgets counts every eviction answered before it was requested."""
        for s in self.uncounted.values():
            s.intersection_update(self.in_flight)

    def done(self) -> bool:
        return not self.in_flight and not any(self.waiting.values())


@dataclass
class Outcome:
    requests: dict[str, int]  # "verb resource[/subresource][ code]" -> count, as bench/audit_counts.py names them
    evicted: int
    errors: list[str]


class IdealDrainer:
    def __init__(self, api: Any, namespace: str, nodes: list[str], workers: int = 16) -> None:
        self.core, self.policy = client.CoreV1Api(api), client.PolicyV1Api(api)
        self.ns, self.nodes = namespace, nodes
        self.requests: Counter[str] = Counter()
        self.errors: list[str] = []
        self.evicted = 0
        self.grace: dict[str, int | None] = {}  # pod -> its terminationGracePeriodSeconds
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix="ideal")
        self.lock = threading.Lock()  # the book, between the watch and the evictions' answers

    def _evict(self, pod: str) -> int:
        # the grace the orchestrator sends (its floor of MIN_GRACE_SECONDS: with 0 the apiserver drops the pod object
        # at once, its containers maybe still running), so that both leave evicted pods on their nodes as long
        own = self.grace.get(pod)
        grace = None if own is None or own >= MIN_GRACE_SECONDS else MIN_GRACE_SECONDS
        body = client.V1Eviction(
            metadata=client.V1ObjectMeta(name=pod, namespace=self.ns),
            delete_options=None if grace is None else client.V1DeleteOptions(grace_period_seconds=grace),
        )
        try:
            self.core.create_namespaced_pod_eviction(pod, self.ns, body)
            code = 201
        except ApiException as exc:
            code = int(exc.status or 0)
            if code not in (404, 429):
                self.errors.append(f"evict {pod}: {exc.status} {exc.reason}")
        self.requests[f"create pods/eviction {code}"] += 1
        return code

    def _evict_all(self, book: Book, chosen: list[tuple[str, str]]) -> None:
        """Send the evictions without waiting for their answers: the watch goes on reading (another budget's rise
        is not held up by this one's round trips), and each answer is booked as it comes."""

        def one(budget: str, pod: str) -> None:
            code = self._evict(pod)
            with self.lock:
                again = book.on_result(budget, pod, code)
                self.evicted += code == 201
                self._evict_all(book, [(budget, p) for p in again])

        for budget, pod in chosen:
            self.pool.submit(one, budget, pod)

    def _cordon(self) -> None:
        def one(node: str) -> None:
            self.core.patch_node(node, {"spec": {"unschedulable": True}})
            self.requests["patch nodes"] += 1

        list(self.pool.map(one, self.nodes))

    def run(self, timeout: float = 900) -> Outcome:
        deadline = time.monotonic() + timeout
        try:
            self._cordon()
            pdbs = self.policy.list_namespaced_pod_disruption_budget(self.ns)
            self.requests["list poddisruptionbudgets"] += 1
            selectors = {p.metadata.name: dict(p.spec.selector.match_labels or {}) for p in pdbs.items}
            pods = self.core.list_namespaced_pod(self.ns)
            self.requests["list pods"] += 1
            listed = [p for p in pods.items if p.spec.node_name in self.nodes and p.metadata.deletion_timestamp is None]
            mine = [(p.metadata.name, p.metadata.labels or {}) for p in listed]
            self.grace = {p.metadata.name: p.spec.termination_grace_period_seconds for p in listed}
            book = Book.of(mine, selectors)
            with self.lock:
                self._evict_all(book, [(UNBUDGETED, p) for p in book.unbudgeted()])
            for items in self._statuses(book, pdbs, deadline):
                with self.lock:
                    self._evict_all(book, [(p.metadata.name, pod) for p in items for pod in self._on_status(book, p)])
                    if book.done():
                        break
        finally:
            self.pool.shutdown(wait=True)
        if not book.done():
            left = sum(map(len, book.waiting.values())) + len(book.in_flight)
            self.errors.append(f"pods not evicted in {timeout:.0f} s: {left}")
        return Outcome(dict(self.requests.most_common()), self.evicted, self.errors)

    @staticmethod
    def _on_status(book: Book, pdb: Any) -> list[str]:
        st = pdb.status
        if st is None or st.observed_generation != pdb.metadata.generation:
            return []  # the controller has not computed this spec's budget yet
        return book.on_status(pdb.metadata.name, int(st.disruptions_allowed or 0), (st.disrupted_pods or {}).keys())

    def _statuses(self, book: Book, listed: Any, deadline: float) -> Iterator[list[Any]]:
        """The listed budgets, then each status the watch delivers, as it comes (each may free pods); the watch
        resumes where it stopped and relists on 410 Gone. Every WATCH_WINDOW_SECONDS without a status it yields
        nothing, so the caller sees the book done by an eviction's answer that no status followed."""
        yield listed.items
        rv = listed.metadata.resource_version
        while time.monotonic() < deadline:
            w = watch.Watch()
            self.requests["watch poddisruptionbudgets"] += 1
            try:
                wait = max(1, min(WATCH_WINDOW_SECONDS, int(deadline - time.monotonic())))
                for ev in w.stream(
                    self.policy.list_namespaced_pod_disruption_budget,
                    self.ns,
                    resource_version=rv,
                    timeout_seconds=wait,
                ):
                    obj = ev["object"]
                    if ev["type"] == "ERROR":
                        raise ApiException(status=getattr(obj, "code", None) or 410, reason=str(obj)[:200])
                    rv = obj.metadata.resource_version
                    if ev["type"] != "DELETED":
                        yield [obj]
                yield []
            except ApiException as exc:
                if exc.status != 410:
                    raise
                relist = self.policy.list_namespaced_pod_disruption_budget(self.ns)
                self.requests["list poddisruptionbudgets"] += 1
                with self.lock:
                    book.relisted()
                rv = relist.metadata.resource_version
                yield relist.items
            finally:
                w.stop()


def run_phase(k8s: KubeScenario, nodes: list[str], timeout: float = 900, budgets: bool = False) -> Phase:
    """The lower bound timed by the tools' observer: from the drainer's start to its nodes' last pod gone.
    ``budgets``: the observer also records the budgets' statuses (Phase.waves)."""
    obs = storm.Observer(k8s, nodes, budgets=budgets)
    obs.start()
    t0 = time.time()
    obs.t0 = t0
    out = IdealDrainer(k8s.api_client, k8s.ns, nodes).run(timeout)
    # evicted pods go when their grace period ends
    while time.time() - t0 < timeout and len(obs.drained()) < len(nodes):
        time.sleep(0.2)
    obs.finish()
    drained = obs.drained()
    return Phase(
        nodes=len(nodes),
        pods=len(obs.pod_node),
        all_done_s=max(drained.values()) - t0 if len(drained) == len(nodes) else None,
        cordon_s=[obs.cordoned[n] - t0 for n in nodes if n in obs.cordoned],
        drained_s=[drained[n] - t0 for n in nodes if n in drained],
        hook_s=[],
        statuses={
            "DRAINED": len(drained),
            **({"NOT-DRAINED": len(nodes) - len(drained)} if len(drained) < len(nodes) else {}),
        },
        kube_requests=float(sum(out.requests.values())),
        apf_rejected=0.0,
        eviction_429=float(out.requests.get("create pods/eviction 429", 0)),
        all_429=float(out.requests.get("create pods/eviction 429", 0)),
        aws_calls={},
        relanded=len(obs.relanded),
        errors=out.errors,
        t0=t0,
        requests=out.requests,
        waves=obs.waves(t0),
    )
