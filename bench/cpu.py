"""CPU time spent during a storm, by the bed's components and by the harness, from /proc.

The bed runs the control plane and every contender on one machine: a contender that costs the control plane more
CPU, or burns CPU of its own beside it, slows the scheduler, the controllers and kwok that its drain waits on, where
on EKS the control plane and a Lambda's CPU are not shared. So a storm's time is read next to the CPU it took."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

# the bed's Kubernetes components (testbed/procs.py names); its AWS emulator stands for AWS and is not counted
CONTROL_PLANE = ("kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok")
HARNESS = "harness"  # this process: the contender's executions or drainer, and the observer every contender has
TOOL = "tool"  # a contender's own process, when it runs apart from the harness (aws-node-termination-handler)


def pid_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process so far (None: it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def snapshot(procs: Iterable[tuple[str, int]]) -> dict[str, float]:
    """CPU seconds so far of each named process, and of this one as HARNESS."""
    out = {name: s for name, pid in procs if (s := pid_seconds(pid)) is not None}
    out[HARNESS] = time.process_time()
    return out


def spent(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """CPU seconds each process spent between two snapshots (those in both; pure)."""
    return {k: round(after[k] - before[k], 2) for k in before.keys() & after.keys()}


def control_plane(cpu: Mapping[str, float]) -> float | None:
    """The Kubernetes components' CPU seconds together (None: not measured)."""
    parts = [cpu[k] for k in CONTROL_PLANE if k in cpu]
    return sum(parts) if parts else None


def own(cpu: Mapping[str, float]) -> float | None:
    """A contender's own CPU seconds: the harness's, and its TOOL process's when it runs apart (None: not measured)."""
    if HARNESS not in cpu:
        return None
    return cpu[HARNESS] + cpu.get(TOOL, 0.0)


def core_split(cpus: Iterable[int]) -> tuple[frozenset[int], frozenset[int]]:
    """The machine's CPUs as (control plane's, everyone else's): the upper half for the control plane, the rest for
    the harness, the AWS emulator and a contender's own process (pure). On EKS the control plane's CPU is not the
    Lambda's; split, a contender's own CPU no longer slows the controllers its drain waits on."""
    ordered = sorted(set(cpus))
    if len(ordered) < 2:
        raise ValueError(f"splitting the cores needs at least 2 CPUs, this process may use {len(ordered)}")
    half = len(ordered) // 2
    return frozenset(ordered[half:]), frozenset(ordered[:half])


def cannot_split() -> str | None:
    """Why this process's CPUs cannot be split (core_split), for a ``--split-cores`` flag's error; else None."""
    try:
        core_split(os.sched_getaffinity(0))
    except ValueError as exc:
        return str(exc)
    return None


def pin(pid: int, cpus: Iterable[int]) -> None:
    """Keep every thread of process ``pid`` on ``cpus`` (threads it starts later inherit the set of their parent
    thread, so Go's and Python's new threads stay there too)."""
    wanted = set(cpus)
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), wanted)
        except ProcessLookupError:
            continue  # a thread that ended meanwhile


@contextlib.contextmanager
def cores_split(procs: Iterable[tuple[str, int]]) -> Iterator[dict[str, list[int]]]:
    """Within: the bed's control-plane processes (CONTROL_PLANE names in ``procs``) on their own CPUs (core_split),
    this process, the bed's other processes and any process started meanwhile on the others; as before after."""
    everything = os.sched_getaffinity(0)
    plane, rest = core_split(everything)
    procs = list(procs)
    try:  # a pin that fails half-way still puts back those done
        pin(os.getpid(), rest)
        for name, pid in procs:
            pin(pid, plane if name in CONTROL_PLANE else rest)
        yield {"control_plane": sorted(plane), "rest": sorted(rest)}
    finally:
        for pid in [os.getpid(), *(pid for _, pid in procs)]:
            with contextlib.suppress(FileNotFoundError):
                pin(pid, everything)
