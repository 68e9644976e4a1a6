"""Products' references and checks made on the run's GPU: the operands are drawn into their device
buffers (Gpu.draw_into), widened to float64 there (harness.cu's widen), multiplied in float64 by
CuPy's DGEMM into the reference and |A||B|, the elementwise bound made in place, and each point's
output checked where it lies by harness.cu's check_outputs; only a few words of measures per block
come back, and ops/base.py's measured_verdict reads them with the host's rules. The host's path
(draws, references and check_sums on the host) stays for runs without a GPU, CuPy or the memory.

Every buffer is PyCUDA's (freed by its owner); CuPy sees them as views, on the run's stream.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..precisions import DEFAULT, Precision, bound_terms
from .base import Check, measured_verdict

CHECK_WORDS = 8  # harness.cu's CHECK_WORDS: a block's slot of measures
CHECK_THREADS = 256
BOUND_SOURCE = "mag = products * mag + of_reference * fabs(ref) + absolute"  # ops/base.py's error_bound


class OnGpuUnavailable(RuntimeError):
    """This run cannot make references on its GPU (no CuPy); the message says why."""


def cupy_module():
    """CuPy, or OnGpuUnavailable naming what is missing."""
    try:
        import cupy
    except ImportError as exc:
        raise OnGpuUnavailable(f"CuPy is not installed ({exc}); pip install '.[cublas]'") from None
    return cupy


def view(cupy, buf, shape: tuple[int, ...], dtype=np.float64):
    """A CuPy array over a PyCUDA allocation (no copy; the allocation outlives the view)."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    memory = cupy.cuda.UnownedMemory(int(buf), nbytes, buf)
    return cupy.ndarray(shape, dtype, cupy.cuda.MemoryPointer(memory, 0))


