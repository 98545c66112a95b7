"""What every benchmark's entry point does around its run: find or start a bed, keep the handler's stdout apart."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.testbed.bed import Testbed


def attach_or_start(new_dir: Path) -> tuple[Testbed, bool]:
    """The running bed of DRAIN_TESTBED_DIR (`make cluster-up`'s, left running), else a new one in ``new_dir``.
    Returns (bed, owned): the caller stops an owned bed when done."""
    reuse = os.environ.get("DRAIN_TESTBED_DIR")
    bed = Testbed.attach(Path(reuse)) if reuse else None
    if bed is not None:
        return bed, False
    return Testbed.start(new_dir), True


@contextmanager
def stdout_into(log: Path, append: bool = False) -> Iterator[None]:
    """File descriptor 1 (the handler's logs and EMF lines, as in Lambda) into ``log`` while the run lasts, so
    they stay out of the printed tables and can be measured or read afterwards."""
    log.parent.mkdir(parents=True, exist_ok=True)
    saved = os.dup(1)
    try:
        with log.open("ab" if append else "wb") as f:
            sys.stdout.flush()
            os.dup2(f.fileno(), 1)
            try:
                yield
            finally:
                sys.stdout.flush()
                os.dup2(saved, 1)
    finally:
        os.close(saved)
