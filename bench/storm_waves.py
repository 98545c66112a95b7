"""Where a storm's time above its lower bound goes (benchmark, not a test): the orchestrator, with the turn's
settings given, and the lower bound (bench/ideal_drain.py) drain fresh fleets of one shape on one bed, in turn,
round after round (the order reversed every other round). The observer (bench/storm.py) also watches the budgets,
so each phase is cut into:

- the start: when each budget's first pod was evicted, and for the orchestrator when its drains' first requests of
  each kind reached the apiserver (the audit log);
- the waves: from each rise of a budget's ``disruptionsAllowed`` to the next eviction of one of its pods. The lower
  bound evicts at the rise; the orchestrator's drains wait for their turn (drain/turns.py);
- refused evictions per pod.

The turn's settings are the slot's three constants: it spans ``LAG_SLOTS`` measured lags, at least the drain's
``budget_jitter_slot`` seconds, and holds ``SLOT_SHARE`` x (allowed - 1) turns. They are set in this process for the
orchestrator's phase only (the executions run here, as bench/bench_storm.py runs them), so a sweep needs no build.

    make bench-storm-waves     # = python -m bench.storm_waves --nodes 20 --pods-per-node 10 --rounds 2 --split-cores
    python -m bench.storm_waves --turns 2x0.2 --turns 1.5x0.1 --turns 2x0.2x1 --rounds 3

Results go to stdout as Markdown; docs/benchmarks.md records them with the command. Reuses a bed started with
`make cluster-up` when DRAIN_TESTBED_DIR is set.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from bench import audit_counts, bench_storm, cpu, harness, ideal_drain, storm
from bench.bench_nth import _at_least, _cleanup
from drain_orchestrator.drain import turns as turn_rules
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.workflow.job import DrainJob
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.kube import KubeScenario

REPO = Path(__file__).resolve().parents[1]
BOUND = "bound"
# the drains' first requests of these kinds, in the order a drain sends them, time its start
START_KINDS = (
    "get nodes",
    "patch nodes",
    "list+watch pods",  # the bed's apiserver streams lists: a LIST and its watch in one request
    "list+watch poddisruptionbudgets",
    "create pods/eviction 201",
)
# the storm's start: drains draw turns from the configured slot until they measured their lag on an eviction
EARLY_S = 5.0
REFUSED = "create pods/eviction 429"
# an eviction seen this long before a rise was delivered answers that rise (the watches deliver apart)
RISE_SLACK_S = 0.02


@dataclass(frozen=True)
class Turns:
    """The slot of a drain's turn at a budget: ``lag_slots`` times its measured lag, at least ``floor`` seconds;
    it holds ``share`` x (allowed - 1) drains' turns, at least half a turn (drain/turns.py turns_per_slot)."""

    lag_slots: float
    floor: float
    share: float = turn_rules.SLOT_SHARE

    @property
    def name(self) -> str:
        return f"{self.lag_slots:g} lags, floor {self.floor:g} s, {self.share:g} x (allowed - 1) a slot"


SHIPPED = Turns(turn_rules.LAG_SLOTS, DrainOptions.budget_jitter_slot)


def parse_turns(text: str) -> Turns:
    """``LAGSxFLOOR[xSHARE]``, e.g. ``2x0.2`` or ``2x0.2x0.75``: positive numbers (SHARE as shipped when left out)."""
    parts = text.split("x")
    try:
        out = Turns(*(float(p) for p in parts)) if len(parts) in (2, 3) else None
    except ValueError:
        out = None
    if out is None or min(out.lag_slots, out.floor, out.share) <= 0:
        raise argparse.ArgumentTypeError(
            f"--turns must be LAGSxFLOOR[xSHARE], each above 0 (e.g. 2x0.2 or 2x0.2x0.75), got {text!r}"
        )
    return out


@contextlib.contextmanager
def turns_set(turns: Turns) -> Iterator[None]:
    """Within: the executions of this process size their turns' slot by ``turns``; as shipped after."""
    lag_slots, share, options = turn_rules.LAG_SLOTS, turn_rules.SLOT_SHARE, DrainJob.drain_options

    def drain_options(job: DrainJob) -> Any:
        return replace(options(job), budget_jitter_slot=turns.floor)

    turn_rules.LAG_SLOTS, turn_rules.SLOT_SHARE = turns.lag_slots, turns.share
    DrainJob.drain_options = drain_options  # type: ignore[method-assign]
    try:
        yield
    finally:
        turn_rules.LAG_SLOTS, turn_rules.SLOT_SHARE = lag_slots, share
        DrainJob.drain_options = options  # type: ignore[method-assign]


