"""The GPU: the only module that imports PyCUDA, and only when a Gpu is opened.

Everything else in mmbench (listing, planning, CPU baselines, plots, compile checks) works on
a machine without a GPU or without PyCUDA.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import source
from .precisions import nan_bits, raw_view
from .variants import Params, Variant
from .vocabulary import DeviceId

NAN_BITS = 0x7FC00000  # a quiet float32 NaN: poisons outputs before every verification launch
FLOAT64_NAN_HALVES = 0x7FF8  # repeated in every 16 bits of a float64: 0x7FF87FF87FF87FF8, a NaN
HOLD_TIMEOUT_NS = 2_000_000_000  # hold_stream gives up after this; a batch enqueues in well under
HOLD_SLOTS = 2


class GpuUnavailable(RuntimeError):
    """No usable GPU: the message says why and how to install."""


def device_identity():
    """Name, architecture and SM count of CUDA device 0 (as CUDA_VISIBLE_DEVICES numbers it),
    read without opening a context; None where there is no GPU or no PyCUDA."""
    try:
        import pycuda.driver as drv

        drv.init()
        dev = drv.Device(0)
        major, minor = dev.compute_capability()
        return DeviceId(dev.name(), f"sm_{major}{minor}", dev.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT))
    except Exception:
        return None


# A process whose GPU work runs on threads of a pool (a Dask worker) sets this False: its GPU's
# context is then current only inside Gpu.active(). pycuda.autoprimaryctx would leave it pushed on
# the thread that opened it and pop it at exit on another, and the process aborts as it exits
# ("the context stack was not empty upon module cleanup").
CURRENT_ON_OPEN = True


def gpu_problem() -> str | None:
    """Why this machine cannot run GPU points (no PyCUDA, no driver, no device), or None; opens no
    context (a dry run asks)."""
    try:
        import pycuda.driver as drv
    except ImportError as exc:
        return f"PyCUDA is not installed ({exc}); on a GPU machine: pip install '.[cuda]'"
    try:
        drv.init()
        if drv.Device.count() < 1:
            return "no CUDA device is visible (CUDA_VISIBLE_DEVICES?)"
    except Exception as exc:  # no driver
        return f"no CUDA device could be opened: {exc}"
    return None


def open_gpu() -> "Gpu":
    """Open device 0 in its primary context (shared with CuPy), or raise GpuUnavailable; the
    context stays current on this thread (unless CURRENT_ON_OPEN is False)."""
    try:
        import pycuda.driver as drv
    except ImportError as exc:
        raise GpuUnavailable(f"PyCUDA is not installed ({exc}); on a GPU machine: pip install '.[cuda]'") from None
    if not CURRENT_ON_OPEN:
        try:
            drv.init()
            primary = drv.Device(0).retain_primary_context()
        except Exception as exc:  # no driver, no device
            raise GpuUnavailable(f"no CUDA device could be opened: {exc}") from None
        primary.push()
        try:
            gpu = Gpu(drv)
        finally:
            drv.Context.pop()
        gpu.primary = primary  # its retain holds the context while the Gpu lives
        return gpu
    try:
        import pycuda.autoprimaryctx  # noqa: F401  (retains and pushes the primary context)
    except Exception as exc:  # no driver, no device
        raise GpuUnavailable(f"no CUDA device could be opened: {exc}") from None
    return Gpu(drv)


@dataclass(frozen=True)
class DeviceFacts:
    """What the harness and the metadata need to know of the device."""

    name: str
    uuid: str
    pci_bus_id: str
    compute_capability: str
    arch: str
    sm_count: int
    memory_bytes: int
    l2_bytes: int
    max_threads_per_block: int
    max_threads_per_sm: int  # resident threads an SM holds (Sørensen's occupancy line: SMs x this)
    max_shared_per_block: int
    max_shared_per_block_optin: int
    clock_khz: int
    memory_clock_khz: int
    memory_bus_width_bits: int
    driver_cuda_version: int


class SmClock:
    """SM clock readings through NVML; every reading is None where NVML is missing."""

    def __init__(self, pci_bus_id: str):
        self.handle = None
        self.error = ""
        self._max_mhz: tuple[int | None] | None = None  # read once: (the value,)
        self._facts: dict | None = None  # read once (facts)
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
        except Exception as exc:  # pynvml missing or NVML refused
            self.error = str(exc) or type(exc).__name__

    def _read(self, fn_name: str, *args) -> Any:
        if self.handle is None:
            return None
        try:
            return getattr(self.nvml, fn_name)(self.handle, *args)
        except Exception:
            return None

    def current_mhz(self) -> int | None:
        return self._read("nvmlDeviceGetClockInfo", self.nvml.NVML_CLOCK_SM) if self.handle else None

    def uuid(self) -> str:
        """The GPU's UUID ("GPU-..."), "" without NVML."""
        found = self._read("nvmlDeviceGetUUID")
        return (found.decode() if isinstance(found, bytes) else found) or ""

    def max_mhz(self) -> int | None:
        """The SM clock's maximum: read once (1.4 ms an NVML call on an H100, asked before every batch)."""
        if self._max_mhz is None:
            self._max_mhz = (self._read("nvmlDeviceGetMaxClockInfo", self.nvml.NVML_CLOCK_SM) if self.handle else None,)
        return self._max_mhz[0]

    def conditions(self, when: str) -> dict:
        """Temperature (C) and board power (W) now, as gpu_temp_c_WHEN and power_w_WHEN."""
        if self.handle is None:
            return {}
        power = self._read("nvmlDeviceGetPowerUsage")  # milliwatts
        return {f"gpu_temp_c_{when}": self._read("nvmlDeviceGetTemperature", self.nvml.NVML_TEMPERATURE_GPU),
                f"power_w_{when}": power / 1000 if power is not None else None}

    def facts(self) -> dict:
        """The GPU's facts through NVML: those fixed while the process lives read once (three NVML calls
        beside the maximum SM clock's, 4 ms: an isolated child reports its facts at the end of every
        request, every chunk of a cluster's run), kept once every read gave a value; the power limit,
        which an administrator may change, each time."""
        if self.handle is None:
            return {"nvml": f"unavailable ({self.error})"}
        fixed = self._facts
        if fixed is None:
            driver = self.nvml.nvmlSystemGetDriverVersion()
            fixed = {"uuid": self.uuid(), "driver_version": driver.decode() if isinstance(driver, bytes) else driver,
                     "sm_clock_max_mhz": self.max_mhz(),
                     "memory_clock_max_mhz": self._read("nvmlDeviceGetMaxClockInfo", self.nvml.NVML_CLOCK_MEM)}
            if all(fixed.values()):  # a read that failed once is tried again next time
                self._facts = fixed
        return {**fixed, "power_limit_w": (self._read("nvmlDeviceGetEnforcedPowerLimit") or 0) / 1000 or None,
                "nvml_version": getattr(self.nvml, "__version__", None)}


