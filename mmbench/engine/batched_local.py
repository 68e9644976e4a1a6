"""Batched tuning in this process (LocalBatched, a BatchedEngine), with the file format and the
measuring that batched_dask.py's workers share: every configuration of a variant at every shape of
many size classes, in minutes (Sørensen's GEMV mesh: 1536 kernels at 3 x 3 shapes in each of some
500 cells, millions of points).

Per shape, the inputs, the float64 reference and the error bound are made and uploaded once. Per
configuration at that shape: the output is poisoned with NaN, one launch sequence is timed by an
event pair, and the output is checked on the GPU (harness.cu's check_sums: the three rules of
ops/base.py's check_sums, so the outputs never cross to the host). Configurations are enqueued in
batches behind the hold kernel, so no sample holds host latency and no Python runs between
samples; the host reads a batch's times and checks once. In cold mode the L2 is flushed before each
sample of a shape smaller than twice the L2 (by a read, as the sweep's cold samples; a larger shape
evicts itself); in hot mode the shape's buffers stay cached, as for a sweep's hot points.

A class's configurations are scored by the mean GFLOP/s over its shapes (the paper's rule). With
pruning (`prune` > 0), every configuration is first timed and checked at the class's pivot shape
(its median footprint); one slower there than `prune` times the best's speed is not timed at the
other shapes (a `pruned` row with its pivot speed), nor is one that failed there, nor one the
operation skips at some shape of the class: a configuration under half the best's speed at the
pivot would have to be over twice as fast at the neighbouring shapes of the same cell to win
(results/checks/prune-h100: in 10 cells tuned both ways, the exhaustive best was never pruned). Rows are
written as one row per (class, configuration) when the class is done: a crash loses at most the
class in progress, and a resume continues after the last whole class. When all classes are done the
CSV is compressed to CSV.gz (hundreds of thousands of rows).
"""

from __future__ import annotations

import csv
import gc
import gzip
import math
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, Sequence

import numpy as np

from ..device import HOLD_SLOTS
from ..ops import get_op
from ..ops.capabilities import BatchedCheck, needs
from ..ops.base import frobenius_scale, sums_verdict
from ..ops.declared import launcher
from ..sizes import Shape
from ..variants import Params, Variant, format_params
from .interface import BatchedEngine
from .points_local import error_line

if TYPE_CHECKING:  # pandas where rows are read back only: the batched worker process never loads it
    import pandas as pd

BATCH = 16  # configurations behind one hold: about 100 commands, far from a full launch queue
COLUMNS = ("size_class", "params", "status", "reason", "shapes", "gflops", "time_ms_min", "time_ms_max",
           "err_bound_ratio")


@dataclass(frozen=True)
class Untimed:
    """A configuration left untimed at a shape: skipped by the operation (Operation.tuning_skip), or
    pruned after the class's pivot shape."""

    status: str
    reason: str


class ConfigFault(Exception):
    """A configuration run alone lost the CUDA context: its index and the error's line."""

    def __init__(self, config: int, line: str):
        super().__init__(line)
        self.config, self.line = config, line


@dataclass(frozen=True)
class Recovery:
    """What measuring a class again after a fault knows (batched_isolated.py): the shape (its index
    in the class) whose configurations run one at a time, to find whose fault it was, and the
    configurations found faulting, each failed from the shape it faulted at on, with why."""

    careful: int | None = None
    failed: Mapping[int, tuple[int, str]] = field(default_factory=dict)

    def failed_at(self, j: int) -> dict[int, Untimed]:
        return {c: Untimed("failed", why) for c, (at, why) in self.failed.items() if j >= at}

    def after(self, at: int, culprit: int | None, why: str) -> "Recovery":
        """The recovery after a fault at shape `at`: that shape careful, the culprit (if known) failed."""
        return Recovery(at, {**self.failed, **({} if culprit is None else {culprit: (at, why)})})


@dataclass(frozen=True)
class Watcher:
    """Who hears how a class goes as it is measured (an isolated child's parent): at(j) before the
    class's shape j is timed; trying(c) before each configuration of a careful shape."""

    at: Callable[[int], None]
    trying: Callable[[int], None]


