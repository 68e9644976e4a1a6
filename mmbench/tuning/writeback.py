"""A finished tuning's best configurations into the tuning cache, for both engines: the points
engine's results CSV (best per size class or shape, by geometric mean over its shapes) and the
batched engine's whole size classes (its own CSV.gz)."""

from __future__ import annotations

import numpy as np

from ..analysis import with_forms
from ..engine import batched_local as batched
from ..results import read_metadata, read_results
from ..engine.refusals import RunAborted, RunRefused
from ..vocabulary import DeviceId
from .cache import record
from .request import TuneRequest
from .strategies import best_per_class


def record_tuning(request: TuneRequest) -> tuple[dict, DeviceId]:
    """After a points tuning: its best configuration per size class (or shape) into the cache, keyed
    by the GPU its metadata names (a cluster's workers of one model merge into that model's entry).
    Returns (best, device); RunAborted when none verified, RunRefused when the run mixed GPU models
    and pool_gpus is not set (with it, the pooled best goes under each model's name)."""
    output, variant = request.output, request.variant
    rows = with_forms(read_results(output))  # the rows of the form tuned (a plan may tune others in the file)
    rows = rows[(rows.dtype == request.dtype) & (rows.layout == request.layout)]
    # and of the shapes it was tuned at (a plan may tune a variant per shape at some, per class at others)
    shapes = {(s.m, s.n, s.k) for s in request.shapes}
    rows = rows[np.array([(m, n, k) in shapes for m, n, k in zip(rows.m, rows.n, rows.k)], dtype=bool)]
    best = best_per_class(rows, variant.name, request.per_shape)
    if not best:
        raise RunAborted(f"no configuration of {variant.name} was verified at every shape; see {output}")
    meta = read_metadata(output)
    gpu = meta.get("gpu") or {}  # the GPU the tuning ran on, as its metadata records
    models = gpu.get("mixed") or [gpu.get("name") or "unknown GPU"]
    if len(models) > 1 and not request.pool_gpus:
        raise RunRefused(f"{output} was measured on GPUs of different models ({', '.join(models)}); their timings "
                         f"do not pool into one cache entry: tune on one model, or pass --pool-gpus")
    facts = {g["name"]: g for g in (meta.get("cluster") or {}).get("gpus", [])} or {models[0]: gpu}
    for name in models:
        device = DeviceId(name, facts.get(name, gpu).get("arch"), facts.get(name, gpu).get("sm_count"))
        record(request.cache_path, device, variant.name, request.source_hash, best, output, request.dtype,
               request.layout)
    return best, device


def batched_device(request: TuneRequest, errors: list) -> DeviceId:
    """The GPU a cluster's batched tuning is recorded under: the one model its metadata names;
    RunAborted when its workers' GPUs were of several models, or none reported one."""
    output = request.output
    recorded = read_metadata(output).get("gpu") or {}
    if recorded.get("mixed"):
        raise RunAborted(f"{output} was measured on GPUs of different models ({', '.join(recorded['mixed'])}); "
                         f"their classes are not pooled into the tuning cache")
    if not recorded.get("name"):
        raise RunAborted(f"{output}: no worker reported its GPU, so nothing is recorded in {request.cache_path}"
                         + (f" ({errors[0]})" if errors else ""))
    return DeviceId(recorded["name"], recorded.get("arch"), recorded.get("sm_count"))


def record_batched(request: TuneRequest, device: DeviceId) -> dict:
    """A batched tuning file's whole classes: compressed to CSV.gz (a resume unpacks it), and the
    best configuration of each into the tuning cache (also when interrupted: a class is whole)."""
    output = request.output
    best = batched.best_per_class(batched.read_rows(output))
    final = batched.compress(output) if output.exists() else batched.gz_path(output)
    if best:
        record(request.cache_path, device, request.variant.name, request.source_hash, best, final)
    return best
