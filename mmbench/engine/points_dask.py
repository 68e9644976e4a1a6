"""Points on a Dask cluster, across GPUs and hosts (issue 16): the client's side (dask_worker.py is
the workers'). With dask_worker.py and batched_dask.py, the only modules that import dask and
distributed, and only when a run asks for a cluster.

The client plans, sends chunks of points to the workers and is the only writer of the CSV and
metadata: a worker returns a chunk's rows, and the client writes each chunk's rows as the chunk
finishes, so rows stream, `--resume` works as for one GPU, and a crash of the client loses no row
written. A worker keeps one engine (LocalPoints) for the whole sweep (compiled modules, library
handles, the last shape's inputs), with its GPU's primary context made current around every chunk. A chunk
whose worker dies is run again elsewhere by the scheduler; one that kills workers past the
scheduler's allowed failures becomes `failed` rows that say so. Each row names the host and GPU
it ran on; the metadata lists every worker.

`--cluster local` starts a dask-cuda LocalCUDACluster (one worker per visible GPU, honouring
CUDA_VISIBLE_DEVICES), or a LocalCluster of one-thread processes when no point needs a GPU;
`--scheduler tcp://HOST:PORT` uses a running cluster (dask-jobqueue's, dask-kubernetes's, ...).
"""

from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from ..ops import get_op
from ..vocabulary import DeviceId
from . import rows
from .dask_worker import (blas_shares, prepare_worker, prestart_unless_kept, release_worker, run_chunk,
                          worker_identity)
from .interface import Engine, add_spent
from .plan import Point, Settings
from .points_local import shape_groups
from .wire import unpacked, wire

CHUNKS_PER_WORKER = 4  # chunks of a shape's points: enough to share a tuning shape's configurations out
SMALLEST_SHARE = 16  # a chunk holds at least 1/16 of a worker's estimated share: small shapes travel together
# A point's estimated time (chunks' order and packing only): a fixed cost (its verification, its samples'
# round trips; 20 to 40 ms a point of the limits study on an H100) and ten launches at 20 TFLOP/s and 2 TB/s
POINT_S, LAUNCHES, FLOPS_PER_S, BYTES_PER_S = 0.02, 10, 2e13, 2e12
INSTALL = "pip install '.[cluster]' (dask, distributed and dask-cuda)"
WORKERS_WAIT_S = 20.0  # how long a run's plan waits for a cluster's first worker to say its GPU


class ClusterError(RuntimeError):
    """No cluster could be started or reached: the message says why."""


@dataclass(frozen=True)


class ClusterSpec:
    """Where a run's points go: a local cluster started here, or a running scheduler."""

    scheduler: str | None = None  # tcp://HOST:PORT; None: start a local cluster
    workers: int | None = None  # a local CPU cluster's processes (default: one per core)

    def __str__(self) -> str:
        return self.scheduler or "local"


def chunks(points: Sequence[Point], workers: int) -> list[list[Point]]:
    """The points in chunks that keep a shape's points together (shape_groups: of one precision and
    layout, they share its inputs, as a runner groups them), a shape with many points (a tuning's
    configurations) split so that every worker gets some; the largest estimated work first (Dask
    starts tasks in the order given), so that no worker is left with a big shape while the others
    idle at the end. Shapes too small to be worth a trip of their own are packed together until a
    chunk holds 1/SMALLEST_SHARE of a worker's share (a chunk cost 20 to 30 ms on the worker and in the
    scheduler beside its points; 3 ms since the costs py-spy found went). A part of one variant's points
    (a tuning's configurations of a shape) of at least twice that is split to it, each piece a chunk of its
    own; a study's shape (several variants) stays whole on one GPU, for its rows are compared with each
    other (% of cuBLAS). The tail shrinks (tail_target): once less than 1/8 of a worker's share is left a
    worker, a chunk holds half of what is left a worker, down to a quarter of the packing's size, so
    that the workers end together (4 x H200: the last chunks of 0.4 s and 1 s left the workers' ends 0.4
    s and 1 s apart)."""
    size = max(1, math.ceil(len(points) / max(1, workers * CHUNKS_PER_WORKER)))
    parts = sorted(((estimated_s(group[i:i + size]), group[i:i + size]) for group in shape_groups(points).values()
                    for i in range(0, len(group), size)), key=lambda part: part[0], reverse=True)
    share = sum(estimate for estimate, _ in parts) / max(1, workers)  # a worker's estimated seconds
    packed: list[list[Point]] = []
    held, left, target = 0.0, share, 0.0  # left: what is still to be chunked, a worker
    for estimate, part in parts:
        one_variant = len({p.variant.name for p in part}) == 1
        pieces = _split(part, estimate, tail_target(left, share)) if one_variant else [part]
        for piece in pieces:
            if not packed or held >= target:
                packed.append([])
                held, target = 0.0, tail_target(left, share)
            packed[-1] += piece
            piece_s = estimate * len(piece) / len(part)
            held = held + piece_s if len(pieces) == 1 else math.inf  # a split part's pieces travel alone
            left -= piece_s / max(1, workers)
    return packed


