"""Keeping the handler's stdout (its JSON logs and EMF lines, as in Lambda) apart from what a harness prints."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def stdout_into(log: Path, append: bool = False) -> Iterator[None]:
    """File descriptor 1 into ``log`` while the run lasts, so the handler's lines stay out of the printed tables
    and can be measured or read afterwards."""
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
