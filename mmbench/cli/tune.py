"""`mmbench tune`: the command, its options gathered in one place (TuneOptions), and what it
hands to the tuning package (tuning/): the configurations to try, the request, and the printing."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import click

from .. import places, source
from ..engine.plan import Point, Settings, check_forms
from ..engine.refusals import RunRefused, check_new_output, check_output
from ..ops import batched_by_default, get_op
from ..ops.capabilities import must_pad, tune_engine
from ..results import ResultsError, read_results, run_csv
from ..sizes import SizeSpecError
from ..precisions import DEFAULT, DEFAULT_LAYOUT, PrecisionError, form_suffix
from ..environment import own_cpus
from ..timing import CACHE_MODES
from ..tuning import batched_run
from ..tuning.batched_run import refuse_batched_resume
from ..tuning.cache import (TuneError, check_writable_cache, describe_cache, read_caches, record, recorded_source,
                            same_code_sources)
from ..tuning.request import TuneRequest
from ..tuning.strategies import candidates, choose, describe
from ..tuning.search import SEARCHES
from ..tuning.strategies import STRATEGIES, read_recorded
from ..tuning.strategies import replay as replay_strategy
from ..tuning.plan import shipped_plans
from ..tuning.writeback import record_tuning
from ..variants import VariantError, format_params, get_variant, space_text
from ..variants.model import count_space
from . import running
from .common import ARGV, FILE, SEED, Finite, InputError, RunFailed, command, console, interrupts_count, refuse_given
from ..sweep import NO_CACHE, cluster_spec, isolation_of, parse_params
from .running import SAMPLES, WARMUP, cluster_options, isolation_options, say
from .tune_plan import tune_by_plan

COMMANDS = ("tune",)
# What `tune --replay` leaves unused: it reads a recorded tuning and runs nothing.
REPLAY_IGNORES = ("sizes_spec", "runs", "warmup", "cache", "engine", "resume", "prune", "jobs", "output", "dry_run", "dtype", "layout",
                  "pinned_text", "per_shape", "candidates_from", "top", "pool_gpus", "cluster", "scheduler", "workers",
                  "isolation", "point_timeout")
# What `tune --plan` leaves to its plan.
PLAN_IGNORES = ("variant_name", "sizes_spec", "strategy", "budget", "runs", "warmup", "cache", "engine", "prune", "dtype", "layout",
                "replay", "pinned_text", "per_shape", "candidates_from", "top", "pool_gpus", "cluster", "scheduler",
                "workers")
ENGINES = ("auto", "points", "batched")
PRUNE = 0.5  # the batched tuner's default: see engine/batched_local.py


@command()
@click.option("--variant", "-v", "variant_name", help="The variant to tune (one with a tuning space).")
@click.option("--plan", metavar="PLAN", help="Tune several variants per shape as a plan says: a shipped plan's name "
              f"({', '.join(shipped_plans())}; mmbench/data/plans/) or a plan file (docs/tuning.md). Resumable "
              "(--resume with its --output); takes --output, --jobs, --seed, --tuning-cache, --isolation, --dry-run.")
@click.option("--sizes", "-s", "sizes_spec", default="1024,2048,4096", show_default=True, metavar="SPEC",
              help="Shapes to tune at; the best configuration is kept per size class (nearest power of two).")
@click.option("--strategy", type=click.Choice([*STRATEGIES, *SEARCHES]), default="random", show_default=True,
              help="brute: every configuration; random: --budget of them at random; tpe (Optuna's tree-structured "
                   "Parzen estimator) and ga (its NSGA-II genetic algorithm): --budget of them, each chosen from what "
                   "the ones before measured (with --replay for now).")
@click.option("--budget", type=click.IntRange(min=1), help="Configurations to try (random; the defaults count).")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of the random strategy and the inputs.")
@click.option("--runs", type=SAMPLES, help="Timed samples per point (points engine; default 5).")
@click.option("--warmup", type=WARMUP, help="Untimed launches per point (points engine; default 2).")
@click.option("--cache", type=click.Choice(CACHE_MODES), default="cold", show_default=True)
@click.option("--engine", type=click.Choice(ENGINES), default="auto", show_default=True,
              help="points: every configuration and shape a sweep point with its own row and samples; batched: "
                   "one timed launch each, checked on the GPU, a row per configuration and size class (for "
                   "millions of points, as GEMV's mesh); auto: batched for operations that check sums, "
                   f"{batched_by_default()}, else points.")
@click.option("--resume", is_flag=True, help="Batched engine: continue --output after its last whole size class.")
@click.option("--prune", type=Finite(0, 1, max_open=True), metavar="FRACTION",
              help=f"Batched engine: a configuration slower at a size class's pivot shape than FRACTION of the best's "
                   f"speed is not timed at the class's other shapes (a pruned row); 0 times all (default {PRUNE}).")
@click.option("--jobs", type=click.IntRange(min=1), default=None, callback=lambda ctx, param, value: value or own_cpus(),
              help="Parallel nvcc processes (default: the cores this process may use).")
@click.option("--output", "-o", type=FILE,
              help="Tuning CSV: one row per configuration and shape (default RUNS/tuning/tune-VARIANT-TIMESTAMP/"
                   f"tune-VARIANT-TIMESTAMP.csv, RUNS being ${places.RUNS_ENV}, else runs/).")
@click.option("--tuning-cache", type=FILE, metavar="PATH",
              help=f"Where the best configurations go. Default: your cache (${places.CACHE_ENV}, else the user data "
                   "folder's tuning-cache.json), which run reads before the shipped one.")
@click.option("--dry-run", is_flag=True, help="Print the space and the configurations to try; needs no GPU.")
@click.option("--replay", type=FILE,
              help="No GPU: run the strategy against a recorded tuning CSV and fill the cache from it.")
@click.option("--params", "pinned_text", metavar="K=V[/V],...", help="Pin parameters; search only the rest.")
@click.option("--per-shape", is_flag=True,
              help="Keep the best configuration of every shape, not of every size class; run uses it at that exact shape.")
@click.option("--candidates", "candidates_from", multiple=True, type=FILE,
              help="Search only configurations among the --top fastest at some shape of this tuning CSV (repeatable).")
@click.option("--top", type=click.IntRange(min=1), default=4, show_default=True,
              help="With --candidates: how many of the fastest per recorded shape.")
@click.option("--dtype", metavar="NAME", help="The precision to tune at (default: the variant's first; "
              "docs/precisions.md). Precisions other than fp32 are tuned point by point (--engine points).")
@click.option("--layout", metavar="NAME", help="GEMM: the layout of A and B to tune at (default: the variant's first).")
@click.option("--pool-gpus", is_flag=True, help="On a cluster of GPUs of different models: pool their timings into "
              "one cache entry per model anyway (refused otherwise).")
@cluster_options
@isolation_options
def tune(variant_name, plan, sizes_spec, strategy, budget, seed, runs, warmup, cache, engine, resume, prune, jobs, output,
         tuning_cache, dry_run, replay, pinned_text, per_shape, candidates_from, top, dtype, layout, pool_gpus, cluster,
         scheduler, workers, isolation, point_timeout):
    """Search a variant's parameter space: compile, verify and time every configuration tried,
    record each as a row, and keep the best per size class (or per shape) in your tuning cache
    (or --tuning-cache PATH), which `mmbench run` reads before the shipped one."""
    ctx = click.get_current_context()
    if plan is not None:
        _by_plan(ctx)
        return
    if variant_name is None:
        raise InputError(f"give --variant NAME (the variant to tune) or --plan PLAN (shipped: {', '.join(shipped_plans())})")
    options = TuneOptions(**{k: v for k, v in ctx.params.items() if k != "plan"})
    variant, shapes, configs = _tuning_configs(options)
    cache_path = _writing_cache(tuning_cache)
    if replay:
        refuse_given(ctx, REPLAY_IGNORES, f"a replay (--replay {replay}) runs nothing: it takes the variant, --strategy, "
                                          f"--budget, --seed and --tuning-cache only")
        _replay(variant, replay, strategy, budget, seed, cache_path)
        return
    if not candidates_from:
        refuse_given(ctx, ("top",), "it counts the fastest configurations of --candidates files, and none is given")
    request, settings = _tune_request(options, variant, shapes, configs, cache_path)
    check_output(request.output, compressed_resumes=request.engine == "batched")  # a dry run refuses alike
    if not resume:
        check_new_output(request.output, f"choose another --output"
                                                  f"{' or --resume' if request.engine == 'batched' else ''}")
    if dry_run:
        _print_tuning_plan(request, options)
        return
    if request.engine == "batched":
        refuse_batched_resume(request)
        _announce_tuning(request, options)  # after every refusal: a bad input is one line
        _tune_batched(request, _tuning_about(request, options))
    else:
        interrupts_count(request.output)
        _announce_tuning(request, options)
        _tune_points(request, _tuning_about(request, options), settings)


def _by_plan(ctx: click.Context) -> None:
    """`tune --plan`: the plan names the variants, sizes, configurations and settings."""
    o = ctx.params
    refuse_given(ctx, PLAN_IGNORES, f"the plan (--plan {o['plan']}) names the variants, sizes, configurations and "
                                    f"measurement settings")
    isolation = isolation_of(o["isolation"], o["point_timeout"])
    tune_by_plan(o["plan"], o["output"], o["resume"], o["jobs"], o["seed"], _writing_cache(o["tuning_cache"]),
                 o["dry_run"], isolation)


@dataclass(frozen=True)
class TuneOptions:
    """`mmbench tune`'s options as given, one field per option (the command's parameter names)."""

    variant_name: str
    sizes_spec: str
    strategy: str
    budget: int | None
    seed: int
    runs: int | None
    warmup: int | None
    cache: str
    engine: str
    resume: bool
    prune: float | None
    jobs: int
    output: Path | None
    tuning_cache: Path | None
    dry_run: bool
    replay: Path | None
    pinned_text: str | None
    per_shape: bool
    candidates_from: tuple[Path, ...]
    top: int
    dtype: str | None
    layout: str | None
    pool_gpus: bool
    cluster: str | None
    scheduler: str | None
    workers: int | None
    isolation: str
    point_timeout: float | None


def _tuning_configs(options: TuneOptions):
    """(variant, shapes, configurations to try) of a tuning, as its options and strategy choose them."""
    try:
        variant = get_variant(options.variant_name)
        shapes = tuple(get_op(variant.op).parse_sizes(options.sizes_spec))
        pinned = parse_params((options.pinned_text,) if options.pinned_text is not None else ())
        narrowed = None
        if options.candidates_from:
            import pandas as pd

            recorded = pd.concat([read_results(p) for p in options.candidates_from])
            narrowed = candidates(recorded, variant, options.top)
            if not narrowed:
                raise TuneError(f"no verified configuration of {variant.name} in "
                                f"{', '.join(map(str, options.candidates_from))}")
        if options.strategy in SEARCHES and not options.replay:
            raise TuneError(f"--strategy {options.strategy} replays a recorded tuning (--replay FILE) for now; a tuning "
                            f"on the GPU takes {' or '.join(STRATEGIES)}")
        configs = [] if options.strategy in SEARCHES else choose(variant, options.strategy, options.budget,
                                                                 options.seed, narrowed, pinned=pinned)
    except (VariantError, SizeSpecError, TuneError, ResultsError) as exc:
        raise InputError(str(exc)) from None
    return variant, shapes, configs


def _tune_request(options: TuneOptions, variant, shapes, configs, cache_path: Path) -> tuple[TuneRequest, Settings]:
    """The tuning the options ask for, and the points engine's settings; InputError where options
    do not fit the engine or the machine. The kernel's source hash is computed here, once."""
    try:  # the precision and layout tuned at: those given, else the variant's first
        (dtype,), (layout,), _ = check_forms([variant], [options.dtype or variant.dtypes[0]],
                                             [options.layout or variant.layouts[0]])
    except PrecisionError as exc:
        raise InputError(str(exc)) from None
    typed = (dtype, layout) != (DEFAULT, DEFAULT_LAYOUT)
    # The batched engine builds each configuration once for every shape and checks float32 sums on the GPU;
    # a kernel with #defines bound to the shape is built per shape, and other precisions are checked on the
    # host, so those are tuned point by point.
    engine = options.engine if options.engine != "auto" else "points" if variant.defines or typed else \
        tune_engine(get_op(variant.op))
    if engine == "batched" and typed:
        raise InputError(f"the batched engine checks float32 sums on the GPU; {dtype}, layout {layout} is tuned with "
                         f"--engine points")
    if engine == "batched" and variant.defines:
        raise InputError(f"{variant.name} has #defines bound to the shape ({', '.join(variant.defines)}): it is built "
                         f"per shape, which the batched engine does not do; tune it with --engine points")
    if engine == "batched" and (options.runs is not None or options.warmup is not None or options.per_shape):
        raise InputError("the batched engine times one launch per configuration and shape, a size class at a time; "
                         "--runs, --warmup and --per-shape are for --engine points")
    if options.point_timeout is not None and engine == "batched":
        raise InputError(f"--point-timeout {options.point_timeout:g} is for --engine points (the batched engine runs "
                         f"in this process)")
    if options.prune is not None and engine != "batched":
        raise InputError(f"--prune {options.prune:g} is for the batched engine (this tuning uses --engine {engine})")
    if options.resume and (engine != "batched" or options.output is None):
        raise InputError("--resume continues a batched tuning file: give --engine batched (or auto) and --output")
    spec = cluster_spec(options.cluster, options.scheduler, options.workers, variant.on_gpu)
    if options.pool_gpus and (spec is None or engine == "batched"):
        raise InputError("--pool-gpus pools the timings of GPUs of different models on a cluster (--cluster or "
                         "--scheduler) into one cache entry, for --engine points"
                         + (f"; this tuning uses --engine {engine}" if spec else "; this tuning runs on one machine"))
    settings = Settings(runs=options.runs or 5, warmup=2 if options.warmup is None else options.warmup,
                        cache=options.cache, seed=options.seed, skip_spills=True)
    if engine == "batched" and must_pad(get_op(variant.op), variant):
        raise InputError(f"{variant.name} has no border checks and runs only on padded inputs, which the batched "
                         f"engine does not make: tune it with --engine points")
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    output = options.output or run_csv(f"tune-{variant.name}-{stamp}", places.tuning_runs_dir())
    request = TuneRequest(variant, shapes, tuple(configs), output, cache_path, source.source_hash(variant), engine,
                          cache=options.cache, seed=options.seed, jobs=options.jobs, resume=options.resume,
                          prune=PRUNE if options.prune is None else options.prune, per_shape=options.per_shape,
                          pool_gpus=options.pool_gpus, cluster=spec,
                          isolation=isolation_of(options.isolation, options.point_timeout), dtype=dtype, layout=layout)
    return request, settings


