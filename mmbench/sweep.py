"""One run as a request (RunRequest: what `mmbench run`'s options or `mmbench.run(...)`'s arguments
ask for), checked, planned and executed by the same functions, so the command line and the Python
API cannot drift apart. No Click here: bad input is RunRefused (one line naming the value, before
anything is touched), a run that cannot go on RunAborted; messages go to `say`, rows to `on_row`."""

from __future__ import annotations

import datetime as dt
import functools
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from . import environment, places
from .config import ConfigError, load_config
from .engine import session
from .engine.ahead import started_ahead
from .engine.session import Progress
from .engine.options import Limit, check_given, cluster_spec, int_list, isolation_of, parse_params, split
from .engine.outcome import Outcome
from .engine.plan import Point, Selection, Settings, check_forms, form_scope_problem, plan
from .engine.refusals import (NEW_OUTPUT_HINT, RunRefused, Say, check_buildable, check_new_output, check_output,
                               previous_metadata, resolve_settings, resumable)
from .ops import get_op, timing_problem
from .ops.base import SCOPES
from .precisions import LAYOUTS, PRECISIONS, PrecisionError
from .results import Scan, run_csv, torn_message
from .sizes import SizeSpecError
from .timing import CACHE_MODES
from .tuning import for_runs
from .tuning.cache import NO_CACHE, TuneError, read_caches
from .variants import REGISTRY, VariantError, get_variant

PAPER_SWEEP = "63:2049"  # the default sizes: Zosa's 189
MEASURED = ("runs", "warmup", "cache", "threads", "seed", "max_noise", "max_interval", "noise_clock")  # resolved with a resume's file
# New runs on the GPU sample each point until the median's 95 % interval is within +- INTERVAL of it
# (Settings.max_interval): narrow enough that `mmbench compare`'s default 2 % threshold can tell a change
# on either side from noise; within INTERVAL_BUDGET_S of sampling a point unless --time-budget says.
INTERVAL = 0.005
INTERVAL_BUDGET_S = 1.0
OFF = "off"  # max_interval: exactly --runs samples


@dataclass(frozen=True)
class RunRequest:
    """A run as asked for: `mmbench run`'s options, one field each (None: not given, the default or
    on a resume the file's). Names and lists are as the options take them ("a,b", "BM=128,BK=8/16")."""

    variants: tuple[str, ...] = ()  # default: best
    sizes: str | None = None  # a size spec; default PAPER_SWEEP
    blocks: str | None = None
    params: tuple[str, ...] = ()
    tuning_cache: str | None = None  # a path, or "none"; default: yours, then the shipped one
    config: Path | None = None  # a study's TOML: its sweeps and [run] settings
    runs: int | None = None
    warmup: int | None = None
    cache: str | None = None
    threads: int | None = None
    seed: int | None = None
    max_noise: float | None = None
    max_interval: float | str | None = None  # a fraction, or OFF; default INTERVAL for a new run on the GPU
    noise_clock: str | None = None
    time_budget: float | None = None
    cpu_budget: float | None = None
    output: Path | None = None  # default: RUNS/NAME-TIMESTAMP/NAME-TIMESTAMP.csv
    resume: bool = False
    scope: str | None = None
    pad: bool = False
    dtype: tuple[str, ...] = ()  # precisions ("bf16", "fp32,tf32"); default fp32
    layout: tuple[str, ...] = ()  # layouts of A and B ("nn", "nt"); default nn
    cluster: str | None = None
    scheduler: str | None = None
    workers: int | None = None
    isolation: str = "process"  # GPU points in a worker process thrown away on a fault (engine/points_isolated.py)
    point_timeout: float | None = None  # seconds a GPU point may take from its first launch; default: the rule


@dataclass(frozen=True)
class RunPlan:
    """A run checked and planned, nothing touched yet: its settings, every point of its selections,
    those the file does not hold yet, and what a resume continues."""

    output: Path
    settings: Settings
    points: list[Point]
    todo: list[Point]  # the points not in the file yet (all of them for a new file)
    found: Scan | None  # the resumed file as scanned (None: a new file)
    previous: dict  # the resumed file's metadata ({} for a new file)
    tuning: dict  # where the tuned parameters came from (tuning_record), for the metadata


