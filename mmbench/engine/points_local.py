"""Points in this process: run each point on the CPU or this process's GPU, one row per point.

Every point is verified once (fresh random inputs, output poisoned with NaN, float64
reference) before it is timed. Whatever goes wrong at a point (compile, launch, memory,
verification, a device limit) becomes that point's row with a status and a reason, and the
sweep goes on.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .. import blas_threads, environment, source
from ..draws import CounterDraws, run_key
from ..kernel_clock import KernelClock, KernelClockError, per_call_ms
from ..ops import DeviceBuffers, Operation, get_op
from ..ops.base import Check, Timed, Unsupported
from ..ops.capabilities import CpuBaseline, InputsOnGpu, LibraryBaseline, needs, timed_sequence
from ..ops.on_gpu import MadeOnGpu
from ..precisions import raw_view
from ..ops.declared import dimensions, launcher
from ..schema import HOST, clock_fields, clock_sagged, kernel_fields
from ..sizes import Shape
from ..timing import MAX_BATCH, median_interval, next_batch, noise, stop_reason, time_cpu, time_gpu
from ..variants import Params, Variant
from . import rows
from .interface import Engine
from .rows import timing_fields
from .plan import Point, Settings, kernel_key, takes


class NotRun(Exception):
    """A point that stops before it is measured, or is measured wrong: its status (skipped, failed,
    wrong), the reason, and the row's fields it has (the error of a wrong output)."""

    def __init__(self, status: str, reason: str, **fields):
        super().__init__(reason)
        self.status, self.reason, self.fields = status, reason, fields


@dataclass(frozen=True)
class DeviceShortfall:
    """A shape whose buffers do not fit in the GPU's free memory: its GPU points are skipped."""

    reason: str


HOST_PRODUCTS = "on the host: numpy's float64 BLAS"
LOST = "the CUDA context of the process is lost"


def shape_groups(points: Sequence[Point]) -> dict[tuple, list[Point]]:
    """Points by (operation, shape, precision, layout), in the order each first appears: the order a
    runner measures them in (such a group's points share its inputs and reference), and so the
    order of its rows."""
    order: dict[tuple, list[Point]] = {}
    for p in points:
        order.setdefault((p.variant.op, p.shape, p.dtype, p.layout), []).append(p)
    return order


def error_line(exc: BaseException) -> str:
    """The line of an exception that names the error (nvcc's among its notes), at most 300 characters."""
    text = str(exc).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower() and "nvcc compilation" not in ln]
    return (errors or lines or [type(exc).__name__])[0][:300]


def seconds(x: float) -> str:
    """A duration as a reason says it: whole seconds from 10 s, two significant digits below ("0.31 s",
    never "0 s")."""
    return f"{x:.0f} s" if x >= 10 else f"{x:.2g} s"


