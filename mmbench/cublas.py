"""cuBLAS through CuPy: a handle on PyCUDA's stream for the operations' library baselines, which
make their own calls (CuPy's low-level binding) on PyCUDA's buffers, and the float64 products of a
GEMM's reference (float64_products).

CuPy works in the device's primary context, which PyCUDA's autoprimaryctx has made current,
so both libraries see the same allocations.
"""

from __future__ import annotations

import traceback
from typing import Callable

import numpy as np

# CUBLAS_PEDANTIC_MATH: pure FP32 arithmetic, never TF32 or other reduced-precision paths.
# CuPy names no constant for it.
PEDANTIC_MATH = 2
DEFAULT_MATH = 0  # CUBLAS_DEFAULT_MATH: DGEMM on the FP64 tensor cores, which are IEEE float64
NO_TRANSPOSE, TRANSPOSE = 0, 1  # CUBLAS_OP_N, CUBLAS_OP_T
# cublasGemmEx's types (cudaDataType_t), FP32 compute (cublasComputeType_t) and default algorithm
GEMM_EX_TYPES = {"fp16": 2, "bf16": 14}
COMPUTE_32F, GEMM_DEFAULT = 68, -1


class CublasUnavailable(RuntimeError):
    """CuPy is missing or cannot open cuBLAS; the message says how to install it."""


class Cublas:
    """A cuBLAS handle bound to one stream, in pedantic FP32 math mode. An operation calls a routine
    as lib.ROUTINE(handle, ...), with one and zero as the alpha and beta it takes by pointer. Other
    precisions open, at their first point, a second handle in default math (DGEMM, DGEMV, and
    cublasGemmEx of one column for the 16-bit GEMVs), and cuBLASLt (cublaslt.py) for the
    tensor-core GEMMs; alloc: device memory for cuBLASLt's workspace."""

    def __init__(self, stream_handle: int, alloc=None):
        try:
            import cupy
            from cupy.cuda import cublas
        except ImportError as exc:
            raise CublasUnavailable(f"CuPy is not installed ({exc}); pip install '.[cublas]'") from None
        self.lib = cublas
        self.cupy_version = cupy.__version__
        self.handle = cublas.create()
        cublas.setMathMode(self.handle, PEDANTIC_MATH)
        cublas.setStream(self.handle, stream_handle)
        self.math_mode = cublas.getMathMode(self.handle)
        self.version = cublas.getVersion(self.handle)
        # Host scalars 1 and 0 (pointer mode host), kept alive with the handle; one and zero point at them.
        self._scalars = np.array([1.0, 0.0], np.float32)
        self.one, self.zero = self._scalars.ctypes.data, self._scalars.ctypes.data + 4
        self._doubles = np.array([1.0, 0.0], np.float64)
        self._stream, self._alloc = stream_handle, alloc
        self._default = None  # the default-math handle, at the first point of another precision
        self.routines: set[str] = set()  # those of other precisions called, for the metadata
        self._lt = None  # cuBLASLt, at the first tensor-core point

    def meta(self) -> dict:
        """What a results file's metadata records of the library."""
        meta = {"version": self.version, "math_mode": self.math_mode,
                "math_mode_name": "CUBLAS_PEDANTIC_MATH" if self.math_mode == PEDANTIC_MATH else "other",
                "cupy": self.cupy_version}
        if self._default is not None:
            meta["default_math"] = {"routines": sorted(self.routines), "math_mode_name": "CUBLAS_DEFAULT_MATH"}
        if self._lt is not None:
            meta["cublaslt"] = self._lt.meta()
        return meta

    def gemm(self, shape, bufs) -> Callable[[], None]:
        """A no-argument call of the library's GEMM at the buffers' precision and layout: SGEMM in
        pedantic FP32 at fp32, DGEMM at fp64, cuBLASLt's matmul at the tensor-core precisions."""
        if bufs.precision == "fp32":
            return self._blas(self.lib.sgemm, self.handle, self.one, self.zero, shape, bufs)
        if bufs.precision == "fp64":
            one, zero = self._doubles.ctypes.data, self._doubles.ctypes.data + 8
            return self._blas(self.lib.dgemm, self._default_math("cublasDgemm"), one, zero, shape, bufs)
        if self._lt is None:
            from .cublaslt import CublasLt

            if self._alloc is None:
                raise CublasUnavailable("cuBLASLt needs device memory for its workspace: no allocator was given")
            self._lt = CublasLt(self._stream, self._alloc)
        return self._lt.matmul(shape, bufs)

    def gemv(self, shape, bufs) -> Callable[[], None]:
        """A no-argument call of the library's GEMV y (m) = A x at the buffers' precision, A column-major
        m x n (lda = m), no transposition: SGEMV in pedantic FP32 at fp32, DGEMV at fp64, and at fp16
        and bf16 cublasGemmEx of one column with FP32 compute (cuBLAS has no GEMV of 16-bit types;
        it runs a product of one column as one)."""
        (a, x), y, (m, n) = (int(b) for b in bufs.inputs), int(bufs.output), (shape.m, shape.n)
        if bufs.precision == "fp32":
            return lambda: self.lib.sgemv(self.handle, NO_TRANSPOSE, m, n, self.one, a, m, x, 1, self.zero, y, 1)
        if bufs.precision == "fp64":
            handle, one, zero = self._default_math("cublasDgemv"), self._doubles.ctypes.data, self._doubles.ctypes.data + 8
            return lambda: self.lib.dgemv(handle, NO_TRANSPOSE, m, n, one, a, m, x, 1, zero, y, 1)
        kind = GEMM_EX_TYPES[bufs.precision]
        handle = self._default_math("cublasGemmEx (n = 1, CUBLAS_COMPUTE_32F)")
        return lambda: self.lib.gemmEx(handle, NO_TRANSPOSE, NO_TRANSPOSE, m, 1, n, self.one, a, kind, m, x, kind, n,
                                       self.zero, y, kind, m, COMPUTE_32F, GEMM_DEFAULT)

    def _default_math(self, routine: str) -> int:
        """The default-math handle (opened at the first call) on the same stream; the routine is recorded."""
        if self._default is None:
            self._default = self.lib.create()
            self.lib.setMathMode(self._default, DEFAULT_MATH)
            self.lib.setStream(self._default, self._stream)
        self.routines.add(routine)
        return self._default

    @staticmethod
    def _blas(routine, handle: int, one: int, zero: int, shape, bufs):
        """cuBLAS's column-major ?gemm on the row-major product C (m x n) = A . B: it computes
        C^T (n x m) = op(B) op(A), B's buffer first, each transposed where the layout stores the
        operand as the product writes it (BLAS's N on row-major is T on column-major)."""
        from .precisions import transposed

        ta, tb = transposed(bufs.layout)
        (a, b, c), (m, n, k) = (int(x) for x in bufs.all[:3]), (shape.m, shape.n, shape.k)
        op_b, ld_b = (TRANSPOSE, k) if tb else (NO_TRANSPOSE, n)
        op_a, ld_a = (TRANSPOSE, m) if ta else (NO_TRANSPOSE, k)
        return lambda: routine(handle, op_b, op_a, n, m, k, one, b, ld_b, a, ld_a, zero, c, n)

    def close(self) -> None:
        if self._lt is not None:
            self._lt.close()
        if self._default is not None:
            self.lib.destroy(self._default)
        self.lib.destroy(self.handle)


