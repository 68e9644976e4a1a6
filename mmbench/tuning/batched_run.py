"""The batched engine's tuning run: one timed launch per configuration and shape, written a whole
size class at a time into its own file, resumable by whole class; then the best configuration per
class into the tuning cache (writeback.py). The engine (engine/interface.py's BatchedEngine, in this
process or on a Dask cluster) comes from engine.session.open_batched_engine; this module does not
know which it got.

Its file is not a results CSV, so it does not go through engine.session.Session, but it keeps the same
promises with the same helpers: the metadata is current at every stage, each invocation keeps its
own record of the machine, and a new file that got no class is not left behind."""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, NamedTuple

from .. import environment
from ..engine import batched_local as batched
from ..results import ResultsError, history, metadata_path, read_metadata, recorded_settings, write_metadata
from ..engine.outcome import counted, first_line, missing_folders, remove_unmeasured
from ..engine.plan import Settings
from ..engine.provenance import first_record, say_machine_changes
from ..schema import utc_now
from ..engine.refusals import RunAborted, RunInterrupted, RunRefused
from ..engine.interface import BatchedEngine
from ..engine.session import open_batched_engine
from ..vocabulary import DeviceId
from .request import TuneRequest
from .writeback import batched_device, record_batched

Say = Callable[[str], None]


def refuse_batched_resume(request: TuneRequest) -> None:
    """RunRefused when a resumed batched tuning file is not one, has no metadata, or was measured
    under other settings or another version of the kernel (before anything is read into it or
    repaired)."""
    output, cache, prune = request.output, request.cache, request.prune
    if not request.resume:
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
    if tuning.get("tried") not in (None, len(request.configs)):
        raise RunRefused(f"{output} was measured over {tuning['tried']} configurations; this resume asks for "
                         f"{len(request.configs)}")
    if tuning.get("source_hash") != request.source_hash:
        then = tuning.get("source_hash") or "a source it does not record"
        raise RunRefused(f"{output} was measured with the kernel at {then}; the kernel is now at {request.source_hash}: "
                         f"one file, one kernel; choose another --output")


@dataclass(frozen=True)
class _Before:
    """The file as this run finds it: its whole classes, a repair's notice, its metadata and L2
    flush, and what of it is new (to take back if nothing is measured)."""

    done: set
    notice: str | None
    previous: Mapping
    l2_flush: str
    new_folders: list
    new_metadata: bool


def _before(request: TuneRequest) -> _Before:
    output = request.output
    new_folders, new_metadata = missing_folders(output), not metadata_path(output).exists()
    try:
        done, notice = batched.done_classes(output, len(request.configs)) if request.resume else (set(), None)
    except batched.BatchError as exc:
        raise RunRefused(str(exc)) from None
    previous = read_metadata(output) if request.resume else {}
    # a resumed file goes on flushing as it was measured (files before the read flush wrote)
    l2_flush = recorded_settings(output, previous).get("l2_flush", Settings().l2_flush) if previous else Settings().l2_flush
    return _Before(done, notice, previous, l2_flush, new_folders, new_metadata)


class _Opened(NamedTuple):
    engine: BatchedEngine  # this process's GPU or a cluster's workers: the tuning need not know which
    compile_s: float | None  # compiling and loading before the first class (None where workers compile)
    facts: dict  # environment.collect of this machine


def _open_batched(request: TuneRequest, l2_flush: str, previous: Mapping, say: Say) -> _Opened:
    """The batched engine (session.open_batched_engine), prepared, and what environment.collect
    says of this machine; refused when the file was measured on another GPU model."""
    output = request.output
    t0 = time.perf_counter()
    engine = open_batched_engine(request.variant, list(request.configs), request.cache, l2_flush, request.cluster, say,
                                 request.isolation)
    try:
        then, now = (previous.get("gpu") or {}).get("name"), engine.gpu_names()
        if then and now and now != {then}:
            raise RunRefused(f"{output} was measured on {then}; this run's GPUs are {', '.join(sorted(now))}: one "
                             f"file, one GPU model")
        compile_s = engine.prepare(request.jobs, t0, say)
        return _Opened(engine, compile_s, environment.collect(engine.gpu))
    except BaseException:  # refused, or Ctrl-C while compiling: the engine (a cluster's client) goes
        engine.close()
        raise


def classes_held(output: Path) -> int:
    """How many size classes a batched tuning file (or its CSV.gz) holds (0 when there is none)."""
    try:
        return int(batched.read_rows(output)["size_class"].nunique())
    except batched.BatchError:
        return 0


class _Metadata:
    """The batched tuning file's metadata, written whole at every stage: the file's first machine
    at its top, this invocation's record after the earlier ones."""

    def __init__(self, request: TuneRequest, before: _Before, opened: _Opened, about: dict, command: list[str]):
        self.output, self.previous, self.opened = request.output, before.previous, opened
        self.invocation = {"command": command, "started_at": utc_now(), "resumed": request.resume,
                           "repaired": before.notice, "classes_done_before": len(before.done),
                           "compile_s": opened.compile_s}
        about = {**about, "tuning": {**about.get("tuning", {}), "source_hash": request.source_hash}}
        self.meta = {**about, "engine": "batched",
                     "settings": {"runs": 1, "warmup": 0, "cache": request.cache, "seed": request.seed,
                                  "prune": request.prune, "l2_flush": before.l2_flush},
                     "started_at": before.previous.get("started_at") or self.invocation["started_at"],
                     "kernels": {**(before.previous.get("kernels") or {}), **opened.engine.kernels}}
        self.earlier = history(before.previous)

    def save(self, state: str, **more) -> None:
        engine = self.opened.engine
        machine = {**self.opened.facts, **engine.meta()}  # a cluster's workers, and their GPU model
        self.invocation.update(state=state, **machine, **more)
        kernels = {**self.meta["kernels"], **engine.kernels}
        write_metadata(self.output, {**self.meta, **first_record(self.previous, machine), "kernels": kernels,
                                     "state": state, "invocations": [*self.earlier, self.invocation]})


