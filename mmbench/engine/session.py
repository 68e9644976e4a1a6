"""A run into a results CSV: a Session writes an engine's rows whole as they finish and keeps the
metadata current; `execute` opens the engine, runs the points and says how it ended (what
`mmbench run`, `mmbench tune` and the scripts share). open_engine and open_batched_engine open the
engines (interface.py's 2 x 2): points or batched, in this process or on a Dask cluster."""

from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import Callable, ContextManager, Sequence

from .. import ceilings, environment
from ..ops.base import SCOPES
from ..results import ResultsError, ResultsFile, Scan, history, metadata_path, row_key, write_metadata
from ..draws import INPUTS_DRAWN
from ..precisions import LAYOUTS, meaning, precision_key
from ..schema import FORMAT
from .interface import Engine, add_spent, spent_between
from .outcome import Outcome, failed_message, file_counts, first_line, missing_folders, remove_unmeasured
from .plan import Point, Settings, kernel_key
from .points_local import LocalPoints
from ..schema import utc_now
from .provenance import first_record, say_machine_changes
from .refusals import RunAborted, RunRefused, Say

# What a caller of execute gives for a progress display: points -> a context giving on_row (or None).
Progress = Callable[[int], ContextManager[Callable[[dict], None] | None]]


def open_engine(settings: Settings, points: Sequence[Point], cluster=None, say: Say = print, isolation=None):
    """The engine of a run: this process's GPU and CPU (LocalPoints), the same in a child process
    that can be thrown away (isolation: a points_isolated.Isolation of mode process, and some point
    on the GPU: IsolatedPoints), or (cluster: a points_dask.ClusterSpec) a Dask cluster's workers
    (DaskPoints, each worker's points isolated alike), this process the only writer."""
    if cluster is not None:
        from .points_dask import ClusterError, DaskPoints

        try:
            return DaskPoints(settings, points, cluster, say, isolation=isolation)
        except ClusterError as exc:
            raise RunAborted(str(exc)) from None
    try:
        if isolation is not None and isolation.isolates(points):
            return isolation.open(settings, points)
        runner = LocalPoints(settings, points)
    except Exception as exc:  # GpuUnavailable and the like: nothing can run
        raise RunAborted(f"cannot open the GPU: {exc}") from None
    if isolation is not None and isolation.mode != "none":
        runner.isolation_meta = {"mode": "none", "why": "no point of the run uses the GPU"}
    return runner


def open_batched_engine(variant, configs: Sequence, cache: str, l2_flush: str, cluster=None, say: Say = print,
                        isolation=None):
    """The engine of a batched tuning: this process's GPU (batched_local.LocalBatched), the same in a
    child process that can be thrown away (isolation: a points_isolated.Isolation of mode process;
    batched_isolated.IsolatedBatched), or (cluster: a points_dask.ClusterSpec) a Dask cluster's GPU
    workers (batched_dask.DaskBatched, each worker's classes isolated alike)."""
    if cluster is not None:
        from .batched_dask import DaskBatched
        from .points_dask import ClusterError

        try:
            return DaskBatched(variant, configs, cache, l2_flush, cluster, say, isolation)
        except ClusterError as exc:
            raise RunAborted(str(exc)) from None
    from ..device import open_gpu
    from .batched_isolated import IsolatedBatched
    from .batched_local import LocalBatched

    try:
        if isolation is not None and isolation.mode == "process":
            return IsolatedBatched(variant, configs, cache, l2_flush, isolation)
        gpu = open_gpu()
    except Exception as exc:  # GpuUnavailable and the like: nothing can run
        raise RunAborted(f"cannot open the GPU: {exc}") from None
    return LocalBatched(gpu, variant, configs, cache, l2_flush)


