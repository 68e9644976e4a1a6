"""The Python API: `run` (rows out as a pandas DataFrame, the metadata attached) and `plan` (the
points, nothing run) for notebooks and scripts, through the same functions as `mmbench run`
(sweep.py); `tune`, through the same function as `mmbench tune` (tuning/workflow.py); and what
other commands share with scripts (verify-timing, profile). Refusals are RunRefused
(engine/refusals.py), one line each naming the bad value; no Click here."""

from __future__ import annotations

import shutil
import tempfile
from contextlib import contextmanager, nullcontext
from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

from .engine.outcome import interrupted_message
from .engine.plan import Point, Selection, plan as plan_points
from .engine.refusals import RunAborted, RunInterrupted, RunRefused, Say, check_output
from .results import read_metadata, read_results
from .sweep import RunRequest, perform
from .tuning import for_runs, workflow
from .tuning.request import OPTIONS, TuneOptions
from .variants import VariantError, files

if TYPE_CHECKING:
    import pandas as pd


# The keyword arguments of run and plan beyond variants, sizes and where the files go: the run
# options' (RunRequest's fields, `mmbench run --help` says what each does), minus those these
# functions take in their own form.
SETTINGS = tuple(f.name for f in fields(RunRequest) if f.name not in ("variants", "sizes", "params", "output", "resume"))


def run(variants: Any = None, sizes: Any = None, *, variant_files: Sequence[str | Path] = (), base: str | Path = ".",
        params: Mapping[str, Any] | str | None = None, output: str | Path | None = None, resume: bool = False,
        say: Say = print, on_row: Callable[[dict], None] | None = None, **settings) -> pd.DataFrame:
    """Run variants over sizes as `mmbench run` does, and return the rows as a DataFrame (the CSV's
    columns, read back as mmbench reads results) with df.attrs["metadata"], and df.attrs["path"]
    where the CSV is kept.

    variants: names ("best,cublas", or a list), [[variant]] tables as dicts (relative sources under
    base), or a mix, run in that order; default: every variant of variant_files (TOML paths), else
    best. A file's variants may be named once it is given (or loaded before). sizes: a size
    spec ("256,512", "64:4096:x2"), a size or a list of them (default: the paper's 63:2049).
    params: {"BM": 128, "BK": [8, 16]} or "BM=128,BK=8/16". settings: the run options as keywords
    (runs, warmup, cache, threads, seed, max_noise, max_interval ("off": exactly runs), noise_clock, time_budget,
    cpu_budget,
    tuning_cache (a path or "none"), config, blocks, scope, pad, dtype and layout ("bf16", "fp32,bf16"
    or a list), cluster, scheduler, workers).
    output=None: the rows are written as they finish into a temporary folder, removed once read
    back; output=PATH.csv keeps them there (its metadata beside it), resume=True continues it.
    Bad input is RunRefused, one line naming the value; a run that cannot go on is RunAborted."""
    request = _request(variants, sizes, variant_files, base, params, output, resume, settings)
    with _output(request) as request:
        done = perform(request, say=say, command=_command(variants, sizes, variant_files, params, output, settings),
                       progress=lambda total: nullcontext(on_row))
        outcome, path = done.outcome, done.output
        if outcome is not None and outcome.state == "interrupted":
            raise RunInterrupted(interrupted_message(path, outcome.in_file, sum(outcome.counts.values()))
                                 if output is not None else "interrupted; a run without output= keeps no rows: give "
                                                            "output='PATH.csv' to keep them and resume=True to go on")
        if outcome is not None and outcome.failures:
            say(", ".join(f"{n} point(s) {s}" for s, n in outcome.failures.items()) + "; see the reason column")
        df = read_results(path)
        df.attrs["metadata"] = read_metadata(path)
        if output is not None:
            df.attrs["path"] = path
    return df


def plan(variants: Any = None, sizes: Any = None, *, variant_files: Sequence[str | Path] = (), base: str | Path = ".",
         params: Mapping[str, Any] | str | None = None, output: str | Path | None = None, resume: bool = False,
         say: Say = print, **settings) -> list[Point]:
    """The points run(...) with these arguments would measure (those a resumed output does not hold
    yet), checked as run checks them, with nothing run or written; needs no GPU."""
    request = _request(variants, sizes, variant_files, base, params, output, resume, settings)
    with _output(request) as request:
        return perform(request, say=say, dry_run=True).plan.todo


