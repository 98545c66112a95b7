"""The bed a test runs on: the session's (tests/conftest.py ``testbed``), or one of a file's own, started with other
apiserver flags (a file overrides ``testbed`` with a module fixture that enters ``own_bed``; docs/testbed.md)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pytest

from testbed.bed import Testbed
from tests.timings import watch_bed


@contextmanager
def serving(bed: Testbed, *, owned: bool) -> Iterator[Testbed]:
    """The bed's AWS emulator in the environment (boto3 and the product point at it) while in use; then the
    environment as it was, and the bed stopped when ``owned``."""
    saved = {k: os.environ.get(k) for k in bed.aws_env()}
    os.environ.update(bed.aws_env())
    try:
        yield bed
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if owned:
            bed.stop()


def start_bed(tmp_path_factory: pytest.TempPathFactory, apiserver_flags: Sequence[str] = ()) -> Testbed:
    """A new bed in a short temporary path (etcd's and kwok's unix socket paths must stay under 108 bytes), its
    CPU counted as this pytest process's bed."""
    bed = Testbed.start(tmp_path_factory.mktemp("bed"), apiserver_flags=apiserver_flags)
    watch_bed(lambda: [p.pid for p in bed.state.procs])
    return bed


@contextmanager
def own_bed(tmp_path_factory: pytest.TempPathFactory, apiserver_flags: Sequence[str]) -> Iterator[Testbed]:
    """A bed of the caller's own whose apiserver also gets ``apiserver_flags`` (never one of DRAIN_TESTBED_DIR:
    a bed started elsewhere has not got them), stopped at the end."""
    with serving(start_bed(tmp_path_factory, apiserver_flags), owned=True) as bed:
        yield bed