# ---- the phase cut into start and waves (pure) -----------------------------------------------------------------


def budget_of(pod: str) -> str:
    """A Deployment's pod (``app3-<template hash>-<suffix>``) → its Deployment, whose PDB has its name."""
    return pod.rsplit("-", 2)[0]


def rise_delays(levels: Iterable[Sequence[Any]], evicted: dict[str, float]) -> list[float]:
    """``levels``: (seconds, budget, disruptionsAllowed) in the order seen; ``evicted``: pod → seconds. For each
    rise of a budget above the level before it, the time to that budget's next eviction (none after it: no delay)."""
    by_budget: dict[str, list[float]] = defaultdict(list)
    for pod, at in evicted.items():
        by_budget[budget_of(pod)].append(at)
    for times in by_budget.values():
        times.sort()
    last: dict[str, int] = {}
    out = []
    for at, budget, allowed in levels:
        before = last.get(budget)
        last[budget] = allowed
        if before is None or allowed <= before:
            continue
        after = [t for t in by_budget.get(budget, []) if t >= at - RISE_SLACK_S]
        if after:
            out.append(max(0.0, after[0] - at))
    return out


def refusals_by_level(
    levels: Iterable[Sequence[Any]], answers: Iterable[tuple[float, str, int]]
) -> dict[int, list[int]]:
    """``levels`` as in rise_delays; ``answers``: (seconds, pod, HTTP code) of each eviction by time. By the level
    the pod's budget showed last before the eviction was sent: [sent, refused (429)]. Which level the turns lose
    their races at (an eviction before any status seen counts at -1)."""
    shown: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for at, budget, allowed in levels:
        shown[budget].append((at, allowed))
    out: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for at, pod, code in answers:
        before = [allowed for t, allowed in shown.get(budget_of(pod), []) if t <= at]
        cell = out[before[-1] if before else -1]
        cell[0] += 1
        cell[1] += code == 429
    return dict(sorted(out.items()))


def first_evictions(evicted: dict[str, float]) -> list[float]:
    """Each budget's first eviction, seconds after the start."""
    first: dict[str, float] = {}
    for pod, at in evicted.items():
        b = budget_of(pod)
        first[b] = min(at, first.get(b, at))
    return sorted(first.values())


def start_marks(requests: Iterable[tuple[float, str]], t0: float, drains: int) -> dict[str, float]:
    """Per kind of START_KINDS: the median of its first ``drains`` requests' times after ``t0`` (each drain sends
    one early), so the typical drain's start; ``requests``: (epoch, kind) by time."""
    seen: dict[str, list[float]] = defaultdict(list)
    for at, kind in requests:
        if kind in START_KINDS and len(seen[kind]) < drains:
            seen[kind].append(at - t0)
    return {k: statistics.median(seen[k]) for k in START_KINDS if seen[k]}


def early_share(refused: Sequence[float]) -> float | None:
    """The share of the refusals (seconds into the storm) that came in its first EARLY_S; None without any."""
    return sum(1 for t in refused if t < EARLY_S) / len(refused) if refused else None


def summarize(
    phase: bench_storm.Phase,
    requests: Iterable[tuple[float, str]] = (),
    answers: Iterable[tuple[float, str, int]] = (),
) -> dict[str, Any]:
    """A phase's numbers for the table; ``requests``: the orchestrator's, from the audit log; ``answers``: its
    evictions from there, (epoch, pod, HTTP code)."""
    requests = list(requests)
    refused = [at - phase.t0 for at, kind in requests if kind == REFUSED]
    evicted = phase.waves.get("evicted_s", {})
    delays = rise_delays(phase.waves.get("levels", []), evicted)
    firsts = first_evictions(evicted)
    return {
        "storm_s": phase.all_done_s,
        "last_pod_gone_s": max(phase.drained_s, default=None),
        "last_hook_s": max(phase.hook_s, default=None),
        "last_eviction_s": max(evicted.values(), default=None),
        "refusals_per_pod": phase.eviction_429 / phase.pods if phase.pods else 0.0,
        "refusals_s": refused,  # from the audit log (none for the bound, which is not in it)
        "early_refusal_share": early_share(refused),
        "refusals_by_level": refusals_by_level(
            phase.waves.get("levels", []), [(at - phase.t0, pod, code) for at, pod, code in answers]
        ),
        "rises": len(delays),
        "rise_to_eviction_mean_s": statistics.mean(delays) if delays else None,
        "rise_to_eviction_max_s": max(delays, default=None),
        "first_eviction_median_s": statistics.median(firsts) if firsts else None,
        "start_s": start_marks(requests, phase.t0, phase.nodes),
        # each kind's first request: the one order every storm keeps (a drain that lists early may evict several
        # pods before the others' budget lists, so the medians of the first few need not be in order)
        "first_s": start_marks(requests, phase.t0, 1),
        "waves": phase.waves,  # the raw evictions and statuses, for a closer look (--json)
    }


