"""A tuning's options checked before anything else is read: the values a request built in Python
has not had checked by the command line's option types, the options a replay or a plan would
ignore (refused, not dropped), and the cache the best configurations go into. RunRefused, one line
naming the option as the command line spells it."""

from __future__ import annotations

from pathlib import Path

from .. import places
from ..engine.options import Limit, check_given, shown_value
from ..engine.plan import Settings
from ..engine.points_isolated import MODES
from ..engine.refusals import RunRefused
from ..timing import CACHE_MODES
from .cache import NO_CACHE, TuneError, check_writable_cache
from .request import AUTO, ENGINES, OPTIONS, TuneOptions, spelled
from .search import SEARCHES
from .strategies import STRATEGIES

# What a replay (--replay) leaves unused: it reads a recorded tuning and runs nothing.
REPLAY_IGNORES = ("sizes", "runs", "warmup", "cache", "engine", "resume", "prune", "jobs", "output", "dry_run", "dtype",
                  "layout", "params", "per_shape", "candidates", "top", "pool_gpus", "cluster", "scheduler", "workers",
                  "isolation", "point_timeout")
# What a plan (--plan) leaves to its plan.
PLAN_IGNORES = ("variant", "sizes", "strategy", "budget", "runs", "warmup", "cache", "engine", "prune", "dtype", "layout",
                "replay", "params", "per_shape", "candidates", "top")
# What --pool-gpus does, said where it is refused (a tuning on one machine, or on the batched engine).
POOL_GPUS = ("--pool-gpus pools the timings of GPUs of different models on a cluster (--cluster or --scheduler) into "
             "one cache entry")
# What the command line's option types check (click.IntRange, Finite, Choice).
LIMITS = (Limit("budget", int, 1), Limit("seed", int, 0, 2**32 - 1), Limit("runs", int, 1, Settings().max_runs),
          Limit("warmup", int, 0, Settings().max_runs), Limit("prune", float, 0, 1, least_taken=True),
          Limit("jobs", int, 1), Limit("top", int, 1), Limit("workers", int, 1), Limit("point_timeout", float, 0))
CHOICES = (("strategy", (AUTO, *STRATEGIES, *SEARCHES)), ("cache", CACHE_MODES), ("engine", ENGINES),
           ("cluster", ("local",)), ("isolation", MODES))


def check_values(options: TuneOptions) -> None:
    """Refuse a value out of its range or its choices, named as the keyword argument it came as."""
    check_given({name: getattr(options, name) for name in OPTIONS}, LIMITS, CHOICES)


def refuse_given(options: TuneOptions, names, why: str) -> None:
    """Refuse the first of these options (in the command's order) that the user gave, saying why it
    cannot apply."""
    for name in OPTIONS:
        if name in names and name in options.given:
            shown = shown_value(getattr(options, name))
            raise RunRefused(f"{spelled(name)}{' ' + shown if shown else ''}: {why}")


def writing_cache(given: Path | None) -> Path:
    """The cache a tuning records its best configurations in: the one given, else the user's
    (places.user_cache()); refused before anything is measured where that cannot be."""
    if given is not None and str(given).strip().lower() == NO_CACHE:
        raise RunRefused(f"--tuning-cache {NO_CACHE} is for run: a tuning records its best configurations in a cache "
                         f"(default: yours, {places.user_cache()})")
    path = Path(given) if given is not None else places.user_cache()
    try:
        check_writable_cache(path)
    except TuneError as exc:
        raise RunRefused(str(exc)) from None
    return path