class Session:
    """One results CSV being written from a runner: rows go in whole as they finish, and the
    metadata (settings, GPU, software, kernels, every invocation) is kept current, so a crash
    loses nothing. A new file appears with its first row, its metadata just before it, so a run
    stopped sooner leaves nothing behind. On resume, a torn last row is set aside first and the
    history is kept: the file's first machine stays at the top, each invocation records its own."""

    def __init__(self, output: Path, settings: Settings, about: dict, command: list[str], runner: Engine, *,
                 points_planned: int, resume: bool = False, previous: dict | None = None, say: Say = print,
                 points: Sequence[Point] = (), spent: dict | None = None, tuning: dict | None = None,
                 found: Scan | None = None):
        previous = previous or {}
        self.output, self.settings, self.runner, self.counts, self.previous = output, settings, runner, {}, previous
        self.earlier = history(previous)
        then, now = (previous.get("gpu") or {}).get("name"), runner.gpu_names()
        if then and now and now != {then}:
            raise RunRefused(f"{output} was measured on {then}; this run's GPUs are {', '.join(sorted(now))}: one "
                             f"file, one GPU model, so choose another --output")
        self.facts = environment.collect(runner.gpu)  # before anything on disk changes: it takes a while
        self.new_folders, self.new_metadata = missing_folders(output), not metadata_path(output).exists()
        try:  # scanned once: the scan a resume's planning made, else here
            self.file = ResultsFile(output, resume, found)
        except ResultsError as exc:
            raise RunRefused(str(exc)) from None
        notices = self.file.notices
        for notice in notices:
            say(notice)
        say_machine_changes(output, previous, self.facts, say)
        started_at = utc_now()
        # where the runner's time went in this invocation's passes (and its preparing), by process
        self.spent: dict[str, dict[str, float]] = {}
        add_spent(self.spent, spent or {})
        self.invocation = {"command": command, "started_at": started_at, "resumed": resume,
                           "repaired": "; ".join(notices) or None, "points_planned": points_planned,
                           "inputs": INPUTS_DRAWN,  # per invocation: files begun before counter draws drew with numpy
                           **({"tuning_caches": tuning} if tuning else {})}  # per invocation: a resume may read others
        first_start = (self.earlier[0].get("started_at") if self.earlier else None) or started_at
        # What each scope of the file's rows covers (host buffers pinned, end to end), the earlier ones kept.
        scopes = {**(previous.get("scopes") or {}), **{p.scope: SCOPES[p.scope] for p in points if p.scope != "kernel"}}
        # What each precision and layout of the file's rows holds (docs/precisions.md), the earlier ones kept.
        forms = {"precisions": {**(previous.get("precisions") or {}), **{precision_key(p.dtype, p.variant.op):
                                                                          meaning(p.dtype, p.variant.op) for p in points}},
                 "layouts": {**(previous.get("layouts") or {}), **{p.layout: LAYOUTS[p.layout] for p in points}},
                 # the operations of the file's rows: a resume refuses metadata that records others
                 "operations": sorted({*(previous.get("operations") or ()), *(p.variant.op for p in points)})}
        self.meta = {**about, "format": FORMAT, "settings": {**settings.__dict__}, "started_at": first_start,
                     **({"scopes": scopes} if scopes else {}), **forms,
                     "ceilings": ceilings.cached_for(self.facts["gpu"]) or previous.get("ceilings")}
        self.kernels = dict(previous.get("kernels") or {})
        self.kernel_keys: set[str] = set()  # the kernels of this file's points (a runner may serve several)
        self.started = time.perf_counter()
        if self.file.exists:  # a new file's metadata comes with its first row
            self._save("running")

    def _save(self, state: str, **more) -> None:
        if self.spent:
            self.invocation["time_spent_s"] = {process: {phase: round(s, 3) for phase, s in phases.items()}
                                               for process, phases in self.spent.items()}
        mine = {k: v for k, v in self.runner.kernels.items() if k in self.kernel_keys}
        cluster = self.runner.meta()  # a cluster's workers and GPUs
        clock = self.runner.kernel_clock_meta()
        libraries = self.runner.library_meta()  # a cluster's workers report theirs as they go
        machine = {**self.facts, **cluster}  # this invocation's host, software, git and GPU (a cluster's: its workers')
        self.invocation.update(state=state, **machine, **({"libraries": libraries} if libraries else {}), **more)
        write_metadata(self.output, {**self.meta, **first_record(self.previous, {**machine, **libraries}), **clock,
                                     "state": state, "finished_at": self.invocation.get("finished_at"),
                                     "status_counts": dict(self.file.counts), "kernels": {**self.kernels, **mine},
                                     "invocations": [*self.earlier, self.invocation]})

    def write(self, row: dict, point: Point) -> None:
        """One finished point's row into the file, whole (a new file's metadata first)."""
        if not self.file.exists:
            self._save("running")
        self.file.write(row)
        self.counts[row["status"]] = self.counts.get(row["status"], 0) + 1
        self.kernel_keys.add(kernel_key(point.variant, point.compiled_params))

    def run(self, points: Sequence[Point], on_row: Callable[[dict], None] | None = None) -> None:
        run_together(self.runner, [(self, p) for p in points], on_row)

    def finish(self, state: str, failure: BaseException | None = None) -> None:
        """Record how the invocation ended (and why it failed); a new file that got no row is
        taken back, its metadata and folders with it."""
        self.file.close()
        if not self.file.exists and self.new_metadata:
            remove_unmeasured(self.output, self.new_folders)
            return
        why = ({"error": first_line(failure), "traceback": "".join(traceback.format_exception(failure))}
               if failure is not None else {})
        # process_s: the whole command so far, the interpreter's start, imports, planning and a cluster's
        # start included (wall_s is the run's alone), for a command line's first run: what `mmbench
        # compare` sets runs side by side by
        self._save(state, finished_at=utc_now(), wall_s=round(time.perf_counter() - self.started, 2),
                   process_s=environment.whole_command_s(), status_counts=self.counts, **why)


