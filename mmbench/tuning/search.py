"""Searches that choose each configuration from what those before it measured: Optuna's
tree-structured Parzen estimator (`tpe`, model-based: it models which values of each parameter,
jointly, the fast configurations take) and NSGA-II (`ga`, a genetic algorithm: a population bred
from the fastest). Optuna is made for this (ask-and-tell, seeded samplers, constraints, categorical
parameters) and well kept; its CMA-ES takes no categorical parameters and its Gaussian-process
sampler needs PyTorch, so these two.

A search evaluates configurations one at a time through a callable (a replayed tuning's lookup, or
the GPU), the variant's defaults first. The budget counts configurations evaluated: one that breaks
a constraint, or lies outside the space given (a replay's recorded configurations), is never
evaluated and costs nothing, but the sampler is told it is infeasible (Optuna's constraints) and
learns to avoid it; one that fails (compile error, spill, wrong, skipped) costs its evaluation and
counts as the worst score, which the sampler learns from too. A sampler that keeps proposing what
it has seen or cannot evaluate is helped by a feasible configuration drawn at random.
"""

from __future__ import annotations

import random
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Collection, Generator

from ..variants import Params, Variant, param_points
from ..variants.model import sample_space
from .cache import TuneError
from .surrogate import FAILED_SCORE, forest_proposals

SEARCHES = ("tpe", "ga", "forest")  # forest: surrogate.py
STALE = 5  # proposals in a row that evaluate nothing new before a random feasible one is taken
STARTUP = 10  # random feasible configurations the samplers start from (after the defaults)
# The share of the budget a search spends last on the best configuration's neighbours: the genetic
# algorithm's population explores, and stepping from its best gained it 3 to 5 of 20 GEMV mesh
# spaces within 2 % (tune-benchmark, 10 seeds); TPE gained nothing from it (one space fewer).
POLISH = {"ga": 0.3, "tpe": 0.0}
OUTSIDE = "outside"  # the constraint every trial sets: 1 when it could not be evaluated (<= 0 is feasible to Optuna)

Evaluate = Callable[[Params], "float | None"]  # a configuration's score (higher is better), or None: it failed


@dataclass(frozen=True)
class Evaluation:
    params: Params
    score: float | None  # None: failed (compile, spill, wrong, skipped)


def search(variant: Variant, strategy: str, budget: int, seed: int, evaluate: Evaluate,
           space: Collection[Params] | None = None, batch: int = 1) -> list[Evaluation]:
    """Evaluate up to `budget` configurations of the variant chosen by the strategy (SEARCHES), in the
    order evaluated: its defaults first, then STARTUP drawn at random, then the sampler's, one at a
    time (or `batch` proposed before any of them is heard, as on the GPU). `space`: the configurations
    that may be evaluated (default: every one that keeps the constraints)."""
    asking = proposals(variant, strategy, budget, seed, space, batch)
    try:
        batch = next(asking)
        while True:
            batch = asking.send([evaluate(params) for params in batch])
    except StopIteration as finished:
        return finished.value


def proposals(variant: Variant, strategy: str, budget: int, seed: int, space: Collection[Params] | None = None,
              batch: int = 1) -> Generator[list[Params], list, list[Evaluation]]:
    """search() as a generator, for a caller that measures several configurations at once (the GPU:
    compiled in parallel, run in one pass): yields up to `batch` new configurations, is sent their
    scores (None: failed) in that order, and returns every Evaluation. The sampler proposes the
    batch before hearing any of it; a configuration it proposes twice in one batch is evaluated once
    and told the score when it comes."""
    if strategy not in SEARCHES:
        raise TuneError(f"unknown search '{strategy}'; choose from: {', '.join(SEARCHES)}")
    if budget is None or budget < 1:
        raise TuneError(f"the {strategy} strategy needs --budget N (N >= 1)")
    if strategy == "forest":
        measured = yield from forest_proposals(variant, budget, seed, space, batch)
        return [Evaluation(params, score) for params, score in measured]
    optuna = _optuna()
    allowed = set(space) if space is not None else None
    feasible = (lambda p: p in allowed) if allowed is not None else variant.allows
    names = sorted(variant.space)
    distributions = {n: optuna.distributions.CategoricalDistribution(tuple(variant.space[n])) for n in names}
    study = optuna.create_study(direction="maximize", sampler=_sampler(optuna, strategy, seed, budget))
    rng = random.Random(seed)
    for params in _starting(variant, allowed, feasible, budget, rng, seed):
        study.enqueue_trial(dict(params), skip_if_exists=True)
    seen: dict[Params, float | None] = {}
    done: list[Evaluation] = []
    stale = 0
    while len(done) < budget:
        picked: dict[Params, Any] = {}  # this batch: a configuration and its trial (None: drawn at random)
        waiting: list[tuple[Any, Params]] = []  # trials that proposed one of the batch again: told with it
        while len(picked) < min(batch, budget - len(done)):
            if POLISH[strategy] and len(done) + len(picked) >= budget * (1 - POLISH[strategy]):  # its neighbours
                near = _neighbour(variant, seen, picked, feasible, rng)
                if near is not None:
                    picked[near] = None
                    continue
            trial = study.ask(distributions)
            params = tuple((n, trial.params[n]) for n in names)
            if params in picked or params in seen or not feasible(params):  # nothing new to evaluate
                if params in picked:  # told the score with the batch's
                    waiting.append((trial, params))
                else:  # the sampler is told what it is
                    _tell_known(study, trial, seen, params)
                stale += 1
                if stale < STALE:
                    continue
                params, trial = _unseen(variant, allowed, {**seen, **picked}, rng, seed + len(seen) + len(picked)), None
                if params is None:  # the whole space is evaluated
                    break
            stale = 0
            picked[params] = trial
        if not picked:
            break
        scores = dict(zip(picked, (yield list(picked))))
        for params in picked:
            seen[params] = scores.get(params)
            done.append(Evaluation(params, seen[params]))
        _tell_batch(optuna, study, distributions, picked, waiting, seen)
    return done


