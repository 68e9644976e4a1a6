"""One tuning, from its options to the cache: `perform` is what `mmbench tune` and `mmbench.tune(...)`
both call, as sweep.perform serves `mmbench run`, so the two cannot drift apart. It checks the
options (asked.py), resolves them (resolve.py), and runs the one path they ask for: a plan
(plan_run.py), a replay of a recorded tuning (replaying.py), a dry run, or a tuning on the GPU by
the points engine (points_run.py) or the batched one (batched_run.py), whose best configurations
go into the tuning cache. No Click here: bad input is RunRefused (one line naming the option, before
anything is touched), a tuning that cannot go on RunAborted, Ctrl-C RunInterrupted; every
message goes to `say`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..engine import batched_local
from ..engine.ahead import started_ahead
from ..engine.outcome import Outcome
from ..engine.plan import Point, Settings
from ..engine.options import cluster_spec, isolation_of
from ..engine.refusals import RunRefused, Say, check_new_output, check_output
from ..engine.session import Progress
from ..ops import get_op
from ..precisions import form_suffix
from ..variants import format_params, space_text
from ..variants.model import count_space
from ..vocabulary import DeviceId
from . import batched_run, replaying
from .asked import PLAN_IGNORES, POOL_GPUS, REPLAY_IGNORES, check_values, refuse_given, writing_cache
from .cache import describe_cache
from .measure import Hooks
from .plan import shipped_plans
from .plan_run import tune_by_plan
from .points_run import points_of, tune_points
from .request import TuneOptions, TuneRequest
from .resolve import configurations, jobs, request, with_strategy
from .search import SEARCHES
from .searching import finalists_path, tune_searched
from .strategies import describe

SHOWN = 20  # the configurations a dry run lists


@dataclass(frozen=True)
class TuneDone:
    """What perform did. kind: plan, replay, dry run, points or batched. rows: the file its rows are
    in (the tuning's output, the recording a replay read; None for a dry run, whose points are
    what it would measure). best: the best configurations recorded, per size class (or shape); a
    plan's per variant label. about: what the tuning file's metadata says of its search (a dry
    run: would say). output: where the rows go (a replay: the recording)."""

    kind: str
    output: Path
    rows: Path | None
    best: dict
    about: dict = field(default_factory=dict)
    points: list[Point] = field(default_factory=list)
    device: DeviceId | None = None


def perform(options: TuneOptions, *, say: Say = print, command: Sequence[str] = ("mmbench",),
            on_output: Callable[[Path], None] | None = None, progress: Progress | None = None,
            on_measured: Callable[[Outcome], None] | None = None) -> TuneDone:
    """The tuning the options ask for, from the options to the cache (measure.Hooks says what
    on_output, progress and on_measured hear). The checks come in the order the command line has
    always made them, so that the first thing wrong is the one named."""
    hooks = Hooks(say, command, on_output, progress, on_measured)
    check_values(options)
    if options.plan is not None:
        return _by_plan(options, hooks)
    if options.variant is None:
        raise RunRefused(f"give --variant NAME (the variant to tune) or --plan PLAN (shipped: "
                         f"{', '.join(shipped_plans())})")
    options = with_strategy(options)
    variant, shapes, configs = configurations(options)
    cache_path = writing_cache(options.tuning_cache)
    if options.replay:
        refuse_given(options, REPLAY_IGNORES, f"a replay (--replay {options.replay}) runs nothing: it takes the "
                                              f"variant, --strategy, --budget, --seed and --tuning-cache only")
        return _replay(options, variant, cache_path, say)
    if not options.candidates:
        refuse_given(options, ("top",), "it counts the fastest configurations of --candidates files, and none is given")
    tuning, settings = request(options, variant, shapes, configs, cache_path)
    check_output(tuning.output, compressed_resumes=tuning.engine == "batched")  # a dry run refuses alike
    if not tuning.resume:
        check_new_output(tuning.output, f"choose another --output{' or --resume' if tuning.engine == 'batched' else ''}")
    if options.strategy in SEARCHES:  # where its finalists are timed again
        check_new_output(finalists_path(tuning.output), "choose another --output")
    if options.dry_run:
        _print_tuning_plan(tuning, options, say)
        return TuneDone("dry run", tuning.output, None, {}, _about(tuning, options), points_of(tuning))
    if tuning.engine == "batched":
        return _tune_batched(tuning, options, hooks)
    with started_ahead(tuning.cluster, tuning.variant.on_gpu, tuning.isolation):  # while the points are made
        return _tune_points(tuning, options, settings, hooks)


def _by_plan(options: TuneOptions, hooks: Hooks) -> TuneDone:
    """A plan's tuning: the plan names the variants, sizes, configurations and settings."""
    refuse_given(options, PLAN_IGNORES, f"the plan (--plan {options.plan}) names the variants, sizes, configurations "
                                        f"and measurement settings")
    isolation = isolation_of(options.isolation, options.point_timeout)
    # a plan's searches tune GPU kernels: a local cluster has a worker per GPU (--workers is refused there)
    cluster = cluster_spec(options.cluster, options.scheduler, options.workers, gpus=True)
    if options.pool_gpus and cluster is None:
        raise RunRefused(f"{POOL_GPUS}; this plan runs on one machine")
    cache_path = writing_cache(options.tuning_cache)
    ran = tune_by_plan(options.plan, options.output, options.resume, jobs(options), options.seed, cache_path,
                       options.dry_run, isolation, hooks, cluster=cluster, pool_gpus=options.pool_gpus)
    about = {"name": f"tune-{ran.plan.name}", "tuning": ran.plan.about()}
    if options.dry_run:
        return TuneDone("dry run", ran.output, None, {}, about, ran.todo)
    return TuneDone("plan", ran.output, ran.output, ran.best, about, ran.todo)


