"""Run points into a results CSV with its metadata: the workflow that `mmbench run`, `mmbench tune`
and the scripts share.

No Click here. A refusal before anything is touched is ``RunRefused`` (the CLI exits 2 with its
one line), a run that cannot go on is ``RunAborted`` (exit 1); messages go to a ``say`` callable.
"""

from __future__ import annotations

import datetime as dt
import os
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from . import ceilings, environment
from .results import (COLUMNS, COMPRESSED, MEASUREMENT_SETTINGS, CsvSink, ResultsError, add_columns, history,
                      metadata_path, older_columns, read_metadata, recorded_settings, row_key, scan, set_aside_torn,
                      sibling, status_counts, write_metadata)
from .ops.base import SCOPES
from .sweep import Point, Runner, Selection, Settings, add_spent, kernel_key, spent_between
from .tuning.for_runs import tunable
from .variants import format_params

DEFAULTS = {k: getattr(Settings(), k) for k in MEASUREMENT_SETTINGS}  # what a run measures with unless told
Say = Callable[[str], None]


class RunRefused(ValueError):
    """Bad input found before anything was touched: one line naming the value and the choices."""


class RunAborted(RuntimeError):
    """The run could not start or go on (no GPU, a failure): one line saying what the file holds."""


class RunInterrupted(RunAborted):
    """Ctrl-C: what finished is kept; the message says what the file holds and how to go on."""


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


# -- before anything runs ----------------------------------------------------------------------------
def check_output(output: Path, compressed_resumes: bool = False) -> None:
    """Refuse an output that cannot be written, or whose run was finished and compressed (X.csv.gz
    beside it; compressed_resumes: a batched tuning's resume, which unpacks it), before anything
    runs or is touched."""
    if output.is_dir():
        raise RunRefused(f"--output {output} is a folder; name a CSV file")
    if output.suffix != ".csv":
        raise RunRefused(f"--output {output}: a results file ends in .csv")
    problem = cannot_create(output)
    if problem:
        raise RunRefused(f"--output {output}: {problem}")
    if metadata_path(output).is_dir():  # found only after the first row, as a traceback
        raise RunRefused(f"--output {output}: its metadata goes to {metadata_path(output)}, which is a folder")
    packed = sibling(output, COMPRESSED)
    if packed.exists() and not compressed_resumes:
        raise RunRefused(f"--output {output}: {packed} is that run, finished and compressed, with its metadata "
                         f"{metadata_path(output)}; a compressed run is not written to again: choose another --output")


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


def check_new_output(output: Path, hint: str) -> None:
    """Refuse to begin a new results file where one is: its rows, or its metadata standing alone
    (the record of a run whose CSV is elsewhere), would be lost."""
    for path in (output, sibling(output, COMPRESSED)):
        if path.exists() and path.stat().st_size > 0:
            raise RunRefused(f"{path} already exists; {hint}")
    if metadata_path(output).exists():
        raise RunRefused(f"{metadata_path(output)} already exists without {output.name}: it records an earlier run; {hint}")


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


def tuning_record(selections: Sequence[Selection], caches: Sequence) -> dict:
    """What a run's metadata keeps of its tuning: the caches read (none: switched off) and, per
    tunable variant, where its parameters came from: each cache (path, yours or shipped), the GPU
    its entries were measured on, whether borrowed, over how many shapes; "defaults" where none."""
    variants: dict[str, dict[tuple, int]] = {}
    for sel in selections:
        for v in tunable(sel):
            sources = variants.setdefault(v.name, {})
            for shape in sel.shapes(v):
                t = sel.tuned.get((v.name, shape))
                key = (str(t.cache), t.origin, t.device, t.borrowed) if t else (None, "defaults", None, False)
                sources[key] = sources.get(key, 0) + 1
    fields = ("cache", "origin", "measured_on", "borrowed")
    return {"read": [{"path": str(c.path), "origin": c.origin, "entries": len(c.entries)} for c in caches],
            "variants": {name: [{**dict(zip(fields, key)), "shapes": n} for key, n in sources.items()]
                         for name, sources in variants.items()}}


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


