"""A tuning plan run (`mmbench tune --plan`, `mmbench.tune(plan=...)`): the plan's searches
(plan.py) as one resumable sweep, then each variant's best configuration per shape (or size
class) into the tuning cache."""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from pathlib import Path

from .. import places, source
from ..engine.plan import Point
from ..engine.refusals import (NEW_OUTPUT_HINT, RunAborted, RunRefused, check_new_output, check_output, previous_metadata,
                               resolve_settings, resumable)
from ..precisions import form_suffix
from ..results import run_csv
from ..toml_files import ConfigError
from .cache import describe_cache
from .measure import Hooks, measure
from .plan import TunePlan, describe_plan, load_plan
from .request import TuneRequest
from .writeback import record_tuning


@dataclass(frozen=True)
class PlanRun:
    """What a plan run did: its plan, output and the points it measured (or, dry, would), and each
    variant's best configurations recorded, by label (NAME, with its precision and layout where
    they are not fp32, nn, and "per class" where its searches keep the best per size class)."""

    plan: TunePlan
    output: Path
    todo: list[Point]
    best: dict[str, dict]


def tune_by_plan(plan_name: str, output: Path | None, resume: bool, jobs: int, seed: int, cache_path: Path,
                 dry_run: bool, isolation, hooks: Hooks, cluster=None, pool_gpus: bool = False) -> PlanRun:
    """Run a plan into output (a new file, or with resume the file to continue), then record its
    best configurations per shape and variant in cache_path; cluster: a ClusterSpec that spreads the
    points over a Dask cluster's GPUs, or None; pool_gpus: GPUs of several models on it pool their
    timings into each model's entry (without it, such a plan's recording is refused)."""
    say = hooks.say
    try:
        plan = load_plan(plan_name)
    except ConfigError as exc:
        raise RunRefused(str(exc)) from None
    if resume and output is None:
        raise RunRefused("--resume continues a plan's tuning file: give it as --output")
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    output = Path(output) if output is not None else run_csv(f"tune-{plan.name}-{stamp}", places.tuning_runs_dir())
    settings, points, todo, previous = _plan_points(plan, output, resume, seed, say)
    for line in describe_plan(plan, len(points), len(points) - len(todo)):
        say(line)
    if dry_run:
        say(f"output: {output}")
        say(f"tuning cache: {describe_cache(cache_path)}")
        return PlanRun(plan, output, todo, {})
    hooks.output(output)
    about = {"name": f"tune-{plan.name}", "tuning": plan.about()}
    needed: dict[str, tuple] = {}  # per variant, the configurations still to measure (a resume needs few)
    for p in todo:  # as each point builds them: at its precision and layout (#defines such as DTYPE)
        needed.setdefault(p.variant.name, (p.variant, {}))[1][p.compiled_params] = None

    def compile_all(runner) -> None:  # in parallel, measuring what is built while nvcc builds the rest
        for variant, configs in needed.values():
            runner.precompile_configs(variant, list(configs), jobs, wait=False)

    started = time.monotonic()
    if todo:
        measure(todo, settings, output, about, hooks, prepare=compile_all, resume=resume, previous=previous,
                isolation=isolation, cluster=cluster)  # previous: the earlier invocations stay recorded
    best = _record(plan, output, cache_path, say, pool_gpus)
    say(f"plan {plan.name}: {time.monotonic() - started:.0f} s this invocation; the file's metadata keeps every "
        f"invocation's time ({output.with_suffix('.meta.json').name})")
    return PlanRun(plan, output, todo, best)


def _plan_points(plan: TunePlan, output: Path, resume: bool, seed: int, say):
    """The plan's measurement settings, its points, those not yet in output and output's metadata ({}
    for a new file); refused where output exists (without resume), or holds another plan or other settings."""
    check_output(output)
    found = resumable(output) if resume else None
    if not resume:
        check_new_output(output, NEW_OUTPUT_HINT)
    previous = previous_metadata(output, found, say) if resume else {}
    recorded = (previous.get("tuning") or {}).get("plan_sha256")
    if found and recorded != plan.digest:
        raise RunRefused(f"{output} was measured with another plan ({(previous.get('tuning') or {}).get('plan_file')}"
                         f", sha256 {str(recorded)[:12]}) than {plan.path} (sha256 {plan.digest[:12]}): a resume "
                         f"never mixes two searches; choose another --output")
    wanted = plan.settings(seed)
    given = {k: getattr(wanted, k) for k in ("runs", "warmup", "cache", "seed")}
    resolve_settings(given, output, previous if resume else None)  # refuses other settings than the file's
    done, points = (found.keys if found else set()), plan.points()
    return wanted, points, [p for p in points if p.key not in done], previous


def _record(plan: TunePlan, output: Path, cache_path: Path, say, pool_gpus: bool = False) -> dict[str, dict]:
    """Each variant's best configuration per shape (or size class, where its searches say), from the
    whole file, into the cache; the best of each, by label."""
    recorded = {}
    for (name, dtype, layout, per), (variant, shapes, configs) in plan.variants().items():
        request = TuneRequest(variant, shapes, configs, output, cache_path, source.source_hash(variant),
                              per_shape=per == "shape", dtype=dtype, layout=layout, pool_gpus=pool_gpus)
        label = name + form_suffix(dtype, layout)
        try:
            best, device = record_tuning(request)
        except RunAborted as exc:  # none of this variant's configurations verified at any shape: say so, go on
            say(f"{label}: {exc}")
            continue
        recorded[label if per == "shape" else f"{label} per class"] = best
        kept = f"{len(best)} of {len(shapes)} shape(s)" if per == "shape" else f"{len(best)} size class(es) of {len(shapes)} shape(s)"
        say(f"{label}: the best of {len(configs)} configuration(s) at {kept} written "
            f"to {describe_cache(cache_path)} ({device.name}, source {request.source_hash})")
    return recorded