class BatchError(ValueError):
    """A batched tuning request that cannot be met; the message says why."""


@dataclass(frozen=True)
class Measured:
    """One configuration at one shape."""

    status: str  # ok, wrong, failed, skipped
    reason: str
    time_ms: float
    err_bound_ratio: float


# -- the file --------------------------------------------------------------------------------------
def gz_path(path: Path) -> Path:
    return path.with_name(path.name + ".gz")


def read_rows(path: Path) -> pd.DataFrame:
    """A batched tuning file's rows, from the CSV being written or its finished CSV.gz."""
    import pandas as pd

    for candidate in (path, gz_path(path)):
        if candidate.exists():
            return pd.read_csv(candidate, dtype={"size_class": str, "params": str, "reason": str},
                               keep_default_na=False, na_values={"gflops": [""], "time_ms_min": [""],
                                                                 "time_ms_max": [""], "err_bound_ratio": [""]})
    raise BatchError(f"{path} does not exist (nor {gz_path(path).name})")


def check_columns(path: Path) -> None:
    """BatchError when the file (or its CSV.gz) exists with another header than a batched tuning's."""
    for candidate, opener in ((path, open), (gz_path(path), gzip.open)):
        if candidate.exists() and candidate.stat().st_size:
            try:
                with opener(candidate, "rt", errors="replace") as f:
                    header = f.readline()
            except (OSError, EOFError):
                header = ""
            if header.strip().split(",") != list(COLUMNS):
                raise BatchError(f"{path} is not a batched tuning file of this mmbench (other columns); choose another --output")
            return


def done_classes(path: Path, configs: int) -> tuple[set[str], str | None]:
    """The classes a file holds whole (a row for every configuration), after cutting off any class
    left partial by a crash; returns them with a notice of what was cut (None when nothing was)."""
    if not path.exists() and gz_path(path).exists():
        with gzip.open(gz_path(path), "rb") as src, open(path, "wb") as dst:
            shutil.copyfileobj(src, dst)
        gz_path(path).unlink()
    if not path.exists() or path.stat().st_size == 0:
        return set(), None
    lines = path.read_bytes().split(b"\n")
    torn = lines[-1] != b""  # a whole file ends with a newline
    body = [ln for ln in lines[1:] if ln] if not torn else [ln for ln in lines[1:-1] if ln]
    check_columns(path)
    counts: dict[str, int] = {}
    for ln in body:
        cls = ln.split(b",", 1)[0].decode()
        counts[cls] = counts.get(cls, 0) + 1
    whole = {c for c, n in counts.items() if n == configs}
    keep = [ln for ln in body if ln.split(b",", 1)[0].decode() in whole]
    cut = len(body) - len(keep) + (1 if torn else 0)
    if not cut:
        return whole, None
    path.write_bytes(b"\n".join([lines[0], *keep]) + b"\n")
    partial = sorted(set(counts) - whole)
    return whole, (f"{path}: {cut} line(s) of the unfinished class(es) {', '.join(partial) or '(a torn line)'} cut off; "
                   f"they are measured again")


