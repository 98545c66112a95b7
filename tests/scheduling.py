"""Longest first: how `make test` hands tests to its pytest-xdist workers (``-n N``, xdist's default ``--dist
load``).

Each test goes on its own to whichever worker is free, the longest first (by ``tests/durations.json``, the walls a
run measured: tests/expected.py), so the long scenarios start at once and the short tests fill the gaps at the end
instead of a long file starting last and leaving a tail. Files under a path listed in the ini option
``longest_first_by_file`` go whole to one worker, in file order, weighed as the sum of their tests: files whose tests
share module or session fixtures that cost more than the tests (a CDK synth, paid again on every worker the file's
tests went to), or that must not run at the same time as each other.

A worker is always given one unit beyond the one it runs: an xdist worker starts a test only once it knows the next.
(xdist's ``xdist_group`` marks cannot be used for this: with pytest 9 its ``--dist loadgroup`` no longer tags the
tests' ids, so the controller never sees the groups.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from xdist.scheduler import LoadScheduling

from tests.expected import Expected


class LongestFirstScheduling(LoadScheduling):
    """LoadScheduling's bookkeeping (``pending``, ``node2pending``), with units handed out one at a time, longest
    first."""

    def __init__(self, config: pytest.Config, log: Any = None, expected: Callable[[str], float] | None = None) -> None:
        super().__init__(config, log)
        costs = Expected()
        self.expected = expected or (lambda nodeid: costs(nodeid).wall)
        self.units: list[list[int]] = []

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is not None:
            for node in self.nodes:
                self.check_schedule(node)
            return
        if not self._check_nodes_have_same_collection():
            self.log("**Different tests collected, aborting run**")
            return
        self.collection = next(iter(self.node2collection.values()))
        by_file = tuple(self.config.getini("longest_first_by_file"))
        files: dict[str, list[int]] = {}
        units: list[list[int]] = []
        for index, nodeid in enumerate(self.collection):
            path = nodeid.split("::", 1)[0]
            if not path.startswith(by_file):
                units.append([index])
                continue
            whole = files.setdefault(path, [])
            if not whole:
                units.append(whole)
            whole.append(index)
        assert self.collection is not None
        collection = self.collection
        units.sort(key=lambda unit: -sum(self.expected(collection[i]) for i in unit))  # stable: ties keep file order
        self.units = units
        self.pending[:] = [i for unit in units for i in unit]
        # round by round, so each worker's first test is one of the longest
        for _ in range(2):
            for node in self.nodes:
                self._send_unit(node)
        if not self.units:
            for node in self.nodes:
                node.shutdown()

    def _send_unit(self, node: Any) -> None:
        if not self.units:
            return
        unit = self.units.pop(0)
        taken = set(unit)
        self.pending[:] = [i for i in self.pending if i not in taken]
        self.node2pending[node].extend(unit)
        node.send_runtest_some(unit)

    def check_schedule(self, node: Any, duration: float = 0) -> None:
        if node.shutting_down:
            return
        while self.units and len(self.node2pending[node]) < 2:
            self._send_unit(node)
        if not self.units:
            node.shutdown()

    def mark_test_pending(self, item: str) -> None:
        assert self.collection is not None
        index = self.collection.index(item)
        self.units.insert(0, [index])
        self.pending.insert(0, index)
        for node in self.nodes:
            self.check_schedule(node)

    def remove_node(self, node: Any) -> str | None:
        pending = self.node2pending.pop(node)
        if not pending:
            return None
        assert self.collection is not None
        crashitem = self.collection[pending.pop(0)]
        if pending:  # the rest of a crashed worker's tests go to the others, first
            self.units.insert(0, pending)
            self.pending[:0] = pending
        for other in self.nodes:
            self.check_schedule(other)
        return crashitem


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "longest_first_by_file",
        type="linelist",
        default=[],
        help="paths whose test files go whole to one worker (tests/scheduling.py)",
    )


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LoadScheduling | None:
    if config.getoption("dist") != "load":
        return None
    return LongestFirstScheduling(config, log)
