"""The test slots of `make test` (tests/admission.py): tests that mostly wait start at once, as many others as cores
start at once, and one more only after the machine was seen idle enough."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from tests.admission import ADMIT_IDLE, Slots


def test_as_many_heavy_tests_as_cores_start_at_once_whatever_the_load(tmp_path: Path) -> None:
    busy = Slots(tmp_path, count=4, cores=2, idle=lambda: 0.0)
    with busy.held() as first, busy.held() as second:
        assert first < 1 and second < 1


def test_tests_that_mostly_wait_start_beside_busy_cores(tmp_path: Path) -> None:
    busy = Slots(tmp_path, count=3, cores=1, idle=lambda: 0.0)
    with busy.held(), busy.held(light=True) as second, busy.held(light=True) as third:
        assert second < 1 and third < 1


def test_one_heavy_test_more_than_cores_waits_for_idle_cpu(tmp_path: Path) -> None:
    idle = [0.0]
    looked = threading.Event()

    def idle_share() -> float:
        looked.set()
        time.sleep(0.01)
        return idle[0]

    slots = Slots(tmp_path, count=3, cores=1, idle=idle_share)
    waited: list[float] = []

    def heavy_test() -> None:
        with slots.held() as seconds:
            waited.append(seconds)

    with slots.held():
        worker = threading.Thread(target=heavy_test)
        worker.start()
        assert looked.wait(5)
        time.sleep(0.5)
        assert worker.is_alive() and not waited  # the machine is busy: it waits
        idle[0] = ADMIT_IDLE
        worker.join(5)
    assert waited and waited[0] >= 0.5


def test_a_freed_slot_is_taken_without_looking_at_the_machine(tmp_path: Path) -> None:
    slots = Slots(tmp_path, count=1, cores=1, idle=lambda: 0.0)
    with slots.held():
        pass
    with slots.held() as waited:
        assert waited < 1


def test_cpu_heavy_tests_get_their_slots_in_order_of_arrival(tmp_path: Path) -> None:
    slots = Slots(tmp_path, count=1, cores=1, idle=lambda: 0.0)
    order: list[str] = []

    def heavy_test(name: str) -> None:
        with slots.held():
            order.append(name)

    with slots.held():
        first = threading.Thread(target=heavy_test, args=("first",))
        first.start()
        time.sleep(0.5)
        second = threading.Thread(target=heavy_test, args=("second",))
        second.start()
        time.sleep(0.5)
    first.join(5)
    second.join(5)
    assert order == ["first", "second"]
