"""How drains sharing a budget should draw their turn at its rise: a model (pure, no bed), not a test.

At a rise of one disruption, ``n`` drains that saw it (each a little apart: ``seen`` seconds of spread) each wait a
hold-off drawn from one distribution, then evict unless the budget's fall reached them first, ``lag`` seconds after
the earliest eviction. Every other drain whose turn falls within that lag evicts too and is refused. For each shape
of draw (the shipped uniform window, and others that put the turns nearer the rise or nearer the window's end, as
wireless MACs do for an unknown number of senders) the window is swept, and the mean wait for the first eviction is
read off at a few refusal rates: the shape with the shortest wait at a rate wins.

    python -m bench.turn_draws                   # lag 70 ms, 30 ms apart, 3 / 8 / 20 drains
    python -m bench.turn_draws --lag 0.05 --drains 10
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
from collections.abc import Callable, Sequence

Draw = Callable[[random.Random], float]  # a hold-off in units of the window

SLOTS = 32  # the increasing-geometric shape's slots
SHAPES: dict[str, Draw] = {
    "uniform (shipped)": lambda r: r.random(),
    "nearer the rise (U²)": lambda r: r.random() ** 2,
    "nearer the end (√U)": lambda r: r.random() ** 0.5,
    # slot i taken with weight 1.1^i, as Sift draws it, uniform within its slot
    "increasing geometric": lambda r: (
        (r.choices(range(SLOTS), weights=[1.1**i for i in range(SLOTS)])[0] + r.random()) / SLOTS
    ),
}
RATES = (0.3, 0.2, 0.1, 0.05)
WINDOWS = tuple(0.05 * 1.25**i for i in range(30))  # seconds


def wave(n: int, draw: Draw, window: float, lag: float, seen: float, rng: random.Random) -> tuple[float, int]:
    """One rise: (when the first eviction went, how many were refused)."""
    turns = sorted(rng.uniform(0.0, seen) + window * draw(rng) for _ in range(n))
    return turns[0], sum(1 for t in turns[1:] if t < turns[0] + lag)


def curve(
    n: int, draw: Draw, lag: float, seen: float, waves: int, windows: Sequence[float] = WINDOWS
) -> list[tuple[float, float]]:
    """(refused per wave, mean wait for the first eviction) for each window, the same draws for every shape."""
    out = []
    for w in windows:
        rng = random.Random(n)
        got = [wave(n, draw, w, lag, seen, rng) for _ in range(waves)]
        out.append((statistics.mean(r for _, r in got), statistics.mean(f for f, _ in got)))
    return out


def wait_at(points: Sequence[tuple[float, float]], rate: float) -> float | None:
    """The wait where the refusals cross ``rate``, interpolated between the windows that straddle it."""
    for (r1, f1), (r2, f2) in itertools.pairwise(points):
        if r1 >= rate >= r2 and r1 != r2:
            return f1 + (f2 - f1) * (r1 - rate) / (r1 - r2)
    return None


def main() -> int:
    p = argparse.ArgumentParser(description="turn draws at a budget's rise: wait against refusals, by shape")
    p.add_argument("--lag", type=float, default=0.07, help="seconds for a fall to reach the other drains")
    p.add_argument("--seen", type=float, default=0.03, help="spread of the drains' seeing the rise, seconds")
    p.add_argument("--drains", type=int, action="append", help="drains at the rise (repeatable; default 3, 8, 20)")
    p.add_argument("--waves", type=int, default=3000, help="rises simulated per window")
    a = p.parse_args()
    if a.lag <= 0 or a.seen < 0 or a.waves < 100 or any(n < 2 for n in a.drains or []):
        p.error("--lag must be above 0, --seen 0 or more, --waves at least 100 and --drains at least 2")
    head = " | ".join(f"{r:g} refused" for r in RATES)
    print(f"lag {a.lag:g} s, rise seen over {a.seen:g} s; mean wait (s) for the first eviction at a refusal rate:\n")
    print(f"| drains | shape | {head} |\n|---|---|" + "---|" * len(RATES))
    for n in a.drains or [3, 8, 20]:
        for name, draw in SHAPES.items():
            points = curve(n, draw, a.lag, a.seen, a.waves)
            cells = " | ".join("-" if (w := wait_at(points, r)) is None else f"{w:.3f}" for r in RATES)
            print(f"| {n} | {name} | {cells} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
