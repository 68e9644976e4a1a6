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
    """Every configuration of the request at each of its shapes, shape by shape, the costliest shape
    first. Where nvcc still builds the configurations (a cold compile cache), the first shape's points
    wait on it, one module after another: its measuring overlaps the builds, and what follows them is
    the cheaper shapes' (a cold dbuf tuning at 2048 and then 4096 on an H100 measured the 4096 points,
    about 7 s, after nvcc's 17.5 s)."""
    variant, op = request.variant, get_op(request.variant.op)
    unchecked = must_pad(op, variant)  # a kernel without border checks runs padded
    shapes = sorted(request.shapes, key=lambda s: (op.flops(s), op.min_bytes(s, request.dtype)), reverse=True)
    return [Point(variant, p, s, request.cache, pad=unchecked, dtype=request.dtype, layout=request.layout)
            for s in shapes for p in request.configs]


def tune_points(request: TuneRequest, about: dict, settings: Settings, hooks: Hooks) -> tuple[dict, DeviceId]:
    """Measure the request's configurations at its shapes into request.output, then record the best
    per size class (or shape) in its cache: (best, the GPU recorded under). RunInterrupted on
    Ctrl-C; RunAborted where none verified; RunRefused for GPUs of several models, unpooled."""
    variant, points = request.variant, points_of(request)
    builds = list(dict.fromkeys(p.compiled_params for p in points))  # at the point's precision and layout
    measure(points, settings, request.output, about, hooks, cluster=request.cluster, isolation=request.isolation,
            prepare=lambda r: r.precompile_configs(variant, builds, request.jobs, wait=False))
    return record_tuning(request)