# -- where and with what: the file keeps its first machine, each invocation its own ----------------
def first_record(previous: Mapping, now: Mapping) -> dict:
    """The file's top-level record of where and with what it was measured (host, software, git,
    GPU, ...): that of the invocation that began it, kept on every resume, since each invocation
    keeps its own; this run's where the file has none yet."""
    return {k: previous.get(k) or v for k, v in now.items()}


def _at(meta, *keys):
    """meta[k1][k2]..., or None where a level is missing."""
    for key in keys:
        meta = meta.get(key) if isinstance(meta, Mapping) else None
    return meta


SOFTWARE_PARTS = (("mmbench", "mmbench"), ("packages", "packages"), ("nvcc", "nvcc"), ("blas", "BLAS"),
                  ("kernel_sources", "kernel sources"))


def machine_changes(first: Mapping, now: Mapping) -> list[str]:
    """How this run's machine differs from the one that began a file: its host, GPU, commit and
    the parts of its software that differ ([] when nothing does, or the file does not say)."""
    changes = [f"{label} {_at(now, *keys)} (was {_at(first, *keys)})"
               for label, keys in (("host", ("host", "hostname")), ("GPU", ("gpu", "uuid")), ("commit", ("git", "commit")))
               if _at(first, *keys) and _at(now, *keys) and _at(first, *keys) != _at(now, *keys)]
    if first.get("software") and now.get("software"):
        parts = [label for key, label in SOFTWARE_PARTS if _at(first, "software", key) != _at(now, "software", key)]
        changes += [f"software ({', '.join(parts)})"] if parts else []
    return changes


def say_machine_changes(output: Path, previous: Mapping, facts: Mapping, say: Say) -> None:
    """A resume on another machine or software is allowed, and said in one line."""
    changes = machine_changes(previous, facts) if previous else []
    if changes:
        say(f"note: {output} was begun elsewhere; this run differs in {'; '.join(changes)}. Its rows name the host "
            f"(and GPU) that measured them; the metadata keeps the first machine at its top and each run's own in "
            f"its invocations")


# -- what a run leaves when it stops --------------------------------------------------------------
def missing_folders(path: Path) -> list[Path]:
    """The folders above path that do not exist yet, deepest first: what a run makes, and takes
    back when it measured nothing."""
    missing, folder = [], path.parent
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def remove_unmeasured(output: Path, folders: Sequence[Path]) -> None:
    """Take back what a new run that measured nothing made: its CSV (a header at most), its
    metadata and the folders it made (left where something else is in them)."""
    output.unlink(missing_ok=True)
    metadata_path(output).unlink(missing_ok=True)
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty: not ours alone
            break


def file_counts(output: Path) -> dict[str, int]:
    """The file's rows by status as it is now ({} when there is none or it cannot be read)."""
    try:
        return status_counts(output)
    except ResultsError:
        return {}


def counted(n: int, one: str, many: str) -> str:
    """1 finished point, 2 finished points."""
    return f"{n} {one if n == 1 else many}"


def interrupted_message(output: Path, in_file: Mapping[str, int], mine: int | None = None) -> str:
    """What an interrupted run says: how many finished points the file holds (this run's among
    them), and how to go on; or that nothing was written."""
    held = sum(in_file.values())
    if not held and not output.exists():
        return "interrupted before the first point finished: nothing was written"
    ours = "" if mine is None else f" ({mine} from this run)"
    return (f"interrupted: {output} holds {counted(held, 'finished point', 'finished points')}{ours}; rerun with "
            f"--output {output} --resume to continue")


def first_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def failed_message(output: Path, failure: BaseException, in_file: Mapping[str, int]) -> str:
    """What a failed run says: the error, and what the file holds (or that nothing was written)."""
    held = sum(in_file.values())
    if not held and not output.exists():
        return f"the run failed before the first point finished, and nothing was written: {first_line(failure)}"
    return (f"the run failed: {first_line(failure)}; {output} holds {counted(held, 'finished point', 'finished points')} "
            f"and its metadata the error; rerun with --output {output} --resume to continue")


