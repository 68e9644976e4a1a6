"""GEMV's built-in variants (ops/gemv.py is the operation): Sørensen 2012's kernels
(kernels/gemv/sorensen.cu), those beyond the paper, the tuner's kernel (kernels/gemv/tuned.cu) and
the baselines (CPU BLAS, cuBLAS).
"""

from __future__ import annotations

from types import MappingProxyType

from .model import Variant

# Sørensen's exhaustive space: BLOCKSIZE 32 to 256 by 32, WORKSIZE_M and WORKSIZE_N 1 to 8.
GEMV_SPACE = {"BLOCKSIZE": tuple(range(32, 257, 32)), "WORKSIZE_M": tuple(range(1, 9)), "WORKSIZE_N": tuple(range(1, 9))}

_KERNELS = (
    # -- Sørensen 2012's GEMV kernels (y = A x, A column-major): kernels/gemv/sorensen.cu ----------
    *(Variant(name=name, backend="cuda", op="gemv", paper="sorensen2012", family="gemv/sorensen", label=label,
              description=description, axes=MappingProxyType(axes), threads=("BLOCKSIZE",),
              geometry=MappingProxyType({"tile": tile, "accumulates": "1" if tile[1] != "0" else "0"}),
              space=MappingProxyType({k: GEMV_SPACE[k] for k in axes}))
      for name, label, description, axes, tile in (
          ("gemv_row", "one thread per row", "a thread per row of A over all columns, x staged in shared memory "
           "(paper Fig. 2a)", {"BLOCKSIZE": (128,)}, ("BLOCKSIZE", "0")),
          ("gemv_split", "several threads per row", "WORKSIZE_N x BLOCKSIZE columns of a row a thread, partial "
           "sums added with atomicAdd (Fig. 2b)", {"BLOCKSIZE": (128,), "WORKSIZE_N": (4,)},
           ("BLOCKSIZE", "BLOCKSIZE * WORKSIZE_N")),
          ("gemv_rows", "several rows per thread", "WORKSIZE_M rows a thread, BLOCKSIZE apart, over all columns "
           "(Fig. 2c)", {"BLOCKSIZE": (128,), "WORKSIZE_M": (2,)}, ("BLOCKSIZE * WORKSIZE_M", "0")),
          ("gemv_versatile", "versatile", "WORKSIZE_M rows and WORKSIZE_N x BLOCKSIZE columns a thread: "
           "contains the three above (Fig. 2d)", {"BLOCKSIZE": (128,), "WORKSIZE_M": (1,), "WORKSIZE_N": (4,)},
           ("BLOCKSIZE * WORKSIZE_M", "BLOCKSIZE * WORKSIZE_N")),
          ("gemv_columns", "threads along columns", "threads along the column-major storage, "
           "BLOCKSIZE / m whole columns at once for short A, atomicAdd (Fig. 2e)",
           {"BLOCKSIZE": (128,), "WORKSIZE_N": (4,)}, ("0", "BLOCKSIZE * WORKSIZE_N")))),
    Variant(name="gemv_wide", backend="cuda", op="gemv", paper="sorensen2012", family="gemv/sorensen",
            label="wide, no atomics", description="beyond the paper: each column of blocks writes partial sums "
            "into a workspace, a second kernel adds them in a fixed order",
            axes=MappingProxyType({"BLOCKSIZE": (128,), "WORKSIZE_M": (1,), "WORKSIZE_N": (4,)}), threads=("BLOCKSIZE",),
            geometry=MappingProxyType({"tile": ("BLOCKSIZE * WORKSIZE_M", "BLOCKSIZE * WORKSIZE_N"), "workspace": "1"}),
            space=MappingProxyType(GEMV_SPACE)),
    Variant(name="gemv_tuned", backend="cuda", op="gemv", paper="sorensen2012", family="gemv/tuned",
            label="auto-tuned", description="the tuner's kernel: KERNEL picks the design (0 versatile, 1 threads "
            "along columns, 2 wide without atomics in one launch: the last block of each row of blocks adds the "
            "workspace's partial sums), as the paper's tuner picks among its 3 implementations; typed: fp32, fp64, "
            "fp16, bf16 (sums in float32, float64 at fp64; a 16-bit y rounded once from the whole sum)",
            dtypes=("fp32", "fp64", "fp16", "bf16"),
            axes=MappingProxyType({"KERNEL": (0,), "BLOCKSIZE": (128,), "WORKSIZE_M": (1,), "WORKSIZE_N": (4,)}),
            threads=("BLOCKSIZE",),
            geometry=MappingProxyType({"tile": ("BLOCKSIZE * WORKSIZE_M * (KERNEL != 1)", "BLOCKSIZE * WORKSIZE_N"),
                                       "accumulates": "KERNEL != 2", "workspace_arg": "1",
                                       # Fig. 2e is the design for m <= BLOCKSIZE (taller A falls back to a
                                       # few blocks): the tuner does not time it where it is not meant to run
                                       "tuned_where": "KERNEL != 1 or m <= BLOCKSIZE"}),
            space=MappingProxyType({"KERNEL": (0, 1, 2), **GEMV_SPACE})),
    Variant(name="blas_gemv", backend="blas", op="gemv", paper="sorensen2012", label="BLAS sgemv (multicore)",
            description="CPU BLAS sgemv through numpy (float32), threads recorded"),
    Variant(name="cublas_gemv", backend="cublas", op="gemv", paper="sorensen2012", label="cuBLAS sgemv",
            description="cuBLAS sgemv through CuPy on the same device buffers (column-major, no transposition); "
            "DGEMV at fp64, cublasGemmEx of one column at fp16 and bf16", dtypes=("fp32", "fp64", "fp16", "bf16")),
)

# {place in the registry's order: entries}; mmbench/variants/registry.py says what a place is
BUILT_IN = {5: _KERNELS}
