"""A batched tuning in an isolated child process (the child's side of batched_isolated.py): the
runner that isolated_child.py builds from the configurations it is opened for, a LocalBatched on
the child's GPU. It answers "prepare" (compile and load every configuration) and "classes" (measure
size classes in order, telling the parent of each shape before it is timed and, in a careful shape,
of each configuration, and sending each class's rows when it is whole). A fault that lost the CUDA
context is answered ("lost", configuration or None, the error's line, state) and the process exits."""

from __future__ import annotations

import os
import time
from multiprocessing.connection import Connection
from typing import Sequence

from .batched_local import ConfigFault, LocalBatched, Recovery, Watcher, measured_classes
from .isolated_child import EXIT_LOST, state
from .plan import Point, Settings
from .points_local import error_line
from ..sizes import Shape


class ChildTuner:
    """The batched tuner of an isolated child: the configurations are the points it is opened for
    (one variant, one shape that means nothing), cache and L2 flush the settings'."""

    def __init__(self, settings: Settings, points: Sequence[Point]):
        self.settings = settings
        self.variant, self.configs = points[0].variant, [p.params for p in points]
        self.local = self.open()

    def open(self) -> LocalBatched:
        """The child's GPU (tests/isolation_fakes.py stands in for it)."""
        from ..device import open_gpu

        return LocalBatched(open_gpu(), self.variant, self.configs, self.settings.cache, self.settings.l2_flush)

    @property
    def gpu(self):
        return self.local.gpu

    @property
    def kernels(self) -> dict[str, dict]:
        return self.local.kernels

    def prepare(self, jobs: int) -> list[str]:
        """Compile and load every configuration; the lines LocalBatched.prepare said."""
        said: list[str] = []
        self.local.prepare(jobs, time.perf_counter(), said.append)
        return said

    def classes(self, outbox: Connection, classes: list, seed: int, prune: float, recovery: Recovery) -> None:
        """Measure the classes ((name, [(m, n, k), ...]) in order), the recovery the first's."""
        watcher = Watcher(lambda j: outbox.send(("at", j)), lambda c: outbox.send(("try", c)))
        todo = [(cls, [Shape(*s) for s in shapes]) for cls, shapes in classes]
        try:
            for cls, rows in measured_classes(self.local.tuner, todo, seed, prune, recovery, watcher):
                outbox.send(("class", cls, rows, state(self, {})))
        except ConfigFault as fault:
            self.lost(outbox, fault.config, fault.line)
        except Exception as exc:  # in a shape's batches: whose fault it was is for a careful shape to find
            if self.context_works():
                raise
            self.lost(outbox, None, error_line(exc))

    def context_works(self) -> bool:
        try:
            self.local.gpu.probe()
        except Exception:
            return False
        return True

    def lost(self, outbox: Connection, config: int | None, line: str) -> None:
        """The context is lost: nothing more can run in this process."""
        outbox.send(("lost", config, line, state(self)))
        outbox.close()
        os._exit(EXIT_LOST)

    def time_spent(self) -> dict[str, dict[str, float]]:
        return {}

    def library_meta(self) -> dict:
        return {}

    def kernel_clock_meta(self) -> dict:
        return {}

    def close(self) -> None:
        self.local.close()