def _replay(options: TuneOptions, variant, cache_path: Path, say: Say) -> TuneDone:
    """The strategy replayed on a recorded tuning, its picks into the cache."""
    recorded = Path(options.replay)
    best, device, current = replaying.replay(variant, recorded, options.strategy, options.budget, options.seed,
                                             cache_path, say)
    for line in describe(best):
        say(f"best {line}")
    say(f"written to {describe_cache(cache_path)} ({device.name}, {variant.name} source {current}, replayed from "
        f"{options.replay})")
    return TuneDone("replay", recorded, recorded, best, device=device)


def _announce(request: TuneRequest, options: TuneOptions, say: Say) -> None:
    if options.params:
        say(f"pinned: {options.params}")
    tried = (f"up to {options.budget}, chosen as it measures" if options.strategy in SEARCHES
             else str(len(request.configs)))
    if options.strategy in SEARCHES and request.configs:  # a dry run's first batch
        tried += f", the first {len(request.configs)} below"
    say(f"{request.variant.name}: {space_text(request.variant)} configurations satisfy its constraints; trying "
        f"{tried} ({options.strategy}) at {len(request.shapes)} shape(s)" + form_suffix(request.dtype, request.layout))


def _print_tuning_plan(request: TuneRequest, options: TuneOptions, say: Say) -> None:
    """A dry run: the search, the first configurations it tries, and where its results would go."""
    _announce(request, options, say)
    for p in request.configs[:SHOWN]:
        say(f"  {format_params(p)}")
    if len(request.configs) > SHOWN:
        say(f"  ... and {len(request.configs) - SHOWN} more")
    say(f"output: {request.output}")
    say(f"tuning cache: {describe_cache(request.cache_path)}")


def _space_count(variant):
    """The space's size for the metadata: the count, or "more than N" for a space too large to count."""
    count, whole = count_space(variant)
    return count if whole else f"more than {count}"


def _about(request: TuneRequest, options: TuneOptions) -> dict:
    """What the tuning file's metadata says of the search."""
    return {"name": f"tune-{request.variant.name}",
            "tuning": {"variant": request.variant.name, "strategy": options.strategy, "budget": options.budget,
                       "seed": options.seed, "space": _space_count(request.variant), "tried": options.budget if options.strategy in SEARCHES else len(request.configs),
                       "per_shape": options.per_shape, "candidates": [str(p) for p in options.candidates],
                       "top": options.top, "dtype": request.dtype, "layout": request.layout}}


def _tune_batched(request: TuneRequest, options: TuneOptions, hooks: Hooks) -> TuneDone:
    """The batched engine's tuning, then what it found and where it went."""
    say, variant, prune = hooks.say, request.variant, request.prune
    batched_run.refuse_batched_resume(request)
    _announce(request, options, say)  # after every refusal: a bad input is one line
    classes = len({get_op(variant.op).size_class(s) for s in request.shapes})
    say(f"batched: {len(request.configs)} configurations x {len(request.shapes)} shapes in {classes} size classes, "
        f"one timed launch each ({request.cache} cache"
        f"{'' if prune == 0 else f'; pruned under {prune:g} of the best at each pivot'})")
    about = _about(request, options)
    about = {**about, "tuning": {**about["tuning"], "engine": "batched"}}
    best, device, counts = batched_run.tune_batched(request, about, list(hooks.command), say=say)
    say(f"rows: {', '.join(f'{n} {k}' for k, n in counts.items() if k != 'wall_s')}; "
        f"{counts.get('wall_s', 0):.0f} s measuring")
    say(f"best configuration in {len(best)} size classes written to {describe_cache(request.cache_path)} "
        f"({device.name}, {variant.name} source {request.source_hash})")
    return TuneDone("batched", request.output, batched_local.gz_path(request.output), best, about, device=device)


def _tune_points(request: TuneRequest, options: TuneOptions, settings: Settings, hooks: Hooks) -> TuneDone:
    """The points engine's tuning (every configuration at every shape a sweep point), then its
    best configurations into the cache."""
    say = hooks.say
    hooks.output(request.output)
    _announce(request, options, say)
    about = _about(request, options)
    if options.strategy in SEARCHES:
        best, device, tried, close = tune_searched(request, about, settings, hooks, options.strategy, options.budget,
                                                   options.seed)
        for line in close:
            say(f"finalists {line}")
    else:
        best, device = tune_points(request, about, settings, hooks)
    for line in describe(best):
        say(f"best {line}")
    say(f"written to {describe_cache(request.cache_path)} ({device.name}, {request.variant.name} source "
        f"{request.source_hash})")
    return TuneDone("points", request.output, request.output, best, about, points_of(request), device)
