"""`mmbench tune-benchmark`: the tuning strategies replayed on recorded spaces, no GPU (tuning/benchmark.py)."""

from __future__ import annotations

import random
from dataclasses import asdict
from pathlib import Path

import click

from ..results import ResultsError
from ..tuning.benchmark import KERNEL_TUNER, STRATEGIES, figure, run, spaces_of, summary_rows
from ..tuning.cache import TuneError
from ..tuning.searching import BATCH
from ..tuning.strategies import read_recorded
from ..variants import VariantError, get_variant
from .common import FILE, FOLDER, InputError, command, console, print_table

COMMANDS = ("tune_benchmark",)


@command("tune-benchmark")
@click.argument("recorded", nargs=-1, required=True, type=FILE)
@click.option("--variant", "-v", "variant_name", required=True, help="The variant the recorded tunings tuned.")
@click.option("--strategy", "strategies", default=",".join(STRATEGIES), show_default=True, metavar="NAME[,NAME...]",
              help=f"Strategies to replay: {', '.join(STRATEGIES)}, and KernelTuner's as {KERNEL_TUNER}NAME "
                   f"(its simulation mode; pip install kernel_tuner), e.g. {KERNEL_TUNER}pso,{KERNEL_TUNER}bayes_opt.")
@click.option("--budget", type=click.FloatRange(0, 1, min_open=True), default=0.05, show_default=True,
              metavar="FRACTION", help="Evaluations each search may spend, as a fraction of its space.")
@click.option("--seeds", type=click.IntRange(1, 1000), default=20, show_default=True, help="Seeds of each search.")
@click.option("--spaces", type=click.IntRange(min=1), metavar="N",
              help="Replay N of the recorded spaces (size classes), drawn at random (seed 0); default: all.")
@click.option("--batch", type=click.IntRange(1, 64), default=1, show_default=True,
              help=f"Configurations our searches propose before hearing their scores (on the GPU: {BATCH}).")
@click.option("--out", type=FOLDER, help="Write results.csv and strategies.png there.")
def tune_benchmark(recorded, variant_name, strategies, budget, seeds, spaces, batch, out):
    """Replay tuning strategies on recorded tunings, no GPU: per space (a size class of a recorded
    tuning), how close each comes to the recorded best within a budget, over seeds, and its score
    between random search (0) and the optimum (1)."""
    chosen = [s.strip() for s in strategies.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in STRATEGIES and not (s.startswith(KERNEL_TUNER) and len(s) > len(KERNEL_TUNER))]
    if unknown or not chosen:
        raise InputError(f"--strategy {strategies!r}; choose from: {', '.join(STRATEGIES)}, {KERNEL_TUNER}NAME")
    try:
        variant = get_variant(variant_name)
        found = [s for path in recorded for s in spaces_of(read_recorded(path, variant)[0], Path(path).name)]
    except (VariantError, TuneError, ResultsError, ValueError) as exc:
        raise InputError(str(exc)) from None
    if not found:
        raise InputError(f"{', '.join(map(str, recorded))}: no recorded space of {variant.name} with a verified configuration")
    if spaces is not None and spaces < len(found):
        found = random.Random(0).sample(found, spaces)
    try:
        results = run(found, variant, chosen, budget, seeds, batch)
    except ValueError as exc:  # KernelTuner missing, or its strategy unknown to it
        raise InputError(str(exc)) from None
    print_table(f"{len(found)} recorded spaces, budget {budget:.0%} of each, {seeds} seeds"
                + (f", batches of {batch}" if batch > 1 else ""),
                ["strategy", "spaces", "median best / recorded best", "within 2 % in budget (median seed)",
                 "score (random 0, optimum 1)"], summary_rows(results, budget))
    if out is not None:
        import pandas as pd

        out.mkdir(parents=True, exist_ok=True)
        pd.DataFrame([{k: v for k, v in asdict(r).items() if k != "curve"} for r in results]).to_csv(
            out / "results.csv", index=False)
        figure(results, budget).savefig(out / "strategies.png", dpi=120)
        console.print(f"wrote {out / 'results.csv'} and {out / 'strategies.png'}")