# The keyword arguments of tune beyond the variant, its sizes, pinned parameters and candidate
# files: `mmbench tune`'s other options (TuneOptions' fields; `mmbench tune --help` says what each does).
TUNE_OPTIONS = tuple(name for name in OPTIONS if name not in ("variant", "sizes", "params", "candidates"))


def tune(variant: str | None = None, sizes: Any = None, *, params: Mapping[str, Any] | str | None = None,
         candidates: str | Path | Sequence[str | Path] = (), variant_files: Sequence[str | Path] = (),
         say: Say = print, on_row: Callable[[dict], None] | None = None, **options) -> pd.DataFrame:
    """Tune a variant (or a plan's variants) as `mmbench tune` does, through the same function, and
    return the tuning's rows as a DataFrame with df.attrs["metadata"] (the tuning file's),
    df.attrs["best"] (the best configurations recorded in the tuning cache, per size class or
    shape; a plan's per variant) and df.attrs["path"] (the file that holds the rows).

    variant: a name (a variant file's once variant_files are loaded). sizes: a size spec, a size or
    a list of them (default 1024,2048,4096). params: {"BK": 8, "BM": [64, 128]} or "BK=8,BM=64/128",
    pinned as --params. candidates: tuning CSVs as --candidates. options: the other options as
    keywords (plan, strategy, budget, seed, runs, warmup, cache, engine, resume, prune, jobs,
    output, tuning_cache, dry_run, replay, per_shape, top, dtype, layout, pool_gpus, cluster,
    scheduler, workers, isolation, point_timeout). replay=PATH replays a recorded tuning and needs
    no GPU (its rows are the recording's); dry_run=True returns the points it would measure, one
    row each, with what its metadata would say. The rows go where `mmbench tune` writes them
    (output, else your runs folder's tuning/): the cache entries name them.
    Bad input is RunRefused, one line naming the value; a tuning that cannot go on RunAborted."""
    asked = _tune_options(variant, sizes, params, candidates, variant_files, options)
    done = workflow.perform(asked, say=say, command=[_tune_command(variant, sizes, params, candidates, options)],
                            progress=lambda total: nullcontext(on_row))
    if done.rows is None:  # a dry run: the points it would measure
        df = _points_table(done.points)
    else:
        df = _tuning_rows(done.rows, asked.variant if done.kind == "replay" else None)
        df.attrs["path"] = done.rows
    df.attrs["metadata"] = read_metadata(done.rows) if done.rows is not None else done.about
    df.attrs["best"] = done.best
    return df


def _tune_options(variant, sizes, params, candidates, variant_files, options: dict) -> TuneOptions:
    """The TuneOptions of tune's arguments, variant files loaded; given: the arguments passed."""
    unknown = sorted(set(options) - set(TUNE_OPTIONS))
    if unknown:
        raise RunRefused(f"unknown option {unknown[0]}=...; choose from: {', '.join(TUNE_OPTIONS)}")
    if variant is not None and not isinstance(variant, str):
        raise RunRefused(f"variant={variant!r}: expected a variant's name (a plan tunes several: plan=NAME)")
    for key in ("plan", "dtype", "layout", "scheduler"):  # one name each, as the options take them
        if options.get(key) is not None and not isinstance(options[key], str):
            raise RunRefused(f"{key}={options[key]!r}: expected one name")
    try:
        files.use([variant_files] if isinstance(variant_files, (str, Path)) else variant_files)
    except VariantError as exc:
        raise RunRefused(str(exc)) from None
    listed = [candidates] if isinstance(candidates, (str, Path)) else list(candidates)
    asked = {**options, "variant": variant, "sizes": _spec(sizes), "candidates": tuple(Path(c) for c in listed),
             "params": ",".join(_params(params)) if params is not None else None}
    for key in ("output", "replay", "tuning_cache"):
        if isinstance(asked.get(key), str):
            asked[key] = Path(asked[key])
    # given as the command line gives them: a flag when set, any other option when it has a value
    given = frozenset(k for k, v in asked.items() if v is not None and v is not False and v != ())
    return TuneOptions(**{k: v for k, v in asked.items() if v is not None}, given=given)


