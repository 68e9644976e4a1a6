"""Run points into a results CSV with its metadata: the workflow that `mmbench run`, `mmbench tune`
and the scripts share.

No Click here. A refusal before anything is touched is ``RunRefused`` (the CLI exits 2 with its
one line), a run that cannot go on is ``RunAborted`` (exit 1); messages go to a ``say`` callable.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

from . import ceilings, environment
from .results import (COLUMNS, MEASUREMENT_SETTINGS, CsvSink, ResultsError, add_columns, older_columns, history,
                      metadata_path, read_metadata, recorded_settings, row_key, scan, set_aside_torn, status_counts,
                      write_metadata)
from .ops import get_op
from .ops.base import SCOPES
from .sweep import Point, Runner, Selection, Settings, add_spent, kernel_key, spent_between
from .variants import format_params

DEFAULTS = {k: getattr(Settings(), k) for k in MEASUREMENT_SETTINGS}  # what a run measures with unless told
Say = Callable[[str], None]


class RunRefused(ValueError):
    """Bad input found before anything was touched: one line naming the value and the choices."""


class RunAborted(RuntimeError):
    """The run could not start or go on (no GPU, interrupted)."""


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


# -- before anything runs ----------------------------------------------------------------------------
def check_output(output: Path) -> None:
    """Refuse an output that cannot be written, before anything runs or is touched."""
    if output.is_dir():
        raise RunRefused(f"--output {output} is a folder; name a CSV file")
    if output.suffix != ".csv":
        raise RunRefused(f"--output {output}: a results file ends in .csv")
    problem = cannot_create(output)
    if problem:
        raise RunRefused(f"--output {output}: {problem}")
    if metadata_path(output).is_dir():  # found only after the first row, as a traceback
        raise RunRefused(f"--output {output}: its metadata goes to {metadata_path(output)}, which is a folder")


def cannot_create(path: Path) -> str | None:
    """Why a file or folder at path (and the folders above it) cannot be made or written, or None:
    the nearest existing folder above it is a file, or this user may not write there."""
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"{ancestor} is not a folder"
    target = path if path.exists() else ancestor
    if not os.access(target, os.W_OK):  # root passes this anywhere; opening the file later says the rest
        return f"cannot be written: no write permission in {target}"
    return None


def resumable(output: Path):
    """The file to continue, checked row by row (nothing is changed here); None when it is new."""
    if not output.exists() or output.stat().st_size == 0:
        return None
    try:
        found = scan(output)
    except ResultsError as exc:
        raise RunRefused(f"{output} cannot be resumed: {exc}") from None
    if found.header != COLUMNS and not older_columns(found.header):
        missing = [c for c in COLUMNS if c not in found.header]
        raise RunRefused(f"{output} cannot be resumed: its columns are not those this mmbench writes"
                         + (f" (missing {', '.join(missing)})" if missing else ""))
    return found


def previous_metadata(output: Path, found, say: Say) -> dict:
    """The metadata of the file to continue, checked now (before anything is touched); a file
    without it is continued with the settings its rows show, and a warning says so."""
    try:
        previous = read_metadata(output)
    except ResultsError as exc:
        raise RunRefused(f"{output} cannot be resumed: {exc}") from None
    if found and not previous:
        say(f"warning: {output.with_suffix('.meta.json')} is missing: runs, warmup and cache are taken "
            f"from the rows; threads and seed are this run's")
    return previous


def resolve_settings(given: dict, output: Path, previous: dict | None) -> dict:
    """The run's measurement settings: those given (options or config), else on a resume
    (previous: the file's metadata) the file's, else the defaults. A resume that asks for other
    settings than the file has is refused: one file, one way of measuring."""
    recorded = {}
    if previous is not None:
        try:
            recorded = recorded_settings(output, previous)
        except ResultsError as exc:
            raise RunRefused(str(exc)) from None
    clash = {k: (recorded[k], v) for k, v in given.items() if k in recorded and recorded[k] != v}
    if clash:
        then = ", ".join(f"{k}={a}" for k, (a, _) in clash.items())
        now = ", ".join(f"{k}={b}" for k, (_, b) in clash.items())
        raise RunRefused(f"{output} was measured with {then}; this resume asks for {now}: one file holds one way of "
                         f"measuring, so resume with the file's settings (leave them out) or choose another --output")
    return {**DEFAULTS, **{k: v for k, v in recorded.items() if k in DEFAULTS}, **given}


def check_buildable(points: Sequence[Point]) -> None:
    """Refuse a plan with a point no GPU can run (a broken constraint, too many threads a block):
    known from the registry alone, so it is said before anything runs, dry runs included."""
    for p in points:
        problem = p.variant.problem(p.params)
        if problem:
            raise RunRefused(f"{p.variant.name} {format_params(p.params)}: {problem}")


def with_tuned(sel: Selection, cache_path: Path, say: Say) -> Selection:
    """Give each tunable variant whose parameters the user did not set its tuned parameters
    for this GPU and kernel source (or, where this GPU has none, those of a GPU of the same
    architecture and SM count), and say which."""
    from . import source
    from .device import device_identity
    from .tune import TuneError, load_cache, lookup

    tunable = [v for v in sel.variants if v.space and len(v.space) > 1 and not set(v.axes) & set(sel.overrides)]
    if not tunable:
        return sel
    try:
        cache = load_cache(cache_path)
    except TuneError as exc:
        raise RunRefused(str(exc)) from None
    device = device_identity()
    tuned = {}
    for v in tunable:
        found = ({shape: lookup(cache, device, v, source.source_hash(v), shape) for shape in sel.shapes(v)}
                 if device else {})
        found = {shape: t for shape, t in found.items() if t}
        if found:
            tuned.update({(v.name, shape): t.params for shape, t in found.items()})
            kinds = sorted({format_params(t.params) for t in found.values()})
            if len(kinds) > 4:  # a mesh of cells: say how many, not each
                kinds = [f"{len(kinds)} configurations over {len({get_op(v.op).size_class(s) for s in found})} size classes"]
            lender = next(iter(found.values()))
            whose = (f"for {device.name}" if not lender.borrowed else
                     f"of {lender.device}: {device.name} has no entry, and {lender.device} has the same "
                     f"architecture ({device.arch}) and SM count ({device.sm_count})")
            say(f"{v.name}: tuned parameters from {cache_path} {whose}: {'; '.join(kinds)}")
        elif any(e.get("variant") == v.name for e in cache.values()):
            say(f"{v.name}: the tuning cache has no entry for this GPU ({device or 'none found'}), nor for "
                f"one of its architecture and SM count, with this kernel source; using defaults (run `mmbench tune`)")
    return replace(sel, tuned={**sel.tuned, **tuned})


# -- running -----------------------------------------------------------------------------------------
def open_runner(settings: Settings, points: Sequence[Point], cluster=None, say: Say = print):
    """The runner of a run: this process's GPU and CPU, or (cluster: a cluster.ClusterSpec) a Dask
    cluster's workers, with this process as the only writer."""
    if cluster is not None:
        from .cluster import ClusterError, ClusterRunner

        try:
            return ClusterRunner(settings, points, cluster, say)
        except ClusterError as exc:
            raise RunAborted(str(exc)) from None
    try:
        return Runner(settings, points)
    except Exception as exc:  # GpuUnavailable and the like: nothing can run
        raise RunAborted(f"cannot open the GPU: {exc}") from None


class Session:
    """One results CSV being written from a runner: rows go in whole as they finish, and the
    metadata (settings, GPU, software, kernels, every invocation) is kept current, so a crash
    loses nothing. On resume, a torn last row is set aside first and the history is kept."""

    def __init__(self, output: Path, settings: Settings, about: dict, command: list[str], runner: Runner, *,
                 points_planned: int, resume: bool = False, previous: dict | None = None, say: Say = print,
                 points: Sequence[Point] = (), spent: dict | None = None):
        previous = previous or {}
        self.output, self.settings, self.runner, self.counts = output, settings, runner, {}
        self.earlier = history(previous)
        then, now = (previous.get("gpu") or {}).get("name"), runner.gpu_names()
        if then and now and now != {then}:
            raise RunRefused(f"{output} was measured on {then}; this run's GPUs are {', '.join(sorted(now))}: one "
                             f"file, one GPU model, so choose another --output")
        notices = []
        try:
            if resume and output.exists():
                notices = [n for n in (set_aside_torn(output, scan(output)), add_columns(output, scan(output))) if n]
            for notice in notices:
                say(notice)
            self.sink = CsvSink(output)
        except ResultsError as exc:
            raise RunRefused(str(exc)) from None
        started_at = utc_now()
        # where the runner's time went in this invocation's passes (and its preparing), by process
        self.spent: dict[str, dict[str, float]] = {}
        add_spent(self.spent, spent or {})
        self.invocation = {"command": command, "started_at": started_at, "resumed": resume,
                           "repaired": "; ".join(notices) or None, "points_planned": points_planned}
        self.facts = environment.collect(runner.gpu)
        first_start = (self.earlier[0].get("started_at") if self.earlier else None) or started_at
        # What each scope of the file's rows covers (host buffers pinned, end to end), the earlier ones kept.
        scopes = {**(previous.get("scopes") or {}), **{p.scope: SCOPES[p.scope] for p in points if p.scope != "kernel"}}
        self.meta = {**about, "settings": {**settings.__dict__}, "started_at": first_start, **runner.library_meta(),
                     **({"scopes": scopes} if scopes else {}),
                     **self.facts, "ceilings": ceilings.cached_for(self.facts["gpu"]) or previous.get("ceilings")}
        if self.meta.get("gpu") is None and previous.get("gpu"):
            self.meta["gpu"] = previous["gpu"]  # a cluster's client has no GPU: the file's stays until workers report
        self.kernels = dict(previous.get("kernels") or {})
        self.kernel_keys: set[str] = set()  # the kernels of this file's points (a runner may serve several)
        self.started = time.perf_counter()
        self._save("running")

    def _save(self, state: str, **more) -> None:
        self.invocation.update(state=state, git=self.facts["git"], **more)
        if self.spent:
            self.invocation["time_spent_s"] = {process: {phase: round(s, 3) for phase, s in phases.items()}
                                               for process, phases in self.spent.items()}
        mine = {k: v for k, v in self.runner.kernels.items() if k in self.kernel_keys}
        cluster = self.runner.meta() if hasattr(self.runner, "meta") else {}  # its workers and GPUs
        cluster |= self.runner.kernel_clock_meta() if hasattr(self.runner, "kernel_clock_meta") else {}
        libraries = self.runner.library_meta()  # a cluster's workers report theirs as they go
        write_metadata(self.output, {**self.meta, **libraries, **cluster, "state": state, "finished_at": self.invocation.get("finished_at"),
                                     "status_counts": status_counts(self.output), "kernels": {**self.kernels, **mine},
                                     "invocations": [*self.earlier, self.invocation]})

    def write(self, row: dict, point: Point) -> None:
        """One finished point's row into the file, whole."""
        self.sink.write(row)
        self.counts[row["status"]] = self.counts.get(row["status"], 0) + 1
        self.kernel_keys.add(kernel_key(point.variant, point.params))

    def run(self, points: Sequence[Point], on_row: Callable[[dict], None] | None = None) -> None:
        run_together(self.runner, [(self, p) for p in points], on_row)

    def finish(self, state: str) -> None:
        self.sink.close()
        self._save(state, finished_at=utc_now(), wall_s=round(time.perf_counter() - self.started, 2),
                   status_counts=self.counts)


def run_together(runner: Runner, items: Sequence[tuple[Session, Point]],
                 on_row: Callable[[dict], None] | None = None) -> None:
    """Points of one or more sessions in one pass of the runner, each row into its own session's
    file: the points of a shape share its inputs and float64 reference (scripts/ab_kernels.py
    interleaves versions of a kernel this way). The sessions must measure alike."""
    settings = {session.settings for session, _ in items}
    if len(settings) > 1:
        raise ValueError("sessions run together must have the same settings")
    if not items:
        return
    runner.settings = settings.pop()  # sessions may share a runner, each with its own settings
    # The runner takes a shape's points together (their inputs and reference are shared) and gives
    # one row per point in that order: order the items the same way, then each row is its item's.
    by_shape: dict[tuple, list] = {}
    for session, point in items:
        by_shape.setdefault((point.variant.op, point.shape), []).append((session, point))
    ordered = [item for group in by_shape.values() for item in group]
    queue = iter(ordered)
    # A cluster gives rows as its chunks finish: each row goes to its point by key (one session).
    by_key = {point.key: (session, point) for session, point in ordered} if getattr(runner, "unordered", False) else None

    def route(row: dict) -> None:
        session, point = by_key.pop(row_key(row)) if by_key is not None else next(queue)
        session.write(row, point)
        if on_row:
            on_row(row)

    before = runner.time_spent()
    try:
        runner.run([point for _, point in ordered], route)
    finally:  # the pass's time, into each session it ran points of (a shared pass counts in each)
        grown = spent_between(before, runner.time_spent())
        for session in {id(s): s for s, _ in ordered}.values():
            add_spent(session.spent, grown)


@dataclass
class Outcome:
    output: Path
    state: str  # finished or interrupted
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def failures(self) -> dict[str, int]:
        return {s: n for s, n in self.counts.items() if s in ("wrong", "failed")}


def execute(points: Sequence[Point], settings: Settings, output: Path, about: dict, command: list[str], *,
            prepare: Callable[[Runner], None] | None = None, resume: bool = False, previous: dict | None = None,
            on_row: Callable[[dict], None] | None = None, say: Say = print, cluster=None) -> Outcome:
    """Run points into output with metadata (`about` goes into it); prepare(runner) runs first
    (the tuner compiles its configurations there; not on a cluster, whose workers compile each
    chunk's kernels in parallel as it arrives). Ctrl-C ends the run as `interrupted`, with every finished row kept. cluster: a
    cluster.ClusterSpec to spread the points over (this process stays the only writer)."""
    runner = open_runner(settings, points, cluster, say)
    prepare = prepare if cluster is None else None
    try:
        before = runner.time_spent()
        if prepare:
            with runner.spending("prepare"):
                prepare(runner)
        session = Session(output, settings, about, command, runner, points_planned=len(points), resume=resume,
                          previous=previous, say=say, points=points, spent=spent_between(before, runner.time_spent()))
    except BaseException:
        runner.close()
        raise
    state = "finished"
    try:
        session.run(points, on_row)
    except KeyboardInterrupt:
        state = "interrupted"
    finally:
        try:
            runner.close()
        finally:  # the metadata finished whatever closing met
            session.finish(state)
    return Outcome(output, state, session.counts)


# -- tuning ------------------------------------------------------------------------------------------
def record_tuning(output: Path, variant, per_shape: bool, cache_path: Path, pool: bool = False):
    """After a tuning run: its best configuration per size class (or shape) into the cache, keyed
    by the GPU its metadata names (a cluster's workers of one model merge into that model's entry).
    Returns (best, device); RunAborted when none verified, RunRefused when the run mixed GPU models
    and pool is not set (with pool, the pooled best goes under each model's name)."""
    from . import source
    from .results import read_results
    from .tune import DeviceId, best_per_class, record

    best = best_per_class(read_results(output), variant.name, per_shape)
    if not best:
        raise RunAborted(f"no configuration of {variant.name} was verified at every shape; see {output}")
    meta = read_metadata(output)
    gpu = meta.get("gpu") or {}  # the GPU the tuning ran on, as its metadata records
    models = gpu.get("mixed") or [gpu.get("name") or "unknown GPU"]
    if len(models) > 1 and not pool:
        raise RunRefused(f"{output} was measured on GPUs of different models ({', '.join(models)}); their timings "
                         f"do not pool into one cache entry: tune on one model, or pass --pool-gpus")
    facts = {g["name"]: g for g in (meta.get("cluster") or {}).get("gpus", [])} or {models[0]: gpu}
    for name in models:
        device = DeviceId(name, facts.get(name, gpu).get("arch"), facts.get(name, gpu).get("sm_count"))
        record(cache_path, device, variant.name, source.source_hash(variant), best, output)
    return best, device


def refuse_batched_resume(output: Path, configs: int, cache: str, prune: float, resume: bool, source_hash: str) -> None:
    """RunRefused when a resumed batched tuning file is not one, has no metadata, or was measured
    under other settings or another version of the kernel (before anything is read into it or
    repaired)."""
    from . import batched

    if not resume:
        return
    try:
        batched.check_columns(output)
        meta = read_metadata(output)
    except (batched.BatchError, ResultsError) as exc:
        raise RunRefused(str(exc)) from None
    if not meta and (output.exists() or batched.gz_path(output).exists()):
        raise RunRefused(f"{output} has no metadata beside it: how it was measured is unknown; choose another --output")
    if not meta:
        return  # nothing to resume: a fresh file
    settings, tuning = meta.get("settings", {}), meta.get("tuning", {})
    if settings.get("cache") not in (None, cache):
        raise RunRefused(f"{output} was measured with cache={settings['cache']}; this resume asks for cache={cache}")
    was = settings.get("prune", 0.0)  # files from before pruning timed every configuration at every shape
    if was != prune:
        raise RunRefused(f"{output} was measured with prune={was:g}; this resume asks for prune={prune:g} (one file, one rule)")
    if tuning.get("tried") not in (None, configs):
        raise RunRefused(f"{output} was measured over {tuning['tried']} configurations; this resume asks for {configs}")
    if tuning.get("source_hash") != source_hash:
        then = tuning.get("source_hash") or "a source it does not record"
        raise RunRefused(f"{output} was measured with the kernel at {then}; the kernel is now at {source_hash}: one file, "
                         f"one kernel; choose another --output")


def tune_batched(variant, configs: Sequence, shapes: Sequence, cache: str, seed: int, jobs: int, output: Path,
                 cache_path: Path, about: dict, command: list[str], *, resume: bool = False, prune: float = 0.0,
                 say: Say = print, cluster=None):
    """The batched tuner (batched.py) into output, resumable by whole size class, then the best
    configuration per class into the tuning cache. Returns (best, device, counts). cluster: a
    cluster.ClusterSpec whose workers measure whole classes (each compiles with `jobs` nvcc)."""
    from . import batched, source
    from .tune import DeviceId

    refuse_batched_resume(output, len(configs), cache, prune, resume, source.source_hash(variant))
    try:
        done, notice = batched.done_classes(output, len(configs)) if resume else (set(), None)
    except batched.BatchError as exc:
        raise RunRefused(str(exc)) from None
    previous = read_metadata(output) if resume else {}
    # a resumed file goes on flushing as it was measured (files before the read flush wrote)
    l2_flush = recorded_settings(output, previous).get("l2_flush", Settings().l2_flush) if previous else Settings().l2_flush
    if notice:
        say(notice)
    t0 = time.perf_counter()
    if cluster is None:
        from .device import open_gpu

        try:
            gpu = open_gpu()
        except Exception as exc:  # GpuUnavailable and the like: nothing can run
            raise RunAborted(f"cannot open the GPU: {exc}") from None
        now, runner = {gpu.facts.name}, None
    else:
        from .cluster import ClusterError, ClusterRunner

        try:
            runner = ClusterRunner(Settings(), [], cluster, say, gpus=True)
        except ClusterError as exc:
            raise RunAborted(str(exc)) from None
        gpu, now = None, runner.gpu_names()
    then = (previous.get("gpu") or {}).get("name")
    if then and now and now != {then}:
        if runner:
            runner.close()
        raise RunRefused(f"{output} was measured on {then}; this run's GPUs are {', '.join(sorted(now))}: one file, "
                         f"one GPU model")
    if gpu is not None:
        gpu.precompile(variant, list(configs), jobs)
        tuner = batched.BatchedTuner(gpu, variant, configs, cache, l2_flush)
        say(f"compiled and loaded {len(configs)} configurations in {time.perf_counter() - t0:.0f} s "
            f"({len(tuner.problems)} cannot run)")
    compile_s = round(time.perf_counter() - t0, 1)
    facts = environment.collect(gpu)
    invocation = {"command": command, "started_at": utc_now(), "resumed": resume, "repaired": notice,
                  "classes_done_before": len(done), "compile_s": compile_s if gpu is not None else None}
    about = {**about, "tuning": {**about.get("tuning", {}), "source_hash": source.source_hash(variant)}}
    meta = {**about, "engine": "batched", "settings": {"runs": 1, "warmup": 0, "cache": cache, "seed": seed, "prune": prune,
                                             "l2_flush": l2_flush},
            "started_at": previous.get("started_at") or invocation["started_at"], **facts,
            "kernels": {**(previous.get("kernels") or {}), **(tuner.kernels if gpu is not None else {})}}
    if meta.get("gpu") is None and previous.get("gpu"):
        meta["gpu"] = previous["gpu"]  # on a cluster, until a worker reports its GPU
    earlier = history(previous)

    def save(state: str, **more) -> None:
        invocation.update(state=state, git=facts["git"], **more)
        on_cluster = runner.meta() if runner else {}  # the workers, and the GPU model they share
        kernels = {**meta["kernels"], **(runner.kernels if runner else {})}
        write_metadata(output, {**meta, **on_cluster, "kernels": kernels, "state": state,
                                "invocations": [*earlier, invocation]})

    output.parent.mkdir(parents=True, exist_ok=True)
    save("running")

    def progress(cls: str, i: int, total: int) -> None:
        if i == total or i % 10 == 0:
            say(f"  {i}/{total} classes ({cls}), {time.perf_counter() - t0:.0f} s")

    state, counts = "finished", {}
    try:
        if runner is None:
            batched.run(tuner, shapes, output, seed, done, progress, counts, prune)
        else:
            runner.run_batched(variant, configs, cache, l2_flush, jobs, shapes, output, seed, done, progress, counts,
                               prune)
    except KeyboardInterrupt:
        state = "interrupted"
    except BaseException:
        state = "failed"  # a CUDA error, a full disk: the metadata must not say finished
        raise
    finally:
        errors = counts.pop("errors", [])
        save(state, finished_at=utc_now(), wall_s=round(time.perf_counter() - t0, 1), status_counts=counts,
             **({"class_errors": errors} if errors else {}))
        if runner:
            runner.close()
    if gpu is not None:
        device = DeviceId(gpu.facts.name, gpu.facts.arch, gpu.facts.sm_count)
    else:
        recorded = read_metadata(output).get("gpu") or {}
        if recorded.get("mixed"):
            raise RunAborted(f"{output} was measured on GPUs of different models ({', '.join(recorded['mixed'])}); "
                             f"their classes are not pooled into the tuning cache")
        if not recorded.get("name"):
            raise RunAborted(f"{output}: no worker reported its GPU, so nothing is recorded in {cache_path}"
                             + (f" ({errors[0]})" if errors else ""))
        device = DeviceId(recorded["name"], recorded.get("arch"), recorded.get("sm_count"))
    best = record_batched(output, variant, device, cache_path)
    if state != "finished":
        raise RunAborted(f"interrupted: the {len(best)} finished classes are in {batched.gz_path(output)} and their best "
                         f"configurations in {cache_path}; rerun with --output {output} --resume")
    if errors:
        raise RunAborted(f"{len(errors)} size classes could not be measured ({errors[0]}); the others are in "
                         f"{batched.gz_path(output)}: rerun with --output {output} --resume")
    if not best:
        raise RunAborted(f"no configuration of {variant.name} was verified at every shape of a class; see {output}")
    return best, device, counts


def record_batched(output: Path, variant, device, cache_path: Path) -> dict:
    """A batched tuning file's whole classes: compressed to CSV.gz (a resume unpacks it), and the
    best configuration of each into the tuning cache (also when interrupted: a class is whole)."""
    from . import batched, source
    from .tune import record

    rows = batched.read_rows(output)
    best = batched.best_per_class(rows)
    final = batched.compress(output) if output.exists() else batched.gz_path(output)
    if best:
        record(cache_path, device, variant.name, source.source_hash(variant), best, final)
    return best
