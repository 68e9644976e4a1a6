"""A tuning's options resolved: the variant, its shapes and the configurations its strategy tries
(configurations), then the engine, precision, output and settings it runs with (request).
RunRefused, one line, where the options do not fit the variant, the engine or the machine; nothing
is touched here but the kernel's source, hashed once."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path

from .. import places, source
from ..environment import own_cpus
from ..engine.options import cluster_spec, isolation_of, parse_params
from ..engine.plan import Settings, check_forms
from ..engine.refusals import RunRefused
from ..ops import get_op
from ..ops.capabilities import must_pad, tune_engine
from ..precisions import DEFAULT, DEFAULT_LAYOUT, PrecisionError
from ..results import ResultsError, read_results, run_csv
from ..sizes import SizeSpecError
from ..variants import VariantError, get_variant
from .asked import POOL_GPUS
from .cache import TuneError
from .request import AUTO, PRUNE, TuneOptions, TuneRequest
from .search import SEARCHES
from .strategies import STRATEGIES, candidates, choose, needs_budget, no_space


def with_strategy(options: TuneOptions) -> TuneOptions:
    """The options with --strategy auto resolved: forest, which chooses each configuration from what
    the ones before measured, except where the tuning narrows the space (--params, --candidates) or
    runs on the batched engine (asked for, or auto's choice for the operation, as GEMV's): random,
    whose configurations are chosen before any is measured. An unknown variant or form is left to
    configurations() and request() to name."""
    if options.strategy != AUTO:
        return options
    narrowed = options.params is not None or bool(options.candidates)
    return replace(options, strategy="random" if narrowed or _batched(options) else "forest",
                   given=options.given - {"strategy"})  # named as the default's, however it was asked for


def _batched(options: TuneOptions) -> bool:
    """Whether the tuning runs on the batched engine (a replay runs none)."""
    if options.replay:
        return False
    if options.engine != "auto":
        return options.engine == "batched"
    try:
        variant = get_variant(options.variant)
        dtype, layout = _form(options, variant)
    except (VariantError, PrecisionError):
        return False
    return _engine(options, variant, (dtype, layout) != (DEFAULT, DEFAULT_LAYOUT)) == "batched"


def _form(options: TuneOptions, variant) -> tuple[str, str]:
    """The precision and layout tuned at: those given, else the variant's first (PrecisionError where
    the variant does not take them)."""
    (dtype,), (layout,), _ = check_forms([variant], [options.dtype or variant.dtypes[0]],
                                         [options.layout or variant.layouts[0]])
    return dtype, layout


def configurations(options: TuneOptions):
    """(variant, shapes, configurations to try) of a tuning, as its options and strategy choose them
    (none for a search, which chooses as it replays)."""
    try:
        variant = get_variant(options.variant)
        shapes = tuple(get_op(variant.op).parse_sizes(options.sizes))
        pinned = parse_params((options.params,) if options.params is not None else ())
        narrowed = None
        if options.candidates:
            import pandas as pd

            recorded = pd.concat([read_results(Path(p)) for p in options.candidates])
            narrowed = candidates(recorded, variant, options.top)
            if not narrowed:
                raise TuneError(f"no verified configuration of {variant.name} in "
                                f"{', '.join(map(str, options.candidates))}")
        if options.strategy in SEARCHES and not options.replay and (options.params or options.candidates):
            raise TuneError(f"--strategy {options.strategy} searches the whole space; --params and --candidates narrow "
                            f"it for {' and '.join(STRATEGIES)}")
        if not variant.space:
            raise no_space(variant)
        default = "strategy" not in options.given  # --strategy auto chose it
        if options.strategy in SEARCHES and not options.budget:
            raise needs_budget(options.strategy, default)
        if options.strategy in SEARCHES:  # it chooses as it measures; a dry run shows its first batch
            configs = _first_batch(variant, options) if options.dry_run else []
        else:
            configs = choose(variant, options.strategy, options.budget, options.seed, narrowed, pinned=pinned,
                             default=default)
    except (VariantError, SizeSpecError, TuneError, ResultsError) as exc:
        raise RunRefused(str(exc)) from None
    return variant, shapes, configs


def _first_batch(variant, options: TuneOptions) -> list:
    """The configurations a search measures first on the GPU (its defaults, then draws of its seed),
    known before anything is measured."""
    from .search import proposals
    from .searching import BATCH

    return list(next(proposals(variant, options.strategy, options.budget, options.seed, batch=BATCH)))


def jobs(options: TuneOptions) -> int:
    """The nvcc processes a tuning compiles with: those asked for, else one per core it may use."""
    return options.jobs if options.jobs is not None else own_cpus()


def _engine(options: TuneOptions, variant, typed: bool) -> str:
    """The engine a tuning runs on: the one asked for, else batched where the operation checks sums
    on the GPU (tune_engine). The batched engine builds each configuration once for every shape and
    checks float32 sums on the GPU; a kernel with #defines bound to the shape is built per shape,
    and other precisions are checked on the host, so those are tuned point by point."""
    if options.engine != "auto":
        return options.engine
    return "points" if variant.defines or typed else tune_engine(get_op(variant.op))


def request(options: TuneOptions, variant, shapes, configs, cache_path: Path) -> tuple[TuneRequest, Settings]:
    """The tuning the options ask for, and the points engine's settings; RunRefused where options
    do not fit the engine or the machine. The kernel's source hash is computed here, once."""
    try:
        dtype, layout = _form(options, variant)
    except PrecisionError as exc:
        raise RunRefused(str(exc)) from None
    typed = (dtype, layout) != (DEFAULT, DEFAULT_LAYOUT)
    engine = _engine(options, variant, typed)
    if options.strategy in SEARCHES and engine == "batched":
        if options.engine == "batched":
            raise RunRefused(f"--strategy {options.strategy} measures configurations as it chooses them, a batch at a "
                             f"time: it runs on --engine points")
        engine = "points"  # a search measures as it chooses: point by point
    if engine == "batched" and typed:
        raise RunRefused(f"the batched engine checks float32 sums on the GPU; {dtype}, layout {layout} is tuned with "
                         f"--engine points")
    if engine == "batched" and variant.defines:
        raise RunRefused(f"{variant.name} has #defines bound to the shape ({', '.join(variant.defines)}): it is built "
                         f"per shape, which the batched engine does not do; tune it with --engine points")
    if engine == "batched" and (options.runs is not None or options.warmup is not None or options.per_shape):
        raise RunRefused("the batched engine times one launch per configuration and shape, a size class at a time; "
                         "--runs, --warmup and --per-shape are for --engine points")
    if options.prune is not None and engine != "batched":
        raise RunRefused(f"--prune {options.prune:g} is for the batched engine (this tuning uses --engine {engine})")
    if options.resume and (engine != "batched" or options.output is None):
        raise RunRefused("--resume continues a batched tuning file: give --engine batched (or auto) and --output")
    spec = cluster_spec(options.cluster, options.scheduler, options.workers, variant.on_gpu)
    if options.pool_gpus and (spec is None or engine == "batched"):
        raise RunRefused(f"{POOL_GPUS}, for --engine points"
                         + (f"; this tuning uses --engine {engine}" if spec else "; this tuning runs on one machine"))
    settings = Settings(runs=options.runs or 5, warmup=2 if options.warmup is None else options.warmup,
                        cache=options.cache, seed=options.seed, skip_spills=True)
    if engine == "batched" and must_pad(get_op(variant.op), variant):
        raise RunRefused(f"{variant.name} has no border checks and runs only on padded inputs, which the batched "
                         f"engine does not make: tune it with --engine points")
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    output = Path(options.output) if options.output is not None else \
        run_csv(f"tune-{variant.name}-{stamp}", places.tuning_runs_dir())
    tuning = TuneRequest(variant, shapes, tuple(configs), output, cache_path, source.source_hash(variant), engine,
                         cache=options.cache, seed=options.seed, jobs=jobs(options), resume=options.resume,
                         prune=PRUNE if options.prune is None else options.prune, per_shape=options.per_shape,
                         pool_gpus=options.pool_gpus, cluster=spec,
                         isolation=isolation_of(options.isolation, options.point_timeout), dtype=dtype, layout=layout)
    return tuning, settings
