"""TCP between the host's loopback and the loopback of a private network namespace, from threads of this process.

The Runtime Interface Emulator's runtime API always binds 127.0.0.1:9001, so two emulators (two function versions)
can only run side by side in separate network namespaces. A process in such a namespace sees none of the bed's
ports, and the bed sees none of its ports. This bridge, running in the host's namespace, makes both work:

- ``inbound`` ports: a listener on 127.0.0.1:P *inside* the namespace forwards to 127.0.0.1:P on the host, so the
  function reaches the apiserver, the AWS emulator and the durable-execution service at the addresses it was given;
- ``outbound``: a listener on a free host port forwards to 127.0.0.1:Q inside the namespace (the emulator's
  invoke address).

Sockets keep the namespace they were created in; a thread joins a namespace with setns(2) (per thread on Linux),
so only short-lived threads ever enter it, to create a socket, and the rest of this process stays on the host.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class NetnsBridge:
    def __init__(self, pid: int) -> None:
        self.netns = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
        self._listeners: list[socket.socket] = []
        self._closed = threading.Event()

    def in_namespace(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on a thread that has joined the namespace (the thread ends with it)."""
        out: list[T] = []
        errors: list[BaseException] = []

        def run() -> None:
            try:
                os.setns(self.netns, os.CLONE_NEWNET)
                out.append(fn())
            except BaseException as exc:  # re-raised on the caller's thread
                errors.append(exc)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        t.join()
        if errors:
            raise errors[0]
        return out[0]

    def port_open(self, port: int) -> bool:
        """Something listens on 127.0.0.1:port inside the namespace."""

        def probe() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        return self.in_namespace(probe)

    def inbound(self, port: int) -> None:
        """127.0.0.1:port inside the namespace reaches 127.0.0.1:port on the host."""
        listener = self.in_namespace(lambda: _listen(port))
        self._serve(listener, lambda: socket.create_connection(("127.0.0.1", port), timeout=10))

    def outbound(self, port: int) -> int:
        """A host port (returned) that reaches 127.0.0.1:port inside the namespace."""
        listener = _listen(0)

        def connect() -> socket.socket:
            s = self.in_namespace(socket.socket)
            try:
                s.settimeout(10)
                s.connect(("127.0.0.1", port))
            except OSError:
                s.close()
                raise
            return s

        self._serve(listener, connect)
        return int(listener.getsockname()[1])

    def _serve(self, listener: socket.socket, connect: Callable[[], socket.socket]) -> None:
        self._listeners.append(listener)

        def accept_loop() -> None:
            while not self._closed.is_set():
                try:
                    client, _ = listener.accept()
                except OSError:
                    return  # closed
                threading.Thread(target=_join, args=(client, connect), daemon=True).start()

        threading.Thread(target=accept_loop, daemon=True).start()

    def close(self) -> None:
        self._closed.set()
        for listener in self._listeners:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        self._listeners = []
        with contextlib.suppress(OSError):
            os.close(self.netns)


def _listen(port: int) -> socket.socket:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(64)
    return s


def _join(client: socket.socket, connect: Callable[[], socket.socket]) -> None:
    try:
        upstream = connect()
    except OSError:
        client.close()
        return
    upstream.settimeout(None)
    client.settimeout(None)
    t = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    t.start()
    _pump(client, upstream)
    t.join()
    client.close()
    upstream.close()


def _pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy until EOF, then half-close the other side so HTTP clients see the end of the response."""
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)
