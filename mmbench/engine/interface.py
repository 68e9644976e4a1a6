"""The engine interface: what a Session asks of whatever runs its points (engine/points_local.py
in this process, engine/points_dask.py on a Dask cluster), and the time accounting they share.

The batched tuner is the other column of the matrix: engine/batched_local.py measures whole size
classes in this process, engine/batched_dask.py spreads them over a cluster's workers; both write
their own class files, not a Session's rows.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Callable, Sequence

from .plan import Point, Settings


class Engine(ABC):
    """Runs points and says what the run's metadata needs to know of where and how."""

    settings: Settings
    kernels: dict[str, dict]  # "name[params]" -> resources, for the metadata
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

    @abstractmethod
    def close(self) -> None:
        """Release the GPU, the libraries, the cluster's client."""


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