class Gpu:
    """Device 0: compile, allocate, copy, launch, and the L2 flush and stream hold for timing."""

    def __init__(self, drv):
        self.drv = drv
        self.primary = None  # the retained primary context, where open_gpu left it current nowhere
        dev = drv.Context.get_device()
        attr = drv.device_attribute
        cc = dev.compute_capability()
        self.clock = SmClock(dev.pci_bus_id())
        self.facts = DeviceFacts(
            name=dev.name(),
            # PyCUDA's Device has no uuid: NVML's, found by PCI bus id (each row of a cluster run names its GPU)
            uuid=str(getattr(dev, "uuid", lambda: "")() or "") or self.clock.uuid(),
            pci_bus_id=dev.pci_bus_id(),
            compute_capability=f"{cc[0]}.{cc[1]}",
            arch=f"sm_{cc[0]}{cc[1]}",
            sm_count=dev.get_attribute(attr.MULTIPROCESSOR_COUNT),
            memory_bytes=dev.total_memory(),
            l2_bytes=dev.get_attribute(attr.L2_CACHE_SIZE),
            max_threads_per_block=dev.get_attribute(attr.MAX_THREADS_PER_BLOCK),
            max_threads_per_sm=dev.get_attribute(attr.MAX_THREADS_PER_MULTIPROCESSOR),
            max_shared_per_block=dev.get_attribute(attr.MAX_SHARED_MEMORY_PER_BLOCK),
            max_shared_per_block_optin=dev.get_attribute(attr.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
            clock_khz=dev.get_attribute(attr.CLOCK_RATE),
            memory_clock_khz=dev.get_attribute(attr.MEMORY_CLOCK_RATE),
            memory_bus_width_bits=dev.get_attribute(attr.GLOBAL_MEMORY_BUS_WIDTH),
            driver_cuda_version=drv.get_driver_version(),
        )
        self.context = drv.Context.get_current()  # the primary context open_gpu made current
        self.stream = drv.Stream()
        # A second stream for kernels that run beside the main one (a product's strip kernels),
        # forked from and joined back into self.stream by events, so timing on self.stream covers them.
        self._side = drv.Stream()
        self._fork, self._join = (drv.Event(drv.event_flags.DISABLE_TIMING) for _ in range(2))
        # Keyed by variant name, source folder (another folder holds another version of the
        # kernel) and parameters.
        self._modules: dict[tuple, Any] = {}
        self._functions: dict[tuple, Any] = {}
        self._precompiled: set[tuple] = set()  # modules precompile() put in the host's compile cache
        # modules precompile(wait=False) is still building, each its build's Future: function() waits
        # for its own, so the GPU measures what is built while nvcc builds the rest
        self._building: dict[tuple, Any] = {}
        self._pool = None  # the nvcc threads' executor, made at the first precompile and kept
        # Cold-cache samples read (or, as files measured before it ask, write) a buffer twice the L2
        # size before each launch; zeroed once, so the read kernel never stores.
        self._flush_words = 2 * self.facts.l2_bytes // 16 * 4
        self._flush_buf = drv.mem_alloc(self._flush_words * 4)
        self.flush_bytes = self._flush_words * 4  # what the kernel clock leaves out of a write flush
        drv.memset_d32(self._flush_buf, 0, self._flush_words)
        self._flush_sink = drv.mem_alloc(4)
        # Host-mapped flags for hold_stream, a pair per slot: [0] release, [1] timed out. Two slots let
        # the batched tuner enqueue one held batch while the GPU runs the one before.
        self._flags = drv.pagelocked_zeros((2 * HOLD_SLOTS,), np.int32, mem_flags=drv.host_alloc_flags.DEVICEMAP)
        self._flags_dev = np.intp(self._flags.base.get_device_pointer())
        self._hold = self.harness("hold_stream")
        self._flush_read = self.harness("flush_l2_read")
        self._flush_read.prepare("PQP")

    @contextmanager
    def active(self):
        """This GPU's primary context current on the calling thread for a block: a Dask task runs in
        a worker's thread pool, where PyCUDA's per-thread context may not be current."""
        self.context.push()
        try:
            yield self
        finally:
            self.drv.Context.pop()

    # -- compiling ---------------------------------------------------------------------------
    def function(self, variant: Variant, params: Params, entry: str | None = None):
        """A compiled entry function, the variant's own by default: its module's cubin from the host's
        compile cache (source.module_build: one nvcc run per module text a host, ever), loaded once a
        process; one module per parameter point holds all its entries."""
        key = (variant.name, variant.source_dir, params)
        wanted = entry or variant.entry_name
        if (*key, wanted) in self._functions:  # loaded: neither the module nor the symbol is looked up again
            return self._functions[(*key, wanted)]
        building = self._building.pop(key, None)
        if building is not None:  # built in the background (precompile): wait for it, not a second nvcc
            building.result()
        symbol = wanted
        if variant.origin and wanted == variant.entry_name:  # a variant file's kernel may be C++: its
            # symbol is read from what nvcc built
            symbol = source.entry_symbol(variant, source.compile_reports(variant, params, self.facts.arch))
        if key not in self._modules:
            cubin = source.module_cubin(variant, params, self.facts.arch)
            # cuda-python loads and launches what takes tensor maps or clusters (launch_ex.py), PyCUDA the rest
            self._modules[key] = cubin if variant.launches_ex else self.drv.module_from_buffer(cubin)
        if variant.launches_ex:
            from .launch_ex import FunctionEx

            self._functions[(*key, wanted)] = FunctionEx(self._modules[key], symbol)
        else:
            self._functions[(*key, wanted)] = self._modules[key].get_function(symbol)
        return self._functions[(*key, wanted)]

    def compiled(self, variant: Variant, params: Params) -> bool:
        """Whether this parameter point's module is loaded or compiled by precompile()."""
        key = (variant.name, variant.source_dir, params)
        return key in self._modules or key in self._precompiled or key in self._building

    def precompile(self, variant: Variant, points: list[Params], jobs: int, wait: bool = True) -> None:
        """Compile many parameter points of a variant in parallel into the host's compile cache."""
        self.precompile_pairs([(variant, params) for params in points], jobs, wait)

    def precompile_pairs(self, pairs: list[tuple[Variant, Params]], jobs: int, wait: bool = True) -> None:
        """Compile (variant, parameters) pairs in parallel into the host's compile cache (nvcc runs as
        separate processes, so threads suffice), each module text once (variants of one file may share
        it), in the order given; errors are left for function() to report per point. wait=False
        returns at once: the builds go on beside what the caller measures, function() waiting for
        the one it needs (a sample times the GPU between events around launches a held stream
        queued, so nvcc's load on the host does not enter it). Ctrl-C and close() drop what has
        not started."""
        from concurrent.futures import ThreadPoolExecutor

        by_text: dict[tuple, list[tuple[Variant, Params]]] = {}
        for variant, params in pairs:  # a module: its text, the options and the target it is built with
            key = (source.module_source(variant, params), source.nvcc_options(variant),
                   source.build_arch(variant, self.facts.arch))
            by_text.setdefault(key, []).append((variant, params))

        def build(key: tuple) -> None:
            text, options, arch = key
            try:
                source.module_build(text, arch, options)
                for variant, params in by_text[key]:
                    self._precompiled.add((variant.name, variant.source_dir, params))
            except Exception:
                pass

        if self._pool is None:  # one executor for every call: jobs nvcc at a time, whatever is asked after
            self._pool = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="nvcc")
        futures = []
        for key, wanted in by_text.items():
            futures.append(self._pool.submit(build, key))
            for variant, params in wanted:
                self._building[(variant.name, variant.source_dir, params)] = futures[-1]
        if not wait:
            return
        try:
            for future in futures:
                future.result()
        except BaseException:  # Ctrl-C: what has not started is dropped
            for future in futures:
                future.cancel()
            raise
        finally:
            for variant, params in pairs:
                self._building.pop((variant.name, variant.source_dir, params), None)

    def stop_building(self) -> None:
        """Drop the background builds not started (a run's end, or Ctrl-C); those running finish, and
        function() still waits for them rather than building their module a second time."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        self._building = {key: future for key, future in self._building.items() if not future.cancelled()}

    @staticmethod
    def resources(function) -> dict:
        """Registers, static shared memory and local memory of a loaded function."""
        return {"registers": function.num_regs, "shared_bytes": function.shared_size_bytes,
                "local_bytes": function.local_size_bytes}

    # -- memory ------------------------------------------------------------------------------
    def upload(self, array: np.ndarray):
        buf = self.drv.mem_alloc(max(array.nbytes, 4))
        self.drv.memcpy_htod(buf, np.ascontiguousarray(array))
        return buf

    def alloc(self, nbytes: int):
        return self.drv.mem_alloc(max(nbytes, 4))

    def download(self, buf, shape: tuple[int, ...], dtype=np.float32) -> np.ndarray:
        """A device array on the host, of any storage type (16- and 8-bit floats through their bytes)."""
        out = np.empty(shape, dtype=dtype)
        self.drv.memcpy_dtoh(raw_view(out), buf)
        return out

    def pinned(self, shape: tuple[int, ...], dtype=np.float32) -> np.ndarray:
        """A page-locked host array (what asynchronous copies need to overlap and run at full speed)."""
        return self.drv.pagelocked_empty(shape, dtype)

    def htod_async(self, buf, host: np.ndarray) -> None:
        self.drv.memcpy_htod_async(buf, host, self.stream)

    def dtoh_async(self, host: np.ndarray, buf) -> None:
        self.drv.memcpy_dtoh_async(host, buf, self.stream)

    def copy2d_async(self, dst, dst_cols: int, src, src_cols: int, rows: int, cols: int, item: int = 4) -> None:
        """Copy a rows x cols block of item-byte elements between row-major device matrices of
        dst_cols and src_cols columns (top-left corners), on the stream."""
        copy = self.drv.Memcpy2D()
        copy.set_src_device(src)
        copy.set_dst_device(dst)
        copy.src_pitch, copy.dst_pitch = item * src_cols, item * dst_cols
        copy.width_in_bytes, copy.height = item * cols, rows
        copy(self.stream)

    def free_memory(self) -> int:
        """Bytes of device memory free now."""
        return self.drv.mem_get_info()[0]

    def harness(self, entry: str, storage=np.float32):
        """A kernel of kernels/harness.cu compiled for a storage type (its DTYPE: the precision that
        stores its A in that type)."""
        from .draws import STORED_BY
        from .precisions import DTYPE_CODES

        code = DTYPE_CODES[STORED_BY[np.dtype(storage)]]
        return self.function(Variant(name=entry, backend="cuda", label="", description="", family="harness"),
                             (("DTYPE", code),) if code != DTYPE_CODES["fp32"] else ())

    def draw_into(self, buf, rows: int, cols: int, transposed: bool, key: int, stream: int, kind: str, storage,
                  scale: float = 1.0) -> None:
        """A shape's draw made on this GPU in its storage type into a rows x cols device matrix, as drawn
        or, transposed, as the transpose of the cols x rows matrix drawn (harness.cu's draw_matrix;
        draws.py's host_values makes the same values), on the stream."""
        from .draws import KINDS

        count = rows * cols
        blocks = max(1, min(-(-count // 256), 32 * self.facts.sm_count))
        self.harness("draw_matrix", storage)(buf, np.uint64(rows), np.uint64(cols), np.int32(transposed),
                                             np.uint64(key), np.uint64(stream), np.int32(KINDS[kind]),
                                             np.float32(scale), block=(256, 1, 1), grid=(blocks, 1),
                                             stream=self.stream)

    def draw(self, key: int, stream: int, count: int, kind: str, storage: np.dtype, scale: float = 1.0) -> np.ndarray:
        """A shape's draw made on this GPU in its storage type and brought to the host (draw_into)."""
        out = self.alloc(count * np.dtype(storage).itemsize)
        try:
            self.draw_into(out, 1, count, False, key, stream, kind, storage, scale)
            self.stream.synchronize()
            return self.download(out, (count,), storage)
        finally:
            out.free()

    def poison(self, buf, count: int, dtype=np.float32) -> None:
        """Fill count elements of a storage type with a quiet NaN of that type."""
        bits, width = nan_bits(dtype)
        if width == 4:
            self.drv.memset_d32(buf, bits, count)
        elif width == 8:  # 0x7FF8 in every 16 bits: a NaN of float64 (all exponent bits set)
            self.drv.memset_d16(buf, FLOAT64_NAN_HALVES, 4 * count)
        elif width == 2:
            self.drv.memset_d16(buf, bits, count)
        else:
            self.drv.memset_d8(buf, bits, count)

    def poison_async(self, buf, count: int) -> None:
        """poison() on the stream, for work enqueued behind a hold (the batched tuner)."""
        self.drv.memset_d32_async(buf, NAN_BITS, count, self.stream)

    def zero_bytes_async(self, buf, nbytes: int) -> None:
        """Zero nbytes bytes of a buffer on the stream (outputs of 2- and 8-byte elements)."""
        self.drv.memset_d8_async(buf, 0, nbytes, self.stream)

    def zero_async(self, buf, count: int) -> None:
        self.drv.memset_d32_async(buf, 0, count, self.stream)

    # -- launching beside the main stream -------------------------------------------------------
    @property
    def side(self):
        """The second stream, for kernels that run beside the main one (a product's strip kernels)."""
        return self._side

    def fork(self) -> None:
        """Let the side stream start from here on the main stream."""
        self._fork.record(self.stream)
        self._side.wait_for_event(self._fork)

    def join(self) -> None:
        """Make the main stream wait for what the side stream has been given since fork()."""
        self._join.record(self._side)
        self.stream.wait_for_event(self._join)

    def allow_dynamic_shared(self, function, nbytes: int) -> None:
        """Opt a function in to dynamic shared memory beyond 48 KiB (a launch asking more fails otherwise)."""
        from .launch_ex import FunctionEx

        if nbytes > self.facts.max_shared_per_block and isinstance(function, FunctionEx):
            function.allow_dynamic_shared(nbytes)
        elif nbytes > self.facts.max_shared_per_block:
            function.set_attribute(self.drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)

    def synchronize(self) -> None:
        self.stream.synchronize()

    def probe(self) -> None:
        """Raise where the context no longer works: after a sticky fault (an illegal address and the
        like) every call fails with it, a synchronize and a 4-byte memset included."""
        self.drv.Context.synchronize()
        self.drv.memset_d32(self._flush_sink, 0, 1)
        self.drv.Context.synchronize()

    # -- timing helpers ------------------------------------------------------------------------
    def flush_l2(self, method: str) -> None:
        """Evict everything the kernel used, on the stream: "read" a buffer twice the L2 size (the L2
        is left clean), or "write" it (mmbench's method before: the L2 is left dirty, and the next
        sample pays for writing it back; kept for resuming files measured so)."""
        if method == "write":
            self.drv.memset_d32_async(self._flush_buf, 0, self._flush_words, self.stream)
            return
        if method != "read":
            raise ValueError(f"L2 flush '{method}'; choose from: read, write")
        self._flush_read.prepared_async_call((4 * self.facts.sm_count, 1), (512, 1, 1), self.stream,
                                             self._flush_buf, np.uint64(self._flush_words // 4), self._flush_sink)

    def hold(self, slot: int = 0) -> None:
        """Block the stream until release(slot): work enqueued meanwhile starts back to back. A slot
        may be held again only once its previous hold has run (the caller synchronized past it)."""
        self._flags[2 * slot:2 * slot + 2] = 0
        self._hold(np.intp(self._flags_dev + 8 * slot), np.uint64(HOLD_TIMEOUT_NS), block=(1, 1, 1), grid=(1, 1),
                   stream=self.stream)

    def release(self, slot: int = 0) -> None:
        """Let the held stream run; after synchronizing, held_ok() says whether the hold lasted."""
        self._flags[2 * slot] = 1

    def held_ok(self, slot: int = 0) -> bool:
        return int(self._flags[2 * slot + 1]) == 0

    def event(self):
        return self.drv.Event()