def _tuning_rows(path: Path, variant: str | None) -> pd.DataFrame:
    """A tuning file's rows: a points tuning's results CSV as every command reads it, or a batched
    tuning's class rows (its CSV or CSV.gz); variant: only its rows (a recording may hold others)."""
    import pandas as pd

    from .engine import batched_local

    head = pd.read_csv(path, nrows=0).columns
    df = batched_local.read_rows(path) if "size_class" in head and "m" not in head else read_results(path)
    return df[df.variant == variant].reset_index(drop=True) if variant and "variant" in df else df


def _points_table(points: Sequence[Point]) -> pd.DataFrame:
    """Points as rows: what each would measure (its variant, configuration, shape and form)."""
    import pandas as pd

    from .variants import format_params

    return pd.DataFrame([{"op": p.variant.op, "variant": p.variant.name, "params": format_params(p.params),
                          "m": p.shape.m, "n": p.shape.n, "k": p.shape.k, "dtype": p.dtype, "layout": p.layout,
                          "cache": p.cache, "pad": int(p.pad)} for p in points],
                        columns=["op", "variant", "params", "m", "n", "k", "dtype", "layout", "cache", "pad"])


def _tune_command(variant, sizes, params, candidates, options: dict) -> str:
    """How the metadata records a call: mmbench.tune(...) with the arguments given."""
    given = {"variant": variant, "sizes": sizes, "params": params, "candidates": candidates or None, **options}
    return f"mmbench.tune({', '.join(f'{k}={v!r}' for k, v in given.items() if v is not None)})"


def _request(variants, sizes, variant_files, base, params, output, resume, settings: dict) -> RunRequest:
    """The RunRequest of run's arguments: variant files and dicts loaded into the registry (files.use,
    files.use_declared), everything else in the form the options take."""
    if resume and output is None:
        raise RunRefused("resume=True continues a results file: give output='PATH.csv'")
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise RunRefused(f"unknown setting {unknown[0]}=...; choose from: {', '.join(SETTINGS)}")
    listed = [variants] if isinstance(variants, (str, dict)) else list(variants or [])
    tables = [v for v in listed if isinstance(v, dict)]
    names = [v for v in listed if isinstance(v, str)]
    if len(tables) + len(names) != len(listed):
        odd = next(v for v in listed if not isinstance(v, (str, dict)))
        raise RunRefused(f"variants: {odd!r} is neither a variant's name nor a [[variant]] table (a dict)")
    if isinstance(variant_files, (str, Path)):
        variant_files = [variant_files]
    try:
        from_files = files.use(variant_files)
        from_dicts = files.use_declared(tables, base=base) if tables else []
    except VariantError as exc:
        raise RunRefused(str(exc)) from None
    declared = iter(v.name for v in from_dicts)
    names = [v if isinstance(v, str) else next(declared) for v in listed] or [v.name for v in from_files]
    if settings.get("config") is not None:
        settings = {**settings, "config": Path(settings["config"])}
    if isinstance(settings.get("blocks"), (list, tuple)):
        settings = {**settings, "blocks": ",".join(map(str, settings["blocks"]))}
    for key in ("dtype", "layout"):  # "bf16", "fp32,bf16" or a list, as the options take them
        if isinstance(settings.get(key), str):
            settings = {**settings, key: (settings[key],)}
        elif settings.get(key) is not None:
            settings = {**settings, key: tuple(map(str, settings[key]))}
    return RunRequest(variants=tuple(names), sizes=_spec(sizes), params=_params(params),
                      output=Path(output) if output is not None else None, resume=resume, **settings)


def _spec(sizes: Any) -> str | None:
    """A size spec from a spec, a size, or a list of sizes and specs."""
    if sizes is None or isinstance(sizes, str):
        return sizes
    items = [sizes] if isinstance(sizes, int) else sizes
    try:
        items = list(items)
    except TypeError:
        items = [None]
    if not items or not all(isinstance(s, (int, str)) and not isinstance(s, bool) for s in items):
        raise RunRefused(f"sizes={sizes!r}: expected a size spec such as '256,512' or '64:4096:x2', a size, or a list "
                         f"of them")
    return ",".join(map(str, items))


