"""The device's ceilings: datasheet peaks from its attributes, and measured ones.

Measured: the FP32 FMA rate of a kernel that does nothing but independent FMAs, and the DRAM
bandwidth of a device-to-device copy far larger than L2 (bytes read plus bytes written).
They are stored in the results' metadata (``ceilings``) and shown by ``mmbench info``.
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

import numpy as np

from .schema import utc_now

# FP32 lanes per SM by compute capability (CUDA C Programming Guide, arithmetic throughput).
FP32_LANES_PER_SM = {"3.7": 192, "6.0": 64, "7.0": 64, "7.5": 64, "8.0": 64, "8.6": 128, "8.9": 128, "9.0": 128}
COPY_BYTES = 2 << 30  # 2 GiB each way: over 30x the L2 of any current GPU
FMA_ITERS = 4096
FMA_THREADS = 256
SAMPLES = 10


# Dense tensor-core FLOP per SM per clock by compute capability and precision (NVIDIA's A100 and H100
# whitepapers: an A100 SM does 1024 dense FP16 FMA a clock, a Hopper SM twice that; TF32 half of FP16,
# FP8 twice, FP64 on the DMMA units). NVIDIA's H100 SXM datasheet gives 989.4 TFLOP/s of dense BF16:
# 132 SMs x 4096 at 1830 MHz; the boost clock the device reports (1980 MHz) gives more.
TENSOR_FLOPS_PER_SM_CLOCK = {
    "8.0": {"fp64": 128, "tf32": 1024, "fp16": 2048, "bf16": 2048},
    "9.0": {"fp64": 256, "tf32": 2048, "fp16": 4096, "bf16": 4096, "fp8e4m3": 8192, "fp8e5m2": 8192},
}


def datasheet(gpu_facts: dict) -> dict:
    """Peak FP32 rate and DRAM bandwidth implied by the device's attributes (boost clock), and the
    dense peak of each precision its GEMMs run at (precision_tflops: fp32 on the FMA units, the
    others on the tensor cores; a precision the table does not know for this GPU is left out)."""
    lanes = FP32_LANES_PER_SM.get(gpu_facts["compute_capability"])
    clock_hz = gpu_facts["clock_khz"] * 1e3
    fp32 = (gpu_facts["sm_count"] * lanes * 2 * clock_hz / 1e12) if lanes else None
    # Double data rate: two transfers per memory clock over the whole bus.
    dram = gpu_facts["memory_clock_khz"] * 1e3 * 2 * gpu_facts["memory_bus_width_bits"] / 8 / 1e9
    rates = TENSOR_FLOPS_PER_SM_CLOCK.get(gpu_facts["compute_capability"], {})
    by_precision = {**({"fp32": fp32} if fp32 else {}),
                    **{name: gpu_facts["sm_count"] * per_clock * clock_hz / 1e12 for name, per_clock in rates.items()}}
    return {"fp32_tflops": fp32, "dram_gbytes_per_s": dram, "precision_tflops": by_precision,
            "basis": "SMs x FP32 lanes x 2 x boost clock; memory clock x 2 x bus width; tensor cores: SMs x dense "
                     "FLOP per SM per clock (NVIDIA's whitepapers) x boost clock"}


def cache_file() -> Path:
    """Where measured ceilings are kept per device (by UUID) between runs."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "mmbench" / "ceilings.json"


def load_cached() -> dict:
    try:
        return json.loads(cache_file().read_text())
    except (OSError, ValueError):
        return {}


def save_cached(ceilings: dict) -> Path:
    path = cache_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**load_cached(), ceilings["uuid"] or ceilings["gpu"]: ceilings}, indent=2) + "\n")
    return path


def cached_for(gpu_facts: dict | None) -> dict | None:
    if not gpu_facts:
        return None
    cache = load_cached()
    return cache.get(gpu_facts.get("uuid") or "") or cache.get(gpu_facts["name"])


def _fma_peak(gpu) -> tuple[float, list[float]]:
    fn = gpu.harness("fma_peak")
    out = gpu.alloc(4)
    blocks = gpu.facts.sm_count * 8
    flops = 2 * 8 * 16 * FMA_ITERS * blocks * FMA_THREADS

    def launch():
        fn(out, np.int32(FMA_ITERS), np.float32(1.0), block=(FMA_THREADS, 1, 1), grid=(blocks, 1), stream=gpu.stream)

    times = _timed(gpu, launch)
    return flops / (statistics.median(times) * 1e-3) / 1e12, times


