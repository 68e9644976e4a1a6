"""`mmbench run` and `mmbench tune`: options in, a plan out, the engine (engine/) and tuning
(runs.py, tune.py) in between, a summary printed at the end."""

from __future__ import annotations

import datetime as dt
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import click
from rich.table import Table

from .. import api, environment, places, source
from ..analysis import series_summary
from ..config import ConfigError, load_config
from ..ops import batched_by_default, get_op, size_forms_help, timing_problem
from ..ops.base import SCOPES
from ..ops.capabilities import must_pad, tune_engine
from ..results import ResultsError, metadata_path, read_results, run_csv, torn_message
from ..sizes import FORMS, SizeSpecError, row_shape
from ..engine import session
from ..engine.outcome import interrupted_message
from ..engine.plan import Point, Selection, Settings, scoped_name
from ..engine.refusals import DEFAULTS, RunRefused, check_new_output, check_output
from ..timing import CACHE_MODES
from ..tuning import batched_run
from ..tuning.batched_run import refuse_batched_resume
from ..tuning.cache import (TuneError, check_writable_cache, describe_cache, read_caches, record, recorded_source,
                            same_code_sources)
from ..tuning.request import TuneRequest
from ..tuning.strategies import candidates, choose, describe
from ..tuning.strategies import replay as replay_strategy
from ..tuning.writeback import record_tuning
from ..variants import REGISTRY, VariantError, format_params, get_variant, tuning_space
from .common import (ARGV, FILE, SEED, Finite, InputError, Interrupted, RunFailed, _int_list, _split, command, console,
                     interrupts_count, refuse_given)

COMMANDS = ("run", "tune")
# What `tune --replay` leaves unused: it reads a recorded tuning and runs nothing.
REPLAY_IGNORES = ("sizes_spec", "runs", "warmup", "cache", "engine", "resume", "prune", "jobs", "output", "dry_run",
                  "pinned_text", "per_shape", "candidates_from", "top", "pool_gpus", "cluster", "scheduler", "workers")
ENGINES = ("auto", "points", "batched")
PRUNE = 0.5  # the batched tuner's default: see engine/batched_local.py
PAPER_SWEEP = "63:2049"
# Samples and warm-up launches a point may take: a noise target stops at this many samples too.
SAMPLES = click.IntRange(1, Settings().max_runs)
WARMUP = click.IntRange(0, Settings().max_runs)


def say(text: str) -> None:
    console.print(text, soft_wrap=True)


@contextmanager
def progress_bar(total: int):
    """Yields the on_row callback of a sweep: a progress line that appears with the first row, so
    a run refused before it starts prints its one error line only."""
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    # The ETA is the points left at the pace of the last 30 s: sizes grow along a sweep, so it is
    # a lower bound while they do.
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        TextColumn("ETA"), TimeRemainingColumn(), console=console, transient=False)
    task = None

    def on_row(row: dict) -> None:
        nonlocal task
        if task is None:
            progress.start()
            task = progress.add_task("sweeping", total=total)
        progress.update(task, advance=1, description=f"{row['variant']} {row['params']} {row_shape(row['m'], row['n'], row['k'])}")

    try:
        yield on_row
    finally:
        if task is not None:  # a bar never started prints nothing, not even the blank line stop() would
            progress.stop()


def cluster_options(fn):
    """--cluster / --scheduler / --workers, shared by run and tune."""
    fn = click.option("--workers", type=click.IntRange(min=1), metavar="N",
                      help="With --cluster local and no GPU points: worker processes (default: one per core).")(fn)
    fn = click.option("--scheduler", metavar="tcp://HOST:PORT",
                      help="Spread the points over a running Dask cluster (dask-jobqueue on Slurm or PBS, ...); "
                           "this process writes every row.")(fn)
    fn = click.option("--cluster", type=click.Choice(["local"]),
                      help="Spread the points over a Dask cluster started here: one worker per GPU (dask-cuda's "
                           "LocalCUDACluster, honouring CUDA_VISIBLE_DEVICES), or CPU processes when no point needs a "
                           "GPU. Needs pip install '.[cluster]'.")(fn)
    return fn