def _measure(request: TuneRequest, before: _Before, opened: _Opened, metadata: _Metadata, say: Say, t0: float):
    """The classes not yet in the file, measured and written one at a time: (state, counts,
    failure, class errors); Ctrl-C and failures end it as interrupted or failed, never raise."""
    def progress(cls: str, i: int, total: int) -> None:
        if i == total or i % 10 == 0:
            say(f"  {i}/{total} classes ({cls}), {time.perf_counter() - t0:.0f} s")

    state, counts, failure = "finished", {}, None
    args = (request.shapes, request.output, request.seed, before.done, progress, counts, request.prune)
    try:
        metadata.save("running")
        opened.engine.run(*args)
    except KeyboardInterrupt:
        state = "interrupted"
    except Exception as exc:
        state, failure = "failed", exc  # a CUDA error, a full disk: the metadata must not say finished
    finally:
        errors = counts.pop("errors", [])
        opened.engine.close()
    return state, counts, failure, errors


def tune_batched(request: TuneRequest, about: dict, command: list[str], say: Say = print):
    """The batched tuner into request.output, resumable by whole size class, then the best
    configuration per class into the tuning cache. Returns (best, device, counts). On a cluster
    (request.cluster) the workers measure whole classes (each compiles with request.jobs nvcc).
    Ctrl-C is RunInterrupted and any other failure RunAborted, one line each saying how many
    classes the file holds; a new file that got no class is not left behind, nor its metadata."""
    output = request.output
    refuse_batched_resume(request)
    before = _before(request)
    if before.notice:
        say(before.notice)
    t0 = time.perf_counter()
    try:
        opened = _open_batched(request, before.l2_flush, before.previous, say)
    except KeyboardInterrupt:
        raise RunInterrupted("interrupted before the first size class was measured: " + (
            f"{output} holds the {counted(len(before.done), 'size class', 'size classes')} it held; rerun with "
            f"--output {output} --resume to continue" if request.resume else "nothing was written")) from None
    say_machine_changes(output, before.previous, opened.facts, say)
    metadata = _Metadata(request, before, opened, about, command)
    state, counts, failure, errors = _measure(request, before, opened, metadata, say, t0)
    _say_faults(opened.engine, say)
    held = classes_held(output)
    if state != "finished" and not held and before.new_metadata:  # a new file that got no class: nothing is left
        remove_unmeasured(output, before.new_folders)
        if failure is not None:
            raise RunAborted(f"the tuning failed before the first size class finished, and nothing was written: "
                             f"{first_line(failure)}") from failure
        raise RunInterrupted("interrupted before the first size class finished: nothing was written")
    why = ({"error": first_line(failure), "traceback": "".join(traceback.format_exception(failure))}
           if failure is not None else {})
    metadata.save(state, finished_at=utc_now(), wall_s=round(time.perf_counter() - t0, 1), status_counts=counts,
                  **({"class_errors": errors} if errors else {}), **why)
    if failure is not None:  # the plain CSV stays for --resume; its whole classes are not recorded yet
        raise RunAborted(f"the tuning failed: {first_line(failure)}; {output} holds "
                         f"{counted(held, 'finished size class', 'finished size classes')} and its metadata the error; "
                         f"rerun with --output {output} --resume to continue") from failure
    gpu = opened.engine.gpu
    device = (DeviceId(gpu.facts.name, gpu.facts.arch, gpu.facts.sm_count) if gpu is not None
              else batched_device(request, errors))
    best = record_batched(request, device)
    _refuse_incomplete(request, state, held - len(before.done), held, errors, best)
    return best, device, counts


def _say_faults(engine: BatchedEngine, say: Say) -> None:
    """How many configurations an isolated tuning found faulting (each a failed row), and where the
    faults are listed."""
    faults = engine.meta().get("isolation", {}).get("faults") or []
    found = sum(1 for f in faults if f["configuration"])
    if faults:
        say(f"{counted(found, 'configuration', 'configurations')} faulted, each a failed row "
            f"({counted(engine.meta()['isolation']['restarts'], 'worker process', 'worker processes')} replaced; the "
            f"metadata's isolation lists every fault)")


def _refuse_incomplete(request: TuneRequest, state: str, mine: int, held: int, errors: list, best: dict) -> None:
    """RunInterrupted or RunAborted, after the whole classes were recorded, where the tuning did
    not finish every class or found no verified configuration."""
    output, gz = request.output, batched.gz_path(request.output)
    if state != "finished":
        raise RunInterrupted(f"interrupted: {gz} holds {counted(held, 'finished size class', 'finished size classes')} "
                             f"({mine} from this run), their best configurations in {request.cache_path}; rerun with "
                             f"--output {output} --resume to continue")
    if errors:
        raise RunAborted(f"{len(errors)} size classes could not be measured ({errors[0]}); the others are in "
                         f"{gz}: rerun with --output {output} --resume")
    if not best:
        raise RunAborted(f"no configuration of {request.variant.name} was verified at every shape of a class; see "
                         f"{output}")
