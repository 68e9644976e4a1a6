"""cuBLASLt's matmul at the tensor-core precisions (TF32, FP16, BF16, FP8 with per-tensor scales),
through nvmath-python's bindings of the C API (``nvmath.bindings.cublasLt``), on PyCUDA's buffers
and stream.

Why these bindings: FP8 with scales is cuBLASLt's alone (cublasGemmEx has no FP8), and NVIDIA's
nvmath-python binds it one to one, pointers in and out, so the library runs on mmbench's own device
buffers and stream with nothing copied; its higher-level Matmul takes tensors of a framework with
16- and 8-bit types (PyTorch), which mmbench does not depend on. CuPy's cuBLAS (cublas.py) keeps
SGEMM and DGEMM.

Each point gets a plan (descriptors of the product and its matrices, and the algorithm cuBLASLt's
heuristic ranks first for them, with a 32 MiB workspace, NVIDIA's advice for Hopper), made once
outside the timed region; the timed call is one cublasLtMatmul.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .ops.base import DeviceBuffers, Unsupported
from .precisions import PRECISIONS, SCALE_OFFSETS, Precision, transposed
from .sizes import Shape

WORKSPACE_BYTES = 32 << 20
# cudaDataType_t of each storage type (library_types.h)
DATA_TYPES = {"float32": 0, "float64": 1, "float16": 2, "bfloat16": 14, "float8_e4m3": 28, "float8_e5m2": 29}
# cublasComputeType_t (cublas_api.h): FP32 accumulation, on TF32 tensor cores for tf32
COMPUTE_32F, COMPUTE_32F_FAST_TF32 = 68, 77
COMPUTE_NAMES = {COMPUTE_32F: "CUBLAS_COMPUTE_32F", COMPUTE_32F_FAST_TF32: "CUBLAS_COMPUTE_32F_FAST_TF32"}
OP_N, OP_T = 0, 1  # cublasOperation_t


FP8_HINT = "; FP8 on Hopper takes K-major A and B: layout nt"


def status_name(exc: BaseException) -> str:
    """The CUBLAS_STATUS_... name in a cuBLASLt error's text, else its text."""
    text = str(exc)
    start = text.find("CUBLAS_STATUS_")
    return text[start:].split(")")[0] if start >= 0 else text


class LtUnavailable(Unsupported):
    """nvmath-python is missing; the message says how to install it (the point is skipped, saying so)."""


def compute_type(precision: Precision) -> int:
    return COMPUTE_32F_FAST_TF32 if precision.name == "tf32" else COMPUTE_32F


@dataclass
class Plan:
    """One product's descriptors and algorithm, kept alive while its calls may run."""

    descriptors: list[tuple[Callable[[int], None], int]]  # (destroy, handle)
    heuristic: Any  # the MatmulHeuristicResult whose first member is the algorithm