class ClassWriter:
    """Appends a finished class's rows in one write and flush."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not path.exists() or path.stat().st_size == 0
        self._file = open(path, "a", newline="")
        self._csv = csv.writer(self._file, lineterminator="\n")
        if fresh:
            self._csv.writerow(COLUMNS)
            self._file.flush()

    def write(self, rows: Sequence[dict]) -> None:
        for row in rows:
            self._csv.writerow(["" if row.get(c) is None else row[c] for c in COLUMNS])
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def compress(path: Path) -> Path:
    """The finished CSV into CSV.gz (the plain file removed): what is committed. The CSV.gz is
    written aside and renamed into place, so an interrupted compression leaves the CSV as it was."""
    part = gz_path(path).with_name(gz_path(path).name + ".part")
    try:
        with open(path, "rb") as src, gzip.open(part, "wb", compresslevel=9) as dst:
            shutil.copyfileobj(src, dst)
        part.replace(gz_path(path))
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    path.unlink()
    return gz_path(path)


# -- scoring ---------------------------------------------------------------------------------------
def class_rows(cls: str, configs: Sequence[Params], shapes: Sequence[Shape], results: Sequence[Sequence[Measured]],
               flops: Callable[[Shape], float]) -> list[dict]:
    """One row per configuration of a finished class: ok with the mean GFLOP/s over the class's
    shapes when it was verified at all of them; pruned with its speed at the first shape (the
    pivot) when it was timed there only; else the first shape's failure."""
    rows = []
    for c, params in enumerate(configs):
        got = [r[c] for r in results]
        bad = next((g for g in got if g.status != "ok"), None)
        times = [g.time_ms for g in got]
        worst = max((g.err_bound_ratio for g in got if not math.isnan(g.err_bound_ratio)), default=None)
        times = [round(t, 6) for t in times]  # ms to the nanosecond: events resolve half a microsecond
        row = {"size_class": cls, "params": format_params(params), "shapes": len(shapes),
               "err_bound_ratio": None if worst is None else float(f"{worst:.4g}")}
        if bad is not None and bad.status == "pruned":  # timed at the pivot (the first shape) only
            rows.append({**row, "status": "pruned", "reason": bad.reason, "shapes": 1,
                         "gflops": float(f"{flops(shapes[0]) / (times[0] * 1e6):.6g}"), "time_ms_min": times[0],
                         "time_ms_max": times[0]})
            continue
        if bad is not None:
            where = shapes[got.index(bad)]
            rows.append({**row, "status": bad.status, "reason": f"{where.m}x{where.n}: {bad.reason}"})
            continue
        gflops = float(np.mean([flops(s) / (t * 1e6) for s, t in zip(shapes, times)]))
        rows.append({**row, "status": "ok", "reason": "", "gflops": float(f"{gflops:.6g}"),
                     "time_ms_min": min(times), "time_ms_max": max(times)})
    return rows


def best_per_class(rows: pd.DataFrame) -> dict[str, dict]:
    """The tuning cache's entries: per class, the configuration with the highest mean GFLOP/s."""
    ok = rows[rows.status == "ok"]
    best = {}
    for cls, group in ok.groupby("size_class"):
        top = group.loc[group.gflops.idxmax()]
        best[str(cls)] = {"params": top.params, "gflops": float(top.gflops), "shapes": int(top.shapes),
                          "tried": int(len(rows[rows.size_class == cls]))}
    return best


def verdict(words: np.ndarray, count: int, norm: float, terms: int) -> tuple[str, str, float]:
    """check_sums' three rules (ops/base.py's sums_verdict) from the GPU's words: outputs not
    finite, the worst ratio's float bits, the sum of squared errors as a double."""
    bad, worst = int(words[0]), float(np.array([words[1]], dtype=np.uint32).view(np.float32)[0])
    sq = float(np.array(words[2:4], dtype=np.uint32).view(np.float64)[0])
    check = sums_verdict(bad, count, worst, math.sqrt(sq) / norm if norm else float("nan"), terms)
    return ("ok" if check.ok else "wrong"), check.reason, check.err_bound_ratio


