"""A point's row of a results CSV (schema.py's columns): its identity, status and event times,
the producers that read a point. They live in the engine, beside the Point they read, so that
schema.py, which every layer reads, imports nothing above it."""

from __future__ import annotations

from typing import Sequence

from ..ops.capabilities import Padded, needs
from .. import schema
from ..schema import join_samples, utc_now
from ..timing import summarize
from ..variants import format_params
from .plan import Point, Settings


def row(point: Point, settings: Settings, status: str, reason: str = "", **fields) -> dict:
    """A point's row: its identity and status, and the measured fields (timing_fields, ...)."""
    s = point.shape
    return {"op": point.variant.op, "variant": point.variant.name, "label": point.variant.label,
            "backend": point.variant.backend, "params": format_params(point.params), "m": s.m, "n": s.n, "k": s.k,
            "dtype": point.dtype, "layout": point.layout,
            "cache": point.cache, "scope": point.scope, "pad": int(point.pad), "padded_shape": padded_shape(point),
            "status": status, "reason": reason, "runs": settings.runs, "warmup": settings.warmup,
            "finished_at": utc_now(), "host": schema.HOST, **fields}  # read here: where this process runs


def padded_shape(point: Point) -> str:
    """"MxNxK" of the shape a padded point's kernel ran at ("" unpadded, or when it cannot pad)."""
    if not point.pad:
        return ""
    try:
        # the parameters the kernel is compiled with (a typed kernel's precision can set its tile), as the runner pads
        return str(needs(point.op, Padded).padded_shape(point.variant, point.compiled_params, point.shape))
    except ValueError:  # a ScopeError, or an operation without padding
        return ""


def timing_fields(point: Point, times_ms: Sequence[float]) -> dict:
    """The event times' columns: statistics, rates from the operation's work, every sample."""
    st = summarize(times_ms)
    flops, nbytes = point.op.flops(point.shape), point.op.min_bytes(point.shape, point.dtype)
    return {"time_ms_mean": st.mean, "time_ms_median": st.median, "time_ms_min": st.min,
            "time_ms_max": st.max, "time_ms_std": st.std, "cv": st.cv,
            # An operation that computes nothing (a transpose) has no GFLOP/s, not 0 GFLOP/s.
            "gflops_mean": flops / (st.mean * 1e6) if flops else None,
            "gflops_median": flops / (st.median * 1e6) if flops else None,
            "gbytes_per_s": nbytes / (st.median * 1e6), "time_ms_samples": join_samples(times_ms)}
