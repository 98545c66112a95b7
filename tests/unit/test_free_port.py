"""The bed's port choice (testbed/procs.free_port): a port is handed out once per process, and each pytest worker
chooses among its own ports, so components and beds starting side by side never race for one."""

from __future__ import annotations

import pytest

from testbed.procs import free_port


def test_a_process_never_gets_the_same_port_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")  # ~1,400 ports to choose from: random picks would collide
    ports = [free_port() for _ in range(400)]
    assert len(set(ports)) == len(ports)


def test_each_worker_chooses_among_its_own_ports(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    assert {free_port() % 16 for _ in range(20)} == {3}
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw12")
    assert {free_port() % 16 for _ in range(20)} == {12}
