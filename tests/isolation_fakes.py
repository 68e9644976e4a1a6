"""Runners that fail as a faulty kernel would, at the point of size 5 (or m = 48 on the cluster):
the isolated engine's child builds one of these instead of a LocalPoints (Isolation.runner), so the
CPU tests can kill, hang and poison a child without a GPU. The Tuner* runners do the same for a
batched tuning's child (Isolation.batched_runner), at one configuration and shape."""

from __future__ import annotations

import math
import os
import signal
import time
from types import SimpleNamespace

from mmbench.engine import rows
from mmbench.engine.batched_child import ChildTuner
from mmbench.engine.batched_local import ConfigFault, LocalBatched, Measured
from mmbench.engine.points_local import LocalPoints
from mmbench.ops import get_op

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


# -- a batched tuning's child (batched_child.ChildTuner) on a stand-in GPU --------------------------
# Every configuration is verified in 0.01 ms at every shape, but the one of BLOCKSIZE 96 at m = 24
# (the sixth shape of GEMV's cell 5x5) faults as the runner says: in a shape's batches, or run alone
# (one_by_one: the parent is pinning the fault on a configuration).
STAND_IN = SimpleNamespace(facts=SimpleNamespace(name="Stand-in GPU", uuid="GPU-0", arch="sm_90", sm_count=132),
                           clock=SimpleNamespace(facts=dict))
FAULT_BLOCK, FAULT_M = 96, 24
ILLEGAL = "cuEventSynchronize failed: an illegal memory access was encountered"


class StandInShapes:
    """BatchedTuner's part that times a shape, on no GPU."""

    def __init__(self, variant, configs, fault, at_shape=lambda shape: None):
        self.variant, self.configs, self.op, self.fault = variant, list(configs), get_op(variant.op), fault
        self.at_shape = at_shape
        self.kernels, self.problems = {}, {}

    def shape(self, shape, inputs, untimed, one_by_one=None):
        self.at_shape(shape)
        out = []
        for c, params in enumerate(self.configs):
            if c in untimed:
                out.append(Measured(untimed[c].status, untimed[c].reason, math.nan, math.nan))
                continue
            if one_by_one is not None:
                one_by_one(c)
            if dict(params)["BLOCKSIZE"] == FAULT_BLOCK and shape.m == FAULT_M:
                self.fault(c, one_by_one is not None)
            out.append(Measured("ok", "", 0.01, 0.1))
        return out


class TunerFaulty(ChildTuner):
    def open(self):
        return LocalBatched(STAND_IN, self.variant, self.configs, self.settings.cache, self.settings.l2_flush)

    def prepare(self, jobs):
        self.local.tuner = StandInShapes(self.variant, self.configs, self.fault, self.at_shape)
        return [f"loaded {len(self.configs)} stand-in configurations"]

    def context_works(self):
        return True

    def fault(self, config, alone):
        pass  # a healthy tuner: nothing faults

    def at_shape(self, shape):
        pass


class TunerExitsAt(TunerFaulty):
    def fault(self, config, alone):
        os._exit(7)


class TunerKilledAt(TunerFaulty):
    def fault(self, config, alone):
        os.kill(os.getpid(), signal.SIGKILL)


class TunerHangsAt(TunerFaulty):
    def fault(self, config, alone):
        time.sleep(3600)


class TunerLosesContextAt(TunerFaulty):
    """Fails as an out-of-bounds kernel does: in the batches, an error at a synchronize after which
    the context does not work; alone, BatchedTuner._time_alone's ConfigFault."""

    broken = False

    def fault(self, config, alone):
        if alone:
            raise ConfigFault(config, f"LogicError: {ILLEGAL}")
        self.broken = True
        raise RuntimeError(ILLEGAL)

    def context_works(self):
        return not self.broken


class TunerFaultsOnce(TunerFaulty):
    """Killed at the fault the first time on this machine only (a file marks it): a fault that does
    not come back when its shape runs one configuration at a time."""

    def fault(self, config, alone):
        marker = os.environ["MMBENCH_TEST_FAULTED"]
        if not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)


class TunerDiesAtShape(TunerFaulty):
    """Exits as it starts the shape of the fault, before any configuration runs there."""

    def at_shape(self, shape):
        if shape.m == FAULT_M:
            os._exit(7)
