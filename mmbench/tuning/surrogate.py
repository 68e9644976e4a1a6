"""The `forest` search: a surrogate model over a pool of candidate configurations, as SMAC does for
algorithm configuration. After the variant's defaults and STARTUP configurations drawn at random,
each step fits an ensemble of randomized trees (scikit-learn's ExtraTreesRegressor) to the scores
measured so far and measures the unmeasured candidates whose predicted score plus KAPPA times the
trees' spread is highest.

Why a pool and trees: Optuna's samplers propose points of the parameters' whole grid, and on a
replayed tuning (a random sample of a space of 79,200) nearly every proposal is outside what was
recorded; a pool holds exactly the configurations that may be evaluated (a replay's recorded ones,
a small space whole, or POOL configurations of a large one drawn at random, every one keeping the
constraints), so the model's choice is always measurable. Trees take parameters that decide a
kernel's shape in steps and cliffs (a tile that stops fitting, a split that pays only at some
sizes), where a smooth kernel of a Gaussian process would not. On the recorded dbuf spaces (20
seeds, 5 % of each) it came within 2 % of the best at 2 of 4 sizes where TPE did at 1
(docs/tuning.md).
"""

from __future__ import annotations

import math
import random
from typing import Collection, Generator

import numpy as np

from ..variants import Params, Variant, param_points, tuning_space
from ..variants.model import LARGE_SPACE, raw_size, sample_space
from .cache import TuneError

STARTUP = 8  # random candidates measured after the defaults, before the first model
POOL = 4000  # candidates drawn from a space too large to list
KAPPA = 1.0  # the trees' spread's weight (with STARTUP, chosen on the recorded GEMV and dbuf spaces: docs/tuning.md)
TREES = 40
FAILED_SCORE = 0.0  # what a failed configuration scores in every search (search.py too): rates are positive


def features(variant: Variant, params: Params) -> list[float]:
    """A configuration as numbers: each parameter's position in its domain, and its log2 where every
    value is positive (a tile's size acts by its doublings)."""
    given = dict(params)
    out: list[float] = []
    for name in sorted(variant.space):
        values = tuple(variant.space[name])
        out.append(float(values.index(given[name])))
        if all(v > 0 for v in values):
            out.append(math.log2(given[name]))
    return out


def candidates(variant: Variant, budget: int, seed: int, space: Collection[Params] | None) -> list[Params]:
    """What the search may measure: the space given (a replay's), else the whole space where it can be
    listed, else the defaults and POOL (at least 20 times the budget) configurations drawn at random."""
    if space is not None:
        return sorted(space)
    if raw_size(variant) <= LARGE_SPACE:
        return tuning_space(variant)
    defaults = [p for p in param_points(variant) if variant.allows(p)]
    return list(dict.fromkeys(defaults + sample_space(variant, max(POOL, 20 * budget), seed)))


def forest_proposals(variant: Variant, budget: int, seed: int, space: Collection[Params] | None = None,
                     batch: int = 1) -> Generator[list[Params], list, list]:
    """search.proposals' protocol: yields up to `batch` configurations, is sent their scores (None:
    failed), returns every (params, score) in the order measured."""
    try:
        from sklearn.ensemble import ExtraTreesRegressor
    except ImportError as exc:
        raise TuneError(f"the forest strategy needs scikit-learn ({exc}), one of mmbench's dependencies: "
                        f"pip install scikit-learn") from None
    pool = candidates(variant, budget, seed, space)
    if not pool:
        raise TuneError(f"'{variant.name}' has no configuration that keeps its constraints to search")
    rng = random.Random(seed)
    table = np.array([features(variant, p) for p in pool], dtype=float)
    listed = set(pool)
    defaults = [p for p in param_points(variant) if p in listed]
    first = defaults + rng.sample([p for p in pool if p not in defaults], min(STARTUP, len(pool) - len(defaults)))
    seen: dict[Params, float | None] = {}  # in the order measured, each once
    queue = list(dict.fromkeys(first))
    while len(seen) < min(budget, len(pool)):
        take = min(batch, budget - len(seen), len(pool) - len(seen))
        picked, queue = queue[:take], queue[take:]
        if len(picked) < take and seen:  # the first draws run out: the model fills the batch
            picked += _best_by_model(ExtraTreesRegressor, table, pool, {**seen, **dict.fromkeys(picked)},
                                     take - len(picked), seed + len(seen), measured=seen)
        seen.update(zip(picked, (yield picked)))
    return list(seen.items())


def _best_by_model(forest, table: np.ndarray, pool: list[Params], taken: dict, take: int, seed: int,
                   measured: dict) -> list[Params]:
    """The `take` candidates not taken, one after another, each of highest predicted score plus KAPPA
    times the trees' spread, the model fitted to what was measured (scores over the best so far; a
    failure the worst) and to the model's own prediction for each one picked before it in the batch
    (a "believer": the batch spreads out as measuring them one by one would, instead of taking the
    `take` highest of one fit, which crowd one spot)."""
    index = {p: i for i, p in enumerate(pool)}
    believed = {p: (FAILED_SCORE if s is None else s) for p, s in measured.items()}
    top = max(believed.values())
    scale = top if top > 0 else 1.0
    picks: list[Params] = []
    for step in range(take):
        known = np.array(sorted(index[p] for p in believed))  # in the pool's order, as the fit has always seen them
        left = np.array([i for i, p in enumerate(pool) if p not in taken and p not in believed])
        if not len(left):
            break
        model = forest(n_estimators=TREES, random_state=seed + step).fit(
            table[known], np.array([believed[pool[i]] for i in known]) / scale)
        each = np.stack([tree.predict(table[left]) for tree in model.estimators_])
        mean = each.mean(axis=0)
        best = int(np.argmax(mean + KAPPA * each.std(axis=0)))
        picks.append(pool[left[best]])
        believed[picks[-1]] = float(mean[best]) * scale
    return picks
