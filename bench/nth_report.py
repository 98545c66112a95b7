"""The side-by-side benchmark's tables (bench/bench_nth.py): per metric the median and range over the rounds for the
orchestrator, NTH and the lower bound (bench/ideal_drain.py), the ratios of the tools' medians, each tool's storm
time over the lower bound's, then per round its order and times, and the stray events. Pure: reads the results'
dicts only."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from bench import cpu, nth_stray
from bench.bench_storm import Phase

CONTENDERS = ("orchestrator", "nth", "ideal")
TITLES = {"orchestrator": "orchestrator", "nth": "aws-node-termination-handler", "ideal": "lower bound"}
REFUSED = "create pods/eviction 429"


def median_range(values: Sequence[float]) -> tuple[float, float, float] | None:
    """(median, min, max) of ``values``; None when there are none."""
    if not values:
        return None
    return statistics.median(values), min(values), max(values)


def cell(values: Sequence[float | None], fmt: str = "{:.2f}", unit: str = "") -> str:
    """``median (min-max)`` of the rounds that have a value, saying how many did not."""
    have = [v for v in values if v is not None]
    mr = median_range(have)
    if mr is None:
        return "n/a"
    med, lo, hi = (fmt.format(x) for x in mr)
    out = f"{med}{unit}" if len(have) == 1 else f"{med}{unit} ({lo}-{hi})"
    missing = len(values) - len(have)
    return out + (f", {missing} of {len(values)} rounds not all done" if missing else "")


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None:
        return "n/a"
    if b == 0:
        return "both 0" if a == 0 else "∞ (divisor 0)"
    return f"{a / b:.2f}"


def requests_per_pod(p: Phase) -> float:
    return sum(p.requests.values()) / max(1, p.pods)


def refusals_per_pod(p: Phase) -> float:
    return p.requests.get(REFUSED, 0) / max(1, p.pods)


def p50(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


# (row title, the metric of one contender's phase, format, unit); None: not measured for that contender
METRICS: tuple[tuple[str, Callable[[Phase], float | None], str, str], ...] = (
    ("all drained + hooks completed (lower bound: all drained)", lambda p: p.all_done_s, "{:.1f}", " s"),
    ("event → cordon, p50", lambda p: p50(p.cordon_s), "{:.1f}", " s"),
    ("event → drained, p50", lambda p: p50(p.drained_s), "{:.1f}", " s"),
    ("event → hook completed, p50", lambda p: p50(p.hook_s), "{:.1f}", " s"),
    ("API requests per pod (audit log by verb and resource)", requests_per_pod, "{:.2f}", ""),
    ("eviction 429s (PDB refusals) per pod", refusals_per_pod, "{:.2f}", ""),
    ("replacement pods scheduled onto a node still to drain", lambda p: float(p.relanded), "{:.0f}", ""),
    ("AWS calls per node (the tool's access key)", lambda p: sum(p.aws_calls.values()) / max(1, p.nodes), "{:.1f}", ""),
    (
        "control-plane CPU during the storm (apiserver, etcd, controllers, kwok)",
        lambda p: cpu.control_plane(p.cpu),
        "{:.1f}",
        " s",
    ),
    (
        "own CPU during the storm (harness process with the observer; NTH: + its process)",
        lambda p: cpu.own(p.cpu),
        "{:.1f}",
        " s",
    ),
)
# the METRICS rows whose medians are compared, orchestrator ÷ NTH, with their names in the ratio table
RATIOS = (
    (0, "all drained + hooks completed"),
    (4, "API requests per pod"),
    (5, "PDB refusals (eviction 429s) per pod"),
)


def phases(res: dict[str, Any], who: str) -> list[Phase]:
    return [Phase(**r[who]) for r in res["rounds"]]


def medians(res: dict[str, Any], who: str, metric: Callable[[Phase], float | None]) -> float | None:
    mr = median_range([v for p in phases(res, who) if (v := metric(p)) is not None])
    return mr[0] if mr else None


def over_bound(res: dict[str, Any], who: str) -> list[float | None]:
    """Per round: the tool's storm time ÷ the lower bound's in the same round."""
    out: list[float | None] = []
    for r in res["rounds"]:
        t, b = r[who]["all_done_s"], r["ideal"]["all_done_s"]
        out.append(t / b if t is not None and b else None)
    return out


def summary_table(res: dict[str, Any]) -> list[str]:
    k = len(res["rounds"])
    out = [
        f"| median (min-max) over {k} round{'s' if k > 1 else ''} | "
        + " | ".join(TITLES[c] for c in CONTENDERS)
        + " |",
        "|---|---|---|---|",
    ]
    first = phases(res, "orchestrator")[0]
    out.append(f"| nodes / pods per contender and round | {first.nodes} / {first.pods} | | |")
    for i, (title, metric, fmt, unit) in enumerate(METRICS):
        cells = []
        for c in CONTENDERS:
            if c == "ideal" and i in (3, 7):  # no hooks, no AWS
                cells.append("—")
            else:
                cells.append(cell([metric(p) for p in phases(res, c)], fmt, unit))
        out.append(f"| {title} | " + " | ".join(cells) + " |")
    return out


def ratio_table(res: dict[str, Any]) -> list[str]:
    out = ["| ratio | value |", "|---|---|"]
    for i, name in RATIOS:
        metric = METRICS[i][1]
        o, n = medians(res, "orchestrator", metric), medians(res, "nth", metric)
        out.append(f"| {name}: orchestrator ÷ NTH (medians) | {ratio(o, n)} |")
    for c in ("orchestrator", "nth"):
        out.append(f"| storm time ÷ lower bound, {TITLES[c]} (per round) | {cell(over_bound(res, c))} |")
    return out


def round_lines(res: dict[str, Any]) -> list[str]:
    out = []
    for r in res["rounds"]:
        times = ", ".join(
            f"{TITLES[c]} {r[c]['all_done_s']:.1f} s" if r[c]["all_done_s"] is not None else f"{TITLES[c]} not all done"
            for c in r["order"]
        )
        waits = r.get("nth_client_throttled_s", [])
        out.append(
            f"- round {r['round']} (in this order): {times}; setup {r['setup_s']:.0f} s; NTH logged "
            f"{r.get('nth_evictions_logged', 0)} evictions, client-go's rate limiter {len(waits)} waits"
            + (f" (longest {max(waits):.1f} s)" if waits else "")
        )
        for c in CONTENDERS:
            if errors := r[c].get("errors"):
                more = f" ({len(errors)} in all)" if len(errors) > 3 else ""
                out.append(f"  - {TITLES[c]} errors: {errors[:3]}{more}")
    return out


def stray_lines(res: dict[str, Any]) -> list[str]:
    if not res["stray"]:
        return []
    out = [
        "",
        "| event for | tool | outcome | hook afterwards | its log lines naming the instance |",
        "|---|---|---|---|---|",
    ]
    for s in res["stray"]:
        log = "<br>".join(s["log"]) or "none"
        out.append(f"| {s['case']} | {s['tool']} | {s['outcome']} | {s['hook']} | {log} |")
    for w in res["nth_windows"]:
        out.append(
            f"\nNTH {' '.join(w['flags']) or '(defaults)'}, {nth_stray.WINDOW_S:.0f} s: "
            f"{'still running' if w['alive'] else 'exited ' + str(w['exit_code'])}; ReceiveMessage {w['receives']}, "
            f"DeleteMessage {w['deletes']}, CompleteLifecycleAction {w['completes']}; left on the queue: "
            f"{w['queue_left']}"
        )
    return out


def render(res: dict[str, Any]) -> str:
    out = [*summary_table(res), "", *ratio_table(res), ""]
    out.append(
        f"NTH's extra flags: {res.get('nth_flags') or 'none'}; PDB maxUnavailable {res['max_unavailable']}; pods' "
        f"terminationGracePeriodSeconds {res.get('grace', 0)}; NTH start-up {res['nth_start_s']:.2f} s; orchestrator "
        f"warm-up execution {res['warm_up_s']:.2f} s."
    )
    out.append(cores_line(res.get("cores")))
    out += round_lines(res)
    last = res["rounds"][-1]
    out.append(f"AWS calls in round {last['round']}, orchestrator: {last['orchestrator']['aws_calls']}")
    out.append(f"AWS calls in round {last['round']}, NTH: {last['nth']['aws_calls']}")
    out += stray_lines(res)
    return "\n".join(out)


def cores_line(cores: dict[str, list[int]] | None) -> str:
    """Which CPUs ran what: all shared, or the control plane apart (bench_nth --split-cores)."""
    if not cores:
        return "CPUs: shared by the control plane, the contenders and the AWS emulator."
    return (
        f"CPUs: the control plane on {cores['control_plane']}; the contenders (harness, NTH) and the AWS emulator "
        f"on {cores['rest']} (--split-cores)."
    )


def _named(values: Sequence[float]) -> dict[str, float] | None:
    mr = median_range(values)
    return dict(zip(("median", "min", "max"), mr, strict=True)) if mr else None


def summary(res: dict[str, Any]) -> dict[str, Any]:
    """The medians and ranges for --json, next to the per-round raw numbers."""
    out: dict[str, Any] = {}
    for title, metric, _, _ in METRICS:
        out[title] = {c: _named([v for p in phases(res, c) if (v := metric(p)) is not None]) for c in CONTENDERS}
    out["storm time ÷ lower bound"] = {
        c: _named([v for v in over_bound(res, c) if v is not None]) for c in ("orchestrator", "nth")
    }
    return out


def requests_all_rounds(res: dict[str, Any], who: str) -> tuple[dict[str, int], int]:
    """One contender's requests by kind summed over the rounds, and its pods over the rounds."""
    total: dict[str, int] = {}
    for p in phases(res, who):
        for k, n in p.requests.items():
            total[k] = total.get(k, 0) + n
    return dict(sorted(total.items(), key=lambda kv: -kv[1])), sum(p.pods for p in phases(res, who))
