"""What the surge setting may say (SURGE_BLOCKED_PODS, the command line's ``--surge``): a module of its own, so that
the drain's options and the command line read it without the workflow's settings (their parsing, pacing, hashing).
Stdlib only: loaded at `cdk synth` by the construct with the workflow's settings (settings_seam.py)."""

from __future__ import annotations

from typing import Literal

# surge before evict for pods a PDB refuses (drain/surge.py): never, annotated Deployments only, or always
SurgeMode = Literal["never", "annotated", "always"]
SURGE_MODES: tuple[SurgeMode, ...] = ("never", "annotated", "always")
