"""Transpose and copy: out = in^T (n x m from m x n), and out = in, row-major; float32, or elements
of 8, 2 and 1 bytes (fp64; fp16, bf16; fp8e4m3, fp8e5m2: a move sees only their width).

Both move 2 x m x n elements and compute nothing, so their rate is GB/s of those bytes and
they have no GFLOP/s. The copy is the transpose's yardstick: the same bytes at the device's
copy bandwidth (cuMemcpyDtoD), measured in the same run. An output is right when it equals its
reference exactly, bit for bit: moving an element changes no bit.

A transpose kernel takes (in, out, m, n) and a 2-D grid over in: its variant's geometry gives
the rows x columns of in one block moves (``tile``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..sizes import Shape
from ..variants.model import Params, Variant, evaluate
from ..draws import draw
from ..precisions import DEFAULT, DEFAULT_LAYOUT, get_precision, nan_bits, raw_view
from .base import Check, DeviceBuffers, Operation, Products, only_default
from .capabilities import CpuBaseline, LibraryBaseline


@dataclass(frozen=True)
class MoveInputs:
    """The input matrix and the exact output it must give."""

    a: np.ndarray  # m x n, of the precision's storage type
    reference: np.ndarray  # a.T (n x m) for a transpose, a for a copy
    precision: str = DEFAULT


def check_exact(out: np.ndarray, reference: np.ndarray) -> Check:
    """Every element equal to its reference, bit for bit (NaN never passes: the references hold none,
    and an unwritten output holds the poison's NaN)."""
    if out.shape != reference.shape:
        return Check(False, float("nan"), float("nan"), f"output shape {out.shape} != {reference.shape}")
    got, want = raw_bits(out), raw_bits(reference)
    wrong = got != want
    if wrong.any():
        first = tuple(int(i) for i in np.argwhere(wrong)[0])
        unwritten = int((got == nan_bits(out.dtype)[0]).sum())
        return Check(False, float("nan"), float("nan"),
                     f"{int(wrong.sum())} of {out.size} outputs differ from the reference ({unwritten} not written), "
                     f"first at {first}")
    return Check(True, 0.0, 0.0, "")


def raw_bits(array: np.ndarray) -> np.ndarray:
    """An array's elements as unsigned integers of their width (bits compared as bits)."""
    return np.ascontiguousarray(array).view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[array.dtype.itemsize])


def element_bytes(precision: str) -> int:
    return get_precision(precision).a_type.itemsize


