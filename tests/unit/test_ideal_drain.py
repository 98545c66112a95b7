"""The lower bound's choice per budget (bench/ideal_drain.py): exactly as many evictions as a status allows, less
its own evictions that status does not count yet, so none is refused; the drainer itself runs in the bench."""

from __future__ import annotations

import pytest
from bench import ideal_drain
from bench.ideal_drain import UNBUDGETED, Book

SELECTORS = {"app0": {"app": "app0"}, "app1": {"app": "app1"}}


def test_a_pod_belongs_to_the_budget_whose_labels_select_it() -> None:
    assert ideal_drain.budget_of({"app": "app1", "x": "y"}, SELECTORS) == "app1"
    assert ideal_drain.budget_of({"app": "other"}, SELECTORS) == UNBUDGETED
    with pytest.raises(ValueError, match=r"match more than one PodDisruptionBudget: \['a', 'b'\]"):
        ideal_drain.budget_of({"app": "x"}, {"a": {"app": "x"}, "b": {}})


def test_choose_takes_what_the_status_allows_less_what_it_has_not_counted() -> None:
    assert ideal_drain.choose(2, 0, ["a", "b", "c"]) == ["a", "b"]
    assert ideal_drain.choose(2, 1, ["a", "b", "c"]) == ["a"]
    assert ideal_drain.choose(1, 3, ["a"]) == []
    assert ideal_drain.choose(5, 0, ["a"]) == ["a"]


def _book() -> Book:
    pods = [("p1", {"app": "app0"}), ("p2", {"app": "app0"}), ("q1", {"app": "app1"}), ("free", {"app": "none"})]
    return Book.of(pods, SELECTORS)


def test_unbudgeted_pods_go_at_once_and_budgeted_ones_wait_for_their_status() -> None:
    book = _book()
    assert book.unbudgeted() == ["free"] and book.unbudgeted() == []
    assert book.on_status("app1", 0, []) == []
    assert book.on_status("app1", 1, []) == ["q1"]
    assert not book.done()


def test_an_eviction_is_not_counted_twice_nor_forgotten() -> None:
    book = _book()
    assert book.on_status("app0", 1, []) == ["p1"]
    book.on_result("app0", "p1", 201)
    # a status written before the eviction (it does not list p1 yet) still says 1: p1 took it
    assert book.on_status("app0", 1, []) == []
    # the eviction's own update: p1 listed, budget used up
    assert book.on_status("app0", 0, ["p1"]) == []
    # the controller saw p1 terminating and its replacement healthy: one more
    assert book.on_status("app0", 1, []) == ["p2"]
    book.on_result("app0", "p2", 201)
    assert book.waiting["app0"] == []


def test_an_eviction_in_flight_counts_before_its_answer() -> None:
    book = _book()
    assert book.on_status("app0", 1, []) == ["p1"]
    # a status that comes while p1's eviction is still unanswered: p1 holds the disruption it allows
    assert book.on_status("app0", 1, []) == []
    assert not book.done()
    book.on_result("app0", "p1", 201)
    assert book.on_status("app0", 1, ["p1"]) == ["p2"]


def test_a_refused_eviction_waits_again_first() -> None:
    book = _book()
    assert book.on_status("app0", 1, []) == ["p1"]
    book.on_result("app0", "p1", 429)
    assert book.on_status("app0", 1, []) == ["p1"]


def test_a_refusal_answered_after_a_newer_status_is_decided_on_that_status() -> None:
    book = _book()
    assert book.on_status("app0", 1, []) == ["p1"]
    # the budget's next status comes while p1's eviction is in flight (it holds the disruption), then p1 is refused:
    # no status may come again, so the one seen decides at once
    assert book.on_status("app0", 1, []) == []
    assert book.on_result("app0", "p1", 429) == ["p1"]
    # refused with no newer status seen: the next status decides
    assert book.on_result("app0", "p1", 429) == []
    assert book.on_status("app0", 1, []) == ["p1"]


def test_a_relist_counts_every_answered_eviction() -> None:
    book = _book()
    assert book.on_status("app0", 2, []) == ["p1", "p2"]
    book.on_result("app0", "p1", 201)
    book.on_result("app0", "p2", 404)  # already gone: no budget update to wait for
    assert book.uncounted["app0"] == {"p1"}
    book.relisted()
    assert book.uncounted["app0"] == set()
    assert book.on_status("app1", 1, []) == ["q1"]
    book.relisted()  # q1 unanswered: a relist may not count it yet
    assert book.uncounted["app1"] == {"q1"}
    book.on_result("app1", "q1", 201)
    assert book.unbudgeted() == ["free"]
    assert not book.done()
    book.on_result("", "free", 201)
    assert book.done()
