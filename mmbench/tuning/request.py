"""One tuning as data, twice: as asked for (TuneOptions: `mmbench tune`'s options or
`mmbench.tune(...)`'s keyword arguments, as given) and as resolved (TuneRequest: what it tunes,
where its rows and its best configurations go, and how it measures). The command line and the
Python API build the first; asked.py checks it and resolve.py turns it into the second, which
the engines' tuning runs and the write-back take whole instead of a dozen arguments."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..sizes import Shape
from ..variants import Params, Variant

ENGINES = ("auto", "points", "batched")
AUTO = "auto"  # the default strategy: forest where a tuning searches point by point, else random (resolve.py)
PRUNE = 0.5  # the batched tuner's default: see engine/batched_local.py


@dataclass(frozen=True)
class TuneOptions:
    """A tuning as asked for: one field per `mmbench tune` option, named as the option (--per-shape:
    per_shape) and in its order, with its default. given: the names the user gave (a default left
    alone is not given), which a replay and a plan refuse where they would ignore them."""

    variant: str | None = None
    plan: str | None = None  # a shipped plan's name or a plan file (tuning/plan.py)
    sizes: str = "1024,2048,4096"
    strategy: str = AUTO
    budget: int | None = None
    seed: int = 0
    runs: int | None = None  # None: the points engine's 5
    warmup: int | None = None  # None: the points engine's 2
    cache: str = "cold"
    engine: str = "auto"  # one of ENGINES
    resume: bool = False
    prune: float | None = None  # None: PRUNE
    jobs: int | None = None  # None: the cores this process may use (environment.own_cpus())
    output: Path | None = None  # None: RUNS/tuning/tune-NAME-TIMESTAMP/tune-NAME-TIMESTAMP.csv
    tuning_cache: Path | None = None  # None: yours (places.user_cache())
    dry_run: bool = False
    replay: Path | None = None
    params: str | None = None  # pinned parameters, "BK=8,BM=64/128"
    per_shape: bool = False
    candidates: tuple[Path, ...] = ()
    top: int = 4
    dtype: str | None = None  # None: the variant's first
    layout: str | None = None
    pool_gpus: bool = False
    cluster: str | None = None
    scheduler: str | None = None
    workers: int | None = None
    isolation: str = "process"
    point_timeout: float | None = None
    given: frozenset[str] = frozenset()


DEFAULTS = TuneOptions()
OPTIONS = tuple(f.name for f in fields(TuneOptions) if f.name != "given")  # the options, in their order


def spelled(name: str) -> str:
    """How the command line spells an option's field: per_shape -> --per-shape."""
    return "--" + name.replace("_", "-")


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
    jobs: int = 8  # parallel nvcc processes (TuneOptions' None: resolve.jobs)
    resume: bool = False  # batched: continue output after its last whole size class
    prune: float = 0.0  # batched: see engine/batched_local.py
    per_shape: bool = False  # points: the best of every shape, not of every size class
    pool_gpus: bool = False  # points on a cluster: pool GPUs of different models into each one's entry
    cluster: Any = None  # a cluster.ClusterSpec, or None: this machine
    isolation: Any = None  # an engine.points_isolated.Isolation (None: in this process)
    dtype: str = "fp32"  # the precision and layout tuned at (precisions.py)
    layout: str = "nn"
