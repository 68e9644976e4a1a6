"""The points engine's tuning run: every configuration at every shape an ordinary sweep point with
its own row and samples (compiled in parallel first), then its best configurations into the
tuning cache (writeback.py)."""

from __future__ import annotations

from ..engine.plan import Point, Settings
from ..ops import get_op
from ..ops.capabilities import must_pad
from ..vocabulary import DeviceId
from .measure import Hooks, measure
from .request import TuneRequest
from .writeback import record_tuning


def points_of(request: TuneRequest) -> list[Point]:
    """Every configuration of the request at each of its shapes, shape by shape."""
    variant = request.variant
    unchecked = must_pad(get_op(variant.op), variant)  # a kernel without border checks runs padded
    return [Point(variant, p, s, request.cache, pad=unchecked, dtype=request.dtype, layout=request.layout)
            for s in request.shapes for p in request.configs]


def tune_points(request: TuneRequest, about: dict, settings: Settings, hooks: Hooks) -> tuple[dict, DeviceId]:
    """Measure the request's configurations at its shapes into request.output, then record the best
    per size class (or shape) in its cache: (best, the GPU recorded under). RunInterrupted on
    Ctrl-C; RunAborted where none verified; RunRefused for GPUs of several models, unpooled."""
    variant, points = request.variant, points_of(request)
    builds = list(dict.fromkeys(p.compiled_params for p in points))  # at the point's precision and layout
    measure(points, settings, request.output, about, hooks, cluster=request.cluster, isolation=request.isolation,
            prepare=lambda r: r.precompile_configs(variant, builds, request.jobs, wait=False))
    return record_tuning(request)