def _copy_bandwidth(gpu) -> tuple[float, list[float]]:
    src, dst = gpu.alloc(COPY_BYTES), gpu.alloc(COPY_BYTES)
    try:
        times = _timed(gpu, lambda: gpu.drv.memcpy_dtod_async(dst, src, COPY_BYTES, gpu.stream))
    finally:
        src.free()
        dst.free()
    return 2 * COPY_BYTES / (statistics.median(times) * 1e-3) / 1e9, times


def _timed(gpu, launch) -> list[float]:
    """Event-timed samples of a launch that runs milliseconds (no hold needed at that length)."""
    from .timing import time_gpu

    return time_gpu(gpu, launch, SAMPLES, 1, "hot", "read", held=False)


# The library's ceiling at each precision: its best over large square products (the "maximum achievable
# matmul FLOPS" method), at layout nt, which every precision takes (FP8 on Hopper only it).
LIBRARY_SIZES = (4096, 6144, 8192)
LIBRARY_LAYOUT = "nt"


def library_ceilings(gpu, sizes: tuple[int, ...] = LIBRARY_SIZES) -> dict:
    """Per precision: the best TFLOP/s of the vendor library (the `cublas` variant's calls) over
    square sizes, each the median of SAMPLES hot samples on random inputs of the precision (never
    zeros, which run faster); a precision the library refuses here says why instead."""
    from .ops.base import Unsupported
    from .ops.gemm import GEMM, device_buffers, draw_operands, stored
    from .precisions import PRECISIONS
    from .sizes import Shape

    from .cublas import CublasUnavailable

    try:
        handle = GEMM.library(None, gpu)
    except CublasUnavailable as exc:  # the FMA and copy ceilings stand without the library
        return {name: {"unavailable": str(exc)} for name in PRECISIONS}
    out: dict = {}
    try:
        for name, p in PRECISIONS.items():
            best: dict = {}
            for n in sizes:
                shape = Shape(n, n, n)
                a, b, scales = draw_operands(shape, np.random.default_rng([n, 7]), p)
                bufs = device_buffers(gpu, *stored(a, b, LIBRARY_LAYOUT), shape, name, LIBRARY_LAYOUT, scales)
                try:
                    call = GEMM.library_call(handle, shape, bufs)
                    tflops = 2.0 * n**3 / (statistics.median(_timed(gpu, call)) * 1e-3) / 1e12
                    if tflops > best.get("tflops", 0.0):
                        best = {"tflops": tflops, "at": n}
                except Unsupported as exc:  # said only where no size was measured
                    best = best if "tflops" in best else {"unavailable": str(exc)}
                finally:
                    bufs.free()
            out[name] = best
    finally:
        handle.close()
    return out


def measure(gpu, gpu_facts: dict) -> dict:
    """Measure both ceilings on an open Gpu; the medians are the ceilings; and the library's at
    each precision (library_tflops)."""
    clock_before = gpu.clock.current_mhz()
    fp32, fma_times = _fma_peak(gpu)
    clock_after = gpu.clock.current_mhz()
    dram, copy_times = _copy_bandwidth(gpu)
    return {
        "measured_at": utc_now(),
        "gpu": gpu_facts["name"], "uuid": gpu_facts.get("uuid"),
        "fp32_fma_tflops": fp32, "dram_copy_gbytes_per_s": dram,
        "fma_sm_clock_mhz": [clock_before, clock_after],
        "fma_times_ms": fma_times, "copy_times_ms": copy_times,
        "method": (f"fp32: fma_peak kernel, {gpu.facts.sm_count * 8} blocks x {FMA_THREADS} threads, "
                   f"median of {SAMPLES}; dram: cuMemcpyDtoD of {COPY_BYTES >> 30} GiB, bytes read + written, "
                   f"median of {SAMPLES}"),
        "datasheet": datasheet(gpu_facts),
        "library_tflops": library_ceilings(gpu),
        "library_method": (f"the best of cuBLAS (fp32, fp64) and cuBLASLt (the others) over n = "
                           f"{', '.join(map(str, LIBRARY_SIZES))}, layout {LIBRARY_LAYOUT}, median of {SAMPLES} hot "
                           f"samples each"),
    }