@dataclass(frozen=True)
class Performed:
    """What perform did: the run's name, its plan, and how the run ended (None: nothing was run,
    a dry run or nothing left to do)."""

    name: str
    plan: RunPlan
    outcome: Outcome | None

    @property
    def output(self) -> Path:
        return self.plan.output


def perform(request: RunRequest, *, say: Say = print, dry_run: bool = False, command: Sequence[str] = ("mmbench",),
            on_output: Callable[[Path], None] | None = None, progress: Progress | None = None) -> Performed:
    """The run a request asks for: checked (RunRefused, one line, nothing touched), planned, and
    unless dry_run executed into its output with rows written whole as they finish (a Session).
    on_output(output) hears the output before anything runs; progress(points) gives on_row."""
    check_values(request)
    name, selections, cfg = selections_of(request.variants, request.sizes, request.blocks, request.params,
                                          request.config, request.scope, request.pad, request.dtype, request.layout)
    for note in forms_left_out(selections):
        say(note)
    caches = reading_caches(request.tuning_cache)
    chosen = {v for sel in selections for v in sel.variants}
    gpus = needs_gpu(chosen)
    spec = cluster_spec(request.cluster, request.scheduler, request.workers, gpus)
    isolation = isolation_of(request.isolation, request.point_timeout)
    if request.resume and request.output is None:
        raise RunRefused("--resume needs --output naming the CSV to continue")
    output = request.output or run_csv(f"{name}-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}", places.runs_dir())
    if on_output is not None:
        on_output(output)
    asked = {k: getattr(request, k) for k in MEASURED}
    given = {**cfg, **{k: v for k, v in asked.items() if v is not None}}  # cfg: what the config's [run] sets
    if given.get("max_interval") == OFF:
        given["max_interval"] = None  # given as none: a resume of a file sampled to an interval is refused
    elif "max_interval" not in given and "max_noise" not in given and not request.resume and gpus:
        given["max_interval"] = INTERVAL
    budgets = {k: v for k, v in (("cpu_budget_s", request.cpu_budget), ("budget_s", request.time_budget)) if v is not None}
    output_checked = not dry_run and spec is not None
    if output_checked:
        _checked_output(output, request.resume)  # the refusals a cluster start would otherwise stand before
    with started_ahead(spec, gpus, isolation, start=not dry_run):  # the GPU's worker or the cluster starts while planned
        return _planned_and_run(request, name, selections, caches, output, given, budgets, chosen, spec, isolation,
                                say, dry_run, command, progress, output_checked)


def _planned_and_run(request: RunRequest, name: str, selections, caches, output: Path, given: dict, budgets: dict,
                     chosen, spec, isolation, say: Say, dry_run: bool, command: Sequence[str],
                     progress: Progress | None, output_checked: bool) -> Performed:
    """perform()'s plan and run, once the request is read (output_checked: perform checked the output)."""
    ran = plan_run(selections, caches, output, given, resume=request.resume, say=say,
                   refuse_unused=lambda s: refuse_unused_settings(request, given, s, chosen),
                   output_checked=output_checked, gpu=None if dry_run else _cluster_gpu(spec, needs_gpu(chosen), say),
                   **budgets)
    if dry_run and spec is not None and any(for_runs.tunable(sel) for sel in selections):
        say("a dry run connects to no cluster: its tuned parameters are this machine's GPU's; the run looks them "
            "up for the GPU its workers report")
    if ran.found and ran.found.torn:
        say(torn_message(output, ran.found.torn, "it will be set aside and its point measured again"
                         if not dry_run and ran.todo else "left in place (nothing is run now)"))
    if dry_run:
        return Performed(name, ran, None)
    if not ran.todo:
        say(f"nothing to do: all {len(ran.points)} points are already in {output}")
        return Performed(name, ran, None)
    about = {"name": name, "config": str(request.config) if request.config else None}
    with (progress(len(ran.todo)) if progress is not None else nullcontext(None)) as on_row:
        outcome = session.execute(ran.todo, ran.settings, output, about, list(command), resume=request.resume,
                                  previous=ran.previous, on_row=on_row, say=say, cluster=spec, tuning=ran.tuning,
                                  isolation=isolation, found=ran.found)
    return Performed(name, ran, outcome)