def _cluster_spec(cluster: str | None, scheduler: str | None, workers: int | None, gpus: bool):
    """The cluster a run asked for, or None (Dask is then never imported); gpus: whether some
    point needs a GPU (a local cluster then has one worker per GPU)."""
    if cluster and scheduler:
        raise InputError("--cluster local starts a cluster and --scheduler uses a running one: give one of them")
    if workers is not None and not cluster:
        raise InputError("--workers sizes a cluster that --cluster local starts")
    if workers is not None and gpus:
        raise InputError(f"--workers {workers} sizes a local cluster of CPU processes; these points need a GPU, and "
                         f"--cluster local starts one worker per GPU (CUDA_VISIBLE_DEVICES chooses them)")
    if scheduler is not None and not _address(scheduler):
        raise InputError(f"--scheduler '{scheduler.strip()}': expected an address such as tcp://HOST:8786 (a host and "
                         f"its port)")
    if not (cluster or scheduler):
        return None
    from ..engine.points_dask import ClusterSpec

    return ClusterSpec(scheduler=scheduler, workers=workers)


def _address(text: str) -> bool:
    """Whether text looks like a Dask scheduler's address: [PROTOCOL://]HOST:PORT."""
    host, _, port = text.strip().split("://", 1)[-1].rpartition(":")
    return bool(host) and port.isdigit()


def _execute(points, settings, output, about, *, prepare=None, strict=True, resume=False, previous=None, cluster=None,
             tuning=None):
    """session.execute with a progress bar, then the summary; exit 130 when interrupted, 1 when
    the run failed or (strict) a point was wrong or failed (the tuner expects some to fail)."""
    with progress_bar(len(points)) as on_row:
        outcome = session.execute(points, settings, output, about, list(ARGV), prepare=prepare, resume=resume,
                               previous=previous, on_row=on_row, say=say, cluster=cluster, tuning=tuning)
    if outcome.in_file:  # an interrupted new run may have written nothing
        console.print(_summary(output))
        say(f"results: {output}  (metadata: {metadata_path(output)})")
    if outcome.state == "interrupted":
        raise Interrupted(interrupted_message(output, outcome.in_file, sum(outcome.counts.values())))
    if outcome.failures and strict:
        raise RunFailed(", ".join(f"{n} point(s) {s}" for s, n in outcome.failures.items())
                        + f"; see the reason column of {output}")
    return outcome


def _scopes(scope: str | None, pad: bool, chosen) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    """--scope and --pad read and checked against each chosen variant: one that cannot be timed so
    is refused, never left out."""
    scopes = tuple(dict.fromkeys(_split((scope,)))) if scope is not None else ("kernel",)
    if not scopes:
        raise InputError(f"--scope '{scope}' names no scope; choose from: {', '.join(SCOPES)}")
    for name in scopes:
        if name not in SCOPES:
            raise InputError(f"--scope '{name}'; choose from: {', '.join(SCOPES)}")
    problem = timing_problem(chosen, scopes, (pad,))
    if problem:
        raise InputError(f"--pad: {problem[1]}" if problem[0] == "pad" else f"--scope {problem[0]}: {problem[1]}")
    return scopes, (True,) if pad else (False,)


def _refuse_unused_settings(given: dict, settings: Settings, variants, config: Path | None, scheduler: str | None) -> None:
    """Refuse a setting given (by option or by the config's [run]) that no variant of the run uses,
    or that cannot hold on this machine: it would be recorded in the metadata and do nothing."""
    ctx = click.get_current_context()

    def named(key: str) -> str:
        return f"--{key.replace('_', '-')} {given[key]}" if ctx.params.get(key) is not None else \
            f"{config}: run.{key} = {given[key]}"

    on_gpu, on_cpu = any(v.on_gpu for v in variants), any(not v.on_gpu for v in variants)
    if "cache" in given and not on_gpu:
        raise InputError(f"{named('cache')}: no variant of this run runs on the GPU (a CPU point's caches are never "
                         f"flushed: its rows say hot)")
    if "max_noise" in given and not on_gpu:
        raise InputError(f"{named('max_noise')}: no variant of this run runs on the GPU (a CPU point takes exactly "
                         f"--runs samples)")
    if "threads" in given and not on_cpu:
        raise InputError(f"{named('threads')}: no variant of this run runs on the CPU, whose BLAS threads it sets")
    cores = environment.own_cpus()
    if given.get("threads", 0) > cores and not scheduler:  # a running cluster's workers are elsewhere
        raise InputError(f"{named('threads')}: this process may use {cores} cores; more BLAS threads than cores "
                         f"would measure their contention (and the rows, settings and BLAS would disagree)")
    if settings.max_noise is None:
        refuse_given(ctx, ("noise_clock", "time_budget"), "it applies to a noise target (--max-noise), which this "
                                                          "run does not set")
    if not any(v.backend == "cpu" for v in variants):
        refuse_given(ctx, ("cpu_budget",), "no variant of this run is a compiled CPU loop (backend cpu), the points "
                                           "it budgets")