def _announce_tuning(request: TuneRequest, options: TuneOptions) -> None:
    if options.pinned_text:
        console.print(f"pinned: {options.pinned_text}", soft_wrap=True)
    console.print(f"{request.variant.name}: {space_text(request.variant)} configurations satisfy its "
                  f"constraints; trying {len(request.configs)} ({options.strategy}) at {len(request.shapes)} shape(s)"
                  + form_suffix(request.dtype, request.layout), soft_wrap=True)


def _print_tuning_plan(request: TuneRequest, options: TuneOptions) -> None:
    """A dry run: the search, the first configurations it tries, and where its results would go."""
    _announce_tuning(request, options)
    for p in request.configs[:20]:
        console.print(f"  {format_params(p)}", soft_wrap=True)
    if len(request.configs) > 20:
        console.print(f"  ... and {len(request.configs) - 20} more", soft_wrap=True)
    console.print(f"output: {request.output}", soft_wrap=True)
    say(f"tuning cache: {describe_cache(request.cache_path)}")


def _space_count(variant):
    """The space's size for the metadata: the count, or "more than N" for a space too large to count."""
    count, whole = count_space(variant)
    return count if whole else f"more than {count}"


def _tuning_about(request: TuneRequest, options: TuneOptions) -> dict:
    """What the tuning file's metadata says of the search."""
    return {"name": f"tune-{request.variant.name}",
            "tuning": {"variant": request.variant.name, "strategy": options.strategy, "budget": options.budget,
                       "seed": options.seed, "space": _space_count(request.variant), "tried": len(request.configs),
                       "per_shape": options.per_shape, "candidates": [str(p) for p in options.candidates_from],
                       "top": options.top, "dtype": request.dtype, "layout": request.layout}}