def needs_gpu(variants) -> bool:
    """Whether some of a run's variants run on the GPU (a cluster's early start is keyed by it)."""
    return any(v.on_gpu for v in variants)


def _cluster_gpu(spec, gpus: bool, say: Say) -> Callable[[], for_runs.Found] | None:
    """Where a run goes to a cluster, what its tuned parameters are for: the GPU its workers report
    (points_dask.cluster_gpu, on the connection begun ahead of the plan), this machine's where they
    could not say; None: no cluster."""
    if spec is None:
        return None

    def gpu() -> for_runs.Found:
        from .engine.points_dask import cluster_gpu

        return cluster_gpu(spec, gpus, say) or for_runs.this_machines_gpu()

    return gpu


def plan_run(selections: Sequence[Selection], caches: Sequence, output: Path, given: dict, *, resume: bool,
             say: Say, refuse_unused: Callable[[Settings], None] | None = None, output_checked: bool = False,
             gpu: Callable[[], for_runs.Found] | None = None, **settings) -> RunPlan:
    """Check the output (a new file, or one to resume with the settings it was measured with), give
    the selections their tuned parameters from the caches, and plan the points. given: the
    measurement settings asked for (options, config); settings: the rest (cpu_budget_s, ...);
    refuse_unused(settings) refuses a setting no point of the run would use; output_checked: perform
    checked the output already, before a cluster's early start; gpu(): the GPU the points run on and
    where none was found (for_runs.with_tuned), asked once, where a tunable variant needs it (default:
    this machine's)."""
    if not output_checked:
        _checked_output(output, resume)
    found = resumable(output) if resume else None
    previous = previous_metadata(output, found, say) if resume else {}
    resolved = resolve_settings(given, output, previous if resume else None)
    if resolved.get("max_interval") is not None and "budget_s" not in settings:
        settings = {**settings, "budget_s": INTERVAL_BUDGET_S}
    try:
        chosen = Settings(**resolved, **settings)
    except ValueError as exc:  # a noise target and an interval target
        raise RunRefused(f"--max-noise {resolved.get('max_noise')} and --max-interval {resolved.get('max_interval')}: "
                         f"{exc}") from None
    if refuse_unused is not None:
        refuse_unused(chosen)
    gpu = functools.cache(gpu) if gpu is not None else None
    selections = [for_runs.with_tuned(sel, caches, say, gpu) for sel in selections]
    try:
        points = plan(selections, chosen.cache)
    except VariantError as exc:  # a parameter value outside its domain
        raise RunRefused(str(exc)) from None
    check_buildable(points)
    done = found.keys if found else set()
    return RunPlan(output, chosen, points, [p for p in points if p.key not in done], found, previous,
                   for_runs.tuning_record(selections, caches))


def _checked_output(output: Path, resume: bool) -> None:
    """Refuse an output that cannot be written, or, for a new run (not resume), one that already holds
    a run (check_output, check_new_output)."""
    check_output(output)
    if not resume:
        check_new_output(output, NEW_OUTPUT_HINT)


# What the command line's option types check (click.IntRange, Finite, Choice), for a request that
# did not come through them (engine/options.Limit).
LIMITS = (Limit("runs", int, 1, Settings().max_runs), Limit("warmup", int, 0, Settings().max_runs),
          Limit("threads", int, 1), Limit("seed", int, 0, 2**32 - 1), Limit("workers", int, 1),
          Limit("max_noise", float, 0, 1), Limit("max_interval", float, 0, 1), Limit("time_budget", float, 0),
          Limit("cpu_budget", float, 0), Limit("point_timeout", float, 0))
CHOICES = (("cache", CACHE_MODES), ("noise_clock", ("events", "kernel")), ("cluster", ("local",)),
           ("isolation", ("process", "none")))


