"""The per-container client cache: a burst of first uses builds a client once, and other names do not wait."""

from __future__ import annotations

import threading

from drain_orchestrator.workflow import runtime


def test_concurrent_first_uses_build_one_client_and_other_names_do_not_wait() -> None:
    runtime.reset_config()
    builds: list[str] = []
    slow_started, release = threading.Event(), threading.Event()

    def slow() -> object:
        builds.append("slow")
        slow_started.set()
        release.wait(5)  # held until the other name has been built
        return object()

    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(runtime._cached("slow", slow))) for _ in range(8)]
    for t in threads:
        t.start()
    assert slow_started.wait(5)
    other: list[object] = []
    other_done = threading.Event()
    threading.Thread(target=lambda: (other.append(runtime._cached("other", lambda: "built")), other_done.set())).start()
    assert other_done.wait(2), "another name waited for the slow build"  # the slow one is held for 5 s
    assert other == ["built"]
    release.set()
    for t in threads:
        t.join(5)
    try:
        assert builds == ["slow"]
        assert len(results) == 8 and all(r is results[0] for r in results)
    finally:
        runtime.reset_config()
