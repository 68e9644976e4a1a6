"""Sweeps across GPUs and hosts on Dask (issue 16): the only module that imports dask and
distributed, and only when a run asks for a cluster.

The client plans, sends chunks of points to the workers and is the only writer of the CSV and
metadata: a worker returns a chunk's rows, and the client writes each chunk's rows as the chunk
finishes, so rows stream, `--resume` works as for one GPU, and a crash of the client loses no row
written. A worker keeps one Runner for the whole sweep (compiled modules, library handles, the
last shape's inputs), with its GPU's primary context made current around every chunk. A chunk
whose worker dies is run again elsewhere by the scheduler; one that kills workers past the
scheduler's allowed failures becomes `failed` rows that say so. Each row names the host and GPU
it ran on; the metadata lists every worker.

`--cluster local` starts a dask-cuda LocalCUDACluster (one worker per visible GPU, honouring
CUDA_VISIBLE_DEVICES), or a LocalCluster of one-thread processes when no point needs a GPU;
`--scheduler tcp://HOST:PORT` uses a running cluster (dask-jobqueue's, dask-kubernetes's, ...).
"""

from __future__ import annotations

import ctypes
import math
import os
import threading
import time
from collections import Counter
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Callable, Sequence

from . import device
from .environment import own_cpus
from .ops import get_op
from .sizes import Shape
from .sweep import HOST, Point, Runner, Settings, _row, add_spent, spent_between
from .variants import get_variant

CHUNKS_PER_WORKER = 4  # chunks of a shape's points: enough to share a tuning shape's configurations out
INSTALL = "pip install '.[cluster]' (dask, distributed and dask-cuda)"


class ClusterError(RuntimeError):
    """No cluster could be started or reached: the message says why."""


@dataclass(frozen=True)
class ClusterSpec:
    """Where a run's points go: a local cluster started here, or a running scheduler."""

    scheduler: str | None = None  # tcp://HOST:PORT; None: start a local cluster
    workers: int | None = None  # a local CPU cluster's processes (default: one per core)

    def __str__(self) -> str:
        return self.scheduler or "local"


# -- points cross the wire as plain tuples (a Variant holds mappings that do not pickle) -------------
def descriptor(point: Point) -> tuple:
    s = point.shape
    return (point.variant.name, point.params, (s.m, s.n, s.k), point.cache, point.scope, point.pad)


def from_descriptor(d: tuple) -> Point:
    name, params, (m, n, k), cache, scope, pad = d
    return Point(get_variant(name), tuple(map(tuple, params)), Shape(m, n, k), cache, scope, pad)


def chunks(points: Sequence[Point], workers: int) -> list[list[Point]]:
    """The points in chunks that keep a shape's points together (they share its inputs), a shape
    with many points (a tuning's configurations) split so that every worker gets some; the
    largest work first (Dask starts tasks in the order given), so that no worker is left with a
    big shape while the others idle at the end."""
    by_shape: dict[tuple, list[Point]] = {}
    for p in points:
        by_shape.setdefault((p.variant.op, p.shape), []).append(p)
    size = max(1, math.ceil(len(points) / max(1, workers * CHUNKS_PER_WORKER)))
    parts = [group[i:i + size] for group in by_shape.values() for i in range(0, len(group), size)]

    def work(chunk: list[Point]) -> float:  # the shape's flops and bytes stand for its time
        op, shape = get_op(chunk[0].variant.op), chunk[0].shape
        return len(chunk) * (op.flops(shape) + op.min_bytes(shape))

    return sorted(parts, key=work, reverse=True)


# -- the worker's side ----------------------------------------------------------------------------------
# Per worker process: one runner (a second would open the GPU and CUPTI's callbacks again), kept
# while the settings stay and released at the run's end (release_worker); a lock, for workers a
# running cluster gave several threads.
_RUNNER: list = [None, None]  # [settings, runner]
_LOCK = threading.Lock()


def worker_identity() -> dict:
    """What a worker reports of itself for the metadata: host, process, the GPUs it sees, the
    host's cores and those it may use, and what was done to its allocator."""
    from .device import device_identity

    found = device_identity()
    return {"host": HOST, "pid": os.getpid(), "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "gpu": found.name if found else None, "host_cpus": os.cpu_count() or 1, "cpus": own_cpus(),
            "malloc": allocate_as_a_plain_process()}


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