class Session:
    """One results CSV being written from a runner: rows go in whole as they finish, and the
    metadata (settings, GPU, software, kernels, every invocation) is kept current, so a crash
    loses nothing. A new file appears with its first row, its metadata just before it, so a run
    stopped sooner leaves nothing behind. On resume, a torn last row is set aside first and the
    history is kept: the file's first machine stays at the top, each invocation records its own."""

    def __init__(self, output: Path, settings: Settings, about: dict, command: list[str], runner: Runner, *,
                 points_planned: int, resume: bool = False, previous: dict | None = None, say: Say = print,
                 points: Sequence[Point] = (), spent: dict | None = None, tuning: dict | None = None):
        previous = previous or {}
        self.output, self.settings, self.runner, self.counts, self.previous = output, settings, runner, {}, previous
        self.earlier = history(previous)
        then, now = (previous.get("gpu") or {}).get("name"), runner.gpu_names()
        if then and now and now != {then}:
            raise RunRefused(f"{output} was measured on {then}; this run's GPUs are {', '.join(sorted(now))}: one "
                             f"file, one GPU model, so choose another --output")
        self.facts = environment.collect(runner.gpu)  # before anything on disk changes: it takes a while
        self.new_folders, self.new_metadata = missing_folders(output), not metadata_path(output).exists()
        notices = []
        try:
            if resume and output.exists() and output.stat().st_size > 0:
                notices = [n for n in (set_aside_torn(output, scan(output)), add_columns(output, scan(output))) if n]
            self.sink = CsvSink(output)
        except ResultsError as exc:
            raise RunRefused(str(exc)) from None
        for notice in notices:
            say(notice)
        say_machine_changes(output, previous, self.facts, say)
        started_at = utc_now()
        # where the runner's time went in this invocation's passes (and its preparing), by process
        self.spent: dict[str, dict[str, float]] = {}
        add_spent(self.spent, spent or {})
        self.invocation = {"command": command, "started_at": started_at, "resumed": resume,
                           "repaired": "; ".join(notices) or None, "points_planned": points_planned,
                           **({"tuning_caches": tuning} if tuning else {})}  # per invocation: a resume may read others
        first_start = (self.earlier[0].get("started_at") if self.earlier else None) or started_at
        # What each scope of the file's rows covers (host buffers pinned, end to end), the earlier ones kept.
        scopes = {**(previous.get("scopes") or {}), **{p.scope: SCOPES[p.scope] for p in points if p.scope != "kernel"}}
        self.meta = {**about, "settings": {**settings.__dict__}, "started_at": first_start,
                     **({"scopes": scopes} if scopes else {}),
                     "ceilings": ceilings.cached_for(self.facts["gpu"]) or previous.get("ceilings")}
        self.kernels = dict(previous.get("kernels") or {})
        self.kernel_keys: set[str] = set()  # the kernels of this file's points (a runner may serve several)
        self.started = time.perf_counter()
        if self.sink.exists:  # a new file's metadata comes with its first row
            self._save("running")

    def _save(self, state: str, **more) -> None:
        if self.spent:
            self.invocation["time_spent_s"] = {process: {phase: round(s, 3) for phase, s in phases.items()}
                                               for process, phases in self.spent.items()}
        mine = {k: v for k, v in self.runner.kernels.items() if k in self.kernel_keys}
        cluster = self.runner.meta() if hasattr(self.runner, "meta") else {}  # its workers and GPUs
        clock = self.runner.kernel_clock_meta() if hasattr(self.runner, "kernel_clock_meta") else {}
        libraries = self.runner.library_meta()  # a cluster's workers report theirs as they go
        machine = {**self.facts, **cluster}  # this invocation's host, software, git and GPU (a cluster's: its workers')
        self.invocation.update(state=state, **machine, **({"libraries": libraries} if libraries else {}), **more)
        write_metadata(self.output, {**self.meta, **first_record(self.previous, {**machine, **libraries}), **clock,
                                     "state": state, "finished_at": self.invocation.get("finished_at"),
                                     "status_counts": status_counts(self.output), "kernels": {**self.kernels, **mine},
                                     "invocations": [*self.earlier, self.invocation]})

    def write(self, row: dict, point: Point) -> None:
        """One finished point's row into the file, whole (a new file's metadata first)."""
        if not self.sink.exists:
            self._save("running")
        self.sink.write(row)
        self.counts[row["status"]] = self.counts.get(row["status"], 0) + 1
        self.kernel_keys.add(kernel_key(point.variant, point.params))

    def run(self, points: Sequence[Point], on_row: Callable[[dict], None] | None = None) -> None:
        run_together(self.runner, [(self, p) for p in points], on_row)

    def finish(self, state: str, failure: BaseException | None = None) -> None:
        """Record how the invocation ended (and why it failed); a new file that got no row is
        taken back, its metadata and folders with it."""
        self.sink.close()
        if not self.sink.exists and self.new_metadata:
            remove_unmeasured(self.output, self.new_folders)
            return
        why = ({"error": first_line(failure), "traceback": "".join(traceback.format_exception(failure))}
               if failure is not None else {})
        self._save(state, finished_at=utc_now(), wall_s=round(time.perf_counter() - self.started, 2),
                   status_counts=self.counts, **why)


