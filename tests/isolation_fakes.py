"""Runners that fail as a faulty kernel would, at the point of size 5 (or m = 48 on the cluster):
the isolated engine's child builds one of these instead of a LocalPoints (Isolation.runner), so the
CPU tests can kill, hang and poison a child without a GPU."""

from __future__ import annotations

import os
import signal
import time

from mmbench.engine import rows
from mmbench.engine.points_local import LocalPoints

FAULT_AT = (5, 48)


class Faulty(LocalPoints):
    def _run_point(self, point, inputs, buffers):
        if point.shape.m in FAULT_AT:
            return self.fault(point)
        return super()._run_point(point, inputs, buffers)

    def fault(self, point):
        raise NotImplementedError


class ExitsAt(Faulty):
    def fault(self, point):
        os._exit(7)


class KilledAt(Faulty):
    def fault(self, point):
        os.kill(os.getpid(), signal.SIGKILL)


class HangsAt(Faulty):
    """Starts the point's launches (the parent's timeout starts) and never ends them."""

    def fault(self, point):
        self.on_launch(point)
        time.sleep(3600)


class LosesContextAt(Faulty):
    """Fails the point as an out-of-bounds kernel does: the context lost, the row naming the fault."""

    def fault(self, point):
        self.on_launch(point)
        self.context_lost = "cuCtxSynchronize failed: an illegal memory access was encountered"
        return rows.row(point, self.settings, "failed", f"LogicError: {self.context_lost}")