def _neighbour(variant: Variant, seen: dict, picked: dict, feasible, rng: random.Random) -> Params | None:
    """A configuration one step from the best measured so far (one parameter to the value beside its
    own in its domain) not measured or picked yet and feasible, in random order; None when the best
    has none left (the sampler then goes on)."""
    scored = {p: s for p, s in seen.items() if s is not None}
    if not scored:
        return None
    best = dict(max(scored, key=scored.get))
    steps = [(name, d) for name in sorted(best) for d in (-1, 1)]
    rng.shuffle(steps)
    for name, d in steps:
        values = tuple(variant.space[name])
        i = values.index(best[name]) + d if best[name] in values else -1
        if 0 <= i < len(values):
            params = tuple(sorted({**best, name: values[i]}.items()))
            if params not in seen and params not in picked and feasible(params):
                return params
    return None


def _tell_batch(optuna, study, distributions: dict, picked: dict, waiting: list, seen: dict) -> None:
    """Tell the sampler a measured batch: each configuration's trial its score (a failure the worst;
    one drawn at random or a neighbour, a trial of its own), and each trial that proposed one of the
    batch again the same."""
    for params, trial in picked.items():
        value = FAILED_SCORE if seen[params] is None else seen[params]
        if trial is None:
            study.add_trial(optuna.trial.create_trial(params=dict(params), distributions=distributions, value=value,
                                                      constraints={OUTSIDE: 0.0}))
        else:
            trial.set_constraint(OUTSIDE, 0.0)
            study.tell(trial, value)
    for trial, params in waiting:
        trial.set_constraint(OUTSIDE, 0.0)
        study.tell(trial, FAILED_SCORE if seen[params] is None else seen[params])


def _tell_known(study, trial, seen: dict, params: Params) -> None:
    """Tell the sampler a proposal it need not evaluate: one seen (its score), or one outside the
    space or its constraints (infeasible, the worst score)."""
    trial.set_constraint(OUTSIDE, 0.0 if params in seen else 1.0)
    score = seen.get(params)
    study.tell(trial, FAILED_SCORE if score is None else score)


def _optuna():
    try:
        import optuna
    except ImportError as exc:
        raise TuneError(f"the tpe and ga strategies need Optuna ({exc}); pip install '.[tune]'") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    return optuna


def _sampler(optuna, strategy: str, seed: int, budget: int):
    if strategy == "tpe":
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=STARTUP, multivariate=True)
    return optuna.samplers.NSGAIISampler(seed=seed, population_size=max(8, min(50, budget // 5)))


def _starting(variant: Variant, allowed: set | None, feasible, budget: int, rng: random.Random,
              seed: int) -> list[Params]:
    """The defaults that may be evaluated, then random feasible configurations: STARTUP in all."""
    defaults = [p for p in param_points(variant) if feasible(p)]
    count = min(budget, len(defaults) + STARTUP)
    if allowed is not None:
        pool = sorted(allowed - set(defaults))
        rest = rng.sample(pool, min(len(pool), count - len(defaults)))
    else:
        rest = [p for p in sample_space(variant, count, seed) if p not in defaults]
    return (defaults + rest)[:count]


def _unseen(variant: Variant, allowed: set | None, seen: dict, rng: random.Random, seed: int) -> Params | None:
    """A feasible configuration not evaluated yet, drawn at random; None when there is none."""
    if allowed is not None:
        left = sorted(allowed - set(seen))
        return rng.choice(left) if left else None
    fresh = [p for p in sample_space(variant, len(seen) + 1, seed) if p not in seen]
    return fresh[0] if fresh else None