GPU_PRODUCTS = "on the GPU: cuBLAS DGEMM through CuPy (float64 A.B and |A|.|B|, from the inputs as stored)"


def float64_products(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A.B and |A|.|B| in float64 on the current context's GPU, on the host: a GEMM's reference and
    bound in milliseconds where the host's BLAS takes seconds at 8192, and on every GPU of a
    cluster at once, where the host's cores are shared. CuPy's pool is emptied after, so the run's
    own buffers get the memory back. CublasUnavailable without CuPy; CuPy's errors otherwise (out
    of memory: the caller makes this shape's products on the host)."""
    try:
        import cupy
    except ImportError as exc:
        raise CublasUnavailable(f"CuPy is not installed ({exc}); pip install '.[cublas]'") from None
    try:
        return _products_on_gpu(cupy, a, b)
    except Exception as exc:
        traceback.clear_frames(exc.__traceback__)  # its frames would keep the arrays, and their blocks, alive
        raise
    finally:  # the arrays are gone with _products_on_gpu's frame: their blocks go back to the driver
        cupy.get_default_memory_pool().free_all_blocks()


def _products_on_gpu(cupy, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a64, b64 = cupy.asarray(a).astype(cupy.float64), cupy.asarray(b).astype(cupy.float64)
    reference = (a64 @ b64).get()
    cupy.abs(a64, out=a64)
    cupy.abs(b64, out=b64)
    return reference, (a64 @ b64).get()


def out_of_memory(exc: BaseException) -> bool:
    """Whether a CuPy or cuBLAS error says the GPU ran out of memory (a smaller shape may still fit)."""
    return type(exc).__name__ == "OutOfMemoryError" or "ALLOC_FAILED" in str(exc) or "out of memory" in str(exc).lower()
