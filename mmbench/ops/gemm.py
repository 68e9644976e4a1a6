"""GEMM: C (m x n) = A (m x k) . B (k x n), float32, row-major.

Everything GEMM-specific lives here: the work (2mnk flops, each operand moved once), the inputs
and float64 reference with the float32 sum rule of ``base.check_sums`` (k terms), the launch
model of the GEMM kernels (tiles over C, k-tiles, split-K layers, strip kernels, stream-K
grids) read from a variant's ``geometry`` expressions, the CPU BLAS and cuBLAS baselines, and
the size classes tuning keys its entries by.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..sizes import Shape
from ..variants import Params, Variant, VariantError, evaluate
from .base import Check, DeviceBuffers, Operation, check_sums, gamma

# Strip kernels' geometry: 32 columns x 16 warps a block; 8 warps of 2 rows, 16 rows a block. The
# kernels are correct with any grid (a block strides on). Blocks this small fit beside the tiled
# kernel's blocks on an SM, where that grid leaves room.
ROW_STRIP_BLOCK = (32, 16, 1)
COL_STRIP_BLOCK = (256, 1, 1)
COL_STRIP_ROWS = 16

# A GEMM variant's geometry (Variant.geometry), expressions over its parameters:
GEOMETRY = {
    "tile": ("BLOCK", "BLOCK"),  # the rows x columns of C one block computes (the grid covers C)
    "k_tile": "1",  # the k one step of a block's k-loop covers (caps a persistent grid)
    # Grid layers along z that each add a partial product into C (split-K); above 1 C is zeroed
    # before every launch, inside the timed region.
    "layers": "1",
    # The widest remainder of rows (columns) past C's last whole tile that goes to the variant's
    # strip kernels, <name>_row_strip and <name>_col_strip, instead of a mostly empty tile row.
    "strips": "0",
    # Blocks per SM of a persistent (stream-K) grid; 0: one block per tile. A persistent kernel
    # shares the tiles' k-iterations out over its blocks, adds partial tiles into C (zeroed
    # first) and takes one more argument, the columns its tiles cover.
    "persistent": "0",
    # What the grid covers: C ("n", "m": x along n, y along m), or A ("k", "m") for a kernel with a
    # thread per element of A (Lab 3's cache versions), which adds into C.
    "grid": ("n", "m"),
    "accumulates": "0",  # 1: the kernel adds into C (which is zeroed first), whatever its layers
}


@dataclass(frozen=True)
class Launch:
    """One kernel launch of a product: entry function, geometry, the int arguments after A, B, C."""

    entry: str
    block: tuple[int, int, int]
    grid: tuple[int, int, int]
    args: tuple[int, ...]
    shared: int = 0  # bytes of dynamic shared memory


@dataclass(frozen=True)
class GemmInputs:
    """Host inputs of one GEMM check with their float64 reference and error bound."""

    a: np.ndarray  # float32, m x k, row-major
    b: np.ndarray  # float32, k x n, row-major
    reference: np.ndarray  # float64 A.B
    bound: np.ndarray  # gamma_k * (|A| |B|), elementwise


def gemm_flops(shape: Shape) -> float:
    return 2.0 * shape.m * shape.n * shape.k


def gemm_min_bytes(shape: Shape) -> float:
    """Fewest bytes a float32 GEMM moves: each input read once, C written once."""
    return 4.0 * (shape.m * shape.k + shape.k * shape.n + shape.m * shape.n)


def make_gemm_inputs(shape: Shape, rng: np.random.Generator) -> GemmInputs:
    """Random inputs in [-1, 1) (never zeros: they hide unwritten outputs) and their reference."""
    a = rng.uniform(-1.0, 1.0, size=(shape.m, shape.k)).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, size=(shape.k, shape.n)).astype(np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    reference = a64 @ b64
    bound = gamma(shape.k) * (np.abs(a64) @ np.abs(b64))
    return GemmInputs(a, b, reference, bound)


def check_gemm(c: np.ndarray, inputs: GemmInputs) -> Check:
    """Compare a float32 result with the float64 reference: sums of k products."""
    return check_sums(c, inputs.reference, inputs.bound, inputs.a.shape[1])


# -- the launch model ---------------------------------------------------------------------------------
def _geometry(variant: Variant, key: str):
    return variant.geometry.get(key, GEOMETRY[key])


def launch_geometry(variant: Variant, params: Params, shape: Shape) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(block, grid); grid x runs along n, y along m, z over the layers of split-K."""
    rows, cols = (evaluate(e, params) for e in _geometry(variant, "tile"))
    along_x, along_y = (getattr(shape, d) for d in _geometry(variant, "grid"))
    return variant.block_dims(params), (math.ceil(along_x / cols), math.ceil(along_y / rows),
                                        evaluate(_geometry(variant, "layers"), params))


