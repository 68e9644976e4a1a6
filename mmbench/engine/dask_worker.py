"""What runs on a Dask worker (points_dask.py is the client): the worker's one engine and its
batched tuners, kept between tasks and released at the run's end; its share of the host's cores;
its allocator made a plain process's; and points sent as plain tuples."""

from __future__ import annotations

import ctypes
import os
import threading
from collections import Counter
from contextlib import nullcontext
from dataclasses import asdict

from .. import device
from ..blas_threads import limited
from ..environment import own_cpus
from ..schema import HOST
from ..source import source_hash
from ..sizes import Shape
from .interface import spent_between
from .plan import Point, Settings
from .points_local import LocalPoints
from .wire import packed, unwire, variant_of


# Per worker process: one runner (a second would open the GPU and CUPTI's callbacks again), kept
# while the settings stay and released at the run's end (release_worker); a lock, for workers a
# running cluster gave several threads.
_RUNNER: list = [None, None]  # [settings (with an isolation: the two), runner]
_LOCK = threading.Lock()
# The CUDA variants the runner has served (its loaded modules'), and, while it is parked between two runs
# of a running cluster, their source hashes then: a run that finds a kernel edited since opens a new runner
_SERVED: dict[tuple, object] = {}
_PARKED: list = []  # [(variant, source hash)] of a parked runner; empty while none is parked


def worker_identity() -> dict:
    """What a worker reports of itself for the metadata: host, process, the GPU it sees (its name, and
    as `gpu_id` what tuned parameters are looked up by: name, architecture, SMs), the host's cores and
    those it may use, and what was done to its allocator."""
    from ..device import device_identity

    found = device_identity()
    return {"host": HOST, "pid": os.getpid(), "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "gpu": found.name if found else None, "gpu_id": asdict(found) if found else None,
            "host_cpus": os.cpu_count() or 1, "cpus": own_cpus(), "malloc": allocate_as_a_plain_process()}


# glibc's mallopt parameters, and the thresholds it reaches by itself in a process that allocates
# and frees arrays of up to 32 MiB (mmap's threshold rises to the largest freed, at most 32 MiB on
# 64-bit; trimming's to twice that)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
PLAIN_MMAP_THRESHOLD, PLAIN_TRIM_THRESHOLD = 32 << 20, 64 << 20
_MALLOC: list[str] = []  # what allocate_as_a_plain_process did in this process


def allocate_as_a_plain_process() -> str:
    """Dask's nanny starts a worker with MALLOC_TRIM_THRESHOLD_=65536, to hand freed memory back to
    the OS. Setting it also fixes glibc's mmap threshold at 128 KiB: every array larger is mapped
    anew and its pages faulted in at first touch. The inputs, references and checks of a sweep
    then took 1.6 times as long as in a plain process (an H100, GEMMs of 1536 to 2049: a cluster of
    one worker against a plain run, and a plain run with the variable set). Here the worker takes
    the thresholds a plain process reaches by itself. Once per process; what it did, for the metadata."""
    if not _MALLOC:
        was = os.environ.get("MALLOC_TRIM_THRESHOLD_")
        if was is None:
            _MALLOC.append("glibc's defaults (no MALLOC_TRIM_THRESHOLD_)")
        else:
            try:
                mallopt = ctypes.CDLL(None).mallopt
                done = [mallopt(M_MMAP_THRESHOLD, PLAIN_MMAP_THRESHOLD) == 1,
                        mallopt(M_TRIM_THRESHOLD, PLAIN_TRIM_THRESHOLD) == 1]
            except Exception:  # not glibc, not Linux
                done = [False, False]
            said = [f"mmap threshold {PLAIN_MMAP_THRESHOLD >> 20} MiB" if done[0] else "mmap threshold kept",
                    f"trim threshold {PLAIN_TRIM_THRESHOLD >> 20} MiB" if done[1] else "trim threshold kept"]
            _MALLOC.append(f"{', '.join(said)} (MALLOC_TRIM_THRESHOLD_ was {was}"
                           f"{'' if all(done) else '; mallopt unavailable or refused'})")
    return _MALLOC[0]


