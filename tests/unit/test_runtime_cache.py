"""The per-container client cache: a burst of first uses builds a client once, and other names do not wait."""

from __future__ import annotations

import threading
import time

from drain_orchestrator.workflow import runtime


def test_concurrent_first_uses_build_one_client_and_other_names_do_not_wait() -> None:
    runtime.reset_config()
    builds: list[str] = []
    slow_started = threading.Event()

    def slow() -> object:
        builds.append("slow")
        slow_started.set()
        time.sleep(0.3)
        return object()

    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(runtime._cached("slow", slow))) for _ in range(8)]
    for t in threads:
        t.start()
    assert slow_started.wait(5)
    started = time.monotonic()
    other = runtime._cached("other", lambda: "built")  # not blocked by the slow build
    assert other == "built" and time.monotonic() - started < 0.2
    for t in threads:
        t.join(5)
    try:
        assert builds == ["slow"]
        assert len(results) == 8 and all(r is results[0] for r in results)
    finally:
        runtime.reset_config()
