"""The engine interfaces: what runs the points of a run or the size classes of a batched tuning,
here or on a Dask cluster; and the time accounting they share. The 2 x 2, one module each:

                 this process          a Dask cluster
    points       points_local.py       points_dask.py      Engine: a Session's rows, one per point
    batched      batched_local.py      batched_dask.py     BatchedEngine: whole size classes

Two interfaces, not one: a points engine hands a Session (session.py) one results row per point,
while a batched engine writes whole size classes of one variant's configurations into its own
class file (batched_local.ClassWriter), so what they are asked and what they return differ.
session.open_engine and session.open_batched_engine open the one of each row that a run needs.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Sequence

from ..sizes import Shape
from .plan import Point, Settings


class Engine(ABC):
    """Runs points and says what the run's metadata needs to know of where and how."""

    settings: Settings
    kernels: dict[str, dict]  # "name[params]" -> resources, for the metadata
    spent_s: dict[str, float]  # wall seconds of this process by phase (spending)
    gpu = None  # this process's GPU (device.Gpu), for environment.collect; None where it has none
    # Whether rows come back in the order of the points given (one process) or as they finish
    # (a cluster's chunks): a Session then routes each row to its point by key.
    unordered = False

    @abstractmethod
    def run(self, points: Sequence[Point], on_row: Callable[[dict], None]) -> None:
        """Measure the points, handing each row to on_row as it finishes."""

    @abstractmethod
    def gpu_names(self) -> set[str]:
        """The GPU models the points ran (or will run) on."""

    def spending(self, phase: str):
        """Add the block's wall time to spent_s[phase]."""
        return spent_in(self.spent_s, phase)

    @abstractmethod
    def time_spent(self) -> dict[str, dict[str, float]]:
        """Seconds so far by process ("host:pid") and phase."""

    @abstractmethod
    def library_meta(self) -> dict:
        """The library baselines' versions and settings (or why unavailable), and the references'."""

    def meta(self) -> dict:
        """The engine's own part of the metadata (a cluster's workers); none in this process."""
        return {}

    def kernel_clock_meta(self) -> dict:
        """What the metadata says of the kernel clock; nothing where the engine cannot say."""
        return {}

    def precompile_configs(self, variant, configs: list, jobs: int, wait: bool = True) -> None:
        """Compile these configurations of a variant into the host's compile cache ahead of their
        points (a tuning's, jobs nvcc processes; wait=False: in the background, each point waiting
        for its own). Nothing here: an engine without a GPU of its own (a cluster's workers compile
        each run's kernels before their first chunk)."""

    @abstractmethod
    def close(self) -> None:
        """Release the GPU, the libraries, the cluster's client."""


class BatchedEngine(ABC):
    """Measures whole size classes of one variant's configurations into a batched tuning file."""

    kernels: dict[str, dict]  # "name[params]" -> resources, for the metadata
    gpu = None  # this process's GPU (device.Gpu), for environment.collect and the cache's key; None on a cluster

    @abstractmethod
    def gpu_names(self) -> set[str]:
        """The GPU models the classes will run on (what a resumed file's GPU is checked against)."""

    @abstractmethod
    def prepare(self, jobs: int, since: float, say: Callable[[str], None]) -> float | None:
        """Compile and load every configuration (jobs nvcc at a time) where that is done before the
        first class; the seconds since `since` (perf_counter) it took, None where it is not (a
        cluster's workers compile at their first class)."""

    @abstractmethod
    def run(self, shapes: Sequence[Shape], output: Path, seed: int, skip: set[str],
            on_class: Callable[[str, int, int], None] | None, counts: dict, prune: float) -> dict:
        """Measure every size class of shapes not in skip, writing each class's rows into output
        when it is whole; the counts of rows by status (kept in counts as they grow)."""

    def meta(self) -> dict:
        """The engine's own part of the metadata (a cluster's workers); none in this process."""
        return {}

    @abstractmethod
    def close(self) -> None:
        """Release what the engine holds (a cluster's client)."""


@contextmanager
def spent_in(spent_s: dict[str, float], phase: str):
    """Add the block's wall time to spent_s[phase] (an engine's own seconds by phase)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        spent_s[phase] = spent_s.get(phase, 0.0) + time.perf_counter() - started


def spent_between(before: dict[str, dict[str, float]], after: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """What time_spent() grew by between two readings, per process and phase (ms precision); a
    process or phase with nothing added left out."""
    grown: dict[str, dict[str, float]] = {}
    for process, phases in after.items():
        was = before.get(process, {})
        added = {phase: round(s - was.get(phase, 0.0), 3) for phase, s in phases.items()}
        added = {phase: s for phase, s in added.items() if s > 0}
        if added:
            grown[process] = added
    return grown


def add_spent(total: dict[str, dict[str, float]], spent: dict[str, dict[str, float]]) -> None:
    """Add seconds by process and phase (spent_between's) into a running total."""
    for process, phases in spent.items():
        mine = total.setdefault(process, {})
        for phase, seconds in phases.items():
            mine[phase] = mine.get(phase, 0.0) + seconds