def check_values(request: RunRequest) -> None:
    """Refuse a value the command line's option types would have refused (a request built in
    Python has not been through them): integers in their ranges, finite numbers inside theirs
    (open: a fraction or budget of 0 means nothing), known choices. Named as keyword arguments."""
    values = {key: getattr(request, key) for key in (*(limit.field for limit in LIMITS), *(key for key, _ in CHOICES))}
    if values["max_interval"] == OFF:  # the one word a number's place takes
        del values["max_interval"]
    check_given(values, LIMITS, CHOICES)


def scopes_of(scope: str | None, pad: bool, chosen) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    """--scope and --pad read and checked against each chosen variant: one that cannot be timed so
    is refused, never left out."""
    scopes = tuple(dict.fromkeys(split((scope,)))) if scope is not None else ("kernel",)
    if not scopes:
        raise RunRefused(f"--scope '{scope}' names no scope; choose from: {', '.join(SCOPES)}")
    for name in scopes:
        if name not in SCOPES:
            raise RunRefused(f"--scope '{name}'; choose from: {', '.join(SCOPES)}")
    problem = timing_problem(chosen, scopes, (pad,))
    if problem:
        raise RunRefused(f"--pad: {problem[1]}" if problem[0] == "pad" else f"--scope {problem[0]}: {problem[1]}")
    return scopes, (True,) if pad else (False,)


def refuse_unused_settings(request: RunRequest, given: dict, settings: Settings, variants) -> None:
    """Refuse a setting given (by option or by the config's [run]) that no variant of the run uses,
    or that cannot hold on this machine: it would be recorded in the metadata and do nothing."""

    def named(key: str) -> str:
        return f"--{key.replace('_', '-')} {given[key]}" if getattr(request, key) is not None else \
            f"{request.config}: run.{key} = {given[key]}"

    on_gpu, on_cpu = any(v.on_gpu for v in variants), any(not v.on_gpu for v in variants)
    if "cache" in given and not on_gpu:
        raise RunRefused(f"{named('cache')}: no variant of this run runs on the GPU (a CPU point's caches are never "
                         f"flushed: its rows say hot)")
    if "max_noise" in given and not on_gpu:
        raise RunRefused(f"{named('max_noise')}: no variant of this run runs on the GPU (a CPU point takes exactly "
                         f"--runs samples)")
    if request.isolation != "process" and not on_gpu:
        raise RunRefused(f"--isolation {request.isolation}: no variant of this run runs on the GPU (crash isolation "
                         f"is of GPU points)")
    if request.point_timeout is not None and not on_gpu:
        raise RunRefused(f"--point-timeout {request.point_timeout:g}: no variant of this run runs on the GPU (it bounds "
                         f"a GPU point's worker process)")
    if "threads" in given and not on_cpu:
        raise RunRefused(f"{named('threads')}: no variant of this run runs on the CPU, whose BLAS threads it sets")
    cores = environment.own_cpus()
    if given.get("threads", 0) > cores and not request.scheduler:  # a running cluster's workers are elsewhere
        raise RunRefused(f"{named('threads')}: this process may use {cores} cores; more BLAS threads than cores "
                         f"would measure their contention (and the rows, settings and BLAS would disagree)")
    if "max_interval" in given and given["max_interval"] is not None and not on_gpu:
        raise RunRefused(f"{named('max_interval')}: no variant of this run runs on the GPU (a CPU point takes exactly "
                         f"--runs samples)")
    if settings.target is None:
        _refuse_given(request, ("noise_clock", "time_budget"), "it applies to a sampling target (--max-noise or "
                                                               "--max-interval), which this run does not set")
    if not any(v.backend == "cpu" for v in variants):
        _refuse_given(request, ("cpu_budget",), "no variant of this run is a compiled CPU loop (backend cpu), the "
                                                "points it budgets")


def _refuse_given(request: RunRequest, keys: Sequence[str], why: str) -> None:
    for key in keys:
        if getattr(request, key) is not None:
            raise RunRefused(f"--{key.replace('_', '-')} {getattr(request, key)}: {why}")


