"""One `mmbench tune` as data: what it tunes, where its rows and its best configurations go, and
how it measures. The CLI builds it from the options; the engines' tuning runs and the write-back
take it whole instead of a dozen arguments."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..sizes import Shape
from ..variants import Params, Variant


@dataclass(frozen=True)
class TuneRequest:
    variant: Variant
    shapes: tuple[Shape, ...]
    configs: tuple[Params, ...]  # the configurations the strategy chose, the defaults first
    output: Path  # the tuning's results file (the batched engine: compressed to X.csv.gz when done)
    cache_path: Path  # the tuning cache its best configurations go into
    source_hash: str  # the kernel's, computed once: the cache keys and the metadata record it
    engine: str = "points"  # points or batched
    cache: str = "cold"  # the L2 cache state of the timings
    seed: int = 0
    jobs: int = 8  # parallel nvcc processes
    resume: bool = False  # batched: continue output after its last whole size class
    prune: float = 0.0  # batched: see engine/batched_local.py
    per_shape: bool = False  # points: the best of every shape, not of every size class
    pool_gpus: bool = False  # points on a cluster: pool GPUs of different models into each one's entry
    cluster: Any = None  # a cluster.ClusterSpec, or None: this machine
    isolation: Any = None  # points: an engine.points_isolated.Isolation (None: in this process)
    dtype: str = "fp32"  # the precision and layout tuned at (precisions.py)
    layout: str = "nn"
