"""`mmbench tune`: the command's options, read into a TuneOptions (tuning/request.py) and handed to
the tuning workflow (tuning/workflow.py), which mmbench.tune(...) calls alike; this module prints
what the workflow says, its progress bar, and the summary of the rows it measured."""

from __future__ import annotations

import click

from .. import places
from ..ops import batched_by_default
from ..timing import CACHE_MODES
from ..tuning import workflow
from ..tuning.plan import shipped_plans
from ..tuning.request import AUTO, DEFAULTS, ENGINES, OPTIONS, PRUNE, TuneOptions
from ..tuning.search import SEARCHES
from ..tuning.strategies import STRATEGIES
from .common import ARGV, FILE, SEED, Finite, command, given, interrupts_count
from .running import SAMPLES, WARMUP, cluster_options, isolation_options, print_summary, progress_bar, say

COMMANDS = ("tune",)


@command()
@click.option("--variant", "-v", help="The variant to tune (one with a tuning space).")
@click.option("--plan", metavar="PLAN", help="Tune several variants per shape as a plan says: a shipped plan's name "
              f"({', '.join(shipped_plans())}; mmbench/data/plans/) or a plan file (docs/tuning.md). Resumable "
              "(--resume with its --output); takes --output, --jobs, --seed, --tuning-cache, --isolation, --dry-run.")
@click.option("--sizes", "-s", default=DEFAULTS.sizes, show_default=True, metavar="SPEC",
              help="Shapes to tune at; the best configuration is kept per size class (nearest power of two).")
@click.option("--strategy", type=click.Choice([AUTO, *STRATEGIES, *SEARCHES]), default=DEFAULTS.strategy,
              show_default=True,
              help="brute: every configuration; random: --budget of them at random; tpe (Optuna's tree-structured "
                   "Parzen estimator), ga (its NSGA-II genetic algorithm) and forest (randomized trees over a pool of "
                   "candidates, scikit-learn): --budget of them, each chosen from what the ones before measured, the "
                   "best 3 timed again (points engine, or --replay). auto: forest, or random where the batched engine "
                   "tunes or --params/--candidates narrow the space.")
@click.option("--budget", type=click.IntRange(min=1),
              help="Configurations to try (random, tpe, ga, forest; the defaults count).")
@click.option("--seed", type=SEED, default=DEFAULTS.seed, show_default=True,
              help="Seed of the random strategy and the inputs.")
@click.option("--runs", type=SAMPLES, help="Timed samples per point (points engine; default 5).")
@click.option("--warmup", type=WARMUP, help="Untimed launches per point (points engine; default 2).")
@click.option("--cache", type=click.Choice(CACHE_MODES), default=DEFAULTS.cache, show_default=True)
@click.option("--engine", type=click.Choice(ENGINES), default=DEFAULTS.engine, show_default=True,
              help="points: every configuration and shape a sweep point with its own row and samples; batched: "
                   "one timed launch each, checked on the GPU, a row per configuration and size class (for "
                   "millions of points, as GEMV's mesh); auto: batched for operations that check sums, "
                   f"{batched_by_default()}, else points.")
@click.option("--resume", is_flag=True, help="Batched engine: continue --output after its last whole size class.")
@click.option("--prune", type=Finite(0, 1, max_open=True), metavar="FRACTION",
              help=f"Batched engine: a configuration slower at a size class's pivot shape than FRACTION of the best's "
                   f"speed is not timed at the class's other shapes (a pruned row); 0 times all (default {PRUNE}).")
@click.option("--jobs", type=click.IntRange(min=1),
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
@click.option("--params", metavar="K=V[/V],...", help="Pin parameters; search only the rest.")
@click.option("--per-shape", is_flag=True,
              help="Keep the best configuration of every shape, not of every size class; run uses it at that exact shape.")
@click.option("--candidates", multiple=True, type=FILE,
              help="Search only configurations among the --top fastest at some shape of this tuning CSV (repeatable).")
@click.option("--top", type=click.IntRange(min=1), default=DEFAULTS.top, show_default=True,
              help="With --candidates: how many of the fastest per recorded shape.")
@click.option("--dtype", metavar="NAME", help="The precision to tune at (default: the variant's first; "
              "docs/precisions.md). Precisions other than fp32 are tuned point by point (--engine points).")
@click.option("--layout", metavar="NAME", help="GEMM: the layout of A and B to tune at (default: the variant's first).")
@click.option("--pool-gpus", is_flag=True, help="On a cluster of GPUs of different models: pool their timings into "
              "one cache entry per model anyway (refused otherwise).")
@cluster_options
@isolation_options
def tune(**options):
    """Search a variant's parameter space: compile, verify and time every configuration tried,
    record each as a row, and keep the best per size class (or per shape) in your tuning cache
    (or --tuning-cache PATH), which `mmbench run` reads before the shipped one."""
    ctx = click.get_current_context()
    asked = TuneOptions(**options, given=frozenset(name for name in OPTIONS if given(ctx, name)))
    workflow.perform(asked, say=say, command=ARGV, on_output=interrupts_count, progress=progress_bar,
                     on_measured=lambda outcome: print_summary(outcome, outcome.output))