def run_together(runner: Runner, items: Sequence[tuple[Session, Point]],
                 on_row: Callable[[dict], None] | None = None) -> None:
    """Points of one or more sessions in one pass of the runner, each row into its own session's
    file: the points of a shape share its inputs and float64 reference (versions of a kernel
    can be interleaved this way). The sessions must measure alike."""
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
    counts: dict[str, int] = field(default_factory=dict)  # this run's rows by status
    in_file: dict[str, int] = field(default_factory=dict)  # the file's, earlier runs' included

    @property
    def failures(self) -> dict[str, int]:
        return {s: n for s, n in self.counts.items() if s in ("wrong", "failed")}


def execute(points: Sequence[Point], settings: Settings, output: Path, about: dict, command: list[str], *,
            prepare: Callable[[Runner], None] | None = None, resume: bool = False, previous: dict | None = None,
            on_row: Callable[[dict], None] | None = None, say: Say = print, cluster=None,
            tuning: dict | None = None) -> Outcome:
    """Run points into output with metadata (`about` goes into it); prepare(runner) runs first
    (the tuner compiles its configurations there; not on a cluster, whose workers compile each
    chunk's kernels in parallel as it arrives). cluster: a cluster.ClusterSpec to spread the points
    over (this process stays the only writer). tuning: where the tuned parameters came from
    (tuning_record), kept in this invocation's record.

    Ctrl-C at any stage ends the run as `interrupted`, with every finished row kept; any other
    failure ends it as `failed` (the metadata keeps the error) and is RunAborted, one line. A new
    file that got no row is not left behind, nor its metadata."""
    runner = session = None
    state, failure = "finished", None
    try:
        runner = open_runner(settings, points, cluster, say)
        before = runner.time_spent()
        if prepare and cluster is None:
            with runner.spending("prepare"):
                prepare(runner)
        session = Session(output, settings, about, command, runner, points_planned=len(points), resume=resume,
                          previous=previous, say=say, points=points, spent=spent_between(before, runner.time_spent()),
                          tuning=tuning)
        session.run(points, on_row)
    except KeyboardInterrupt:
        state = "interrupted"
    except Exception as exc:
        if session is None and isinstance(exc, (RunRefused, RunAborted)):  # said before anything was measured
            if runner is not None:
                runner.close()
            raise
        state, failure = "failed", exc  # a bug, a dead GPU, a full disk: the metadata must not say finished
    try:
        if runner is not None:
            runner.close()
    except Exception as exc:
        state, failure = "failed", failure or exc
    finally:  # the metadata finished whatever closing met
        if session is not None:
            session.finish(state, failure)
    outcome = Outcome(output, state, session.counts if session else {}, file_counts(output))
    if failure is not None:
        raise RunAborted(failed_message(output, failure, outcome.in_file)) from failure
    return outcome