def entries(variant: Variant) -> tuple[str, ...]:
    """The kernel's entry functions: its own, then the row and column strip kernels if it has them."""
    strips = _geometry(variant, "strips") != "0"
    return (variant.name,) + ((f"{variant.name}_row_strip", f"{variant.name}_col_strip") if strips else ())


def launches(variant: Variant, params: Params, shape: Shape, sms: int | None = None) -> tuple[Launch, ...]:
    """What one product launches, in order: the tiled kernel over C's whole tiles (all of C when
    no remainder is thin enough for the strips), then the strip kernels. A strip kernel computes
    C[m0:m, :] or C[:m0, n0:] over all of k. sms: the device's SM count, which sizes a persistent
    grid (required then)."""
    rows, cols = (evaluate(e, params) for e in _geometry(variant, "tile"))
    width = evaluate(_geometry(variant, "strips"), params)
    m0 = shape.m - shape.m % rows if shape.m % rows <= width else shape.m
    n0 = shape.n - shape.n % cols if shape.n % cols <= width else shape.n
    names = entries(variant)
    out = []
    if m0 and n0:
        block, grid = launch_geometry(variant, params, Shape(m0, n0, shape.k))
        args: tuple[int, ...] = (m0, shape.n, shape.k)
        per_sm = evaluate(_geometry(variant, "persistent"), params)
        if per_sm:
            if not sms:
                raise VariantError(f"{variant.name}: a persistent grid needs the device's SM count")
            iterations = grid[0] * grid[1] * math.ceil(shape.k / evaluate(_geometry(variant, "k_tile"), params))
            grid, args = (min(per_sm * sms, iterations), 1, 1), args + (n0,)
        out.append(Launch(variant.name, block, grid, args, variant.dynamic_shared(params)))
    if m0 < shape.m:
        out.append(Launch(names[1], ROW_STRIP_BLOCK, (math.ceil(shape.n / ROW_STRIP_BLOCK[0]), 1, 1),
                          (shape.m, shape.n, shape.k, m0)))
    if n0 < shape.n and m0:
        out.append(Launch(names[2], COL_STRIP_BLOCK, (math.ceil(m0 / COL_STRIP_ROWS), 1, 1),
                          (m0, shape.n, shape.k, n0)))
    return tuple(out)


def accumulates(variant: Variant, params: Params) -> bool:
    """Whether the kernel adds into C (which must then be zeroed first)."""
    return (evaluate(_geometry(variant, "layers"), params) > 1
            or evaluate(_geometry(variant, "persistent"), params) > 0
            or evaluate(_geometry(variant, "accumulates"), params) > 0)