# ---- the runs ----------------------------------------------------------------------------------------------------


def round_order(r: int, turns: Sequence[Turns]) -> list[str]:
    """Who goes when in round ``r`` (from 1): the settings as given and the bound last, reversed in even rounds."""
    order = [t.name for t in turns] + [BOUND]
    return order if r % 2 else order[::-1]


def run_round(
    bed: Testbed, aws: AwsSeed, r: int, turns: Sequence[Turns], shape: tuple[int, int, str], access_key: str
) -> dict[str, Any]:
    """Each contender's storm on a fleet and workload of its own, one after the other; its namespace removed after."""
    n_nodes, pods_per_node, max_unavailable = shape
    by_name = {t.name: t for t in turns}
    api = bed.admin_api_client()
    out: dict[str, Any] = {"round": r, "order": round_order(r, turns)}
    try:
        for i, who in enumerate(out["order"]):
            k8s = KubeScenario(api, prefix=f"w{r}x{i}")
            try:
                fleet = storm.seed_fleet(aws, k8s, f"ng-w{r}x{i}", n_nodes, {} if who == BOUND else bench_storm.OWNED)
                storm.seed_workload(k8s, fleet.nodes, pods_per_node, max_unavailable)
                storm.wait_for_quiet_bed(k8s)
                if who == BOUND:
                    out[who] = summarize(ideal_drain.run_phase(k8s, fleet.nodes, budgets=True))
                    continue
                fleet.start_actions(aws)
                with turns_set(by_name[who]):
                    phase = bench_storm.run_phase(aws, k8s, fleet, fleet.instance_ids, access_key, budgets=True)
                phase = bench_storm.with_requests(bed, phase)
                window = bench_storm.audit_window(phase)
                seen = audit_counts.timeline(bed.audit_log, audit_counts.ORCHESTRATOR, *window)
                answers = audit_counts.evictions(bed.audit_log, audit_counts.ORCHESTRATOR, *window)
                out[who] = {
                    **summarize(phase, seen, answers),
                    "requests_per_pod": phase.per_pod(),
                    "statuses": phase.statuses,
                }
            finally:
                _cleanup([k8s])
    finally:
        api.close()
    return out


def bench(
    bed: Testbed,
    n_nodes: int,
    pods_per_node: int,
    rounds: int,
    turns: Sequence[Turns] = (SHIPPED,),
    max_unavailable: str = "10%",
    setenv: Callable[[str, str], None] = os.environ.__setitem__,
    split_cores: bool = False,
) -> dict[str, Any]:
    """``rounds`` rounds of run_round after a warm-up; ``setenv`` sets the Lambda's environment (a test passes
    monkeypatch.setenv); ``split_cores``: the control plane on CPUs of its own (bench/cpu.py)."""
    from drain_orchestrator.workflow import runtime

    if len({t.name for t in turns}) != len(turns):
        raise ValueError(f"each turn setting once: {[t.name for t in turns]}")
    aws = AwsSeed(bed)
    aws.reset()
    aws.eks_cluster("blue")
    warm = KubeScenario(bed.admin_api_client(), prefix="warm")
    with contextlib.ExitStack() as pinned:
        cores = pinned.enter_context(cpu.cores_split((p.name, p.pid) for p in bed.state.procs)) if split_cores else None
        env, _ = aws.lambda_env("blue")
        env["SURGE_SWEEP_MINUTES"] = "15"  # as the construct deploys it
        for k, v in env.items():
            setenv(k, v)
        runtime.reset_config()
        try:
            bench_storm.warm_up(aws, warm)
            shape = (n_nodes, pods_per_node, max_unavailable)
            done = [run_round(bed, aws, r, turns, shape, env["AWS_ACCESS_KEY_ID"]) for r in range(1, rounds + 1)]
        finally:
            runtime.reset_config()
            warm.cleanup()
    return {
        "shape": [n_nodes, pods_per_node, max_unavailable],
        "cores": cores,
        "turns": [asdict(t) for t in turns],
        "rounds": done,
    }


def _cell(values: Sequence[float | None], fmt: str) -> str:
    return ", ".join("-" if v is None else format(v, fmt) for v in values)


