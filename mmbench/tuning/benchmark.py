"""How good a tuning strategy is, measured on recorded spaces without a GPU: every strategy replayed
over many seeds against tunings recorded once (each size class of a recorded tuning is a space: its
configurations and their scores), as KernelTuner's authors compare strategies.

For each space, strategy and seed: the best score found after each evaluation, as a fraction of the
space's recorded best (its curve), and the evaluations it took to come within 2 % of it. The score
of a strategy at a budget follows the methodology of Willemsen et al. (FGCS 2024): 0 is what random
search finds on average at that budget (computed exactly from the recorded scores), 1 the optimum;
a strategy's score over a range of budgets is the mean over them.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..variants import Params, Variant, parse_params
from .search import SEARCHES, search

STRATEGIES = ("random", *SEARCHES)
WITHIN = 0.98  # "within 2 % of the recorded best"
KERNEL_TUNER = "kt:"  # a strategy named kt:NAME is KernelTuner's NAME, replayed by its simulation mode
KT_SECONDS = 30  # the most one of its searches may take


@dataclass(frozen=True)
class Space:
    """A recorded space: its name (file and size class), and each configuration's score (None: failed)."""

    name: str
    scores: Mapping[Params, float | None]

    @property
    def best(self) -> float:
        return max((s for s in self.scores.values() if s is not None), default=0.0)


def spaces_of(classes: Mapping[str, tuple[int, Mapping[str, float | None]]], name: str) -> list[Space]:
    """The spaces of a recorded tuning's class scores (strategies.read_recorded): one a class whose best is
    a real measurement (a class no configuration passed is no space)."""
    out = [Space(f"{name}:{cls}", {parse_params(p): s for p, s in scores.items()}) for cls, (_, scores) in classes.items()]
    return [s for s in out if s.best > 0]


def trace(space: Space, variant: Variant, strategy: str, budget: int, seed: int, batch: int = 1) -> np.ndarray:
    """The best fraction of the space's best found after each of `budget` evaluations (fewer where the
    space is smaller): random search draws without replacement; tpe, ga and forest search (search.py),
    proposing `batch` configurations before hearing their scores."""
    if strategy == "random":
        order = random.Random(seed).sample(sorted(space.scores), min(budget, len(space.scores)))
        found = [space.scores[p] for p in order]
    elif strategy.startswith(KERNEL_TUNER):
        found = kernel_tuner_trace(space, variant, strategy[len(KERNEL_TUNER):], budget, seed)
    else:
        found = [e.score for e in search(variant, strategy, budget, seed, space.scores.get, space.scores, batch)]
    return np.maximum.accumulate(np.array([s or 0.0 for s in found])) / space.best


def kernel_tuner_cache(space: Space, variant: Variant) -> dict:
    """The space as a KernelTuner cache file (what its simulation mode replays): every configuration
    with its score as the objective `score` (higher is better) and time = 1 / score; a failed one as
    KernelTuner writes a failed run (its simulation then never proposes it: it costs KernelTuner nothing,
    where ours pay an evaluation for it)."""
    names = sorted(variant.space)
    cache = {}
    for params, value in space.scores.items():
        values = dict(params)
        entry = {n: values[n] for n in names}
        failed = "RuntimeFailedConfig"
        entry.update(score=failed if value is None else value, time=failed if value is None else 1.0 / value,
                     compile_time=0.0, verification_time=0.0, benchmark_time=0.0, strategy_time=0.0,
                     framework_time=0.0, timestamp="2026-01-01 00:00:00.000000+00:00")
        cache[",".join(str(values[n]) for n in names)] = entry
    return {"device_name": space.name, "kernel_name": variant.name, "problem_size": [1], "tune_params_keys": names,
            "tune_params": {n: list(variant.space[n]) for n in names}, "objective": "score", "cache": cache}


def kernel_tuner_trace(space: Space, variant: Variant, strategy: str, budget: int, seed: int) -> list:
    """The scores KernelTuner's strategy evaluates in its simulation mode, in order, distinct configurations
    only (its repeats cost it nothing), the first `budget` of them. Each search runs in a worker process
    given KT_SECONDS: some of its strategies never stop on some spaces (greedy_ils on a GEMV mesh cell of
    33 valid configurations) or fail (diff_evo); such a search is a ValueError naming it."""
    import concurrent.futures as cf
    import multiprocessing

    names = sorted(variant.space)
    valid = sum(v is not None for v in space.scores.values())
    job = (kernel_tuner_cache(space, variant), strategy, min(budget, valid), seed, names)
    pool = cf.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))  # no imports again
    try:
        scores = pool.submit(_kernel_tuner_search, *job).result(timeout=KT_SECONDS)
    except cf.TimeoutError:
        raise ValueError(f"KernelTuner's {strategy} did not finish within {KT_SECONDS} s on {space.name} "
                         f"(budget {budget}): leave it out") from None
    except ValueError:
        raise
    except Exception as exc:  # its own failure on this space (diff_evo's IndexError on a GEMV mesh cell)
        raise ValueError(f"KernelTuner's {strategy} failed on {space.name} (budget {budget}): "
                         f"{type(exc).__name__}: {exc}; leave it out") from None
    finally:
        for process in list(getattr(pool, "_processes", {}).values()):  # a search that never stops: ended
            process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
    return scores[:budget]