def selections_of(variants, sizes, blocks, params, config, scope=None, pad=False, dtype=(), layout=()
                  ) -> tuple[str, list[Selection], dict]:
    """(run name, selections, settings from the config) from the options or the config file."""
    if config:
        if variants or sizes or blocks or params or scope or pad or dtype or layout:
            raise RunRefused("--config sets variants, sizes, parameters, scopes, padding, precisions and layouts; do "
                             "not combine it with --variant, --sizes, --block, --params, --scope, --pad, --dtype or "
                             "--layout")
        try:
            cfg = load_config(config)
        except ConfigError as exc:
            raise RunRefused(str(exc)) from None
        settings = {k: getattr(cfg, k) for k in cfg.run_keys}  # only what it sets: a resume takes the rest
        return cfg.name, [s.selection() for s in cfg.sweeps], settings
    names = split(variants)
    if variants and not names:
        raise RunRefused(f"--variant '{','.join(variants)}' names no variant; choose from: {', '.join(REGISTRY)}")
    try:
        chosen = tuple(dict.fromkeys(get_variant(n) for n in names or ["best"]))
    except VariantError as exc:
        raise RunRefused(str(exc)) from None
    spec = PAPER_SWEEP if sizes is None else sizes
    try:
        for op in dict.fromkeys(get_op(v.op) for v in chosen):  # each operation reads the spec as its shapes
            op.parse_sizes(spec)
    except SizeSpecError as exc:
        raise RunRefused(str(exc)) from None
    overrides = parse_params(params)
    if blocks is not None:
        if "BLOCK" in overrides:
            raise RunRefused(f"--block {blocks} and --params BLOCK={'/'.join(map(str, overrides['BLOCK']))} both set "
                             f"BLOCK; give one of them")
        overrides["BLOCK"] = int_list("--block", blocks)
    known = {axis for v in chosen for axis in v.axes}
    for name in overrides:
        if name not in known:
            raise RunRefused(f"parameter '{name}' belongs to none of {', '.join(v.name for v in chosen)}; "
                             f"their parameters: {', '.join(sorted(known)) or 'none'}")
    scopes, pads = scopes_of(scope, pad, chosen)
    for option, given in (("--dtype", dtype), ("--layout", layout)):
        if given and not split(given):
            choices = PRECISIONS if option == "--dtype" else LAYOUTS
            raise RunRefused(f"{option} '{','.join(given)}' names none; choose from: {', '.join(choices)}")
    try:
        dtypes, layouts, _ = check_forms(chosen, split(dtype), split(layout))
    except PrecisionError as exc:
        raise RunRefused(str(exc)) from None
    problem = form_scope_problem(dtypes, layouts, scopes, pads)
    if problem:
        raise RunRefused(f"--scope/--pad: {problem}")
    return "run", [Selection(chosen, spec, overrides, scopes=scopes, pads=pads, dtypes=dtypes, layouts=layouts)], {}


def forms_left_out(selections: Sequence[Selection]) -> list[str]:
    """For each variant that takes only some of its selection's precisions and layouts, a line
    saying which are not planned (the selections were checked as they were read)."""
    try:
        return [note for sel in selections for note in check_forms(sel.variants, sel.dtypes, sel.layouts)[2]]
    except PrecisionError as exc:
        raise RunRefused(str(exc)) from None


def reading_caches(given: str | None):
    """The tuning caches a run reads, in lookup order (tuning.cache.read_caches): the user's (a PATH
    given, which must exist; else places.user_cache()), then the shipped one; none with
    --tuning-cache none."""
    if given is not None and str(given).strip().lower() == NO_CACHE:
        return ()
    if given is not None and not Path(given).is_file():
        what = "a folder" if Path(given).is_dir() else "no such file"
        raise RunRefused(f"--tuning-cache {str(given)!r}: {what}; name an existing tuning cache (a .json file), or none "
                         f"to run with default parameters")
    try:
        return read_caches(Path(given) if given is not None else None)
    except TuneError as exc:
        raise RunRefused(str(exc)) from None