def _tune_batched(request: TuneRequest, about: dict) -> None:
    """The batched engine's tuning, then what it found and where it went."""
    variant, prune = request.variant, request.prune
    classes = len({get_op(variant.op).size_class(s) for s in request.shapes})
    say(f"batched: {len(request.configs)} configurations x {len(request.shapes)} shapes in {classes} size classes, "
        f"one timed launch each ({request.cache} cache"
        f"{'' if prune == 0 else f'; pruned under {prune:g} of the best at each pivot'})")
    about = {**about, "tuning": {**about["tuning"], "engine": "batched"}}
    best, device, counts = batched_run.tune_batched(request, about, list(ARGV), say=say)
    say(f"rows: {', '.join(f'{n} {k}' for k, n in counts.items() if k != 'wall_s')}; "
        f"{counts.get('wall_s', 0):.0f} s measuring")
    say(f"best configuration in {len(best)} size classes written to {describe_cache(request.cache_path)} "
        f"({device.name}, {variant.name} source {request.source_hash})")


def _tune_points(request: TuneRequest, about: dict, settings: Settings) -> None:
    """The points engine's tuning (every configuration at every shape a sweep point), then its
    best configurations into the cache."""
    variant, configs = request.variant, list(request.configs)
    unchecked = must_pad(get_op(variant.op), variant)  # a kernel without border checks runs padded
    points = [Point(variant, p, s, request.cache, pad=unchecked, dtype=request.dtype, layout=request.layout)
              for s in request.shapes for p in configs]
    builds = list(dict.fromkeys(p.compiled_params for p in points))  # at the point's precision and layout
    running._execute(points, settings, request.output, about, strict=False, cluster=request.cluster,
                     prepare=lambda r: r.gpu.precompile(variant, builds, request.jobs, wait=False), isolation=request.isolation)
    try:
        best, device = record_tuning(request)
    except RunRefused as exc:
        raise InputError(str(exc)) from None
    for line in describe(best):
        say(f"best {line}")
    say(f"written to {describe_cache(request.cache_path)} ({device.name}, {variant.name} source {request.source_hash})")