# -- measuring -------------------------------------------------------------------------------------
class BatchedTuner:
    """Measures configurations of one variant shape by shape on an open Gpu."""

    def __init__(self, gpu, variant: Variant, configs: Sequence[Params], cache: str, l2_flush: str):
        self.gpu, self.variant, self.configs, self.cache, self.l2_flush = gpu, variant, list(configs), cache, l2_flush
        self.op = needs(get_op(variant.op), BatchedCheck)
        self.problems: dict[Params, tuple[str, str]] = {}  # config -> (status, reason) known before running
        self.kernels: dict[str, dict] = {}
        self._check = gpu.harness("check_sums")
        self._check.prepare("PPPiP")
        self._events = [[(gpu.event(), gpu.event()) for _ in range(BATCH)] for _ in range(HOLD_SLOTS)]
        self._warm: set[Params] = set()
        for params in self.configs:
            self._load(params)

    def _load(self, params: Params) -> None:
        problem = self.variant.problem(params)
        if problem:
            self.problems[params] = ("skipped", problem)
            return
        try:
            fns = [self.gpu.function(self.variant, params, entry) for entry in self.op.entries(self.variant)]
        except Exception as exc:
            self.problems[params] = ("failed", f"compile: {str(exc).strip().splitlines()[-1][:200]}")
            return
        fn = fns[0]
        if fn.local_size_bytes:
            self.problems[params] = ("skipped", f"{fn.local_size_bytes} bytes of local memory a thread (registers spill)")
        self.kernels[f"{self.variant.name}[{format_params(params)}]"] = self.gpu.resources(fn)

    def shape(self, shape: Shape, inputs, untimed: dict[int, Untimed] | None = None,
              one_by_one: Callable[[int], None] | None = None) -> list[Measured]:
        """Every configuration at one shape: verified on the GPU, one timed launch sequence each.
        Given `untimed` (by index, the operation's skips included: see skipped_in_class), those are
        left untimed; else the operation's tuning_skip decides at this shape. Given one_by_one, each
        configuration runs alone, one_by_one(its index) told first (see _time_alone)."""
        gpu, op = self.gpu, self.op
        reference, bound, terms = op.sum_check(inputs)
        bufs = op.upload(gpu, inputs)
        ref_d, bound_d = gpu.upload(reference.astype(np.float64)), gpu.upload(bound.astype(np.float64))
        words_d = gpu.alloc(16 * len(self.configs))
        try:
            gpu.drv.memset_d32(words_d, 0, 4 * len(self.configs))
            flush = self.cache == "cold" and op.device_bytes(shape) < 2 * gpu.facts.l2_bytes
            runnable = [c for c, p in enumerate(self.configs) if p not in self.problems]
            launches = self._launches(shape, bufs, runnable, untimed)
            todo = [c for c in runnable if callable(launches[c])]
            timing = (launches, bufs, flush, reference.size, (int(ref_d), int(bound_d), int(words_d)))
            if one_by_one is None:
                self._warm_up(todo, launches)
                gpu.synchronize()
                times = self._time(todo, *timing)
            else:
                times = self._time_alone(todo, timing, one_by_one)
            words = np.empty(4 * len(self.configs), dtype=np.uint32)
            gpu.drv.memcpy_dtoh(words, words_d)
        finally:
            free_all((ref_d, bound_d, words_d, bufs))
        return self._measured(launches, times, words, reference, bound, terms)

    def _warm_up(self, todo: Sequence[int], launches: dict) -> None:
        """The first launch of a loaded module pays for its loading: made untimed."""
        for c in todo:
            if self.configs[c] not in self._warm:
                launches[c]()
                self._warm.add(self.configs[c])

    def _time_alone(self, todo: Sequence[int], timing: tuple, tell: Callable[[int], None]) -> dict[int, float]:
        """_time one configuration at a time, each told first and synchronized after, so that a fault
        is its own (an isolated child's shape after a fault, batched_isolated.py): ConfigFault where
        it lost the CUDA context; an error that left the context working fails that one alone."""
        launches, times = timing[0], {}
        for c in todo:
            tell(c)
            try:
                self._warm_up([c], launches)
                times.update(self._time([c], *timing))
                self.gpu.synchronize()
            except Exception as exc:
                try:
                    self.gpu.probe()
                except Exception:
                    raise ConfigFault(c, error_line(exc)) from None
                launches[c] = exc
        return times

    def _launches(self, shape: Shape, bufs, runnable: Sequence[int], untimed: dict[int, Untimed] | None) -> dict:
        """By configuration index: its launch at this shape, or Untimed (left out), or the exception
        that kept its launch from being set up."""
        launches: dict[int, object] = {}
        for c in runnable:
            if untimed is not None and c in untimed:
                launches[c] = untimed[c]
                continue
            why = None if untimed is not None else self.op.tuning_skip(self.variant, self.configs[c], shape)
            if why:  # left untimed: a skipped row for its class
                launches[c] = Untimed("skipped", why)
                continue
            try:
                launches[c] = launcher(self.gpu, self.op, self.variant, self.configs[c], shape, bufs)
            except Exception as exc:  # a launch that cannot be set up at this shape
                launches[c] = exc
        return launches

    def _time(self, todo: Sequence[int], launches: dict, bufs, flush: bool, count: int, pointers: tuple[int, int, int]
              ) -> dict[int, float]:
        """One timed launch of each configuration in todo, in batches behind the stream's holds, each
        launch followed by its check into its words (pointers: the reference, the bound, the words)."""
        gpu, times = self.gpu, {}
        grid = (math.ceil(count / 256), 1)
        out_ptr, (ref_ptr, bound_ptr, words_ptr) = int(bufs.output), pointers

        def enqueue(batch: list[int], slot: int) -> None:
            """A batch behind the hold of its slot: poison, (flush,) timed launch, check, per config."""
            gpu.hold(slot)
            try:
                for (start, end), c in zip(self._events[slot], batch):
                    gpu.poison_async(bufs.output, bufs.output_count)
                    if flush:
                        gpu.flush_l2(self.l2_flush)
                    start.record(gpu.stream)
                    launches[c]()
                    end.record(gpu.stream)
                    self._check.prepared_async_call(grid, (256, 1, 1), gpu.stream, out_ptr, ref_ptr, bound_ptr,
                                                    np.int32(count), words_ptr + 16 * c)
            finally:
                gpu.release(slot)

        def collect(batch: list[int], slot: int) -> None:
            """A batch's times once it has run; a batch whose hold expired (its samples could hold
            host latency) is measured again alone, its checks zeroed first."""
            self._events[slot][len(batch) - 1][1].synchronize()
            if not gpu.held_ok(slot):
                gpu.synchronize()
                for c in batch:  # its checks start again (not its neighbours': skipped configs leave gaps)
                    gpu.drv.memset_d32(words_ptr + 16 * c, 0, 4)
                enqueue(batch, slot)
                gpu.synchronize()
                if not gpu.held_ok(slot):
                    raise RuntimeError("the stream hold expired twice while a batch was enqueued")
            for (start, end), c in zip(self._events[slot], batch):
                times[c] = end.time_since(start)

        batches = [todo[i:i + BATCH] for i in range(0, len(todo), BATCH)]
        # Two batches in flight: the GPU runs one while the host enqueues the next behind its own hold.
        for i, batch in enumerate(batches):
            if i >= HOLD_SLOTS:
                collect(batches[i - HOLD_SLOTS], (i - HOLD_SLOTS) % HOLD_SLOTS)
            enqueue(batch, i % HOLD_SLOTS)
        for i in range(max(0, len(batches) - HOLD_SLOTS), len(batches)):
            collect(batches[i], i % HOLD_SLOTS)
        return times

    def _measured(self, launches: dict, times: dict[int, float], words: np.ndarray, reference, bound, terms
                  ) -> list[Measured]:
        """Each configuration's result at the shape: its known problem, left untimed, a launch that
        failed, or its time with the verdict of its check words."""
        norm = frobenius_scale(reference, bound, terms)
        out = []
        for c, params in enumerate(self.configs):
            if params in self.problems:
                status, reason = self.problems[params]
                out.append(Measured(status, reason, float("nan"), float("nan")))
            elif isinstance(launches.get(c), Untimed):
                out.append(Measured(launches[c].status, launches[c].reason, float("nan"), float("nan")))
            elif isinstance(launches.get(c), Exception):
                out.append(Measured("failed", f"launch: {launches[c]}", float("nan"), float("nan")))
            else:
                status, reason, worst = verdict(words[4 * c:4 * c + 4], reference.size, norm, terms)
                out.append(Measured(status, reason, times[c], worst))
        return out