def _selections(variants, sizes, blocks, params, config, scope=None, pad=False) -> tuple[str, list[Selection], dict]:
    """(run name, selections, settings from the config) from the options or the config file."""
    if config:
        if variants or sizes or blocks or params or scope or pad:
            raise InputError("--config sets variants, sizes, parameters, scopes and padding; do not combine it with "
                             "--variant, --sizes, --block, --params, --scope or --pad")
        try:
            cfg = load_config(config)
        except ConfigError as exc:
            raise InputError(str(exc)) from None
        settings = {k: getattr(cfg, k) for k in cfg.run_keys}  # only what it sets: a resume takes the rest
        return cfg.name, [s.selection() for s in cfg.sweeps], settings
    names = _split(variants)
    if variants and not names:
        raise InputError(f"--variant '{','.join(variants)}' names no variant; choose from: {', '.join(REGISTRY)}")
    try:
        chosen = tuple(dict.fromkeys(get_variant(n) for n in names or ["best"]))
    except VariantError as exc:
        raise InputError(str(exc)) from None
    spec = PAPER_SWEEP if sizes is None else sizes
    try:
        for op in dict.fromkeys(get_op(v.op) for v in chosen):  # each operation reads the spec as its shapes
            op.parse_sizes(spec)
    except SizeSpecError as exc:
        raise InputError(str(exc)) from None
    overrides = _parse_params(params)
    if blocks is not None:
        if "BLOCK" in overrides:
            raise InputError(f"--block {blocks} and --params BLOCK={'/'.join(map(str, overrides['BLOCK']))} both set "
                             f"BLOCK; give one of them")
        overrides["BLOCK"] = _int_list("--block", blocks)
    known = {axis for v in chosen for axis in v.axes}
    for name in overrides:
        if name not in known:
            raise InputError(f"parameter '{name}' belongs to none of {', '.join(v.name for v in chosen)}; "
                             f"their parameters: {', '.join(sorted(known)) or 'none'}")
    scopes, pads = _scopes(scope, pad, chosen)
    return "run", [Selection(chosen, spec, overrides, scopes=scopes, pads=pads)], {}


NO_CACHE = "none"  # --tuning-cache none: no tuned parameters, the variants' defaults


def _reading_caches(given: str | None):
    """The tuning caches a run reads, in lookup order (tuning.cache.read_caches): the user's (a PATH
    given, which must exist; else places.user_cache()), then the shipped one; none with
    --tuning-cache none."""
    if given is not None and given.strip().lower() == NO_CACHE:
        return ()
    if given is not None and not Path(given).is_file():
        raise InputError(f"--tuning-cache {given!r}: no such file; name an existing tuning cache, or none to run "
                         f"with default parameters")
    try:
        return read_caches(Path(given) if given is not None else None)
    except TuneError as exc:
        raise InputError(str(exc)) from None


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