def gemm_launcher(gpu, variant: Variant, params: Params, shape: Shape, a, b, c) -> Callable[[], None]:
    """A no-argument launch of a GEMM on the GPU's stream: every kernel of launches(). A kernel
    that adds into C gets C zeroed first; the zeroing is part of what gets timed. Strip kernels
    after a tiled kernel run beside it on the side stream (they write other parts of C), in
    whatever room its grid leaves; the stream waits for them."""
    plan = launches(variant, params, shape, gpu.facts.sm_count)
    calls = [(gpu.function(variant, params, x.entry), x.block, x.grid, tuple(np.int32(v) for v in x.args), x.shared)
             for x in plan]
    for fn, *_, shared in calls:
        gpu.allow_dynamic_shared(fn, shared)
    zero = accumulates(variant, params)
    beside = len(calls) > 1 and plan[0].entry == variant.name

    def launch() -> None:
        if zero:
            gpu.zero_async(c, shape.m * shape.n)
        if beside:
            gpu.fork()
        for i, (fn, block, grid, args, shared) in enumerate(calls):
            fn(a, b, c, *args, block=block, grid=grid, shared=shared, stream=gpu.side if beside and i else gpu.stream)
        if beside:
            gpu.join()

    return launch


# -- the operation ------------------------------------------------------------------------------------
class Gemm(Operation):
    name = "gemm"
    dims = ("m", "n", "k")
    rate = "gflops_mean"
    score = "gflops_median"
    awkward = "1,31,33,63,65,127,1000x37x2049,37x1000x65"

    def flops(self, shape: Shape) -> float:
        return gemm_flops(shape)

    def min_bytes(self, shape: Shape) -> float:
        return gemm_min_bytes(shape)

    def host_bytes(self, shape: Shape) -> int:
        """The float32 inputs, their float64 copies and absolute values for the reference and its
        bound (20 bytes an input element), and the reference, bound, downloaded output and the
        check's float64 temporaries (64 an output element)."""
        return 20 * (shape.m * shape.k + shape.k * shape.n) + 64 * shape.m * shape.n

    def device_bytes(self, shape: Shape) -> int:
        """A, B and C in float32."""
        return 4 * (shape.m * shape.k + shape.k * shape.n + shape.m * shape.n)

    def make_inputs(self, shape: Shape, rng: np.random.Generator) -> GemmInputs:
        return make_gemm_inputs(shape, rng)

    def output_shape(self, shape: Shape) -> tuple[int, ...]:
        return (shape.m, shape.n)

    def check(self, out: np.ndarray, inputs: GemmInputs) -> Check:
        return check_gemm(out, inputs)

    def upload(self, gpu, inputs: GemmInputs) -> DeviceBuffers:
        m, n = inputs.reference.shape
        return DeviceBuffers((gpu.upload(inputs.a), gpu.upload(inputs.b)), gpu.alloc(m * n * 4), m * n)

    def entries(self, variant: Variant) -> tuple[str, ...]:
        return entries(variant)

    def kernel(self, gpu, variant: Variant, params: Params, shape: Shape, bufs: DeviceBuffers) -> Callable[[], None]:
        return gemm_launcher(gpu, variant, params, shape, *bufs.all)

    def cpu(self, variant: Variant, inputs: GemmInputs) -> tuple[Callable[[], None], np.ndarray]:
        a, b = inputs.a, inputs.b
        c = np.full((a.shape[0], b.shape[1]), np.nan, dtype=np.float32)
        if variant.backend == "cpu":  # the compiled ijk loop
            from .. import native

            return (lambda: native.matmul_ijk(a, b, c)), c
        return (lambda: np.matmul(a, b, out=c)), c

    def library(self, variant: Variant, gpu):
        from ..cublas import Cublas

        return Cublas(gpu.stream.handle)

    def library_call(self, handle, shape: Shape, bufs: DeviceBuffers) -> Callable[[], None]:
        a, b, c = bufs.all
        return lambda: handle.sgemm(a, b, c, shape.m, shape.n, shape.k)

    def size_class(self, shape: Shape) -> str:
        """The power of two nearest the shape's geometric-mean dimension, and whether its rows are
        16-byte aligned (K and N multiples of 4), since kernels take another path when they are
        not: 2048 -> "2048", 2049 -> "2048u", 1000x37x2049 -> "512u"."""
        mean = (shape.m * shape.n * shape.k) ** (1 / 3)
        aligned = shape.k % 4 == 0 and shape.n % 4 == 0
        return f"{2 ** max(0, round(math.log2(mean)))}{'' if aligned else 'u'}"


GEMM = Gemm()