class LocalPoints(Engine):
    """Runs points on the CPU and, when the plan needs it, on the GPU; what a point computes and
    how it is checked comes from its operation (ops/)."""

    def __init__(self, settings: Settings, points: Sequence[Point], gpu_factory: Callable | None = None):
        self.settings = settings
        self.gpu = None
        self.libraries: dict[str, object] = {}  # variant name -> open library handle (cuBLAS, ...)
        self.library_errors: dict[str, str] = {}  # variant name -> why it could not be opened
        self.kernels: dict[str, dict] = {}  # "name[params]" -> resources, for the metadata
        self._source_hashes: dict[tuple, str] = {}  # (variant, its folder) -> hash: once a variant
        self._gpu_factory = gpu_factory
        self.cupti: KernelClock | None = None  # CUPTI's records, the kernel clock (settings.kernel_clock, GPU runs)
        self.cupti_error = ""  # why there is none, for the metadata
        self.cupti_misses: dict[str, int] = {}  # points whose records did not split into calls, by why
        # The last shape's inputs, reference and device buffers: freed after each shape, unless
        # keep_shape (a cluster worker, whose next chunk is often of the same shape).
        self.keep_shape = False
        self._kept: tuple | None = None
        # nvcc processes compiling a run's kernels at once (a cluster worker: its share of the host)
        self.compile_jobs = environment.own_cpus()
        # Wall seconds of run() ("run") and of its parts ("compile", "inputs": the inputs, the reference
        # and their upload, "verify", "samples", "cpu" points, "rows": handing rows over), and of
        # "prepare" (compiling before the first point, outside run()), for the metadata: where a
        # run's time went, and what is left outside the parts
        # (within "inputs": "reference_gpu" and "reference_host", the float64 products of references
        # by where they were made)
        self.spent_s: dict[str, float] = {}
        self.gpu_products_error = ""  # why references are no longer made on the GPU (no CuPy, ...)
        self.checks = {"gpu": 0, "host": 0}  # points verified where (ops/on_gpu.py's check, or the host's)
        # Called with a GPU point just before its first launch (compiled, buffers in place): an
        # isolated engine's child tells its parent, whose per-point timeout starts then.
        self.on_launch: Callable[[Point], None] | None = None
        # The fault that lost this process's CUDA context ("" while it is usable): an illegal
        # address and the like are sticky, so every later GPU point fails at once, saying so.
        self.context_lost = ""
        self.isolation_meta = {"mode": "none"}  # what meta() says of crash isolation (none in this process)
        self.ensure(points)

    def ensure(self, points: Sequence[Point]) -> None:
        """Open what these points need and the runner has not opened yet: the GPU, library handles
        (a cluster worker's runner serves one chunk of points after another)."""
        on_gpu = any(p.variant.on_gpu for p in points)
        if self.gpu is None and on_gpu:
            from ..device import open_gpu

            self.gpu = (self._gpu_factory or open_gpu)()
        if on_gpu and self.gpu is not None and self.cupti is None and not self.cupti_error \
                and self.settings.kernel_clock != "off" and self._gpu_factory is None:  # a parked runner's: anew
            try:
                self.cupti = KernelClock(self.settings.kernel_clock)
            except KernelClockError as exc:
                self.cupti_error = str(exc)
        for variant in dict.fromkeys(p.variant for p in points if p.variant.on_gpu and p.variant.backend != "cuda"):
            if variant.name in self.libraries or variant.name in self.library_errors:
                continue
            try:
                self.libraries[variant.name] = needs(get_op(variant.op), LibraryBaseline).library(variant, self.gpu)
            except Exception as exc:  # the library is missing or refused to start
                self.library_errors[variant.name] = str(exc) or type(exc).__name__

    def time_spent(self) -> dict[str, dict[str, float]]:
        """This runner's spent_s so far, under its host and process id (a cluster reports one per
        worker); a session records the difference over its own run (spent_between)."""
        return {f"{HOST}:{os.getpid()}": dict(self.spent_s)}

    # -- one shape at a time: inputs, reference and device buffers are shared by its points ----
    def run(self, points: Sequence[Point], on_row: Callable[[dict], None]) -> None:
        with self.spending("run"):
            self._run(points, on_row)

    def _run(self, points: Sequence[Point], on_row: Callable[[dict], None]) -> None:
        with self.spending("compile"):
            # the builds go on beside the GPU's samples (timed on the device), not beside a CPU point's
            # (timed by the host, whose cores nvcc would take): with one of those, all are built first
            self.precompile(points, wait=any(not p.variant.on_gpu for p in points))
        for (name, shape, dtype, layout), group in shape_groups(points).items():
            op = get_op(name)
            key = (name, shape, dtype, layout, self.settings.seed)
            if self._kept is not None and self._kept[0] == key:
                _, inputs, buffers = self._kept  # a cluster worker's next chunk of the same shape
            else:
                self.release_shape()
                with self.spending("inputs"):
                    inputs, buffers = self._inputs(op, shape, dtype, layout, group)
                if isinstance(inputs, str):  # too large for the host
                    for point in group:
                        on_row(rows.row(point, self.settings, "skipped", inputs))
                    continue
            try:
                for point in group:
                    if point.variant.on_gpu and buffers is None and not self.context_lost:
                        with self.spending("inputs"):
                            buffers = self._device_buffers(op, shape, dtype, inputs)
                    row = self._run_point(point, inputs, buffers)
                    with self.spending("rows"):
                        on_row(row)
            finally:
                self._kept = (key, inputs, buffers)
                if not self.keep_shape:
                    self.release_shape()

    def _inputs(self, op: Operation, shape: Shape, dtype: str, layout: str, group: Sequence[Point]) -> tuple:
        """A shape's (inputs, device buffers or None): drawn, referenced and checked on the GPU where
        the operation can (InputsOnGpu) and the GPU has the memory, else on the host (the buffers
        uploaded when a GPU point first needs them); or (why, None) where the host lacks the memory.
        The same draws at every precision and layout either way (a bf16 point's inputs are the fp32
        point's rounded), from the seed."""
        key = run_key([self.settings.seed, shape.m, shape.n, shape.k])
        if self._on_gpu(op, group) and needs(op, InputsOnGpu).gpu_bytes(shape, dtype) <= self.gpu.free_memory():
            started = time.perf_counter()
            try:
                made = op.inputs_on_gpu(self.gpu, shape, key, dtype, layout)
                self.spent_s["reference_gpu"] = self.spent_s.get("reference_gpu", 0.0) + time.perf_counter() - started
                return made, made.buffers
            except Exception as exc:
                from ..cublas import out_of_memory

                if not out_of_memory(exc):  # no CuPy, ...: the host's path for the rest of the run
                    self.gpu_products_error = error_line(exc) or type(exc).__name__
        too_large = self._host_shortfall(op, shape, dtype)
        if too_large:
            return too_large, None
        return op.make_inputs(shape, CounterDraws(key, self._drawer()), self.float64_products, dtype, layout), None

    def _on_gpu(self, op: Operation, group: Sequence[Point]) -> bool:
        """Whether a shape's inputs are made on the GPU: the operation can, a GPU point needs them, and
        this process has a real GPU whose references have not failed."""
        from ..device import Gpu

        return (isinstance(op, InputsOnGpu) and isinstance(self.gpu, Gpu) and not self.context_lost
                and not self.gpu_products_error and any(p.variant.on_gpu for p in group))

    def float64_products(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A.B and |A|.|B| in float64 for a reference: on the run's GPU when it has one (seconds
        of the host's BLAS become milliseconds, and a cluster's GPUs make theirs at once on a host
        whose cores they share), else, or where the GPU's fail, with numpy on the host. A shape the
        GPU has no memory for is made on the host; any other failure (no CuPy, a fake GPU) gives the
        GPU up for the run, and the metadata says why."""
        from ..ops.gemm import host_products

        if self.gpu is not None and not self.gpu_products_error:
            from ..cublas import float64_products, out_of_memory

            started = time.perf_counter()
            try:
                made = float64_products(a, b)
                self.spent_s["reference_gpu"] = self.spent_s.get("reference_gpu", 0.0) + time.perf_counter() - started
                return made  # (a failed try's seconds are counted in "inputs" only)
            except Exception as exc:
                if not out_of_memory(exc):
                    self.gpu_products_error = error_line(exc) or type(exc).__name__
        with self.spending("reference_host"):
            return host_products(a, b)

    def _drawer(self):
        """Where a shape's inputs are drawn: this GPU (Gpu.draw) when there is one that has not lost
        its context, else the host (the same values)."""
        from ..device import Gpu

        if not isinstance(self.gpu, Gpu) or self.context_lost:  # none, or a test's stand-in: the host's twin
            return None
        return self.gpu.draw

    def reference_meta(self) -> dict:
        """What the places of the references' float64 products mean (the seconds spent in each
        are time_spent_s's reference_gpu and reference_host: on the GPU, a shape's draws and its whole
        reference and bound), per process that gave the GPU up, why, and where each process checked
        its points (a cluster's workers report one entry each)."""
        if not {"reference_gpu", "reference_host"} & set(self.spent_s):
            return {}
        from ..cublas import GPU_PRODUCTS

        why = {f"not on the GPU at {HOST}:{os.getpid()}": self.gpu_products_error} if self.gpu_products_error else {}
        checked = {f"checked at {HOST}:{os.getpid()}": f"{self.checks['gpu']} points on the GPU (inputs drawn there; "
                                                        f"kernels/harness.cu check_outputs), {self.checks['host']} on "
                                                        f"the host (ops/base.py check_sums)"}
        return {"float64_reference": {"reference_gpu": GPU_PRODUCTS, "reference_host": HOST_PRODUCTS, **why, **checked}}

    def precompile(self, points: Sequence[Point], wait: bool = True) -> int:
        """Compile the kernels of these points not compiled yet, compile_jobs at a time, into the
        host's compile cache (function() then loads each): one nvcc after another would leave the GPU
        idle for seconds per kernel. wait=False: in the background, in the points' order, while the
        first ones are measured (Gpu.precompile_pairs). How many it compiled (or began to)."""
        if self.gpu is None:
            return 0
        todo = list(dict.fromkeys((p.variant, p.compiled_params) for p in points
                                  if p.variant.backend == "cuda" and not self.gpu.compiled(p.variant, p.compiled_params)))
        if todo:  # one alone too: a cluster worker's share may be one kernel, compiled before its first chunk
            self.gpu.precompile_pairs(todo, self.compile_jobs, wait)
        return len(todo)

    def precompile_configs(self, variant, configs: list, jobs: int, wait: bool = True) -> None:
        if self.gpu is not None:
            self.gpu.precompile(variant, list(configs), jobs, wait)

    def release_shape(self) -> None:
        """Free the device buffers of the shape last run (kept by a cluster worker's runner)."""
        kept, self._kept = self._kept, None
        if kept is not None and isinstance(kept[2], DeviceBuffers):
            try:
                if isinstance(kept[1], MadeOnGpu):
                    kept[1].free()
                kept[2].free()
            except Exception:
                if not self.context_lost:  # a lost context frees nothing: its memory goes with the process
                    raise

    def park(self, keep_clock: bool = False) -> None:
        """Between two runs of a running cluster (dask_worker.release_worker): the GPU's context and
        loaded modules kept, so that the next run with the same settings opens no process, context or
        module; what a run records of itself begins anew: the shape's buffers freed, the library
        handles closed and their errors forgotten (opened again as the next run's points need them,
        said in its metadata), the checks counted from zero. CUPTI's collection ends too (a batched
        tuner in the worker's process would run under it), unless keep_clock (an isolated worker's
        child, where nothing else runs)."""
        self.release_shape()
        if self.cupti is not None and not keep_clock:
            self.cupti.close()
            self.cupti = None
        if self.cupti is None:
            self.cupti_error = ""  # tried again at the next run's first GPU point
        self.cupti_misses = {}
        for handle in self.libraries.values():
            handle.close()
        self.libraries, self.library_errors, self.gpu_products_error = {}, {}, ""
        self.checks = {"gpu": 0, "host": 0}

    def alive(self) -> bool:
        """Whether a kept runner can serve another run (its context not lost)."""
        return not self.context_lost

    @staticmethod
    def _host_shortfall(op: Operation, shape: Shape, dtype: str) -> str:
        """Why a shape cannot be set up in host memory ("" when it can): checked before a byte is
        allocated, so a typo such as 99999999 becomes skipped rows, not a crash."""
        need, have = op.host_bytes(shape, dtype), environment.host_memory_available()
        if have is not None and need > have:
            return (f"needs {environment.format_bytes(need)} of host memory for its inputs and float64 reference; "
                    f"{environment.format_bytes(have)} available")
        return ""

    def _device_buffers(self, op: Operation, shape: Shape, dtype: str, inputs):
        need, free = op.device_bytes(shape, dtype), self.gpu.free_memory()
        if need > free:
            return DeviceShortfall(f"needs {environment.format_bytes(need)} of GPU memory for its inputs and "
                                   f"output; {environment.format_bytes(free)} free")
        try:
            return op.upload(self.gpu, inputs)
        except Exception as exc:  # out of device memory, or a dead context
            return f"device buffers could not be allocated: {error_line(exc)}"

    def _run_point(self, point: Point, inputs, buffers) -> dict:
        if self.context_lost and point.variant.on_gpu:
            row = rows.row(point, self.settings, "failed", f"not run: {LOST} at an earlier point "
                             f"({self.context_lost}); --isolation process goes on past such a fault")
        else:
            row = self._run_point_row(point, inputs, buffers)
            if row["status"] == "failed" and point.variant.on_gpu and self.gpu is not None:
                self._probe_context(row)
        if point.variant.on_gpu and self.gpu is not None:
            row.update(gpu=self.gpu.facts.name, gpu_uuid=self.gpu.facts.uuid)
        return row

    def _probe_context(self, row: dict) -> None:
        """After a failed GPU point: whether the CUDA context still works (a synchronize and a
        memset). A sticky fault (an illegal address, a misaligned one, an illegal instruction, a
        launch failure, ...) fails every call from now on: recorded in context_lost, and said in
        the row that caused it."""
        try:
            self.gpu.probe()
        except Exception as exc:
            self.context_lost = error_line(exc)
            if self.context_lost not in row["reason"]:
                row["reason"] = f"{row['reason']} ({self.context_lost})"
            row["reason"] = f"{row['reason']}; {LOST}"

    def _run_point_row(self, point: Point, inputs, buffers) -> dict:
        return self.row_of(point, lambda: self._measured(point, inputs, buffers))

    def row_of(self, point: Point, measure: Callable[[], dict]) -> dict:
        """The point's row: measure()'s, or (NotRun, raised wherever the point stops) skipped, failed
        or wrong with its reason, or failed with the error it met: the one place such a row is made."""
        try:
            return measure()
        except NotRun as stopped:
            return rows.row(point, self.settings, stopped.status, stopped.reason, **stopped.fields)
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            return rows.row(point, self.settings, "failed", f"{type(exc).__name__}: {error_line(exc)}")

    def _measured(self, point: Point, inputs, buffers) -> dict:
        if not takes(point.variant, point.dtype, point.layout):  # planning refuses these; a hand-made point too
            raise NotRun("skipped", f"{point.variant.name} takes "
                         f"{', '.join(point.variant.dtypes)} at layout {', '.join(point.variant.layouts)}")
        if not point.variant.on_gpu:
            with self.spending("cpu"):
                return self._run_cpu(point, inputs)
        if isinstance(buffers, DeviceShortfall):
            raise NotRun("skipped", buffers.reason)
        if isinstance(buffers, str):
            raise NotRun("failed", buffers)
        if point.variant.backend != "cuda":
            return self._run_library(point, inputs, buffers)
        return self._run_kernel(point, inputs, buffers)

    # -- backends --------------------------------------------------------------------------------
    def _run_cpu(self, point: Point, inputs) -> dict:
        op = point.op
        if point.variant.backend == "cpu":
            over = self._over_cpu_budget(point)
            if over:
                raise NotRun("skipped", over)
        compute, out = needs(op, CpuBaseline).cpu(point.variant, inputs)
        with blas_threads.limited(self.settings.threads):
            threads = max((i["num_threads"] for i in blas_threads.blas_libraries()), default=None)
            compute()
            check = op.check(out, inputs)
            if not check.ok:
                raise NotRun("wrong", check.reason, rel_err=check.rel_err, err_bound_ratio=check.err_bound_ratio,
                             threads=threads)
            times = time_cpu(compute, self.settings.runs, self.settings.warmup)
        return rows.row(point, self.settings, "ok", rel_err=check.rel_err, err_bound_ratio=check.err_bound_ratio,
                    threads=threads, **timing_fields(point, times))

    def _over_cpu_budget(self, point: Point) -> str:
        """Why a compiled naive CPU point would overrun the time budget ("" when it would not): its
        time estimated from one call at a smaller shape of the same operation, scaled by the work
        (flops, else bytes moved). A small shape runs from cache, so the estimate is a lower bound."""
        op, shape = point.op, point.shape
        work = lambda s: op.flops(s) or op.min_bytes(s)  # noqa: E731
        small, d = shape, 1
        while work(small) > 2e7:
            d *= 2
            small = Shape(max(1, shape.m // d), max(1, shape.n // d), max(1, shape.k // d) if shape.k else 0)
        if small == shape:
            return ""
        compute, _ = needs(op, CpuBaseline).cpu(point.variant, op.make_inputs(small, np.random.default_rng(0)))
        compute()  # load the library, touch the memory
        t0 = time.perf_counter()
        compute()
        per_call = (time.perf_counter() - t0) * work(shape) / work(small)
        calls = self.settings.runs + self.settings.warmup + 1  # samples, warm-up, the verified call
        if per_call * calls <= self.settings.cpu_budget_s:
            return ""
        return (f"would take about {seconds(per_call * calls)} ({calls} calls of about {seconds(per_call)}, scaled "
                f"from one call at {small}), over the CPU time budget of {self.settings.cpu_budget_s:g} s")

    def _run_library(self, point: Point, inputs, buffers: DeviceBuffers) -> dict:
        handle = self.libraries.get(point.variant.name)
        if handle is None:
            raise NotRun("skipped", f"{point.variant.label} unavailable: "
                                    f"{self.library_errors.get(point.variant.name, 'not opened')}")
        library = needs(point.op, LibraryBaseline)
        return self._verify_and_time(point, inputs, buffers,
                                     lambda shape, bufs: library.library_call(handle, shape, bufs))

    def _run_kernel(self, point: Point, inputs, buffers: DeviceBuffers) -> dict:
        gpu, variant, params = self.gpu, point.variant, point.compiled_params
        broken = variant.violated(params)
        if broken:
            raise NotRun("skipped", f"constraint {broken[0]} does not hold")
        # a shape the kernel does not take is never run, so never wrong; padded, the kernel runs at the padded shape
        runs_at = point.op.padded_shape(variant, params, point.shape) if point.pad else point.shape
        unmet = variant.unmet(params, dimensions(point.op, runs_at))
        if unmet:
            raise NotRun("skipped", unmet)
        wrong_target = source.target_problem(variant, gpu.facts.arch)
        if wrong_target:
            raise NotRun("skipped", wrong_target)
        limit = gpu.facts.max_threads_per_block
        if variant.block_threads(params) > limit:
            raise NotRun("skipped", f"{variant.block_threads(params)} threads per block exceed the device limit of {limit}")
        try:
            with self.spending("compile"):
                fn = gpu.function(variant, params)
        except Exception as exc:
            reason = error_line(exc)
            status = "skipped" if "too much shared data" in reason else "failed"
            raise NotRun(status, f"compile: {reason}") from None
        with self.spending("compile"):  # its ptxas report may run nvcc
            self._record_kernel(variant, params, fn)
        if self.settings.skip_spills and fn.local_size_bytes:
            raise NotRun("skipped", f"{fn.local_size_bytes} bytes of local memory a thread (registers spill)")
        shared = fn.shared_size_bytes + variant.dynamic_shared(params)
        limit = gpu.facts.max_shared_per_block if variant.shared == "0" else gpu.facts.max_shared_per_block_optin
        if shared > limit:
            raise NotRun("skipped", f"{shared} bytes of shared memory exceed the device limit of {limit}")
        return self._verify_and_time(point, inputs, buffers,
                                     lambda shape, bufs: launcher(gpu, point.op, variant, params, shape, bufs))

    def _verify_and_time(self, point: Point, inputs, buffers: DeviceBuffers,
                         compute: Callable[[Shape, DeviceBuffers], Callable[[], None]]) -> dict:
        """Verify, then time, what the point's scope covers: compute(shape, buffers) launches the
        variant on buffers of a shape (the point's own, or padded ones)."""
        gpu, settings, op = self.gpu, self.settings, point.op
        if self.on_launch is not None:
            self.on_launch(point)
        try:
            timed = timed_sequence(op, gpu, point.variant, point.params, point.shape, point.scope, point.pad, buffers,
                                   inputs, compute)
        except Unsupported as exc:  # a scope, precision or layout it cannot take here (ScopeError among them)
            raise NotRun("skipped", str(exc))
        try:
            return self._verify_and_time_sequence(point, inputs, timed)
        finally:
            timed.release()

    def _verify_and_time_sequence(self, point: Point, inputs, timed: Timed) -> dict:
        gpu, settings, op = self.gpu, self.settings, point.op
        with self.spending("verify"):
            timed.poison()
            timed.launch()
            gpu.synchronize()
            check = self._check(op, timed, inputs)
        fields = {"rel_err": check.rel_err, "err_bound_ratio": check.err_bound_ratio}
        if not check.ok:
            raise NotRun("wrong", check.reason, **fields)
        before, conditions = gpu.clock.current_mhz(), gpu.clock.conditions("before")
        with self.spending("samples"):
            times, kernel, sampling = self._samples(point, timed)
        after = gpu.clock.current_mhz()
        sagged = clock_sagged((before, after), gpu.clock.max_mhz(), settings.clock_sag)
        row = rows.row(point, settings, "ok", **fields, **clock_fields(before, after, sagged, conditions,
                                                                         gpu.clock.conditions("after")),
                         **timing_fields(point, times), **kernel_fields(kernel), **sampling)
        row["runs"] = len(times)  # adaptive sampling takes as many as it needed
        return row

    def _check(self, op: Operation, timed: Timed, inputs) -> Check:
        """The verdict on a launched sequence's result: on the GPU where the inputs were made there (a
        result on the host goes over for it), else on the host."""
        if not isinstance(inputs, MadeOnGpu):
            self.checks["host"] += 1
            return op.check(timed.result(), inputs)
        self.checks["gpu"] += 1
        out_type = inputs.buffers.output_type
        if timed.on_device is not None:
            return inputs.sums.check(*timed.on_device, out_type)
        result = timed.result()
        buf = self.gpu.upload(raw_view(np.ascontiguousarray(result)))
        try:
            return inputs.sums.check(buf, result.shape[-1], out_type)
        finally:
            buf.free()

    def _samples(self, point: Point, timed: Timed) -> tuple[list[float], tuple | None, dict]:
        """(event times, (kernel times, kernels-only times, records per call) or None, sampling
        fields) of a verified point: `runs` samples, or with a target (Settings.target) batches until the
        noise or the median's interval meets it (of the noise_clock's samples), the budget or max_runs. CUPTI's records of each
        batch, warm-up included, give the kernel clock's times."""
        gpu, settings = self.gpu, self.settings
        cupti = self.cupti
        flush_bytes = gpu.flush_bytes if settings.l2_flush == "write" else None
        kernel: tuple | None = None  # (times, kernels-only times, records a call)
        reading = cupti is not None  # while every batch's records have split into its calls

        def batch(runs: int, warmup: int) -> list[float]:
            nonlocal kernel, reading
            if reading:
                cupti.collect()  # the verification's and earlier records are not samples
            held = not timed.host_work and settings.kernel_clock != "isolated"
            got = time_gpu(gpu, timed.launch, runs, warmup, point.cache, settings.l2_flush, held=held)
            if reading:
                try:
                    read = per_call_ms(cupti.collect(), warmup + runs, flush_bytes)
                    before = kernel or ([], [], read.records)
                    kernel = (before[0] + read.ms[warmup:], before[1] + read.kernels_ms[warmup:], read.records)
                except KernelClockError as exc:
                    self.cupti_misses[str(exc)] = self.cupti_misses.get(str(exc), 0) + 1
                    kernel, reading = None, False
            return got

        times = batch(settings.runs, settings.warmup)
        sampling: dict = {}
        if settings.target is not None:
            rule, target = settings.target
            started = time.perf_counter()
            sag = lambda: clock_sagged((gpu.clock.current_mhz(),), gpu.clock.max_mhz(), settings.clock_sag)  # noqa: E731
            sagged = [sag()] * len(times)
            while True:
                on_kernel = settings.noise_clock == "kernel" and kernel is not None  # else the events judge
                basis = kernel[0] if on_kernel else times
                why = stop_reason(basis, sagged, settings.runs, target, time.perf_counter() - started,
                                  settings.budget_s, settings.max_runs, rule)
                if why:
                    break
                # the interval narrows as 1 / sqrt(samples): as many as it needs; the noise does not: a full batch
                size = next_batch(median_interval(basis, sagged), target, len(times), settings.max_runs) \
                    if rule == "interval" else min(MAX_BATCH, settings.max_runs - len(times))
                more = batch(size, 0)
                sagged += [sag()] * len(more)
                times += more
            sampling = {"noise": noise(basis, sagged), "interval": median_interval(basis, sagged),
                        "noise_clock": "kernel" if on_kernel else "events", "stopped": why,
                        "samples_sagged": sum(sagged)}
        return times, kernel, sampling

    def _record_kernel(self, variant: Variant, params: Params, fn) -> None:
        key = kernel_key(variant, params)
        if key in self.kernels:
            return
        which = (variant.name, variant.source_dir)
        if which not in self._source_hashes:
            self._source_hashes[which] = source.source_hash(variant)
        entry = {"source": source.source_path(variant).name, "source_hash": self._source_hashes[which],
                 **self.gpu.resources(fn), "dynamic_shared_bytes": variant.dynamic_shared(params),
                 **({"target": variant.target} if variant.target else {}),
                 **({"nvcc_options": list(variant.nvcc_options)} if variant.nvcc_options else {})}
        try:
            report = source.compile_report(variant, params, self.gpu.facts.arch)
            entry.update(ptxas_registers=report.registers, ptxas_shared_bytes=report.shared_bytes,
                         ptxas_stack_bytes=report.stack_bytes, ptxas_spill_store_bytes=report.spill_store_bytes,
                         ptxas_spill_load_bytes=report.spill_load_bytes,
                         **({"nvcc_warnings": list(report.warnings)} if report.warnings else {}))
        except Exception as exc:  # nvcc missing here: the loaded function's numbers still stand
            entry["ptxas"] = f"unavailable: {error_line(exc)}"
        self.kernels[key] = entry

    def gpu_names(self) -> set[str]:
        """The GPU model this runner measures on (none when it opened no GPU)."""
        return {self.gpu.facts.name} if self.gpu is not None else set()

    def library_meta(self) -> dict:
        """Per library baseline: its version and settings, or why it could not be opened; and how
        the references' float64 products were made (reference_meta)."""
        return {**{name: h.meta() for name, h in self.libraries.items()},
                **{name: {"unavailable": why} for name, why in self.library_errors.items()},
                **self.reference_meta()}

    def meta(self) -> dict:
        """Crash isolation: none in this process; and the fault that lost its context, if one did."""
        lost = {"context_lost": self.context_lost} if self.context_lost else {}
        return {"isolation": {**self.isolation_meta, **lost}}

    def kernel_clock_meta(self) -> dict:
        """What the metadata says of the kernel clock: on or why not, and points it missed."""
        if self.cupti is None:
            return {"kernel_clock": {"on": False, "why": self.cupti_error or "off"}} if self.gpu else {}
        return {"kernel_clock": {"on": True, "mode": self.settings.kernel_clock,
                                 "source": "CUPTI activity records (kernels, memsets, copies)",
                                 "misses": dict(self.cupti_misses)}}

    def close(self) -> None:
        try:
            if self.gpu is not None:
                self.gpu.stop_building()
            if self.cupti is not None:
                self.cupti.close()
            self.release_shape()
            for handle in self.libraries.values():
                handle.close()
        except Exception:
            if not self.context_lost:  # a lost context closes nothing: the process's exit frees it
                raise