class CublasLt:
    """A cuBLASLt handle, its workspace and the plans made on it."""

    def __init__(self, stream_handle: int, alloc: Callable[[int], Any]):
        try:
            from nvmath.bindings import cublasLt
        except ImportError as exc:
            raise LtUnavailable(f"nvmath-python is not installed ({exc}); pip install '.[cublas]'") from None
        self.lt = cublasLt
        self.handle = cublasLt.create()
        self.version = cublasLt.get_version()
        self.stream = stream_handle
        self.workspace = alloc(WORKSPACE_BYTES)
        self.plans: list[Plan] = []
        # alpha 1 and beta 0 in the scale type (float32), host pointer mode; kept alive with the handle
        self._scalars = np.array([1.0, 0.0], np.float32)
        self.chosen: dict[str, int] = {}  # "precision layout" -> plans made, for the metadata

    def meta(self) -> dict:
        return {"cublaslt_version": self.version, "workspace_bytes": WORKSPACE_BYTES,
                "algorithm": "the first of cublasLtMatmulAlgoGetHeuristic for each shape",
                "compute_types": {name: COMPUTE_NAMES[compute_type(p)] for name, p in PRECISIONS.items()
                                  if p.tensor_cores},
                "fast_accumulation": False, "plans": dict(self.chosen)}

    def _set(self, setter, dtype_of, obj: int, attr, value) -> None:
        buf = np.array([value], dtype=dtype_of(attr))
        setter(obj, attr, buf.ctypes.data, buf.itemsize)

    def matmul(self, shape: Shape, bufs: DeviceBuffers) -> Callable[[], None]:
        """A no-argument cublasLtMatmul of the row-major product C (m x n) = A . B on the buffers:
        cuBLASLt is column-major, so it computes C^T (n x m) = op(B) op(A), B's buffer first."""
        lt, p = self.lt, PRECISIONS[bufs.precision]
        m, n, k = shape.m, shape.n, shape.k
        ta, tb = transposed(bufs.layout)
        a, b, c = (int(x) for x in bufs.all[:3])
        descriptors: list[tuple[Callable[[int], None], int]] = []
        try:
            desc = lt.matmul_desc_create(compute_type(p), DATA_TYPES["float32"])
            descriptors.append((lt.matmul_desc_destroy, desc))
            attr = lt.MatmulDescAttribute
            set_desc = lambda key, value: self._set(lt.matmul_desc_set_attribute,  # noqa: E731
                                                    lt.get_matmul_desc_attribute_dtype, desc, key, value)
            set_desc(attr.TRANSA, OP_T if tb else OP_N)
            set_desc(attr.TRANSB, OP_T if ta else OP_N)
            if p.scaled:  # cuBLASLt's A is our B: its scale is scale_b
                scales = int(bufs.scratch[0])
                set_desc(attr.A_SCALE_POINTER, scales + SCALE_OFFSETS[1])
                set_desc(attr.B_SCALE_POINTER, scales + SCALE_OFFSETS[0])
            layouts = []
            for storage, rows, cols in ((p.b or p.inputs, *((k, n) if tb else (n, k))),
                                        (p.inputs, *((m, k) if ta else (k, m))), (p.output, n, m), (p.output, n, m)):
                layout = lt.matrix_layout_create(DATA_TYPES[storage], rows, cols, rows)
                descriptors.append((lt.matrix_layout_destroy, layout))
                layouts.append(layout)
            pref = lt.matmul_preference_create()
            descriptors.append((lt.matmul_preference_destroy, pref))
            self._set(lt.matmul_preference_set_attribute, lt.get_matmul_preference_attribute_dtype, pref,
                      lt.MatmulPreferenceAttribute.MAX_WORKSPACE_BYTES, WORKSPACE_BYTES)
            heuristic, found = lt.MatmulHeuristicResult(1), np.zeros(1, np.int32)
            try:
                lt.matmul_algo_get_heuristic(self.handle, desc, *layouts, pref, 1, heuristic.ptr, found.ctypes.data)
            except lt.cuBLASLtError as exc:
                hint = FP8_HINT if p.scaled and bufs.layout != "nt" else ""
                raise Unsupported(f"cuBLASLt takes no {p.name} product at layout {bufs.layout}, {shape} on this GPU "
                                  f"({status_name(exc)}){hint}") from None
            if not found[0]:
                raise Unsupported(f"cuBLASLt has no algorithm for {p.name} at layout {bufs.layout}, {shape}")
        except BaseException:
            for destroy, handle in reversed(descriptors):
                destroy(handle)
            raise
        self.plans.append(Plan(descriptors, heuristic))
        key = f"{p.name} {bufs.layout}"
        self.chosen[key] = self.chosen.get(key, 0) + 1
        alpha, beta = self._scalars.ctypes.data, self._scalars.ctypes.data + 4
        x_desc, y_desc, c_desc, d_desc = layouts
        ws, stream, handle, algo = int(self.workspace), self.stream, self.handle, heuristic.ptr
        return lambda: lt.matmul(handle, desc, alpha, b, x_desc, a, y_desc, beta, c, c_desc, c, d_desc, algo, ws,
                                 WORKSPACE_BYTES, stream)

    def close(self) -> None:
        for plan in self.plans:
            for destroy, handle in reversed(plan.descriptors):
                destroy(handle)
        self.plans.clear()
        self.lt.destroy(self.handle)
        self.workspace.free()
