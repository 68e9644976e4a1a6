"""The Python API of a run: what `mmbench run` does between reading its options and printing, for
a script to call as the CLI does. Refusals are RunRefused (engine/refusals.py), one line each."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from .engine.plan import Point, Selection, Settings, plan
from .engine.refusals import (RunAborted, RunRefused, Say, check_buildable, check_new_output, check_output,
                              previous_metadata, resolve_settings, resumable)
from .results import Scan
from .tuning import for_runs
from .variants import VariantError


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


def plan_run(selections: Sequence[Selection], caches: Sequence, output: Path, given: dict, *, resume: bool,
             say: Say, refuse_unused: Callable[[Settings], None] | None = None, **settings) -> RunPlan:
    """Check the output (a new file, or one to resume with the settings it was measured with), give
    the selections their tuned parameters from the caches, and plan the points. given: the
    measurement settings asked for (options, config); settings: the rest (cpu_budget_s, ...);
    refuse_unused(settings) refuses a setting no point of the run would use."""
    check_output(output)
    found = resumable(output) if resume else None
    if not resume:
        check_new_output(output, "pass --resume to continue it or choose another --output")
    previous = previous_metadata(output, found, say) if resume else {}
    chosen = Settings(**resolve_settings(given, output, previous if resume else None), **settings)
    if refuse_unused is not None:
        refuse_unused(chosen)
    selections = [for_runs.with_tuned(sel, caches, say) for sel in selections]
    try:
        points = plan(selections, chosen.cache)
    except VariantError as exc:  # a parameter value outside its domain
        raise RunRefused(str(exc)) from None
    check_buildable(points)
    done = found.keys if found else set()
    return RunPlan(output, chosen, points, [p for p in points if p.key not in done], found, previous,
                   for_runs.tuning_record(selections, caches))


def plan_verify_timing(selections: Sequence[Selection], read_caches: Callable[[], Sequence], output: Path,
                       say: Say) -> tuple[list[Point], dict]:
    """(points, tuning record) of `mmbench verify-timing`: a new output, the GPU variants of the
    selections with their tuned parameters (read_caches() reads the caches, as a plain run), and
    Nsight Compute found before anything is timed."""
    from .profile import ProfileError, ncu_command

    check_output(output)
    if output.exists() and output.stat().st_size > 0:
        raise RunRefused(f"{output} already exists; choose another --output")
    caches = read_caches()
    selections = [for_runs.with_tuned(sel, caches, say) for sel in selections]
    cpu = [v.name for sel in selections for v in sel.variants if not v.on_gpu]
    if cpu:  # Nsight Compute times GPU kernels only: a CPU variant would be left out
        raise RunRefused(f"--variant {cpu[0]}: it runs on the CPU; verify-timing checks GPU variants against Nsight "
                         f"Compute")
    points = plan(selections, "cold")
    try:
        ncu_command([])  # no ncu: say so before timing anything
    except ProfileError as exc:
        raise RunAborted(str(exc)) from None
    return points, for_runs.tuning_record(selections, caches)


def compare_with_ncu(output: Path, points: Sequence[Point], ncu_cache: str):
    """(table, its path): the run's clocks against Nsight Compute's at each point, written beside
    output as NAME.verify.csv."""
    from .profile import ProfileError
    from .results import read_results, sibling
    from .verify_timing import compare, ncu_reference

    try:
        table = compare(read_results(output), ncu_reference(points, ncu_cache))
    except ProfileError as exc:
        raise RunAborted(str(exc)) from None
    path = sibling(output, ".verify.csv")
    table.to_csv(path, index=False)
    return table, path


def points_of_run(df, names: Sequence[str], points_spec: str, path: Path) -> list[Point]:
    """The points of a run's verified GPU rows of these variants at the shapes of points_spec, with
    the parameters, cache, scope and padding each was measured with."""
    from .ops import get_op
    from .sizes import Shape, SizeSpecError
    from .variants import get_variant, parse_params

    try:
        chosen = [get_variant(n) for n in names]
        shapes = {(v.op, s) for v in chosen for s in get_op(v.op).parse_sizes(points_spec)}
    except (VariantError, SizeSpecError) as exc:
        raise RunRefused(str(exc)) from None
    by_name = {v.name: v for v in chosen if v.on_gpu}
    rows = df[(df.status == "ok") & df.variant.isin(list(by_name))]
    points = [Point(by_name[r.variant], parse_params(r.params), Shape(int(r.m), int(r.n), int(r.k)), r.cache,
                    r.scope, bool(r.pad))
              for r in rows.itertuples() if (by_name[r.variant].op, Shape(int(r.m), int(r.n), int(r.k))) in shapes]
    if not points:
        raise RunRefused(f"{path} has no verified GPU row of {', '.join(names)} at --points {points_spec}")
    return list({p.key: p for p in points}.values())


def points_to_profile(selections: Sequence[Selection], cache: str, points_spec: str, variants: Sequence[str],
                      wanted: Sequence[str], config: Path) -> list[Point]:
    """The GPU points of a config's selections at the sizes of points_spec, of the wanted variants
    (--variant as given, and the names it holds; all of its GPU series when none); refused when a
    name or size matches nothing."""
    from .ops import get_op
    from .sizes import SizeSpecError
    from .variants import get_variant

    try:
        shapes = {(op.name, shape) for op in {get_op(v.op) for sel in selections for v in sel.variants}
                  for shape in op.parse_sizes(points_spec)}
    except SizeSpecError as exc:
        raise RunRefused(str(exc)) from None
    wanted = set(wanted)
    if variants and not wanted:
        raise RunRefused(f"--variant '{','.join(variants)}' names no variant; leave it out to profile every GPU "
                         f"series")
    for name in wanted:
        try:
            get_variant(name)
        except VariantError as exc:
            raise RunRefused(str(exc)) from None
    on_gpu = [p for p in plan(selections, cache) if p.variant.on_gpu]
    series = dict.fromkeys(p.variant.name for p in on_gpu)
    for name in sorted(wanted - set(series)):  # it would be left out without a word
        raise RunRefused(f"--variant {name}: not a GPU series of {config}; its GPU series: {', '.join(series)}")
    points = [p for p in on_gpu if (p.variant.op, p.shape) in shapes and (not wanted or p.variant.name in wanted)]
    if not points:
        raise RunRefused(f"no GPU point of {config} matches --points {points_spec}"
                         + (f" and --variant {','.join(sorted(wanted))}" if wanted else ""))
    return points


def profile_beside(points: Sequence[Point], results: Path):
    """(profile, its path): Nsight Compute's counts of the points, written beside the results CSV
    they belong to (NAME.profile.csv)."""
    from .profile import ProfileError, profile_path, profile_points

    try:
        df = profile_points(points)
    except ProfileError as exc:
        raise RunAborted(str(exc)) from None
    out = profile_path(results)
    df.to_csv(out, index=False)
    return df, out