def _kernel_tuner_search(cache: dict, strategy: str, budget: int, seed: int, names: list[str]) -> list[float]:
    """In a worker process: KernelTuner's search replaying the cache, the distinct scores in order."""
    import json
    import tempfile
    import warnings

    try:
        from kernel_tuner import tune_cache
    except ImportError as exc:
        raise ValueError(f"KernelTuner's strategies need kernel_tuner ({exc}); pip install kernel_tuner") from None
    with tempfile.TemporaryDirectory(prefix="mmbench-kt-") as tmp:
        path = f"{tmp}/cache.json"
        with open(path, "w") as f:
            json.dump(cache, f)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results, _ = tune_cache(path, strategy=strategy, seed=seed, objective="score", quiet=True,
                                    objective_higher_is_better=True, strategy_options={"max_fevals": budget})
    found: dict[tuple, float] = {}
    for r in results:
        params = tuple(r[n] for n in names)
        if params not in found and isinstance(r.get("score"), float):
            found[params] = r["score"]
    return list(found.values())


def random_expected(space: Space, evaluations: int) -> float:
    """What random search finds on average in `evaluations` draws without replacement, as a fraction of
    the best: sum over ranks of P(the best drawn is that one) x its score (failed ones score 0)."""
    ordered = np.sort(np.array([s or 0.0 for s in space.scores.values()]))  # ascending
    n, b = len(ordered), min(evaluations, len(ordered))
    # P(best drawn has rank <= i) = C(i, b) / C(n, b), ranks from 1 (in logarithms: the counts overflow floats)
    whole = math.lgamma(n + 1) - math.lgamma(n - b + 1)
    below = np.array([math.exp(math.lgamma(i + 1) - math.lgamma(i - b + 1) - whole) if i >= b else 0.0
                      for i in range(n + 1)])
    return float(np.dot(np.diff(below), ordered)) / space.best


def score(curves: np.ndarray, space: Space, budgets: Sequence[int]) -> float:
    """The methodology's score of a strategy on a space over budgets: per budget, (its mean best over
    seeds - random's expectation) / (1 - random's expectation), 1 where random is already optimal; the
    mean over the budgets."""
    out = []
    for b in budgets:
        mine = float(np.mean([c[min(b, len(c)) - 1] for c in curves]))
        base = random_expected(space, b)
        out.append(1.0 if base >= 1.0 else (mine - base) / (1.0 - base))
    return float(np.mean(out))


def evaluations_to(curve: np.ndarray, fraction: float = WITHIN) -> int | None:
    """Evaluations a search took to come within `fraction` of the best; None if it never did."""
    reached = np.flatnonzero(curve >= fraction)
    return int(reached[0]) + 1 if reached.size else None


@dataclass(frozen=True)
class Result:
    space: str
    strategy: str
    size: int  # configurations in the space
    budget: int
    median_fraction: float  # median over seeds of the best fraction found within the budget
    reached: float  # share of seeds within 2 % of the best within the budget
    median_evaluations: float | None  # median over seeds of the evaluations to within 2 % (None: most never)
    score: float  # the methodology's score over a quarter, a half, three quarters and all of the budget
    curve: tuple = ()  # the median over seeds of the best fraction found after each evaluation (not in the CSV)


def run(spaces: Sequence[Space], variant: Variant, strategies: Sequence[str], budget_share: float,
        seeds: int, batch: int = 1) -> list[Result]:
    """Every strategy on every space at a budget of budget_share of the space (at least 1), over seeds;
    our searches proposing `batch` at a time (KernelTuner's and random search one)."""
    results = []
    for space in spaces:
        budget = max(1, round(budget_share * len(space.scores)))
        steps = sorted({max(1, round(budget * f)) for f in (0.25, 0.5, 0.75, 1.0)})
        for strategy in strategies:
            curves = [trace(space, variant, strategy, budget, seed, batch) for seed in range(seeds)]
            finals = [c[-1] for c in curves]
            needed = [evaluations_to(c) for c in curves]
            got = sorted(n if n is not None else math.inf for n in needed)
            middle = float(np.median(got))
            curve = np.median(np.array([np.pad(c, (0, budget - len(c)), mode="edge") for c in curves]), axis=0)
            results.append(Result(space.name, strategy, len(space.scores), budget, float(np.median(finals)),
                                  float(np.mean([f >= WITHIN for f in finals])),
                                  None if math.isinf(middle) else middle, score(curves, space, steps), tuple(curve)))
    return results


def summary_rows(results: Sequence[Result], budget_share: float) -> list[list[str]]:
    """Per strategy over the spaces: how many, the median of the best fraction found, the spaces where
    the median seed came within 2 % of the best within the budget (the target), the mean score."""
    rows = []
    for strategy in dict.fromkeys(r.strategy for r in results):
        mine = [r for r in results if r.strategy == strategy]
        met = sum(r.median_evaluations is not None for r in mine)
        rows.append([strategy, str(len(mine)), f"{np.median([r.median_fraction for r in mine]):.4f}",
                     f"{met} of {len(mine)}", f"{np.mean([r.score for r in mine]):.3f}"])
    return rows


def figure(results: Sequence[Result], budget_share: float):
    """The curves: per strategy, the median over spaces of the median over seeds of the best fraction
    found, against evaluations as % of the space."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    grid = np.linspace(0, 100 * budget_share, 200)[1:]
    for strategy in dict.fromkeys(r.strategy for r in results):
        mine = [r for r in results if r.strategy == strategy and r.curve]
        at = [np.interp(grid, 100 * np.arange(1, len(r.curve) + 1) / r.size, r.curve) for r in mine]
        ax.plot(grid, np.median(at, axis=0), label=f"{strategy} ({len(mine)} spaces)")
    ax.axhline(WITHIN, color="black", linestyle="--", linewidth=1, label="within 2 % of the recorded best")
    ax.set_xlabel("evaluations, % of the space")
    ax.set_ylabel("best found / recorded best\n(median over seeds, then over spaces)")
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    return fig