def _replay(variant, recorded: Path, strategy: str, budget: int | None, seed: int, cache_path: Path) -> None:
    from ..results import read_metadata

    try:
        classes, rows = read_recorded(recorded, variant)
    except (ResultsError, TuneError, ValueError) as exc:
        raise InputError(str(exc)) from None
    try:
        device, measured_hash = recorded_source(read_metadata(recorded), variant.name)
    except ResultsError as exc:
        raise InputError(str(exc)) from None
    current = source.source_hash(variant)
    if not device or not measured_hash:
        raise InputError(f"{recorded}: its metadata names no GPU or no {variant.name} kernel source hash")
    try:
        equivalent = same_code_sources(read_caches(cache_path), variant.name, current)
    except TuneError as exc:
        raise InputError(str(exc)) from None
    if measured_hash not in equivalent:
        raise InputError(f"{recorded} measured {variant.name} source {measured_hash}, but the kernel is now {current}: "
                         f"its results would be stale; tune again")
    if measured_hash != current:
        say(f"{recorded} measured {variant.name} source {measured_hash}: the same PTX as today's {current} "
            f"(scripts/same_code.py, as the tuning caches record)")
    mine = (rows[rows.variant == variant.name] if "variant" in rows else rows) if rows is not None else None
    if mine is None:  # a batched tuning: one precision and layout, its metadata's (fp32, nn before they were recorded)
        tuned = read_metadata(recorded).get("tuning") or {}
        forms = [(tuned.get("dtype", DEFAULT), tuned.get("layout", DEFAULT_LAYOUT))]
    else:
        forms = sorted({(d, lay) for d, lay in zip(mine.get("dtype", [DEFAULT] * len(mine)),
                                                  mine.get("layout", [DEFAULT_LAYOUT] * len(mine)))})
    if len(forms) > 1:  # a configuration's speed at one precision says nothing of another's
        raise InputError(f"{recorded} holds {variant.name} rows of {len(forms)} precisions and layouts "
                         f"({', '.join(' '.join(f) for f in forms)}); replay a tuning of one")
    form = forms[0] if forms else (DEFAULT, DEFAULT_LAYOUT)
    best = replay_strategy(classes, variant, strategy, budget, seed)
    if not best:
        raise RunFailed(f"{recorded} has no configuration of {variant.name} verified at every shape of a class")
    record(cache_path, device, variant.name, current, best, recorded, *form)
    for line in describe(best):
        console.print(f"best {line}", soft_wrap=True)
    console.print(f"written to {describe_cache(cache_path)} ({device.name}, {variant.name} source {current}, "
                  f"replayed from {recorded})", soft_wrap=True)


def _writing_cache(given: Path | None) -> Path:
    """The cache a tuning records its best configurations in: the one given, else the user's
    (places.user_cache()); refused before anything is measured where that cannot be."""
    if given is not None and str(given).strip().lower() == NO_CACHE:
        raise InputError(f"--tuning-cache {NO_CACHE} is for run: a tuning records its best configurations in a cache "
                         f"(default: yours, {places.user_cache()})")
    path = given if given is not None else places.user_cache()
    try:
        check_writable_cache(path)
    except TuneError as exc:
        raise InputError(str(exc)) from None
    return path
