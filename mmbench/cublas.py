"""cuBLAS through CuPy: a handle on PyCUDA's stream for the operations' library baselines, which
make their own calls (CuPy's low-level binding) on PyCUDA's buffers, and the float64 products of a
GEMM's reference (float64_products).

CuPy works in the device's primary context, which PyCUDA's autoprimaryctx has made current,
so both libraries see the same allocations.
"""

from __future__ import annotations

import traceback

import numpy as np

# CUBLAS_PEDANTIC_MATH: pure FP32 arithmetic, never TF32 or other reduced-precision paths.
# CuPy names no constant for it.
PEDANTIC_MATH = 2
NO_TRANSPOSE = 0  # CUBLAS_OP_N


class CublasUnavailable(RuntimeError):
    """CuPy is missing or cannot open cuBLAS; the message says how to install it."""


class Cublas:
    """A cuBLAS handle bound to one stream, in pedantic FP32 math mode. An operation calls a routine
    as lib.ROUTINE(handle, ...), with one and zero as the alpha and beta it takes by pointer."""

    def __init__(self, stream_handle: int):
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

    def meta(self) -> dict:
        """What a results file's metadata records of the library."""
        return {"version": self.version, "math_mode": self.math_mode,
                "math_mode_name": "CUBLAS_PEDANTIC_MATH" if self.math_mode == PEDANTIC_MATH else "other",
                "cupy": self.cupy_version}

    def close(self) -> None:
        self.lib.destroy(self.handle)


GPU_PRODUCTS = "on the GPU: cuBLAS DGEMM through CuPy (float64 A.B and |A|.|B|, from the float32 inputs)"


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
