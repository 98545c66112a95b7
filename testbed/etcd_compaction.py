"""etcd compacted under the bed's apiserver, on a schedule: a fault for resourceVersions.

A compaction drops etcd's history before a revision. ``Compactor`` compacts at the current revision every few
seconds the way a kube-apiserver does every 5 minutes (``--etcd-compaction-interval``): it records the revision
under ``compact_rev_key`` first, then compacts etcd (etcd's gRPC gateway: ``/v3/kv/range`` for the revision,
``/v3/kv/txn``, ``/v3/kv/compaction``). The bed's apiserver watches that key (as each apiserver of an HA control
plane learns of the others' compactions) and, within its cache's 15 s poll, drops the list snapshots older than
it: a LIST at a compacted resourceVersion (``resourceVersionMatch=Exact``) is then answered
410 Gone ("too old resource version"), and the client must LIST again. A watch is served from the apiserver's
watch cache, whose window moves with the writes to its resource, not with etcd's compactions (kube-apiserver 1.35):
a watch resumed from a version the window no longer holds gets the same 410, as an ERROR event. A resource the
apiserver serves from etcd (``--watch-cache-sizes=<resource>#0``, a bed's ``apiserver_flags``) gets that 410 for a
watch from a version older than the last compaction.
"""

from __future__ import annotations

import base64
import json
import threading
import urllib.error
import urllib.request
from types import TracebackType
from typing import Any

from testbed.bed import Testbed

CHURN_KEY = b"drain-testbed/churn"  # outside the apiserver's --etcd-prefix: no object of the cluster changes
COMPACT_REV_KEY = b"compact_rev_key"  # kube-apiserver's (storage/etcd3/compact.go), outside its --etcd-prefix


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        doc: dict[str, Any] = json.loads(r.read() or b"{}")
        return doc


class Compactor:
    """Compact the bed's etcd at its current revision every ``every`` seconds while in use (a thread); ``revisions``:
    each revision compacted."""

    def __init__(self, bed: Testbed, every: float, churn: int = 0) -> None:
        self.base = f"http://127.0.0.1:{bed.state.etcd_port}"
        self.every = every
        self.churn = churn
        self.revisions: list[int] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="etcd-compaction")

    def compact(self) -> int | None:
        """One compaction at the current revision; None when etcd had nothing new since the last one. ``churn``
        writes first (a key outside the apiserver's prefix): etcd's revision moves as in a busy cluster, where leases
        and Events are written all the time, so every compaction passes the versions read since the last one."""
        for _ in range(self.churn):
            _post(f"{self.base}/v3/kv/put", {"key": _b64(CHURN_KEY), "value": _b64(b"x")})
        revision = int(_post(f"{self.base}/v3/kv/range", {"key": _b64(b"/")})["header"]["revision"])
        if self.revisions and revision <= self.revisions[-1]:
            return None
        # the apiserver's own protocol: the revision under compact_rev_key (the apiservers watch it), then the
        # compaction; the key's version is the apiservers' compaction clock, so theirs fail their CAS and read ours
        put = {"key": _b64(COMPACT_REV_KEY), "value": _b64(str(revision).encode())}
        _post(f"{self.base}/v3/kv/txn", {"success": [{"requestPut": put}]})
        _post(f"{self.base}/v3/kv/compaction", {"revision": str(revision), "physical": True})
        self.revisions.append(revision)
        return revision

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.compact()
            except (OSError, urllib.error.URLError, ValueError, KeyError) as exc:  # etcd busy or restarting: next time
                self.errors.append(f"{type(exc).__name__}: {exc}"[:200])

    def __enter__(self) -> Compactor:
        self._thread.start()
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
