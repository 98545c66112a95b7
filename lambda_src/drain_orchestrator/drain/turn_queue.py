"""Waiting for a far turn durably (pure): a drain whose turn at a budget is far off leaves the budget's watch.

In a storm, every drain waiting on a budget watches it and takes one of its rises (drain/turns.py). A rise comes when
a replacement becomes Ready: seconds on an idle cluster, a minute or more with image pulls and readiness probes.
Twenty drains behind one budget that admits a pod a minute would each hold a Lambda for up to twenty minutes, and
the account's concurrency is then spent on watching. So once a drain has watched its budgets for QUEUE_LOOK_SECONDS
and counted how fast they admit pods (the falls its watch saw), a drain whose turn is likely more than
``queue_after`` seconds away ends its pass and waits durably (no concurrency held) for about as long as the drains
ahead of it need, then looks again. A few drains for each disruption a budget allows (QUEUE_WATCHERS) always
stay, drawn at random, so the budget's rises are always taken while the others are away; a drain that comes back
early counts the storm again (the first wave's reads, however long after its cordon) and may wait again,
pacing.QUEUE_MAX_WAITS in all. A budget that gave no disruption while watched is not a queue but a held drain: the
held waits take it (engine/held_pass.py), and they grow.
"""

from __future__ import annotations

# drains kept watching a budget for each disruption it allows at once: each stays with this many chances, times
# what the budget allows, out of the drains still wanting it, so every rise finds drains to take all it allows
QUEUE_WATCHERS = 3
# how long a drain watches its budgets before it judges how far its turn is (the rate is counted over this time)
QUEUE_LOOK_SECONDS = 10.0
# a rate counted over fewer seconds of reading the budgets' watch is not judged from (the pass watches on)
QUEUE_WATCHED_MIN_SECONDS = QUEUE_LOOK_SECONDS / 2
# a turn expected within this many seconds is waited for in the pass (DrainOptions.queue_after)
QUEUE_AFTER_SECONDS = 20.0
# the durable wait is drawn between this share of the estimate and all of it: the drains that left come back spread,
# the first of them while the drains ahead are still being admitted
QUEUE_RETURN_SHARE = 0.5


def queue_wait(
    left: int, falls: int, watched: float, allows: int, after: float, stay: float, back: float
) -> float | None:
    """Seconds to wait away from the budget's watch, or None to keep watching.

    ``left``: drains still wanting the budget, this one included (drains counted draining at the first wave, at most
    the budget's pods, less the disruptions seen since); ``falls``: disruptions its watch saw taken in the
    ``watched`` seconds it read it (fewer than QUEUE_WATCHED_MIN_SECONDS: not judged); ``allows``: disruptions the
    budget allows with all its pods healthy (at least 1); ``after``: a turn expected sooner is waited for here;
    ``stay``, ``back``: draws in [0, 1), one for whether this drain is one of the watchers, one for where in its
    window it comes back."""
    watchers = QUEUE_WATCHERS * max(1, allows)
    ahead = left - watchers
    if ahead <= 0 or watched < QUEUE_WATCHED_MIN_SECONDS or falls <= 0:
        # no drain ahead of the watchers, too short a count, or a budget that gave nothing: held, not queued
        return None
    wait = ahead * watched / falls
    if wait < after or stay < watchers / left:
        return None
    return wait * (QUEUE_RETURN_SHARE + (1.0 - QUEUE_RETURN_SHARE) * back)