def blocks_for(gpu, count: int, per_block: int = 256) -> int:
    return max(1, min(-(-count // per_block), 32 * gpu.facts.sm_count))


def widen(gpu, buf, count: int, storage, scale: float):
    """A new float64 device buffer of `count` stored values times scale (harness.cu's widen)."""
    out = gpu.alloc(8 * count)
    gpu.harness("widen", storage)(buf, out, np.uint64(count), np.float64(scale), block=(256, 1, 1),
                                  grid=(blocks_for(gpu, count), 1), stream=gpu.stream)
    return out


@dataclass
class SumsOnGpu:
    """An output's float64 reference and elementwise bound on the GPU (rows x cols, contiguous), for
    check_sums' rules with `terms` products a sum; free() gives their memory back."""

    gpu: Any
    reference: Any
    bound: Any
    rows: int
    cols: int
    terms: int
    precision: Precision
    magnitude_norm: float | None  # || |A||B| || (float32: derived from the bound, as on the host)
    slots: Any = None

    @property
    def blocks(self) -> int:
        return max(1, min(self.rows, 4 * self.gpu.facts.sm_count))

    def check(self, out, ld: int, out_type) -> Check:
        """The verdict on an output (out_type elements, row pitch ld) from check_outputs' measures."""
        gpu = self.gpu
        if self.slots is None:
            self.slots = gpu.alloc(8 * CHECK_WORDS * self.blocks)
        gpu.harness("check_outputs", out_type)(out, np.uint64(ld), self.reference, self.bound, np.uint64(self.rows),
                                               np.uint64(self.cols), self.slots, block=(CHECK_THREADS, 1, 1),
                                               grid=(self.blocks, 1), stream=gpu.stream)
        gpu.synchronize()
        return measures_verdict(gpu.download(self.slots, (self.blocks, CHECK_WORDS), np.uint64), (self.rows, self.cols),
                                self.terms, self.precision, self.magnitude_norm)

    def download(self) -> tuple[np.ndarray, np.ndarray]:
        """The reference and bound on the host (a CPU baseline's check)."""
        shape = (self.rows, self.cols)
        return self.gpu.download(self.reference, shape, np.float64), self.gpu.download(self.bound, shape, np.float64)

    def free(self) -> None:
        for buf in (self.reference, self.bound, self.slots):
            if buf is not None:
                buf.free()
        self.reference = self.bound = self.slots = None


class MadeOnGpu:
    """A shape's inputs made on the GPU by an InputsOnGpu operation: its device buffers (.buffers:
    ops/base.DeviceBuffers) and its reference and bound (.sums); free() frees those two, the buffers'
    owner frees the buffers."""

    buffers: Any
    sums: SumsOnGpu

    def free(self) -> None:
        self.sums.free()


def measures_verdict(words: np.ndarray, shape: tuple[int, int], terms: int, precision: Precision,
                     magnitude_norm: float | None) -> Check:
    """check_outputs' slots (blocks x CHECK_WORDS) added up in block order, read by measured_verdict."""
    as_float = words[:, 4:].view(np.float64)
    worst = float(as_float[:, 0].max())
    at = int(words[as_float[:, 0] == worst, 3].min())  # the first of equals, as argmax on the host
    squares = [math.fsum(as_float[:, j]) for j in (1, 2, 3)]
    return measured_verdict(shape, int(words[:, 0].sum()), int(words[:, 1].min()), int(words[:, 2].sum()), worst, at,
                            squares, terms, precision, magnitude_norm)


class StreamProtocol:
    """A stream handle as the CUDA stream protocol has it, what CuPy's Stream.from_external takes."""

    def __init__(self, handle: int):
        self.handle = int(handle)

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)


def cupy_stream(cupy, handle: int):
    """CuPy's view of our stream: Stream.from_external with the CUDA stream protocol (CuPy 14, which
    deprecates ExternalStream), else ExternalStream (CuPy 13, e.g. a cupy-cuda12x wheel)."""
    try:
        from_external = cupy.cuda.Stream.from_external
    except AttributeError:  # CuPy 13
        return cupy.cuda.ExternalStream(handle)
    return from_external(StreamProtocol(handle))


def product_sums(gpu, a, b, m: int, n: int, k: int, a_transposed: bool, b_transposed: bool, p: Precision,
                 scales: tuple[float, float]) -> SumsOnGpu:
    """The reference A.B and bound of a product from its operands in device memory (A m x k, stored
    k x m when a_transposed; B k x n, stored n x k when b_transposed), in the precision p: what
    ops/gemm.py's make_gemm_inputs makes on the host, made on the GPU."""
    cupy = cupy_module()
    made = []
    try:
        wide_a = widen(gpu, a, m * k, p.a_type, scales[0])
        made.append(wide_a)
        wide_b = widen(gpu, b, k * n, p.b_type, scales[1])
        made.append(wide_b)
        reference, magnitude = gpu.alloc(8 * m * n), gpu.alloc(8 * m * n)
        made += [reference, magnitude]
        with cupy_stream(cupy, gpu.stream.handle):
            va = view(cupy, wide_a, (k, m) if a_transposed else (m, k))
            vb = view(cupy, wide_b, (n, k) if b_transposed else (k, n))
            va, vb = (va.T if a_transposed else va), (vb.T if b_transposed else vb)
            ref, mag = view(cupy, reference, (m, n)), view(cupy, magnitude, (m, n))
            cupy.matmul(va, vb, out=ref)
            cupy.abs(va, out=va)
            cupy.abs(vb, out=vb)
            cupy.matmul(va, vb, out=mag)
            norm = None if p.name == DEFAULT else float(cupy.linalg.norm(mag.ravel()))
            products, of_reference, absolute = bound_terms(p.rounding, k)
            _bound_kernel(cupy)(ref, products, of_reference, absolute, mag)
        gpu.synchronize()
    except BaseException:
        for buf in made:
            buf.free()
        raise
    finally:
        cupy.get_default_memory_pool().free_all_blocks()  # cuBLAS's workspace and norm's scalars
    wide_a.free()
    wide_b.free()
    return SumsOnGpu(gpu, reference, magnitude, m, n, k, p, norm)


_KERNELS: dict[str, Any] = {}


def _bound_kernel(cupy):
    if "bound" not in _KERNELS:
        _KERNELS["bound"] = cupy.ElementwiseKernel("float64 ref, float64 products, float64 of_reference, "
                                                    "float64 absolute", "float64 mag", BOUND_SOURCE, "mmbench_bound")
    return _KERNELS["bound"]