def tail_target(left: float, share: float) -> float:
    """The estimated seconds a chunk made now holds (chunks), `left` of a worker's `share` still to
    chunk: 1/SMALLEST_SHARE of the share while much is left, then half of what is left, never under a
    quarter of that."""
    return max(share / (4 * SMALLEST_SHARE), min(share / SMALLEST_SHARE, left / 2))


def _split(part: list[Point], estimate: float, target: float) -> list[list[Point]]:
    """A part of one shape's points in even pieces of target to twice target seconds (one point a
    piece at least), whole where it holds less than twice target."""
    pieces = min(len(part), max(1, math.floor(estimate / target))) if target > 0 else 1
    return [part[i * len(part) // pieces:(i + 1) * len(part) // pieces] for i in range(pieces)]


def estimated_s(points: list[Point]) -> float:
    """A rough time for points of one shape (POINT_S, LAUNCHES, FLOPS_PER_S, BYTES_PER_S): what orders
    and packs chunks, never reported."""
    op, shape = get_op(points[0].variant.op), points[0].shape
    return len(points) * (POINT_S + LAUNCHES * (op.flops(shape) / FLOPS_PER_S + op.min_bytes(shape) / BYTES_PER_S))


def chunk_timeline(result: dict, points: int, began: float) -> dict:
    """A chunk's entry in the metadata's `cluster.chunks`: its worker and points, when it started on
    the worker and came back (seconds since the client sent the run's first chunks; hosts' clocks agree to
    NTP's precision), its time on the worker (task_s) and in the worker's runner (run_s): the gaps
    say what the cluster's round trips cost."""
    task, worker = result.get("task") or {}, result["worker"]
    run_s = sum(phases.get("run", 0.0) for phases in (result.get("time_spent") or {}).values())
    return {"worker": f"{worker['host']}:{worker['pid']}", "points": points,
            "started_s": round(task["started"] - began, 3) if "started" in task else None,
            "returned_s": round(time.time() - began, 3), "task_s": round(task.get("task_s", 0.0), 3),
            "run_s": round(run_s, 3)}


# -- the client's side ----------------------------------------------------------------------------------
_EARLY: dict[tuple, dict] = {}  # (spec, gpus) -> a start begun ahead of the run: its thread, client or error


def start_early(spec: ClusterSpec, gpus: bool, isolation=None) -> None:
    """Begin connecting to the spec's cluster (a local one: importing Dask, starting the scheduler and
    a worker per GPU) on a thread now, and have each worker start its GPU's child process (with an
    isolation), while this process plans; the run's connect() takes the client. The start of a
    cluster costs seconds that would otherwise come before the first chunk (measured in
    docs/clusters.md). discard_early() closes one no run took."""
    key = (spec, gpus)
    if key in _EARLY:
        return
    box: dict = {"said": []}

    def start() -> None:
        try:
            box["client"] = _connect(spec, gpus, box["said"].append)
            if gpus and isolation is not None and isolation.mode == "process":
                # each worker's GPU child starts (unless it keeps one from a last run); its runner takes it
                box["client"].run(prestart_unless_kept, isolation.runner)
        except BaseException as exc:  # said by connect(), which then tries once more in its own thread
            box["error"] = exc

    box["thread"] = threading.Thread(target=start, name="mmbench-cluster-start", daemon=True)
    box["thread"].start()
    _EARLY[key] = box


def discard_early() -> None:
    """Close the clusters started ahead that no run took (a run refused after its start began)."""
    while _EARLY:
        (spec, _), box = _EARLY.popitem()
        box["thread"].join()
        client = box.get("client")
        if client is not None:
            cluster = client.cluster
            if spec.scheduler:  # a running cluster's workers keep no child for a run that will not come
                try:
                    from .points_isolated import discard_prestarted

                    client.run(discard_prestarted)
                except Exception:  # a worker gone meanwhile: its children went with it
                    pass
            client.close()
            if cluster is not None:
                cluster.close()


def cluster_gpu(spec: ClusterSpec, gpus: bool, say: Callable[[str], None]) -> tuple[DeviceId | None, str] | None:
    """The GPU of the cluster a run began connecting to (start_early), as its workers report it: what
    the run's tuned parameters are for (the client's own GPU may be another, or none: a login node
    driving a GPU cluster), and, for a run's line where there is none, where none was found. None where
    no start was begun or it failed (the run's connect says why), or no worker answered within
    WORKERS_WAIT_S (a cluster whose workers join later, said): the caller looks on this machine then."""
    box = _EARLY.get((spec, gpus))
    if box is None:
        return None
    box["thread"].join()
    client = box.get("client")
    if client is None:
        return None
    try:
        client.wait_for_workers(1, timeout=WORKERS_WAIT_S)
        found = client.run(worker_identity, on_error="ignore")  # a worker that cannot answer is left out
        models = {DeviceId(w["gpu_id"]["name"], w["gpu_id"].get("arch"), w["gpu_id"].get("sm_count"))
                  for w in found.values() if w.get("gpu_id")}
    except Exception:  # no worker yet, or answers of another mmbench
        found, models = {}, set()
    if not found:
        say(f"cluster: no worker reported its GPU within {WORKERS_WAIT_S:g} s; tuned parameters are looked up for this "
            f"machine's")
        return None
    if len(models) > 1:
        say(f"cluster: its workers' GPUs are of {len(models)} models ({'; '.join(sorted(map(str, models)))}): "
            f"tuned parameters are looked up for none of them")
        return None, "of one model on the cluster's workers"
    return next(iter(models), None), "reported by the cluster's workers"


def connect(spec: ClusterSpec, gpus: bool, say: Callable[[str], None]):
    """A distributed Client of the spec's cluster: the one start_early() began, else connected now."""
    box = _EARLY.pop((spec, gpus), None)
    discard_early()  # one begun for other points (a resume left with CPU points only) is not this run's
    if box is not None:
        box["thread"].join()
        for line in box["said"]:
            say(line)
        if "client" in box:
            return box["client"]
        if spec.scheduler and isinstance(box["error"], ClusterError):  # no scheduler there, as it would be now
            raise box["error"]
        say(f"cluster: the start begun ahead failed ({type(box['error']).__name__}: {box['error']}); trying again")
    return _connect(spec, gpus, say)


def _connect(spec: ClusterSpec, gpus: bool, say: Callable[[str], None]):
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


class DaskPoints(Engine):
    """Runs points on a Dask cluster as an Engine (interface.py): run(points, on_row), the
    kernels it compiled, its library metadata; rows arrive as chunks finish, so they are routed
    by key (`unordered`), not by order."""

    unordered = True
    gpu = None  # the client opens no GPU; each worker has its own
    isolation = None  # each worker's points in its own process (see __init__)

    def __init__(self, settings: Settings, points: Sequence[Point], spec: ClusterSpec,
                 say: Callable[[str], None] = print, gpus: bool | None = None, isolation=None):
        self.settings, self.spec, self.say = settings, spec, say
        # a points_isolated.Isolation: each worker runs its points in a child process it replaces
        # when a point's fault kills or poisons it (None, or no GPU point: in the worker's process)
        self.isolation = isolation if isolation is not None and isolation.isolates(points) else None
        self._isolation: dict[str, dict] = {}  # "host:pid" -> a worker's restarts and faults
        self.client = connect(spec, any(p.variant.on_gpu for p in points) if gpus is None else gpus, say)
        self.owns_cluster = spec.scheduler is None
        self.kernels: dict[str, dict] = {}
        self._libraries: dict[str, dict] = {}
        self.gpus: dict[str, dict] = {}  # GPU uuid (or worker) -> its facts, as workers report them
        self._spent: dict[str, dict[str, float]] = {}  # "host:pid" -> phase -> seconds, the chunks' added up
        self._chunks: list[dict] = []  # each chunk's worker, points, start, time on the worker and return (chunk_timeline)
        self._began: float | None = None  # when the first chunks went out (a search runs batch after batch)
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
        isolation = {**self.isolation.meta(), "workers": dict(self._isolation)} if self.isolation else {"mode": "none"}
        return {"cluster": {"scheduler": str(self.spec), "workers": self.workers,
                            "blas_threads_per_worker": self.shares, "gpus": list(self.gpus.values()),
                            **({"chunks": self._chunks} if self._chunks else {})},
                **({"gpu": gpu} if gpu else {}), "isolation": isolation}

    def run(self, points: Sequence[Point], on_row: Callable[[dict], None]) -> None:
        from distributed import as_completed

        self.prepare(points)
        self._began = self._began or time.time()
        work = chunks(points, len(self.workers) or 1)
        futures = {self.client.submit(run_chunk, self.settings, [wire(p) for p in chunk], self.shares,
                                      isolation=self.isolation, pure=False): chunk for chunk in work}
        try:
            for future in as_completed(futures):
                chunk = futures.pop(future)
                try:
                    result = unpacked(future.result())
                except Exception as exc:  # KilledWorker past the allowed failures, or an error in the task
                    why = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
                    for point in chunk:
                        on_row(rows.row(point, self.settings, "failed", f"cluster: {why}"[:300]))
                    continue
                self.absorb(result)
                self._chunks.append(chunk_timeline(result, len(chunk), self._began))
                for row in result["rows"]:
                    on_row(row)
        finally:
            for future in futures:  # interrupted: what has not finished is not wanted
                future.cancel()

    def prepare(self, points: Sequence[Point]) -> None:
        """Each host compiles the run's kernels once before the first chunk, shared out among its
        workers (prepare_worker): workers of one host share PyCUDA's and mmbench's caches, so each
        chunk then finds its kernels built (a second round in which every worker looked up every
        kernel took 2 to 5 s of a 4-GPU run, docs/clusters.md). A worker gone meanwhile: its task runs
        elsewhere; one whose compiling fails (said) leaves its share to the chunks that need it."""
        kernels = [wire(p) for p in {(p.variant.name, p.params): p for p in points
                                           if p.variant.backend == "cuda"}.values()]
        if not kernels or not self.workers:
            return
        hosts: dict[str | None, list[str]] = {}
        for address, info in self.workers.items():
            hosts.setdefault(info.get("host"), []).append(address)
        futures = [self.client.submit(prepare_worker, self.settings, kernels[i::len(addresses)], self.shares,
                                      isolation=self.isolation, workers=[address], allow_other_workers=True, pure=False)
                   for addresses in hosts.values() for i, address in enumerate(addresses) if kernels[i::len(addresses)]]
        try:
            done = self.client.gather(futures, errors="skip")
        except Exception:  # cancelled, the scheduler lost: the chunks compile what they need
            done = []
        for result in done:
            if isinstance(result, dict):
                add_spent(self._spent, result.get("time_spent") or {})
        if len(done) < len(futures):
            self.say(f"cluster: {len(futures) - len(done)} of {len(futures)} workers could not compile ahead; "
                     "their kernels compile as the chunks come")

    def time_spent(self) -> dict[str, dict[str, float]]:
        """Where each worker's time went in the chunks returned so far (points_local.LocalPoints.spent_s),
        and the compiling ahead of them ("prepare")."""
        return {worker: dict(phases) for worker, phases in self._spent.items()}

    def absorb(self, result: dict) -> None:
        self.kernels.update(result["kernels"])
        if self.isolation and result.get("isolation"):  # a worker's restarts and faults so far
            worker = result["worker"]
            mine = result["isolation"]
            self._isolation[f"{worker['host']}:{worker['pid']}"] = {"restarts": mine.get("restarts", 0),
                                                                    "faults": mine.get("faults", [])}
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

    def release(self, timeout: float = 10, keep: bool = False) -> None:
        """Every worker now in the cluster (a restarted one has a new address) releases its runner
        (release_worker; with `keep`, parks it for the next run), each as a task: Dask runs it after
        the worker's last chunk. A worker that does not answer within `timeout` (gone, or still in a
        chunk an interrupt cancelled) keeps its runner until it exits; said, as are runners that
        failed to close."""
        from distributed import wait

        futures: dict = {}
        try:
            for address in self.client.nthreads():
                futures[address] = self.client.submit(release_worker, keep, workers=[address],
                                                      allow_other_workers=False, pure=False)
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
        client closed, and the cluster if this run started it, whatever the release met. A running
        cluster's workers park their runners instead (release_worker's keep): a second run of the
        same settings pays for no GPU's opening (docs/clusters.md)."""
        cluster = self.client.cluster if self.owns_cluster else None
        try:
            # a cluster this run started ends with it: its workers' GPUs are in their children, which
            # exit with them (without an isolation the worker holds the GPU and frees it first)
            if release and (cluster is None or self.isolation is None):
                self.release(keep=cluster is None)
        finally:
            self.client.close()
            if cluster is not None:
                cluster.close()