def render(res: dict[str, Any]) -> str:
    """One row per contender, each cell the rounds' values in order."""
    n, ppn, mu = res["shape"]
    names = [Turns(**t).name for t in res["turns"]]
    rows = [
        f"{n} nodes x {ppn} pods, PDBs maxUnavailable {mu}, {len(res['rounds'])} rounds"
        + (f", control plane on CPUs {res['cores']['control_plane']}" if res.get("cores") else ""),
        "",
        f"| contender | storm s | ÷ bound | refusals / pod | refusals in the first {EARLY_S:g} s, share | "
        "rise → eviction, mean · max s | first eviction a budget, median s | end: last eviction / last pod gone / "
        "last hook, s | start: node read / cordon / pod list / PDB list / first eviction, s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for who in [*names, BOUND]:
        got = [rnd[who] for rnd in res["rounds"]]
        ratio = [
            g["storm_s"] / rnd[BOUND]["storm_s"] if g["storm_s"] and rnd[BOUND]["storm_s"] else None
            for g, rnd in zip(got, res["rounds"], strict=True)
        ]
        start = " · ".join(
            _cell([g["start_s"].get(k) for g in got], ".2f") for k in START_KINDS if any(k in g["start_s"] for g in got)
        )
        end = " · ".join(
            _cell([g[k] for g in got], ".2f") for k in ("last_eviction_s", "last_pod_gone_s", "last_hook_s")
        )
        rows.append(
            f"| {who} | {_cell([g['storm_s'] for g in got], '.2f')} | "
            f"{_cell(ratio, '.2f') if who != BOUND else '1'} | {_cell([g['refusals_per_pod'] for g in got], '.3f')} | "
            f"{_cell([g.get('early_refusal_share') for g in got], '.2f')} | "
            f"{_cell([g['rise_to_eviction_mean_s'] for g in got], '.2f')} · "
            f"{_cell([g['rise_to_eviction_max_s'] for g in got], '.2f')} | "
            f"{_cell([g['first_eviction_median_s'] for g in got], '.2f')} | {end} | {start or '-'} |"
        )
    return "\n".join([*rows, "", *_levels_table(res, names)])


def _levels_table(res: dict[str, Any], names: Sequence[str]) -> list[str]:
    """Evictions refused / sent by the level the budget showed before, the rounds summed (the keys are strings once
    read back from --json)."""
    summed: dict[str, dict[int, list[int]]] = {}
    for who in names:
        cells: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        for rnd in res["rounds"]:
            for level, (sent, refused) in rnd[who].get("refusals_by_level", {}).items():
                cells[int(level)][0] += sent
                cells[int(level)][1] += refused
        summed[who] = cells
    levels = sorted({lv for cells in summed.values() for lv in cells})
    if not levels:
        return []
    head = " | ".join("none seen" if lv < 0 else f"{lv} allowed" for lv in levels)
    rows = [
        "Evictions refused / sent, by what the pod's budget allowed as last seen before it was sent (rounds summed):",
        "",
        f"| contender | {head} |",
        "|---|" + "---|" * len(levels),
    ]
    for who, cells in summed.items():
        row = " | ".join(
            f"{cells[lv][1]} / {cells[lv][0]} ({cells[lv][1] / cells[lv][0]:.2f})" if cells[lv][0] else "-"
            for lv in levels
        )
        rows.append(f"| {who} | {row} |")
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description="a storm cut into start and waves, against its lower bound")
    p.add_argument("--nodes", type=_at_least(2, "--nodes"), default=20)
    p.add_argument("--pods-per-node", type=_at_least(1, "--pods-per-node"), default=10)
    p.add_argument("--rounds", type=_at_least(1, "--rounds"), default=2)
    p.add_argument(
        "--turns",
        type=parse_turns,
        action="append",
        help="the turn's slot as LAGSxFLOOR[xSHARE] (repeatable; default the shipped "
        f"{SHIPPED.lag_slots:g}x{SHIPPED.floor:g}x{SHIPPED.share:g})",
    )
    p.add_argument("--split-cores", action="store_true", help="the control plane on CPUs of its own (bench/cpu.py)")
    p.add_argument("--json", type=Path, help="also write the raw results here")
    a = p.parse_args()
    if a.split_cores and (why := cpu.cannot_split()):
        print(f"error: --split-cores: {why}", file=sys.stderr)
        return 2
    bed, owned = harness.attach_or_start(REPO / ".local" / "bench-waves-bed")
    try:
        with harness.stdout_into(REPO / ".local" / "bench-waves-handler.log"):  # the handler's lines, kept apart
            res = bench(bed, a.nodes, a.pods_per_node, a.rounds, a.turns or [SHIPPED], split_cores=a.split_cores)
    finally:
        if owned:
            bed.stop()
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(storm.dumps(res))
    print(render(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
