"""cuBLAS SGEMM through CuPy's low-level binding, on PyCUDA's buffers and stream.

CuPy works in the device's primary context, which PyCUDA's autoprimaryctx has made current,
so both libraries see the same allocations.
"""

from __future__ import annotations

import numpy as np

# CUBLAS_PEDANTIC_MATH: pure FP32 arithmetic, never TF32 or other reduced-precision paths.
# CuPy names no constant for it.
PEDANTIC_MATH = 2
_OP_N = 0


class CublasUnavailable(RuntimeError):
    """CuPy is missing or cannot open cuBLAS; the message says how to install it."""


class Cublas:
    """A cuBLAS handle bound to one stream, in pedantic FP32 math mode."""

    def __init__(self, stream_handle: int):
        try:
            import cupy
            from cupy.cuda import cublas
        except ImportError as exc:
            raise CublasUnavailable(f"CuPy is not installed ({exc}); pip install '.[cublas]'") from None
        self._lib = cublas
        self.cupy_version = cupy.__version__
        self.handle = cublas.create()
        cublas.setMathMode(self.handle, PEDANTIC_MATH)
        cublas.setStream(self.handle, stream_handle)
        self.math_mode = cublas.getMathMode(self.handle)
        self.version = cublas.getVersion(self.handle)
        # Host scalars for alpha and beta (pointer mode host); kept alive with the handle.
        self._alpha = np.ones(1, np.float32)
        self._beta = np.zeros(1, np.float32)

    def sgemm(self, a, b, c, m: int, n: int, k: int) -> None:
        """Row-major C (m x n) = A (m x k) . B (k x n), as column-major C^T = B^T . A^T."""
        self._lib.sgemm(self.handle, _OP_N, _OP_N, n, m, k, self._alpha.ctypes.data, int(b), n,
                        int(a), k, self._beta.ctypes.data, int(c), n)

    def sgemv(self, a, x, y, m: int, n: int) -> None:
        """y (m) = A x, A column-major m x n (lda = m), no transposition."""
        self._lib.sgemv(self.handle, _OP_N, m, n, self._alpha.ctypes.data, int(a), m, int(x), 1,
                        self._beta.ctypes.data, int(y), 1)

    def meta(self) -> dict:
        """What a results file's metadata records of the library."""
        return {"version": self.version, "math_mode": self.math_mode,
                "math_mode_name": "CUBLAS_PEDANTIC_MATH" if self.math_mode == PEDANTIC_MATH else "other",
                "cupy": self.cupy_version}

    def close(self) -> None:
        self._lib.destroy(self.handle)
