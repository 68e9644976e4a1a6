"""`mmbench run`: options in, a plan out (api.py), the engine (engine/) in between, a summary
printed at the end; and what `mmbench tune` (cli/tune.py) shares with it: the progress bar, the
summary, the cluster and isolation options."""

from __future__ import annotations

import math
from contextlib import contextmanager
from pathlib import Path

import click
from rich.table import Table

from .. import places, sweep
from ..ops import get_op, size_forms_help
from ..ops.base import SCOPES
from ..precisions import DEFAULT, DEFAULT_LAYOUT, LAYOUTS, PRECISIONS, form_suffix
from ..results import metadata_path, scan
from ..sizes import FORMS, row_shape
from ..summary import series_summary
from ..engine import session
from ..engine.outcome import interrupted_message
from ..engine.plan import Point, Settings, scoped_name
from ..engine.refusals import DEFAULTS
from ..sweep import PAPER_SWEEP
from ..timing import CACHE_MODES
from ..variants import format_params
from .common import ARGV, FILE, SEED, Finite, Interrupted, IntervalOrOff, RunFailed, command, console, given, interrupts_count

COMMANDS = ("run",)
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
        progress.update(task, advance=1, description=f"{row['variant']}{form_suffix(row.get('dtype', DEFAULT), row.get('layout', DEFAULT_LAYOUT))} "
                                                     f"{row['params']} {row_shape(row['m'], row['n'], row['k'])}")

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
                           f"{TIMEOUT_RULE}. tune --engine batched: a shape's launches, and a configuration's "
                           "(docs/tuning.md).")(fn)
    fn = click.option("--isolation", type=click.Choice(MODES), default="process", show_default=True,
                      help="process: GPU points run in a worker process that is thrown away and replaced when a "
                           "kernel's fault (an illegal address, ...) kills or poisons it, or a point outlives "
                           "--point-timeout; the point is a failed row naming the fault and the sweep goes on (tune "
                           "--engine batched: the configuration, and its size class goes on). none: in this process (a "
                           "fault then fails every later GPU point of the run, or ends a batched tuning).")(fn)
    return fn


def run_points(points, settings, output, about, *, tuning=None):
    """session.execute in this process with a progress bar, then the summary: what `check` and
    `verify-timing` run; exit 130 when interrupted, 1 when the run failed or a point was wrong or
    failed. tuning: where the points' tuned parameters came from, for the metadata."""
    with progress_bar(len(points)) as on_row:
        outcome = session.execute(points, settings, output, about, list(ARGV), on_row=on_row, say=say, tuning=tuning)
    return _report(outcome, output)


def print_summary(outcome, output: Path) -> None:
    """The summary of the file a run (or a tuning's points) wrote, and where it is; nothing where
    it holds no row (an interrupted new run may have written none)."""
    if outcome.in_file:
        console.print(_summary(output))
        say(f"results: {output}  (metadata: {metadata_path(output)})")


def _report(outcome, output: Path):
    """The summary of a run's file, then exit 130 when it was interrupted, 1 when a point was
    wrong or failed."""
    print_summary(outcome, output)
    if outcome.state == "interrupted":
        raise Interrupted(interrupted_message(output, outcome.in_file, sum(outcome.counts.values())))
    if outcome.failures:
        raise RunFailed(", ".join(f"{n} point(s) {s}" for s, n in outcome.failures.items())
                        + f"; see the reason column of {output}")
    return outcome


def _say_if_not_here(points: list[Point], request) -> None:
    """A dry run's plan that this machine cannot run says so: its GPU points where no GPU is (a
    cluster's workers are elsewhere: not said then)."""
    from ..device import gpu_problem

    on_gpu = sum(p.variant.on_gpu for p in points)
    if on_gpu and not (request.cluster or request.scheduler):
        problem = gpu_problem()
        if problem:
            console.print(f"this machine cannot run the plan's {on_gpu} GPU point{'s' if on_gpu != 1 else ''}: "
                          f"{problem}", soft_wrap=True)


def _print_plan(points: list[Point], skipped: int, output: Path) -> None:
    groups: dict[tuple, list[Point]] = {}
    for p in points:
        name = scoped_name(p.variant.name, p.scope, p.pad) + form_suffix(p.dtype, p.layout)
        groups.setdefault((name, format_params(p.params)), []).append(p)
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
    how many more there are. Read with the file's own check (results.scan), not pandas."""
    return _summary_table(scan(csv_path).rows, csv_path)