class _Move(Operation):
    """What transpose and copy share: inputs, work, memory, the exact check."""

    dims = ("m", "n")
    rate = "gbytes_per_s"
    score = "gbytes_per_s"
    tested_sizes = "1,31,33,1x4097,4097x1,33x4097,4097x31,1000x37"
    # Elements of 8, 4, 2 and 1 bytes, named by their precision (tf32 is an arithmetic, not a storage)
    precisions = ("fp32", "fp64", "fp16", "bf16", "fp8e4m3", "fp8e5m2")

    def flops(self, shape: Shape) -> float:
        return 0.0

    def min_bytes(self, shape: Shape, precision: str = DEFAULT) -> float:
        only_default(self, precision)
        return 2.0 * element_bytes(precision) * shape.m * shape.n  # every element read once and written once

    def host_bytes(self, shape: Shape, precision: str = DEFAULT) -> int:
        """The input as drawn (float32, float64 at fp64) and in its type, the reference, the output and
        the comparison's temporaries (24 bytes an element at fp32)."""
        e = element_bytes(precision)
        return (4 + 8 + 5 * e) * shape.m * shape.n if e != 4 else 24 * shape.m * shape.n

    def device_bytes(self, shape: Shape, precision: str = DEFAULT) -> int:
        return 2 * element_bytes(precision) * shape.m * shape.n

    def make_inputs(self, shape: Shape, rng: np.random.Generator, products: Products | None = None,
                    precision: str = DEFAULT, layout: str = DEFAULT_LAYOUT) -> MoveInputs:
        only_default(self, precision, layout)
        # Never zeros, and every value distinct in practice (at 2 bytes and less, as distinct as the
        # type allows: [1, 2) holds 128 bfloat16s, 1024 float16s and 8 FP8 values): a misplaced element
        # shows. Drawn as float32 (float64 at fp64) and rounded to the type.
        p = get_precision(precision)
        a = draw(rng, "one_two", (shape.m, shape.n), p.a_type)
        return MoveInputs(a, self._reference(a), p.name)

    def _reference(self, a: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def check(self, out: np.ndarray, inputs: MoveInputs) -> Check:
        return check_exact(out, inputs.reference)

    def upload(self, gpu, inputs: MoveInputs) -> DeviceBuffers:
        return DeviceBuffers((gpu.upload(raw_view(inputs.a)),), gpu.alloc(inputs.a.nbytes), inputs.a.size,
                             precision=inputs.precision, moves=True)

    def size_class(self, shape: Shape) -> str:
        """The power of two nearest the geometric mean of m and n, and whether both are multiples
        of 32 (a tile's edge): 8192 -> "8192", 4097x31 -> "256u"."""
        mean = math.sqrt(shape.m * shape.n)
        aligned = shape.m % 32 == 0 and shape.n % 32 == 0
        return f"{2 ** max(0, round(math.log2(mean)))}{'' if aligned else 'u'}"


class Transpose(_Move, CpuBaseline):
    name = "transpose"
    yardstick = "memcpy"  # the copy of the same m x n: the same bytes at the device's copy bandwidth
    buffers = ("A", "AT")
    layout = "AT (n x m) = transpose of A (m x n), float32, row-major"

    def _reference(self, a: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(a.T)

    def output_shape(self, shape: Shape) -> tuple[int, ...]:
        return (shape.n, shape.m)

    def kernel(self, gpu, variant: Variant, params: Params, shape: Shape, bufs: DeviceBuffers) -> Callable[[], None]:
        rows, cols = (evaluate(e, params) for e in variant.geometry["tile"])
        grid = (math.ceil(shape.n / cols), math.ceil(shape.m / rows), 1)
        fn, block = gpu.function(variant, params), variant.block_dims(params)
        (a,), out = bufs.inputs, bufs.output
        m, n = np.int32(shape.m), np.int32(shape.n)
        return lambda: fn(a, out, m, n, block=block, grid=grid, stream=gpu.stream)

    def cpu(self, variant: Variant, inputs: MoveInputs) -> tuple[Callable[[], None], np.ndarray]:
        a = inputs.a
        out = np.full((a.shape[1], a.shape[0]), np.nan, dtype=a.dtype)
        if variant.backend == "cpu":  # the compiled naive loop
            from .. import naive_cpu

            return (lambda: naive_cpu.transpose_naive(a, out)), out
        return (lambda: np.copyto(out, a.T)), out


class Copy(_Move, LibraryBaseline):
    name = "copy"
    yardstick = "memcpy"

    def _reference(self, a: np.ndarray) -> np.ndarray:
        return a

    def output_shape(self, shape: Shape) -> tuple[int, ...]:
        return (shape.m, shape.n)

    def library(self, variant: Variant, gpu):
        return DeviceCopy(gpu)

    def library_call(self, handle, shape: Shape, bufs: DeviceBuffers) -> Callable[[], None]:
        (a,), out = bufs.inputs, bufs.output
        nbytes = element_bytes(bufs.precision) * shape.m * shape.n
        return lambda: handle.copy(out, a, nbytes)


class DeviceCopy:
    """cuMemcpyDtoD on the harness's stream: the device's copy bandwidth, the transpose's yardstick."""

    def __init__(self, gpu):
        self.gpu = gpu

    def copy(self, dst, src, nbytes: int) -> None:
        self.gpu.drv.memcpy_dtod_async(dst, src, nbytes, self.gpu.stream)

    def meta(self) -> dict:
        return {"call": "cuMemcpyDtoDAsync"}

    def close(self) -> None:
        pass


TRANSPOSE = Transpose()
COPY = Copy()
