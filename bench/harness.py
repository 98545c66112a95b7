"""What every benchmark's entry point does around its run: find or start a bed, keep the handler's stdout apart."""

from __future__ import annotations

import os
from pathlib import Path

from testbed.bed import Testbed
from testbed.output import stdout_into

__all__ = ["attach_or_start", "stdout_into"]


def attach_or_start(new_dir: Path) -> tuple[Testbed, bool]:
    """The running bed of DRAIN_TESTBED_DIR (`make cluster-up`'s, left running), else a new one in ``new_dir``.
    Returns (bed, owned): the caller stops an owned bed when done."""
    reuse = os.environ.get("DRAIN_TESTBED_DIR")
    bed = Testbed.attach(Path(reuse)) if reuse else None
    if bed is not None:
        return bed, False
    return Testbed.start(new_dir), True