def _summary_table(rows, csv_path) -> Table:
    series = series_summary(rows, lambda op: get_op(op).rate)
    hidden = max(0, len(series) - SUMMARY_ROWS)
    title = f"summary of {csv_path}"
    if hidden:
        first: dict[str, int] = {}
        for s in series:
            first.setdefault(s.op, len(first))
        # per operation in the file's order, the fastest median first, series without one last
        series = sorted(series, key=lambda s: (first[s.op], math.isnan(s.median),
                                               0.0 if math.isnan(s.median) else -s.median))
        series, title = series[:SUMMARY_ROWS], f"{title}: the {SUMMARY_ROWS} fastest of {len(series)} series"
    table = Table(title=title)
    # A series' parameters go under its name and fold, so the table fits 80 columns.
    table.add_column("variant, params", overflow="fold", min_width=16, ratio=1)
    for col in ("ok", "not ok", "median", "peak", "at size", "cv\nmedian"):
        table.add_column(col, justify="right", overflow="fold")
    for s in series:
        unit = "GFLOP/s" if get_op(s.op).rate.startswith("gflops") else "GB/s"
        variant = scoped_name(s.variant, s.scope, s.pad) + form_suffix(s.dtype, s.layout)
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
@click.option("--max-interval", type=IntervalOrOff(), metavar="FRACTION|off",
              help=f"Sample until the 95% interval of the median is within +- FRACTION of it (samples taken while the "
                   f"SM clock sagged left out), with --runs as the least number, within --time-budget; the row says "
                   f"the interval reached and why sampling stopped. Default for a new run on the GPU: "
                   f"{sweep.INTERVAL:g} (what `mmbench compare`'s 2% threshold needs); off: exactly --runs samples.")
@click.option("--noise-clock", type=click.Choice(["events", "kernel"]),
              help="With a target (--max-noise, --max-interval): whose samples it judges, the events' (default) or "
                   "the kernel clock's (CUPTI; far less noisy at small sizes).")
@click.option("--time-budget", type=Finite(min=0, min_open=True), metavar="SECONDS",
              help=f"With a target: the most sampling time a point may take (default {Settings().budget_s:g} s with "
                   f"--max-noise, {sweep.INTERVAL_BUDGET_S:g} s with --max-interval).")
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
@click.option("--dtype", "dtype", multiple=True, metavar="NAME[,NAME...]",
              help=f"Precisions, each its own points (default fp32): {', '.join(PRECISIONS)}; docs/rows.md says what "
                   "each holds. A variant runs those it takes.")
@click.option("--layout", "layout", multiple=True, metavar="NAME[,NAME...]",
              help=f"GEMM: how A and B are stored, BLAS's N/T on the row-major product (default nn): "
                   f"{', '.join(LAYOUTS)}; nt is K-major A and B, what FP8 tensor cores take.")
@click.option("--dry-run", is_flag=True, help="Print the plan and exit; needs no GPU.")
@cluster_options
@isolation_options
def run(variants, sizes, blocks, params, tuning_cache, config, runs, warmup, cache, threads, seed, max_noise,
        max_interval, noise_clock, time_budget, cpu_budget, output, resume, scope, pad, dtype, layout, dry_run, cluster, scheduler, workers,
        isolation, point_timeout):
    """Sweep variants over sizes: verify each point, time it, write a row per point.

    \b
    Examples:
      mmbench run --variant best --sizes 63:2049
      mmbench run -v best,shared,cublas --sizes 256,512,1024 --block 8,16,32
      mmbench run --config configs/zosa2017.toml
      mmbench run -v cublas --dtype fp32,tf32,bf16 --sizes 1024:8192:x2
    """
    ctx = click.get_current_context()
    budgets = ("time_budget", "cpu_budget")  # their defaults are shown in --help, not given
    request = sweep.RunRequest(**{k: v for k, v in ctx.params.items() if k not in ("dry_run", *budgets)},
                               **{k: ctx.params[k] if given(ctx, k) else None for k in budgets})
    done = sweep.perform(request, say=say, dry_run=dry_run, command=ARGV, on_output=interrupts_count,
                         progress=progress_bar)
    if dry_run:
        _print_plan(done.plan.todo, len(done.plan.points) - len(done.plan.todo), done.output)
        _say_if_not_here(done.plan.todo, request)
    elif done.outcome is not None:
        _report(done.outcome, done.output)