@contextmanager
def blas_threads(shares: dict[str, int]):
    """This worker's share of its host's cores for numpy's BLAS for a block (a point's own
    `--threads` still applies inside it)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=my_share(shares), user_api="blas"):
        yield


def _runner(settings: Settings, points: list[Point], shares: dict[str, int]) -> Runner:
    """This process's runner for these settings (made anew when they change), with what the
    points need opened. The caller holds _LOCK."""
    device.CURRENT_ON_OPEN = False  # tasks run on the worker's pool threads: Gpu.active() around each use
    allocate_as_a_plain_process()  # a worker the nanny restarted has not reported itself
    if _RUNNER[1] is None or _RUNNER[0] != settings:
        old = [r for r in _RUNNER[1:] if r is not None]
        _RUNNER[:] = [None, None]
        _free(old)
        _RUNNER[:] = [settings, Runner(settings, points)]
        _RUNNER[1].keep_shape = True  # the next chunk is often of the same shape: its inputs stay
        _RUNNER[1].compile_jobs = my_share(shares) or _RUNNER[1].compile_jobs
    runner = _RUNNER[1]
    with in_context(runner.gpu):  # library handles opened now, in the GPU's context
        runner.ensure(points)
    return runner


def in_context(gpu):
    """The GPU's primary context current on this thread around a block (tasks run on the worker's
    pool threads, where it may not be); nothing to do without a GPU."""
    return gpu.active() if gpu is not None else nullcontext()


def prepare_worker(settings: Settings, descriptors: list[tuple], shares: dict[str, int]) -> dict:
    """On every worker before the first chunk: compile every kernel of the run at once, on the
    worker's share of cores, as one process compiles a run's kernels before its first point.
    Chunk by chunk, a worker would compile one or two at a time while its GPU idles (the 2-GPU
    check measured the limits sweep 12 % slower on two GPUs than on one that way). How many it
    compiled, and the time it took ("prepare")."""
    points = [from_descriptor(d) for d in descriptors]
    with _LOCK, blas_threads(shares):
        runner = _runner(settings, points, shares)
        if runner.gpu is None:
            return {"compiled": 0, "time_spent": {}}
        before = runner.time_spent()
        with runner.gpu.active(), runner.spending("prepare"):
            compiled = runner.precompile(points)
        return {"compiled": compiled, "time_spent": spent_between(before, runner.time_spent())}


def run_chunk(settings: Settings, descriptors: list[tuple], shares: dict[str, int]) -> dict:
    """On a worker: run a chunk of points with this process's runner, numpy's BLAS on the worker's
    share of cores; its rows (in the chunk's order), the resources of the kernels it ran, and
    where it ran."""
    from . import environment

    points = [from_descriptor(d) for d in descriptors]
    with _LOCK, blas_threads(shares):
        runner = _runner(settings, points, shares)
        spent_before = runner.time_spent()
        rows: list[dict] = []
        with in_context(runner.gpu):
            runner.run(points, rows.append)
        return {"rows": rows, "kernels": dict(runner.kernels), "libraries": runner.library_meta(),
                "time_spent": spent_between(spent_before, runner.time_spent()),  # this chunk's
                "gpu": environment.gpu_info(runner.gpu) if runner.gpu is not None else None,
                "worker": {"host": HOST, "pid": os.getpid()}}


_TUNERS: dict[tuple, object] = {}  # per worker process: a batched tuner per variant and configurations


def run_class(variant_name: str, configs: list, cache: str, l2_flush: str, jobs: int, cls: str, shapes: list[tuple],
              seed: int, prune: float, shares: dict[str, int]) -> dict:
    """On a worker: one size class of a batched tuning (batched.measure_class), the tuner's
    configurations compiled and loaded at the worker's first class and kept for the rest."""
    from . import batched, environment
    from .device import open_gpu

    variant = get_variant(variant_name)
    configs = [tuple(map(tuple, c)) for c in configs]
    key = (variant_name, tuple(configs), cache, l2_flush)
    group = [Shape(*s) for s in shapes]
    allocate_as_a_plain_process()  # a worker the nanny restarted has not reported itself
    with _LOCK, blas_threads(shares):
        tuner = _TUNERS.get(key)
        device.CURRENT_ON_OPEN = False
        if tuner is None:
            gpu = _TUNERS.get("gpu") or _TUNERS.setdefault("gpu", open_gpu())  # one Gpu per process
            with gpu.active():
                gpu.precompile(variant, configs, jobs)
                tuner = _TUNERS[key] = batched.BatchedTuner(gpu, variant, configs, cache, l2_flush)
        with tuner.gpu.active():
            rows = batched.measure_class(tuner, cls, group, batched.make_inputs(tuner.op, seed), prune)
    return {"rows": rows, "kernels": dict(tuner.kernels), "libraries": {}, "gpu": environment.gpu_info(tuner.gpu),
            "worker": {"host": HOST, "pid": os.getpid()}}


def release_worker() -> dict:
    """On a worker at the end of a run: its runner and batched tuners closed and dropped (_free), so
    that what they hold on the GPU goes now, not at the process's exit. A later run, or a run of
    another client of the same cluster, opens a new runner. How many it released, and what failed
    to close."""
    with _LOCK:
        held = [h for h in (_RUNNER[1], *_TUNERS.values()) if h is not None]  # with the tuners' Gpu
        _RUNNER[:] = [None, None]
        _TUNERS.clear()
        released = sum(1 for h in held if not isinstance(h, device.Gpu))
        return {"released": released, "failed": _free(held)}


def _free(held: list) -> list[str]:
    """Runners, tuners and Gpus closed and dropped with their GPU's context current on this thread,
    then collected, so that PyCUDA frees their modules, buffers, streams, events and pinned memory
    now. PyCUDA frees such an object where its context is current, or by making it current on the
    thread that made it. At a worker's exit, on another thread, it can do neither: it warns, for
    each kind, that it could not clean them up. Empties `held`; what failed to close."""
    import gc

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


# -- the client's side ----------------------------------------------------------------------------------
def connect(spec: ClusterSpec, gpus: bool, say: Callable[[str], None]):
    """A distributed Client of the spec's cluster: a running scheduler's, or a local one started
    now (dask-cuda's LocalCUDACluster when points need GPUs, else one-thread CPU processes)."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ClusterError(f"a cluster run needs Dask: {INSTALL}") from None
    if spec.scheduler:
        try:
            return Client(spec.scheduler, timeout="20s")
        except Exception as exc:  # refused, timed out, not a scheduler
            raise ClusterError(f"no Dask scheduler at {spec.scheduler}: {exc}") from None
    if gpus:
        try:
            from dask_cuda import LocalCUDACluster
        except ImportError:
            raise ClusterError(f"--cluster local with GPU points needs dask-cuda: {INSTALL}") from None
    started = time.perf_counter()
    try:
        cluster = (LocalCUDACluster(threads_per_worker=1) if gpus else
                   LocalCluster(n_workers=spec.workers or os.cpu_count() or 1, threads_per_worker=1, processes=True))
    except Exception as exc:  # no GPU to start a worker on, NVML refused, no ports
        raise ClusterError(f"--cluster local could not start: {exc}") from None
    client = Client(cluster)
    say(f"cluster: {len(client.scheduler_info()['workers'])} workers started in {time.perf_counter() - started:.1f} s, "
        f"dashboard at {client.dashboard_link}")
    return client


class ClusterRunner:
    """Runs points on a Dask cluster with the interface of sweep.Runner: run(points, on_row), the
    kernels it compiled, its library metadata; rows arrive as chunks finish, so they are routed
    by key (`unordered`), not by order."""

    unordered = True
    gpu = None  # the client opens no GPU; each worker has its own

    def __init__(self, settings: Settings, points: Sequence[Point], spec: ClusterSpec,
                 say: Callable[[str], None] = print, gpus: bool | None = None):
        self.settings, self.spec, self.say = settings, spec, say
        self.client = connect(spec, any(p.variant.on_gpu for p in points) if gpus is None else gpus, say)
        self.owns_cluster = spec.scheduler is None
        self.kernels: dict[str, dict] = {}
        self._libraries: dict[str, dict] = {}
        self.gpus: dict[str, dict] = {}  # GPU uuid (or worker) -> its facts, as workers report them
        self._spent: dict[str, dict[str, float]] = {}  # "host:pid" -> phase -> seconds, the chunks' added up
        try:
            self.workers = {address: info for address, info in self.client.run(worker_identity).items()}
        except Exception as exc:  # a worker that cannot import mmbench, or none at all
            self.close(release=False)
            raise ClusterError(f"the cluster's workers could not report themselves: {exc}") from None
        self.shares = blas_shares(self.workers)

    def library_meta(self) -> dict:
        return dict(self._libraries)

    def gpu_names(self) -> set[str]:
        """The GPU models the workers see (what a resumed file's GPU is checked against)."""
        return {w["gpu"] for w in self.workers.values() if w.get("gpu")}

    def meta(self) -> dict:
        """The cluster's part of the metadata: every worker, every GPU that ran a point, and as
        `gpu` the one GPU model they share (mixed models: the names, so tuning can refuse them)."""
        names = sorted({g["name"] for g in self.gpus.values()})
        gpu = next(iter(self.gpus.values())) if len(names) == 1 else ({"name": " + ".join(names), "mixed": names}
                                                                       if names else None)
        return {"cluster": {"scheduler": str(self.spec), "workers": self.workers,
                            "blas_threads_per_worker": self.shares, "gpus": list(self.gpus.values())},
                **({"gpu": gpu} if gpu else {})}

    def run(self, points: Sequence[Point], on_row: Callable[[dict], None]) -> None:
        from distributed import as_completed

        self.prepare(points)
        work = chunks(points, len(self.workers) or 1)
        futures = {self.client.submit(run_chunk, self.settings, [descriptor(p) for p in chunk], self.shares,
                                      pure=False): chunk for chunk in work}
        try:
            for future in as_completed(futures):
                chunk = futures.pop(future)
                try:
                    result = future.result()
                except Exception as exc:  # KilledWorker past the allowed failures, or an error in the task
                    why = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
                    for point in chunk:
                        on_row(_row(point, self.settings, "failed", f"cluster: {why}"[:300]))
                    continue
                self._absorb(result)
                for row in result["rows"]:
                    on_row(row)
        finally:
            for future in futures:  # interrupted: what has not finished is not wanted
                future.cancel()

    def prepare(self, points: Sequence[Point]) -> None:
        """Every worker compiles the run's kernels before the first chunk (prepare_worker), in two
        rounds: first each worker a share of them, then each worker all. Workers of one host share
        PyCUDA's and mmbench's caches, so the second round finds there what the others built (a
        worker on another host builds the rest). A worker gone meanwhile: its task runs elsewhere;
        one whose compiling fails (said) compiles its kernels as chunks come."""
        kernels = [descriptor(p) for p in {(p.variant.name, p.params): p for p in points
                                           if p.variant.backend == "cuda"}.values()]
        n = len(self.workers)
        if not kernels or not n:
            return
        for share in ((True, False) if n > 1 else (False,)):
            futures = [self.client.submit(prepare_worker, self.settings, kernels[i::n] if share else kernels,
                                          self.shares, workers=[address], allow_other_workers=True, pure=False)
                       for i, address in enumerate(self.workers) if not share or kernels[i::n]]
            try:
                done = self.client.gather(futures, errors="skip")
            except Exception:  # cancelled, the scheduler lost: the chunks compile what they need
                done = []
            for result in done:
                if isinstance(result, dict):
                    add_spent(self._spent, result.get("time_spent") or {})
            if len(done) < len(futures):
                self.say(f"cluster: {len(futures) - len(done)} of {len(futures)} workers could not compile ahead; "
                         "they compile as their chunks come")

    def run_batched(self, variant, configs: Sequence, cache: str, l2_flush: str, jobs: int, shapes: Sequence[Shape],
                    output, seed: int, skip: set[str], on_class: Callable[[str, int, int], None] | None,
                    counts: dict, prune: float) -> dict:
        """The batched tuner (batched.run) with its size classes spread over the workers: each
        worker compiles and loads the configurations once, then measures whole classes; the client
        writes each class's rows as it finishes (a resume continues after the last whole class)."""
        from distributed import as_completed

        from . import batched

        op_classes = [(cls, group) for cls, group in batched.by_class(get_op(variant.op), shapes) if cls not in skip]
        plain = [tuple(map(tuple, c)) for c in configs]
        futures = {self.client.submit(run_class, variant.name, plain, cache, l2_flush, jobs, cls,
                                      [(s.m, s.n, s.k) for s in group], seed, prune, self.shares, pure=False): (cls, group)
                   for cls, group in op_classes}
        writer = batched.ClassWriter(output)
        done = 0
        try:
            for future in as_completed(futures):
                cls, group = futures.pop(future)
                try:
                    result = future.result()
                except Exception as exc:  # a class that cannot be measured is left for a resume
                    counts["classes_failed"] = counts.get("classes_failed", 0) + 1
                    counts.setdefault("errors", []).append(f"{cls}: {type(exc).__name__}: {str(exc)[:200]}")
                    continue
                self._absorb(result)
                writer.write(result["rows"])
                for r in result["rows"]:
                    counts[r["status"]] = counts.get(r["status"], 0) + 1
                done += 1
                if on_class:
                    on_class(cls, done, len(op_classes))
        finally:
            for future in futures:
                future.cancel()
            writer.close()
        return counts

    def time_spent(self) -> dict[str, dict[str, float]]:
        """Where each worker's time went in the chunks returned so far (sweep.Runner.spent_s),
        and the compiling ahead of them ("prepare")."""
        return {worker: dict(phases) for worker, phases in self._spent.items()}

    def _absorb(self, result: dict) -> None:
        self.kernels.update(result["kernels"])
        add_spent(self._spent, result.get("time_spent") or {})
        libraries = dict(result["libraries"])
        references = libraries.pop("float64_reference", None)  # one entry per worker that gave the GPU up: all kept
        self._libraries.update(libraries)
        if references:
            self._libraries["float64_reference"] = {**self._libraries.get("float64_reference", {}), **references}
        if result["gpu"]:
            gpu = result["gpu"]
            self.gpus.setdefault(gpu.get("uuid") or f"{result['worker']['host']}:{result['worker']['pid']}",
                                 {**gpu, "host": result["worker"]["host"]})

    def release(self, timeout: float = 10) -> None:
        """Every worker now in the cluster (a restarted one has a new address) releases its runner
        (release_worker), each as a task: Dask runs it after the worker's last chunk. A worker that
        does not answer within `timeout` (gone, or still in a chunk an interrupt cancelled) keeps
        its runner until it exits; said, as are runners that failed to close."""
        from distributed import wait

        futures: dict = {}
        try:
            for address in self.client.nthreads():
                futures[address] = self.client.submit(release_worker, workers=[address], allow_other_workers=False,
                                                      pure=False)
            wait(list(futures.values()), timeout=timeout)
        except Exception:  # timed out, the client closed or the scheduler gone
            pass
        late = {address: f.status for address, f in futures.items() if f.status != "finished"}
        failed: list[str] = []
        try:
            for address, future in futures.items():
                if address not in late:
                    failed += [f"{address}: {why}" for why in future.result()["failed"]]
            if late:
                self.client.cancel([futures[address] for address in late])
        except Exception:  # the client closed meanwhile
            pass
        if late:
            self.say(f"cluster: {len(late)} of {len(futures)} workers did not release their runners within {timeout:g} s "
                     f"({', '.join(f'{a} {status}' for a, status in sorted(late.items()))}); they keep them until they exit")
        for why in failed:
            self.say(f"cluster: a runner failed to close: {why}")

    def close(self, release: bool = True) -> None:
        """The workers' runners released (unless the workers never reported themselves), then the
        client closed, and the cluster if this run started it, whatever the release met."""
        cluster = self.client.cluster if self.owns_cluster else None
        try:
            if release:
                self.release()
        finally:
            self.client.close()
            if cluster is not None:
                cluster.close()

