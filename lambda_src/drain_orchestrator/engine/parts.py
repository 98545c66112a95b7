"""What one drain holds: its client, node, options and clock, and the parts that own what it remembers between passes.

The drainer (engine/drainer.py) is one object; its methods are written in a few modules by what they do (like the
methods of kubectl's drain ``Helper`` over drain.go and filters.go): the pass and the loop (drainer.py), sending
evictions and what their answers leave (evictions.py), the wait between passes (waits.py), the first wave
(first_wave.py). Each of those classes derives from this one, which only holds the parts:

- ``pods``: one record per pod (engine/pod_record.py): refusals, what was sent, a drain policy's release;
- ``view``: the node as the drain sees it: cordoned since when, still there, the last LIST (engine/node_view.py);
- ``leaving``: the pods on their way out and what a wait watched of them (engine/node_view.py);
- ``turns``: this drain's turns at the budgets (engine/budget_turns.py);
- ``budgets``: what the last wait on budgets ended with, and its open watch (engine/budget_wait.py);
- ``surge``: its surges before evict (drain/surge.py, engine/surge.py).
"""

from __future__ import annotations

from collections.abc import Callable

from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.surge import SurgeFacts
from drain_orchestrator.engine.budget_turns import BudgetTurns
from drain_orchestrator.engine.budget_wait import BudgetWatch
from drain_orchestrator.engine.clock import Clock
from drain_orchestrator.engine.node_view import Leaving, NodeView
from drain_orchestrator.engine.pod_record import PodRecords
from drain_orchestrator.kube.pods import SeenIps
from drain_orchestrator.kube.rest import Kube

Progress = Callable[[str], None]


def quiet(_: str) -> None:
    return None


class DrainParts:
    def __init__(
        self,
        kube: Kube,
        node: str,
        options: DrainOptions,
        *,
        clock: Clock,
        progress: Progress | None = None,
        seen_ips: SeenIps | None = None,
    ) -> None:
        self.kube, self.node, self.options, self.clock = kube, node, options, clock
        self.say: Progress = progress or quiet
        self.pods = PodRecords(clock)
        self.view = NodeView(kube, node, clock, seen_ips)
        self.leaving = Leaving()
        self.turns = BudgetTurns(clock)
        self.budgets = BudgetWatch(clock)
        self.surge = SurgeFacts()
        self.noted: set[str] = set()  # warnings already printed (once per drain)
