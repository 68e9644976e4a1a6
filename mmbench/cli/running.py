"""`mmbench run`: options in, a plan out (api.py), the engine (engine/) in between, a summary
printed at the end; and what `mmbench tune` (cli/tune.py) shares with it: the progress bar, the
summary, the cluster options, the tuning caches read."""

from __future__ import annotations

import datetime as dt
from contextlib import contextmanager
from pathlib import Path

import click
from rich.table import Table

from .. import api, environment, places
from ..analysis import series_summary
from ..config import ConfigError, load_config
from ..ops import get_op, size_forms_help, timing_problem
from ..ops.base import SCOPES
from ..results import metadata_path, read_results, run_csv, torn_message
from ..sizes import FORMS, SizeSpecError, row_shape
from ..engine import session
from ..engine.outcome import interrupted_message
from ..engine.plan import Point, Selection, Settings, scoped_name
from ..engine.refusals import DEFAULTS
from ..timing import CACHE_MODES
from ..tuning.cache import TuneError, read_caches
from ..variants import REGISTRY, VariantError, format_params, get_variant
from .common import (ARGV, FILE, SEED, Finite, InputError, Interrupted, RunFailed, _int_list, _split, command, console,
                     interrupts_count, refuse_given)

COMMANDS = ("run",)
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


def isolation_options(fn):
    """--isolation / --point-timeout, shared by run and tune (crash isolation: engine/points_isolated.py)."""
    from ..engine.points_isolated import MODES, TIMEOUT_RULE

    fn = click.option("--point-timeout", type=Finite(min=0, min_open=True), metavar="SECONDS",
                      help="With --isolation process: the time a GPU point may take from its first launch to its row; "
                           "a point still running then (a kernel that never ends) is stopped and a failed row. Default: "
                           f"{TIMEOUT_RULE}.")(fn)
    fn = click.option("--isolation", type=click.Choice(MODES), default="process", show_default=True,
                      help="process: GPU points run in a worker process that is thrown away and replaced when a "
                           "kernel's fault (an illegal address, ...) kills or poisons it, or a point outlives "
                           "--point-timeout; the point is a failed row naming the fault and the sweep goes on. none: "
                           "in this process (a fault then fails every later GPU point of the run).")(fn)
    return fn


def _isolation(isolation: str, point_timeout: float | None):
    """The isolation a run asked for (engine/points_isolated.Isolation)."""
    from ..engine.points_isolated import Isolation

    if point_timeout is not None and isolation == "none":
        raise InputError(f"--point-timeout {point_timeout:g} stops a point's worker process, and --isolation none runs "
                         f"the points in this process: give --isolation process")
    return Isolation(isolation, point_timeout)


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
             tuning=None, isolation=None):
    """session.execute with a progress bar, then the summary; exit 130 when interrupted, 1 when
    the run failed or (strict) a point was wrong or failed (the tuner expects some to fail)."""
    with progress_bar(len(points)) as on_row:
        outcome = session.execute(points, settings, output, about, list(ARGV), prepare=prepare, resume=resume,
                               previous=previous, on_row=on_row, say=say, cluster=cluster, tuning=tuning,
                               isolation=isolation)
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
@isolation_options
def run(variants, sizes, blocks, params, tuning_cache, config, runs, warmup, cache, threads, seed, max_noise, noise_clock,
        time_budget, cpu_budget, output, resume, scope, pad, dry_run, cluster, scheduler, workers, isolation, point_timeout):
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
    isolated = _isolation(isolation, point_timeout)
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
                 previous=ran.previous, resume=resume, cluster=spec, tuning=ran.tuning, isolation=isolated)