def _parse_params(params: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """--params "BM=128,BK=8/16" -> {"BM": (128,), "BK": (8, 16)}."""
    out = {}
    if params and not _split(params):
        raise InputError(f"--params '{','.join(params)}': expected NAME=V[/V...] pairs, e.g. BM=128,BK=8/16")
    given: dict[str, str] = {}
    for item in _split(params):
        name, eq, values = item.partition("=")
        name = name.strip()
        if not eq or not name:
            raise InputError(f"--params '{item}': expected NAME=V[/V...] pairs, e.g. BM=128,BK=8/16")
        if name in given:  # the last would win silently
            raise InputError(f"--params sets {name} twice ({name}={given[name]} and {item}); give each parameter once "
                             f"({name}={given[name]}/{values.strip()} sweeps both)")
        given[name] = values.strip()
        out[name] = _int_list(f"--params {name}", values.replace("/", ","), minimum=0)  # flags may be 0
    return out


def _print_plan(points: list[Point], skipped: int, output: Path) -> None:
    groups: dict[tuple, list[Point]] = {}
    for p in points:
        groups.setdefault((scoped_name(p.variant.name, p.scope, p.pad), format_params(p.params)), []).append(p)
    table = Table(title=f"plan: {len(points)} points" + (f" ({skipped} already in {output})" if skipped else ""))
    # Parameters fold under the variant and sizes wrap, so the plan fits 80 columns.
    table.add_column("variant, params", overflow="fold", min_width=16, ratio=2)
    for col in ("backend", "cache", "points"):
        table.add_column(col, no_wrap=True)
    table.add_column("sizes", ratio=1)
    for (name, params), pts in groups.items():
        shapes = [str(p.shape) for p in pts]
        shown = ", ".join(shapes) if len(shapes) <= 6 else f"{', '.join(shapes[:3])}, ..., {', '.join(shapes[-2:])}"
        table.add_row(f"{name}\n{params.replace(',', ' ')}" if params else name, pts[0].variant.backend,
                      pts[0].cache, str(len(pts)), shown)
    console.print(table)
    console.print(f"output: {output}", soft_wrap=True)


SUMMARY_ROWS = 50  # a study of the tuned ladder has 39; a tuning hundreds: the fastest shown, every one in the CSV


def _summary(csv_path: Path) -> Table:
    """Per series: points ok and not, the median and peak of its operation's rate (GFLOP/s for
    GEMM, GB/s for a transpose), where the peak was, and the median cv. Up to SUMMARY_ROWS series
    in the file's order; beyond, the fastest by median rate (per operation) and a last row saying
    how many more there are."""
    return _summary_table(read_results(csv_path), csv_path)


def _summary_table(df, csv_path) -> Table:
    series = series_summary(df, lambda op: get_op(op).rate)
    hidden = max(0, len(series) - SUMMARY_ROWS)
    title = f"summary of {csv_path}"
    if hidden:
        first = {op: i for i, op in enumerate(series.op.unique())}
        series = series.assign(_op=series.op.map(first)).sort_values(["_op", "median"], ascending=[True, False],
                                                                     na_position="last", kind="stable")
        series, title = series.head(SUMMARY_ROWS), f"{title}: the {SUMMARY_ROWS} fastest of {len(series)} series"
    table = Table(title=title)
    # A series' parameters go under its name and fold, so the table fits 80 columns.
    table.add_column("variant, params", overflow="fold", min_width=16, ratio=1)
    for col in ("ok", "not ok", "median", "peak", "at size", "cv\nmedian"):
        table.add_column(col, justify="right", overflow="fold")
    for s in series.itertuples(index=False):
        unit = "GFLOP/s" if get_op(s.op).rate.startswith("gflops") else "GB/s"
        variant = scoped_name(s.variant, s.scope, s.pad)
        name = f"{variant}\n{s.params.replace(',', ' ')}" if s.params else variant
        if not s.ok:
            table.add_row(name, "0", s.not_ok, "-", "-", "-", "-")
            continue
        table.add_row(name, str(s.ok), s.not_ok, f"{s.median:.1f}\n{unit}", f"{s.peak:.1f}\n{unit}",
                      str(row_shape(s.m, s.n, s.k)), f"{s.cv_median:.3f}")
    if hidden:
        table.add_row(f"... {hidden} more series: every one is in the CSV", "", "", "", "", "", "")
    return table


@command()
@click.option("--variant", "-v", "variants", multiple=True, metavar="NAME[,NAME...]",
              help="Variant(s) to run; repeat or comma-separate. Default: best. See `mmbench list`.")
@click.option("--sizes", "-s", metavar="SPEC",
              help=f"Sizes to sweep (default {PAPER_SWEEP}, the paper's 189 sizes). Forms: {FORMS}. "
                   "A:B is every n in [A, B] within 1 of a multiple of 32; e.g. 256,512  64:4096:+64  "
                   f"512:8192:x2  1000x37x2049 (M x N x K). {size_forms_help()}")
@click.option("--block", "blocks", metavar="B[,B...]", help="Block sizes to sweep (the BLOCK parameter), e.g. 8,16,32.")
@click.option("--params", "params", multiple=True, metavar="K=V[/V],...",
              help="Set kernel parameters, e.g. BM=128,BK=8/16 (a/b sweeps both); overrides the tuning cache.")
@click.option("--tuning-cache", metavar="PATH|none",
              help="Tuned parameters for variants whose parameters are not set: this cache is read first, then the "
                   f"shipped one. Default: your cache (${places.CACHE_ENV}, else the user data folder's "
                   "tuning-cache.json). none: no tuned parameters, the variants' defaults.")
@click.option("--config", type=FILE,
              help="Run a whole experiment from configs/*.toml (its sweeps and settings).")
@click.option("--runs", type=SAMPLES, help="Timed samples per point (default 10).")
@click.option("--warmup", type=WARMUP, help="Untimed launches before the samples (default 3).")
@click.option("--cache", type=click.Choice(CACHE_MODES), help="cold: flush L2 before every sample (default); hot: no flush.")
@click.option("--threads", type=click.IntRange(min=1), help="CPU BLAS threads (default: the library's); at most "
              "the cores this process may use.")
@click.option("--seed", type=SEED, help=f"Seed of the random inputs (default {DEFAULTS['seed']}).")
@click.option("--max-noise", type=Finite(0, 1, min_open=True, max_open=True), metavar="FRACTION",
              help="Sample until the relative noise (std / mean, samples taken while the SM clock sagged left out) is "
                   "under FRACTION, e.g. 0.005, with --runs as the least number, within --time-budget; the row says "
                   "the noise reached and why sampling stopped. Default: exactly --runs samples.")
@click.option("--noise-clock", type=click.Choice(["events", "kernel"]),
              help="With --max-noise: whose samples the target judges, the events' (default) or the kernel clock's "
                   "(CUPTI; far less noisy at small sizes).")
@click.option("--time-budget", type=Finite(min=0, min_open=True), default=Settings().budget_s,
              show_default=True, metavar="SECONDS", help="With --max-noise: the most sampling time a point may take.")
@click.option("--cpu-budget", type=Finite(min=0, min_open=True), default=Settings().cpu_budget_s,
              show_default=True, metavar="SECONDS",
              help="Time a compiled naive CPU point may take; one estimated longer is a skipped row.")
@click.option("--output", "-o", type=FILE,
              help="Results CSV (metadata goes beside it as .meta.json). Default: RUNS/NAME-TIMESTAMP/NAME-TIMESTAMP.csv, "
                   f"RUNS being the folder of your runs: ${places.RUNS_ENV}, else runs/ in the current folder.")
@click.option("--resume", is_flag=True, help="Skip points already in --output and append the rest, with the "
              "file's measurement settings (a torn last row is set aside and measured again).")
@click.option("--scope", metavar="SCOPE[,SCOPE...]",
              help=f"What a sample covers (GEMM): {', '.join(SCOPES)} (default kernel); each scope is its own points. "
                   "device adds the padding copies on the GPU, end_to_end the host's padding and the transfers.")
@click.option("--pad", is_flag=True, help="GEMM kernels: run on A and B zero-padded to the kernel's tile multiple "
              "(m, n to its tile of C, k to its k-tile) and take C out of the padded result.")
@click.option("--dry-run", is_flag=True, help="Print the plan and exit; needs no GPU.")
@cluster_options
def run(variants, sizes, blocks, params, tuning_cache, config, runs, warmup, cache, threads, seed, max_noise, noise_clock,
        time_budget,
        cpu_budget, output, resume, scope, pad, dry_run, cluster, scheduler, workers):
    """Sweep variants over sizes: verify each point, time it, write a row per point.

    \b
    Examples:
      mmbench run --variant best --sizes 63:2049
      mmbench run -v best,shared,cublas --sizes 256,512,1024 --block 8,16,32
      mmbench run --config configs/zosa2017.toml
    """
    name, selections, cfg = _selections(variants, sizes, blocks, params, config, scope, pad)
    caches = _reading_caches(tuning_cache)
    chosen = {v for sel in selections for v in sel.variants}
    spec = _cluster_spec(cluster, scheduler, workers, any(v.on_gpu for v in chosen))
    if resume and output is None:
        raise InputError("--resume needs --output naming the CSV to continue")
    output = output or run_csv(f"{name}-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}", places.runs_dir())
    interrupts_count(output)
    asked = {"runs": runs, "warmup": warmup, "cache": cache, "threads": threads, "seed": seed, "max_noise": max_noise,
             "noise_clock": noise_clock}
    given = {**cfg, **{k: v for k, v in asked.items() if v is not None}}  # cfg: what the config's [run] sets
    ran = api.plan_run(selections, caches, output, given, resume=resume, say=say, cpu_budget_s=cpu_budget,
                       budget_s=time_budget,
                       refuse_unused=lambda s: _refuse_unused_settings(given, s, chosen, config, scheduler))
    if ran.found and ran.found.torn:
        console.print(torn_message(output, ran.found.torn, "it will be set aside and its point measured again"
                                   if not dry_run and ran.todo else "left in place (nothing is run now)"), soft_wrap=True)
    if dry_run:
        _print_plan(ran.todo, len(ran.points) - len(ran.todo), output)
    elif not ran.todo:
        console.print(f"nothing to do: all {len(ran.points)} points are already in {output}", soft_wrap=True)
    else:
        _execute(ran.todo, ran.settings, output, {"name": name, "config": str(config) if config else None},
                 previous=ran.previous, resume=resume, cluster=spec, tuning=ran.tuning)


@command()
@click.option("--variant", "-v", "variant_name", required=True, help="The variant to tune (one with a tuning space).")
@click.option("--sizes", "-s", "sizes_spec", default="1024,2048,4096", show_default=True, metavar="SPEC",
              help="Shapes to tune at; the best configuration is kept per size class (nearest power of two).")
@click.option("--strategy", type=click.Choice(["brute", "random"]), default="random", show_default=True)
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
@click.option("--jobs", type=click.IntRange(min=1), default=8, show_default=True, help="Parallel nvcc processes.")
@click.option("--output", "-o", type=FILE,
              help="Tuning CSV: one row per configuration and shape (default RUNS/tuning/tune-VARIANT-TIMESTAMP/"
                   f"tune-VARIANT-TIMESTAMP.csv, RUNS being ${places.RUNS_ENV}, else runs/).")
@click.option("--tuning-cache", type=click.Path(dir_okay=False, path_type=Path), metavar="PATH",
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
@click.option("--pool-gpus", is_flag=True, help="On a cluster of GPUs of different models: pool their timings into "
              "one cache entry per model anyway (refused otherwise).")
@cluster_options
def tune(variant_name, sizes_spec, strategy, budget, seed, runs, warmup, cache, engine, resume, prune, jobs, output,
         tuning_cache, dry_run, replay, pinned_text, per_shape, candidates_from, top, pool_gpus, cluster, scheduler,
         workers):
    """Search a variant's parameter space: compile, verify and time every configuration tried,
    record each as a row, and keep the best per size class (or per shape) in your tuning cache
    (or --tuning-cache PATH), which `mmbench run` reads before the shipped one."""
    ctx = click.get_current_context()
    options = TuneOptions(**ctx.params)
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
    pool_gpus: bool
    cluster: str | None
    scheduler: str | None
    workers: int | None


def _tuning_configs(options: TuneOptions):
    """(variant, shapes, configurations to try) of a tuning, as its options and strategy choose them."""
    try:
        variant = get_variant(options.variant_name)
        shapes = tuple(get_op(variant.op).parse_sizes(options.sizes_spec))
        pinned = _parse_params((options.pinned_text,) if options.pinned_text is not None else ())
        narrowed = None
        if options.candidates_from:
            import pandas as pd

            recorded = pd.concat([read_results(p) for p in options.candidates_from])
            narrowed = candidates(recorded, variant, options.top)
            if not narrowed:
                raise TuneError(f"no verified configuration of {variant.name} in "
                                f"{', '.join(map(str, options.candidates_from))}")
        configs = choose(variant, options.strategy, options.budget, options.seed, narrowed, pinned=pinned)
    except (VariantError, SizeSpecError, TuneError, ResultsError) as exc:
        raise InputError(str(exc)) from None
    return variant, shapes, configs


def _tune_request(options: TuneOptions, variant, shapes, configs, cache_path: Path) -> tuple[TuneRequest, Settings]:
    """The tuning the options ask for, and the points engine's settings; InputError where options
    do not fit the engine or the machine. The kernel's source hash is computed here, once."""
    engine = options.engine if options.engine != "auto" else tune_engine(get_op(variant.op))
    if engine == "batched" and (options.runs is not None or options.warmup is not None or options.per_shape):
        raise InputError("the batched engine times one launch per configuration and shape, a size class at a time; "
                         "--runs, --warmup and --per-shape are for --engine points")
    if options.prune is not None and engine != "batched":
        raise InputError(f"--prune {options.prune:g} is for the batched engine (this tuning uses --engine {engine})")
    if options.resume and (engine != "batched" or options.output is None):
        raise InputError("--resume continues a batched tuning file: give --engine batched (or auto) and --output")
    spec = _cluster_spec(options.cluster, options.scheduler, options.workers, variant.on_gpu)
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
                          pool_gpus=options.pool_gpus, cluster=spec)
    return request, settings


def _announce_tuning(request: TuneRequest, options: TuneOptions) -> None:
    if options.pinned_text:
        console.print(f"pinned: {options.pinned_text}", soft_wrap=True)
    console.print(f"{request.variant.name}: {len(tuning_space(request.variant))} configurations satisfy its "
                  f"constraints; trying {len(request.configs)} ({options.strategy}) at {len(request.shapes)} shape(s)",
                  soft_wrap=True)


def _print_tuning_plan(request: TuneRequest, options: TuneOptions) -> None:
    """A dry run: the search, the first configurations it tries, and where its results would go."""
    _announce_tuning(request, options)
    for p in request.configs[:20]:
        console.print(f"  {format_params(p)}", soft_wrap=True)
    if len(request.configs) > 20:
        console.print(f"  ... and {len(request.configs) - 20} more", soft_wrap=True)
    console.print(f"output: {request.output}", soft_wrap=True)
    say(f"tuning cache: {describe_cache(request.cache_path)}")


def _tuning_about(request: TuneRequest, options: TuneOptions) -> dict:
    """What the tuning file's metadata says of the search."""
    return {"name": f"tune-{request.variant.name}",
            "tuning": {"variant": request.variant.name, "strategy": options.strategy, "budget": options.budget,
                       "seed": options.seed, "space": len(tuning_space(request.variant)), "tried": len(request.configs),
                       "per_shape": options.per_shape, "candidates": [str(p) for p in options.candidates_from],
                       "top": options.top}}


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
    points = [Point(variant, p, s, request.cache, pad=unchecked) for s in request.shapes for p in configs]
    _execute(points, settings, request.output, about, strict=False, cluster=request.cluster,
             prepare=lambda r: r.gpu.precompile(variant, configs, request.jobs))
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
        rows = read_results(recorded)
    except ResultsError as exc:
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
    best = replay_strategy(rows, variant, strategy, budget, seed)
    if not best:
        raise RunFailed(f"{recorded} has no configuration of {variant.name} verified at every shape of a class")
    record(cache_path, device, variant.name, current, best, recorded)
    for line in describe(best):
        console.print(f"best {line}", soft_wrap=True)
    console.print(f"written to {describe_cache(cache_path)} ({device.name}, {variant.name} source {current}, "
                  f"replayed from {recorded})", soft_wrap=True)