def free_all(buffers) -> None:
    """Free each; while an error propagates (a fault lost the context, where every call fails), a
    free's own error does not hide it."""
    failing = sys.exc_info()[0] is not None
    for buf in buffers:
        try:
            buf.free()
        except Exception:
            if not failing:
                raise


def by_class(op, shapes: Sequence[Shape]) -> Iterator[tuple[str, list[Shape]]]:
    """Shapes grouped by their size class, classes in the order they first appear, each class's
    pivot (its shape of median footprint, the first of two) first and the rest in their order."""
    groups: dict[str, list[Shape]] = {}
    for s in shapes:
        groups.setdefault(op.size_class(s), []).append(s)
    for cls, group in groups.items():
        by_size = sorted(group, key=op.device_bytes)
        pivot = by_size[(len(by_size) - 1) // 2]
        yield cls, [pivot, *(s for s in group if s is not pivot)]


def skipped_in_class(op: BatchedCheck, variant: Variant, configs: Sequence[Params],
                     group: Sequence[Shape]) -> dict[int, Untimed]:
    """The configurations (by index) that the operation skips at some shape of a class: their row is
    skipped whatever they do elsewhere, so they are timed nowhere in it (nor set the pivot's best)."""
    out = {}
    for c, params in enumerate(configs):
        for s in group:
            why = op.tuning_skip(variant, params, s)
            if why:
                out[c] = Untimed("skipped", why)
                break
    return out


def pruned_after_pivot(measured: Sequence[Measured], prune: float, pivot: Shape, flops: Callable[[Shape], float]
                       ) -> dict[int, Untimed]:
    """The configurations (by index) not to time at a class's other shapes: those that failed at the
    pivot (their row is that failure), and those slower there than prune times the best's speed."""
    ok = [g.time_ms for g in measured if g.status == "ok"]
    best = min(ok) if ok else math.nan
    out = {}
    for c, g in enumerate(measured):
        if g.status != "ok":
            out[c] = Untimed(g.status, g.reason)
        elif prune > 0 and g.time_ms * prune > best:
            top = flops(pivot) / (best * 1e6)  # the row keeps this configuration's own speed there
            out[c] = Untimed("pruned", f"under {prune:g} of the best's {top:.4g} GFLOP/s at the pivot {pivot.m}x{pivot.n}")
    return out


def measure_class(tuner: BatchedTuner, cls: str, group: Sequence[Shape], inputs_of: Callable[[Shape], object],
                  prune: float = 0.0, recovery: Recovery | None = None, watcher: Watcher | None = None) -> list[dict]:
    """One size class's rows: every configuration at the class's pivot (its first shape), then the
    unpruned ones at its other shapes; inputs_of(shape) gives a shape's inputs and reference. A
    recovery's faulted configurations are failed, its careful shape timed one configuration at a
    time; the watcher hears each shape and each configuration of a careful one."""
    op, recovery = tuner.op, recovery or Recovery()
    skipped = skipped_in_class(op, tuner.variant, tuner.configs, group)
    results, untimed = [], skipped
    for j, s in enumerate(group):
        inputs = inputs_of(s)
        if watcher is not None:
            watcher.at(j)
        one_by_one = watcher.trying if watcher is not None and recovery.careful == j else None
        results.append(tuner.shape(s, inputs, {**untimed, **recovery.failed_at(j)}, one_by_one))
        del inputs
        if len(results) == 1:  # the pivot is measured: who goes on
            untimed = {**skipped, **pruned_after_pivot(results[0], prune, s, op.flops)}
    return class_rows(cls, tuner.configs, group, results, op.flops)


def make_inputs(op, seed: int) -> Callable[[Shape], object]:
    """A shape's inputs and float64 reference, seeded by the shape (the same on any worker)."""
    return lambda s: op.make_inputs(s, np.random.default_rng([seed, s.m, s.n, s.k]))


Classes = Sequence[tuple[str, Sequence[Shape]]]  # size classes in order, each with its shapes (by_class)


def measured_classes(tuner: BatchedTuner, classes: Classes, seed: int, prune: float = 0.0,
                     recovery: Recovery | None = None, watcher: Watcher | None = None
                     ) -> Iterator[tuple[str, list[dict]]]:
    """Each class's rows as it is measured (measure_class; the recovery is the first class's)."""
    order = [s for _, group in classes for s in group]
    make = make_inputs(tuner.op, seed)
    # The next shape's inputs and float64 reference are made on the host while the GPU measures this one.
    prefetch = ThreadPoolExecutor(1)
    coming = [prefetch.submit(make, order[0])] if order else []
    at = 0

    def prefetched(shape: Shape):
        nonlocal at
        inputs = coming.pop().result()
        at += 1
        if at < len(order):
            coming.append(prefetch.submit(make, order[at]))
        return inputs

    try:
        for i, (cls, group) in enumerate(classes):
            yield cls, measure_class(tuner, cls, group, prefetched, prune, recovery if i == 0 else None, watcher)
    finally:
        prefetch.shutdown(wait=False, cancel_futures=True)


def record(measured: Iterator[tuple[str, list[dict]]], total: int, output: Path,
           on_class: Callable[[str, int, int], None] | None = None, counts: dict | None = None) -> dict:
    """Write each class's rows as it comes (in one write: a crash loses at most the class in
    progress); the counts of rows by status, kept in `counts` as they grow (an interruption still
    has them); on_class(class, classes done, total) after each."""
    writer = ClassWriter(output)
    counts = {} if counts is None else counts
    started = time.perf_counter()
    try:
        with closing(measured):
            for i, (cls, rows) in enumerate(measured):
                writer.write(rows)
                for r in rows:
                    counts[r["status"]] = counts.get(r["status"], 0) + 1
                if on_class:
                    on_class(cls, i + 1, total)
    finally:
        writer.close()
    counts["wall_s"] = round(time.perf_counter() - started, 1)
    return counts


def run(tuner: BatchedTuner, shapes: Sequence[Shape], output: Path, seed: int, skip: set[str],
        on_class: Callable[[str, int, int], None] | None = None, counts: dict | None = None,
        prune: float = 0.0) -> dict:
    """Measure every class not in skip, writing each class's rows when it is done (record); prune > 0:
    the configurations slower at a class's pivot than prune times the best's speed are not timed at
    its other shapes."""
    classes = [(cls, group) for cls, group in by_class(tuner.op, shapes) if cls not in skip]
    return record(measured_classes(tuner, classes, seed, prune), len(classes), output, on_class, counts)


class LocalBatched(BatchedEngine):
    """The batched engine on this process's GPU: every configuration compiled and loaded once
    (prepare), then the size classes measured one after another (run)."""

    def __init__(self, gpu, variant: Variant, configs: Sequence[Params], cache: str, l2_flush: str):
        self.gpu, self.variant, self.configs, self.cache, self.l2_flush = gpu, variant, list(configs), cache, l2_flush
        self.tuner: BatchedTuner | None = None
        self.kernels: dict[str, dict] = {}

    def gpu_names(self) -> set[str]:
        return {self.gpu.facts.name}

    def prepare(self, jobs: int, since: float, say: Callable[[str], None]) -> float:
        self.gpu.precompile(self.variant, self.configs, jobs)
        self.tuner = BatchedTuner(self.gpu, self.variant, self.configs, self.cache, self.l2_flush)
        self.kernels = self.tuner.kernels
        say(f"compiled and loaded {len(self.configs)} configurations in {time.perf_counter() - since:.0f} s "
            f"({len(self.tuner.problems)} cannot run)")
        return round(time.perf_counter() - since, 1)

    def run(self, shapes: Sequence[Shape], output: Path, seed: int, skip: set[str],
            on_class: Callable[[str, int, int], None] | None, counts: dict, prune: float) -> dict:
        return run(self.tuner, shapes, output, seed, skip, on_class, counts, prune)

    def close(self) -> None:
        """Free the tuner's events and buffers now, in this thread (the GPU's context stays for the
        process, as the loaded modules do): left to the garbage collector, they may be freed from
        another thread, a Dask client's, where PyCUDA cannot clean them up and warns."""
        self.tuner = None
        gc.collect()