def run_together(runner: Engine, items: Sequence[tuple[Session, Point]],
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
    by_key = {point.key: (session, point) for session, point in ordered} if runner.unordered else None

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


def execute(points: Sequence[Point], settings: Settings, output: Path, about: dict, command: list[str], *,
            prepare: Callable[[Engine], None] | None = None, resume: bool = False, previous: dict | None = None,
            on_row: Callable[[dict], None] | None = None, say: Say = print, cluster=None,
            tuning: dict | None = None, isolation=None,
            more: Callable[[list[dict]], Sequence[Point]] | None = None, planned: int | None = None,
            found: Scan | None = None) -> Outcome:
    """Run points into output with metadata (`about` goes into it); prepare(runner) runs first
    (the tuner compiles its configurations there; not on a cluster, whose workers compile each
    chunk's kernels in parallel as it arrives). cluster: a points_dask.ClusterSpec to spread the points
    over (this process stays the only writer). tuning: where the tuned parameters came from
    (tuning_record), kept in this invocation's record. isolation: a points_isolated.Isolation (None:
    this process, as mode none). more(rows): the points to run next, from the rows of those just run
    (a search chooses as it measures), until it gives none; planned: how many points that makes at
    most (the metadata's points_planned; default len(points)). found: the output's scan a resume's
    planning made (the file is then not read again).

    Ctrl-C at any stage ends the run as `interrupted`, with every finished row kept; any other
    failure ends it as `failed` (the metadata keeps the error) and is RunAborted, one line. A new
    file that got no row is not left behind, nor its metadata."""
    runner = session = None
    state, failure = "finished", None
    try:
        runner = open_engine(settings, points, cluster, say, isolation)
        before = runner.time_spent()
        if prepare and cluster is None:
            with runner.spending("prepare"):
                prepare(runner)
        session = Session(output, settings, about, command, runner, points_planned=planned or len(points),
                          resume=resume, previous=previous, say=say, points=points,
                          spent=spent_between(before, runner.time_spent()), tuning=tuning, found=found)
        while points:
            rows: list[dict] = []
            session.run(points, lambda row: (rows.append(row), on_row(row) if on_row is not None else None))
            points = more(rows) if more is not None else []
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
    outcome = Outcome(output, state, session.counts if session else {},
                      dict(session.file.counts) if session is not None else file_counts(output))
    if failure is not None:
        raise RunAborted(failed_message(output, failure, outcome.in_file)) from failure
    return outcome