def blas_shares(workers: dict[str, dict]) -> dict[str, int]:
    """BLAS threads (and nvcc processes) per worker, by host: the host's cores shared among its
    workers; a worker pinned to fewer takes those (my_share). Dask starts workers with
    OMP/MKL/OPENBLAS_NUM_THREADS=1, which would leave the float64 references and the CPU
    baselines on one core; a fair share keeps them as fast as the host allows without the workers
    of one host oversubscribing it."""
    count = Counter(w["host"] for w in workers.values())
    cores: dict[str, int] = {}
    for w in workers.values():
        cores[w["host"]] = max(cores.get(w["host"], 1), w.get("host_cpus") or w.get("cpus") or 1)
    return {host: max(1, cores[host] // n) for host, n in count.items()}


def my_share(shares: dict[str, int]) -> int | None:
    """This worker's share: its host's, within the cores it may run on (None: no share known)."""
    share = shares.get(HOST)
    return min(share, own_cpus()) if share else None


def blas_threads(shares: dict[str, int]):
    """This worker's share of its host's cores for numpy's BLAS for a block (a point's own
    `--threads` still applies inside it)."""
    return limited(my_share(shares))


def _runner(settings: Settings, points: list[Point], shares: dict[str, int], isolation=None,
            run: bool = False) -> LocalPoints:
    """This process's runner for these settings and isolation (made anew when they change), with
    what the points need opened (for a run of them in an isolated child: by the child's run, which saves
    a round trip a chunk). isolation: a points_isolated.Isolation (None: this process), whose
    child process then holds the worker's GPU and is replaced when a point's fault kills or poisons
    it. The caller holds _LOCK."""
    device.CURRENT_ON_OPEN = False  # tasks run on the worker's pool threads: Gpu.active() around each use
    allocate_as_a_plain_process()  # a worker the nanny restarted has not reported itself
    key = settings if isolation is None else (settings, isolation)
    parked, _PARKED[:] = list(_PARKED), []
    if _RUNNER[1] is None or _RUNNER[0] != key or (parked and not _still_good(_RUNNER[1], parked)):
        old = [r for r in _RUNNER[1:] if r is not None]
        _RUNNER[:] = [None, None]
        _SERVED.clear()
        _free(old)
        runner = isolation.open(settings, points) if isolation else LocalPoints(settings, points)
        _RUNNER[:] = [key, runner]
        _RUNNER[1].keep_shape = True  # the next chunk is often of the same shape: its inputs stay
    runner = _RUNNER[1]
    runner.compile_jobs = my_share(shares) or runner.compile_jobs  # the cluster's workers may have changed
    if isolation:  # the child's numpy BLAS on the worker's share too
        runner.blas_threads = my_share(shares)
    _SERVED.update({(p.variant.name, p.variant.source_dir): p.variant for p in points if p.variant.backend == "cuda"})
    if not (run and isolation):  # an isolated runner's child opens what a run's points need itself
        with in_context(runner.gpu):  # library handles opened now, in the GPU's context
            runner.ensure(points)
    return runner


def _still_good(runner, parked: list) -> bool:
    """Whether a parked runner may serve the next run: its context not lost (its child alive), and
    no kernel it loaded edited since (its modules are those of the source then)."""
    try:
        return runner.alive() and all(source_hash(variant) == then for variant, then in parked)
    except Exception:  # a kernel file gone: a new runner says so at its point
        return False


def in_context(gpu):
    """The GPU's primary context current on this thread around a block (tasks run on the worker's
    pool threads, where it may not be); nothing to do without a GPU."""
    return gpu.active() if gpu is not None else nullcontext()


def prepare_worker(settings: Settings, wires: list[tuple], shares: dict[str, int], isolation=None) -> dict:
    """On every worker before the first chunk: compile every kernel of the run at once, on the
    worker's share of cores, as one process compiles a run's kernels before its first point.
    Chunk by chunk, a worker would compile one or two at a time while its GPU idles (the 2-GPU
    check measured the limits sweep 12 % slower on two GPUs than on one that way). How many it
    compiled, and the time it took ("prepare")."""
    points = [unwire(w) for w in wires]
    with _LOCK, blas_threads(shares):
        runner = _runner(settings, points, shares, isolation)
        if runner.gpu is None:
            return {"compiled": 0, "time_spent": {}}
        before = runner.time_spent()
        with runner.gpu.active(), runner.spending("prepare"):
            compiled = runner.precompile(points)
        return {"compiled": compiled, "time_spent": spent_between(before, runner.time_spent())}


def run_chunk(settings: Settings, wires: list[tuple], shares: dict[str, int], isolation=None) -> bytes:
    """On a worker: run a chunk of points with this process's runner, numpy's BLAS on the worker's
    share of cores; its rows (in the chunk's order), the resources of the kernels it ran, and
    where it ran, packed (wire.packed)."""
    import time

    from .. import environment

    started, began = time.time(), time.perf_counter()
    points = [unwire(w) for w in wires]
    with _LOCK, blas_threads(shares):
        runner = _runner(settings, points, shares, isolation, run=True)
        spent_before = runner.time_spent()
        rows: list[dict] = []
        with in_context(runner.gpu):
            runner.run(points, rows.append)
        return packed({"rows": rows, "kernels": dict(runner.kernels), "libraries": runner.library_meta(),
                       "time_spent": spent_between(spent_before, runner.time_spent()),  # this chunk's
                       "gpu": environment.gpu_info(runner.gpu) if runner.gpu is not None else None,
                       "worker": {"host": HOST, "pid": os.getpid()}, "isolation": runner.meta().get("isolation"),
                       "task": {"started": started, "task_s": time.perf_counter() - began}})


_TUNERS: dict[tuple, object] = {}  # per worker process: a batched tuner per variant and configurations


def run_class(ref: tuple[str, str | None], configs: list, cache: str, l2_flush: str, jobs: int, cls: str, shapes: list[tuple],
              seed: int, prune: float, shares: dict[str, int], isolation=None) -> bytes:
    """On a worker: one size class of a batched tuning (batched_local.measure_class), the tuner's
    configurations compiled and loaded at the worker's first class and kept for the rest. With an
    isolation of mode process, the tuner is in a child process of the worker that is replaced when
    a configuration's fault kills or poisons it (batched_isolated.IsolatedBatched). Its result packed (wire.packed)."""
    from .. import environment

    variant = variant_of(tuple(ref))
    configs = [tuple(map(tuple, c)) for c in configs]
    isolation = isolation if isolation is not None and isolation.mode == "process" else None
    key = (variant.name, tuple(configs), cache, l2_flush, isolation)
    group = [Shape(*s) for s in shapes]
    allocate_as_a_plain_process()  # a worker the nanny restarted has not reported itself
    with _LOCK, blas_threads(shares):
        device.CURRENT_ON_OPEN = False
        tuner = _TUNERS.get(key) or _TUNERS.setdefault(key, _batched_tuner(variant, configs, cache, l2_flush, jobs,
                                                                           isolation))
        rows = _class_rows(tuner, cls, group, seed, prune)
    return packed({"rows": rows, "kernels": dict(tuner.kernels), "libraries": {},
                   "gpu": environment.gpu_info(tuner.gpu), "worker": {"host": HOST, "pid": os.getpid()},
                   "isolation": tuner.meta()["isolation"] if isolation is not None else None})


def _batched_tuner(variant, configs: list, cache: str, l2_flush: str, jobs: int, isolation):
    """A worker's batched tuner, its configurations compiled and loaded: a BatchedTuner on the
    worker's GPU, or (isolation) an IsolatedBatched whose child holds the GPU. The caller holds _LOCK."""
    if isolation is not None:
        from .batched_isolated import IsolatedBatched

        tuner = IsolatedBatched(variant, configs, cache, l2_flush, isolation)
        tuner.prepare(jobs, 0.0, lambda line: None)
        return tuner
    from ..device import open_gpu
    from .batched_local import BatchedTuner

    gpu = _TUNERS.get("gpu") or _TUNERS.setdefault("gpu", open_gpu())  # one Gpu per process
    with gpu.active():
        gpu.precompile(variant, configs, jobs)
        return BatchedTuner(gpu, variant, configs, cache, l2_flush)


def _class_rows(tuner, cls: str, group: list[Shape], seed: int, prune: float) -> list[dict]:
    """One class's rows from the worker's batched tuner (_batched_tuner's either)."""
    from . import batched_local
    from .batched_isolated import IsolatedBatched

    if isinstance(tuner, IsolatedBatched):
        [(_, rows)] = tuner.measured([(cls, group)], seed, prune)
        return rows
    with tuner.gpu.active():
        return batched_local.measure_class(tuner, cls, group, batched_local.make_inputs(tuner.op, seed), prune)


def release_worker(keep: bool = False) -> dict:
    """On a worker at the end of a run: its batched tuners closed and dropped (_free), so that what
    they hold on the GPU goes now, not at the process's exit; its runner too, unless `keep` (a running
    cluster's worker): then the runner is parked (LocalPoints.park: its GPU context and modules kept)
    with the source hashes of the kernels it served, and the next run with the same settings takes it
    while none of them was edited (_still_good); a run with other settings replaces it. How many it
    released, whether it kept a runner, and what failed to close."""
    with _LOCK:
        kept = keep and _RUNNER[1] is not None and _RUNNER[1].alive()
        failed: list[str] = []
        if kept:
            try:
                with in_context(_RUNNER[1].gpu):
                    _RUNNER[1].park()
                _PARKED[:] = [(variant, source_hash(variant)) for variant in _SERVED.values()]
            except Exception as exc:  # its child lost meanwhile, a kernel file gone: released as without keep
                failed.append(f"parking: {type(exc).__name__}: {exc}"[:200])
                kept = False
        held = [h for h in ((None if kept else _RUNNER[1]), *_TUNERS.values()) if h is not None]  # with the tuners' Gpu
        if not kept:
            _RUNNER[:] = [None, None]
            _SERVED.clear()
            _PARKED.clear()
        _TUNERS.clear()
        released = sum(1 for h in held if not isinstance(h, device.Gpu))
        return {"released": released, "kept": kept, "failed": failed + _free(held)}


def prestart_unless_kept(runner: str) -> None:
    """A run's start on a running cluster: the worker's GPU child started ahead (points_isolated.prestart),
    unless the worker keeps an isolated runner from the last run, whose child the run will likely take."""
    from .points_isolated import IsolatedPoints, prestart

    held = _RUNNER[1]  # read without _LOCK: this runs on the worker's event loop, which a chunk must not stall
    if not (isinstance(held, IsolatedPoints) and held.alive()):
        prestart(runner)


def _free(held: list) -> list[str]:
    """Runners, tuners and Gpus closed and dropped with their GPU's context current on this thread,
    then collected, so that PyCUDA frees their modules, buffers, streams, events and pinned memory
    now. PyCUDA frees such an object where its context is current, or by making it current on the
    thread that made it. At a worker's exit, on another thread, it can do neither: it warns, for
    each kind, that it could not clean them up. Empties `held`; what failed to close."""
    import gc

    if not held:  # a parked runner and no tuner: nothing to collect (gc.collect alone took 60 ms in a worker)
        return []
    gpu = next((g for g in map(_gpu_of, held) if g is not None), None)  # one GPU a worker
    context, drv = (gpu.context, gpu.drv) if gpu is not None else (None, None)
    del gpu
    try:
        if context is not None:
            context.push()
    except Exception:  # a context a sticky error destroyed: nothing can be freed in it
        context = None
    failed: list[str] = []
    try:
        while held:  # popped, so that no name still holds one when they are collected
            one = held.pop()
            try:
                getattr(one, "close", lambda: None)()  # a batched tuner or a Gpu: dropping it is enough
            except Exception as exc:  # CUPTI or a handle in a broken context: the rest still go
                failed.append(f"{type(one).__name__}: {type(exc).__name__}: {exc}"[:200])
            one = None
        gc.collect()
    finally:
        if context is not None:
            drv.Context.pop()
    return failed


def _gpu_of(held):
    return held if isinstance(held, device.Gpu) else getattr(held, "gpu", None)