def _params(params: Mapping[str, Any] | str | None) -> tuple[str, ...]:
    """{"BM": 128, "BK": [8, 16]} (or "BM=128,BK=8/16") as --params takes it."""
    if params is None:
        return ()
    if isinstance(params, str):
        return (params,)
    if not isinstance(params, Mapping):
        raise RunRefused(f"params={params!r}: expected a dict such as {{'BM': 128, 'BK': [8, 16]}}")
    return tuple(f"{k}={'/'.join(map(str, v)) if isinstance(v, (list, tuple)) else v}" for k, v in params.items())


@contextmanager
def _output(request: RunRequest) -> Iterator[RunRequest]:
    """The request with its output: the one given (checked), else a new file in a temporary folder
    removed afterwards, whatever happened."""
    if request.output is not None:
        yield request
        return
    folder = Path(tempfile.mkdtemp(prefix="mmbench-run-"))
    try:
        yield replace(request, output=folder / "run.csv")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _command(variants, sizes, variant_files, params, output, settings: dict) -> list[str]:
    """How the metadata records a call: mmbench.run(...) with the arguments given."""
    given = {"variants": variants, "sizes": sizes, "variant_files": variant_files or None, "params": params,
             "output": output, **settings}
    shown = ", ".join(f"{k}={v!r}" for k, v in given.items() if v is not None)
    return [f"mmbench.run({shown})"]


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
    points = plan_points(selections, "cold")
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
                    r.scope, bool(r.pad), r.dtype, r.layout)  # the profiler's target takes any precision and layout
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
    on_gpu = [p for p in plan_points(selections, cache) if p.variant.on_gpu]
    series = dict.fromkeys(p.variant.name for p in on_gpu)
    for name in sorted(wanted - set(series)):  # it would be left out without a word
        raise RunRefused(f"--variant {name}: not a GPU series of {config}; its GPU series: {', '.join(series)}")
    points = _series_at(on_gpu, shapes, wanted)
    if not points:
        raise RunRefused(f"no GPU point of {config} matches --points {points_spec}"
                         + (f" and --variant {','.join(sorted(wanted))}" if wanted else ""))
    return points


def _series_at(on_gpu: Sequence[Point], shapes: set, wanted: set) -> list[Point]:
    """The points to profile at each (op, shape) asked for: a variant's points there where the
    config sweeps it there (a tuned variant's parameters differ by shape); elsewhere each of its
    series (parameters, padding) taken there, for a profile is Nsight Compute's own measurement
    and may go past the run's sizes (a roofline past L2). Each kernel once, whatever its scopes."""
    by_variant: dict[str, list[Point]] = {}
    for p in on_gpu:
        if not wanted or p.variant.name in wanted:
            by_variant.setdefault(p.variant.name, []).append(p)
    out: dict[tuple, Point] = {}
    for name, points in by_variant.items():
        op = points[0].variant.op
        for op_name, shape in sorted(shapes, key=lambda s: (s[0], s[1].m, s[1].n, s[1].k)):
            if op_name != op:
                continue
            there = [p for p in points if p.shape == shape] or [replace(p, shape=shape) for p in points]
            for p in there:
                out.setdefault((name, p.params, p.pad, p.dtype, p.layout, shape), replace(p, scope="kernel"))
    return list(out.values())


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
    write_profile_meta(out, points)
    return df, out


def write_profile_meta(profile_csv: Path, points: Sequence[Point]) -> Path:
    """NAME.profile.meta.json beside a profile: when, by which command, on which GPU (facts read
    after ncu let go of it) with which software and commit, and how Nsight Compute was run."""
    import json
    import subprocess
    import sys

    from . import environment
    from .device import GpuUnavailable, open_gpu
    from .profile import METRICS, available, ncu_path
    from .schema import utc_now

    try:
        facts = environment.collect(open_gpu())
    except GpuUnavailable:
        facts = environment.collect()
    ncu = ncu_path()
    version = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines() if ncu else []
    asked = available(tuple(METRICS)) if ncu else tuple(METRICS)
    meta = {"profiled_at": utc_now(), "command": sys.argv, "points": len(points), **facts,
            "ncu": {"version": version[-1] if version else None, "clock_control": "none", "cache_control": "all",
                    "metrics": list(asked), "not_on_this_gpu": sorted(set(METRICS) - set(asked))}}
    path = profile_csv.with_name(profile_csv.name.removesuffix(".csv") + ".meta.json")
    path.write_text(json.dumps(meta, indent=2, default=str) + "\n")
    return path
