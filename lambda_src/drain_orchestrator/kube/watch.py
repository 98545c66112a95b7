"""A watch read on a thread of its own, so that the waiter can act on its own clock between events."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from typing import Any

from drain_orchestrator.kube.rest import Kube, version_gone


class Watch:
    """A watch read on a thread of its own, so that the waiter can act on its own clock between events (a hold-off
    running out, a node check) and end the read at once (``close`` shuts the socket down)."""

    def __init__(self, kube: Kube, path: str, query: dict[str, Any], timeout: float) -> None:
        # each event with the monotonic time it arrived: a waiter reading it later still knows when it was news
        self.events: queue.SimpleQueue[tuple[float, dict[str, Any] | None]] = queue.SimpleQueue()
        self.received = 0.0  # monotonic: when the event ``next`` returned last arrived
        self._lock = threading.Lock()
        self._raw: Any = None
        self._closed = False
        self.status: int | None = None  # the response's HTTP status once it arrived (403: the role may not watch)
        self.ended = False  # the reader is done (the server ended the watch, it broke, or it was closed)
        self.gone = False  # the server ended it with 410: the version it started from is no longer held
        threading.Thread(target=self._read, args=(kube, path, query, timeout), daemon=True).start()

    def _read(self, kube: Kube, path: str, query: dict[str, Any], timeout: float) -> None:
        # a broken or closed watch just ends (None): the drain falls back to its timers
        with contextlib.suppress(Exception):
            for event in kube.stream_lines(path, query, timeout, opened=self._opened):
                self.gone = self.gone or version_gone(event)
                self.events.put((time.monotonic(), event))
        self.ended = True
        self.events.put((time.monotonic(), None))

    def _opened(self, raw: Any) -> bool:
        with self._lock:
            self._raw = raw
            self.status = int(raw.status)
            return not self._closed

    def next(self, timeout: float) -> dict[str, Any] | bool | None:
        """The next event, None when the watch ended, False when ``timeout`` passed first."""
        try:
            self.received, event = self.events.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return False
        return event

    def close(self) -> None:
        with self._lock:
            self._closed, raw = True, self._raw
        if raw is not None:
            with contextlib.suppress(Exception):
                raw.shutdown()
