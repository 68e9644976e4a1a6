"""GEMV: y = A x, A column-major m x n (as Sørensen's paper stores it), x of n, y of m; float32,
or fp64, fp16 and bf16 (A, x, y of that type; sums in float32, float64 at fp64).

Work 2mn flops; each operand moved once, (mn + m + n) elements; the rate is GFLOP/s with GB/s
beside it. Every y element is a sum of n products, checked by ``base.check_sums`` with the
precision's rounding (the elementwise gamma_n bound holds for any summation order, the orders
atomicAdd produces included). A kernel takes (A, x, y, m, n) and a 2-D grid: x over rows of A, y over column
chunks; its variant's geometry gives the rows x columns one block covers (``tile``), and whether
it adds into y with atomics (``accumulates``: y is then zeroed inside the timed launch, as split-K
GEMM zeroes C).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..sizes import Shape, SizeSpecError, parse_sizes, split_items
from ..variants.model import Params, Variant, evaluate
from ..draws import draw
from ..precisions import DEFAULT, DEFAULT_LAYOUT, get_precision, raw_view
from .base import (Check, DeviceBuffers, Operation, Products, Unsupported, check_sums, error_bound, gamma, only_default,
                   prepared)
from .capabilities import BatchedCheck, CpuBaseline, LibraryBaseline


# The tuning mesh (Sørensen's Fig. 1 middle): MESH_CELLS x MESH_CELLS cells, logarithmic in m and n
# from 1 to MESH_MAX each (the paper does not state its bounds; 2^20 takes single rows and columns
# to the largest matrices a few GiB hold, which a memory cap then cuts, as the paper's black cells).
MESH_CELLS = 24
MESH_MAX = 2**20


def mesh_cell(m: int, n: int) -> tuple[int, int]:
    """The (row, column) cell of the mesh that a shape m x n falls in; sizes past MESH_MAX fall in
    the last cell."""
    def index(v: int) -> int:
        return min(MESH_CELLS - 1, max(0, int(math.log(v) / math.log(MESH_MAX) * MESH_CELLS)))

    return index(m), index(n)


def cell_name(i: int, j: int) -> str:
    return f"cell{i:02d}x{j:02d}"


def parse_cell(name: str) -> tuple[int, int]:
    """The inverse of cell_name ("cell05x07" -> (5, 7)); (-99, -99) for what is no cell (never nearest)."""
    m = re.fullmatch(r"cell(\d+)x(\d+)", name)
    return (int(m[1]), int(m[2])) if m else (-99, -99)


def cell_points(i: int, j: int) -> list[Shape]:
    """The 3 x 3 logarithmically spaced shapes inside cell (i, j) whose mean scores it (as the
    paper does), at 1/6, 3/6 and 5/6 of the cell in log scale; repeats, at the smallest cells, once."""
    def at(k: int) -> list[int]:
        low, high = math.ceil(MESH_MAX ** (k / MESH_CELLS)), math.ceil(MESH_MAX ** ((k + 1) / MESH_CELLS)) - 1
        if mesh_cell(high, 1)[0] > k:  # an edge that is a whole number belongs to the cell above
            high -= 1
        return list(dict.fromkeys(min(high, max(low, round(MESH_MAX ** ((k + f) / MESH_CELLS))))
                                  for f in (1 / 6, 3 / 6, 5 / 6)))

    return list(dict.fromkeys(Shape(m, n, 0) for m in at(i) for n in at(j)))


MESH_CAP_MIB = 4096  # the largest matrix the mesh holds by default (cells past it are left out)
FAMILIES = {"tall": (100, 1), "square": (10, 10), "wide": (1, 100)}  # the paper's Fig. 4: m, n per N
GEMV_FORMS = ("mesh (every cell's 3 x 3 shapes, matrices up to 4096 MiB), mesh:MIB (another cap), "
              "cell:IxJ (one cell, I and J from 0 to 23), tall:SPEC, square:SPEC, wide:SPEC (100N x N, "
              "10N x 10N, N x 100N for each N of a size spec such as 10:10000:x2)")


def mesh_shapes(cap_mib: int = MESH_CAP_MIB) -> list[Shape]:
    """Every cell's shapes, the cells whose largest matrix fits the cap (the paper's black cells
    are those that do not)."""
    cap = cap_mib * 2**20
    out = []
    for i in range(MESH_CELLS):
        for j in range(MESH_CELLS):
            points = cell_points(i, j)
            if max(4 * p.m * p.n for p in points) <= cap:
                out += points
    return out


def _gemv_item(item: str) -> list[Shape] | None:
    """The shapes of one GEMV-only size spec item; None when the item is a common one."""
    head, _, rest = item.partition(":")
    try:
        if head == "mesh":
            cap = int(rest) if rest else MESH_CAP_MIB
            if cap < 1:
                raise ValueError
            return mesh_shapes(cap)
        if head == "cell":
            i, j = (int(v) for v in rest.split("x"))
            if not (0 <= i < MESH_CELLS and 0 <= j < MESH_CELLS):
                raise ValueError
            return cell_points(i, j)
    except ValueError:
        raise SizeSpecError(f"size spec '{item}'; GEMV forms: {GEMV_FORMS}") from None
    if head in FAMILIES:
        fm, fn = FAMILIES[head]
        return [Shape(fm * s.m, fn * s.m, 0) for s in parse_sizes(rest, 2)] if rest else \
            parse_sizes("", 2)  # an empty spec: the common error
    return None


@dataclass(frozen=True)
class GemvInputs:
    """Host inputs of one GEMV check with their float64 reference and error bound."""

    a: np.ndarray  # n x m row-major: A (m x n) column-major, in the precision's type
    x: np.ndarray  # n
    reference: np.ndarray  # float64 A x, m
    bound: np.ndarray  # gamma_n * (|A| |x|), m (other precisions: base.error_bound's)
    precision: str = DEFAULT
    magnitude_norm: float | None = None  # || |A| |x| || (float32: derived from the bound)


POOL = 1_000_003  # a prime: A's elements repeat this far apart (a matrix this small is wholly random)
CHUNK = 1 << 22  # elements of A converted to float64 at a time for the reference


def make_gemv_inputs(shape: Shape, rng, precision: str = DEFAULT) -> GemvInputs:
    """Random inputs in [-1, 1) and the float64 reference A x with its bound gamma_n |A| |x|; at
    another precision the same draws rounded to its type (float64 drawn as such), the reference of
    the rounded values and the precision's bound.

    The mesh holds hundreds of GiB of matrices, so the host work is kept to a few passes: A is a
    pool of POOL random floats repeated (element (i, j) is pool[(i + j m) mod POOL]: a kernel that
    reads the wrong element reads another value unless it is a multiple of POOL away), and the
    reference is summed in float64 over chunks of columns in parallel threads (BLAS releases the
    GIL), the chunks' partial sums added in a fixed order."""
    p = get_precision(precision)
    pool = draw(rng, "symmetric", (min(POOL, shape.m * shape.n),), p.a_type, nonzero=True)  # zeros hide unwritten outputs
    a = np.resize(pool, shape.m * shape.n).reshape(shape.n, shape.m)  # column j of A is row j
    x = draw(rng, "symmetric", (shape.n,), p.a_type)
    x64 = x.astype(np.float64)
    step = max(1, CHUNK // shape.m)

    def part(j0: int) -> tuple[np.ndarray, np.ndarray]:
        a64 = a[j0:j0 + step].astype(np.float64)
        return a64.T @ x64[j0:j0 + step], np.abs(a64).T @ np.abs(x64[j0:j0 + step])

    starts = range(0, shape.n, step)
    if len(starts) == 1:
        parts = [part(0)]
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(len(starts), os.cpu_count() or 1)) as pool_:
            parts = list(pool_.map(part, starts))
    reference, magnitude = parts[0]
    for r, mag in parts[1:]:
        reference, magnitude = reference + r, magnitude + mag
    if p.name == DEFAULT:
        return GemvInputs(a, x, reference, gamma(shape.n) * magnitude)
    bound, norm = error_bound(p, shape.n, reference, magnitude)
    return GemvInputs(a, x, reference, bound, p.name, norm)


def launch_grid(variant: Variant, params: Params, shape: Shape) -> tuple[int, int, int]:
    """x over the rows of A, y over chunks of its columns; a tile of 0 rows (columns) covers them all."""
    rows, cols = (evaluate(e, params) for e in variant.geometry["tile"])
    return math.ceil(shape.m / rows) if rows else 1, math.ceil(shape.n / cols) if cols else 1, 1


def uses_workspace(variant: Variant, params: Params) -> bool:
    """A kernel that writes each column of blocks' partial sums into a workspace, then reduces them
    with its <name>_reduce kernel (no atomics); the geometry's "workspace" says when. (A kernel whose
    geometry has "workspace_arg" takes the workspace as its last argument and reduces in one launch.)"""
    return bool(evaluate(variant.geometry.get("workspace", "0"), params))


def workspace_words(m: int, n: int) -> int:
    """Partial sums, one row of m per column of blocks (at most ceil(n / 32)), then one arrival count
    per row of blocks (at most ceil(m / 32)): kernels/common/gemv.cuh's wide_onepass. Words of the
    sums' type (sum_bytes)."""
    return m * math.ceil(n / 32) + math.ceil(m / 32)


def sum_bytes(precision: str) -> int:
    """Bytes of a partial sum (the workspace's words): float64 at fp64, float32 otherwise."""
    return 8 if get_precision(precision).a_type == np.float64 else 4


def narrow(precision: str) -> bool:
    """Whether y's elements are narrower than float32: partial sums are then added up in float32 and
    rounded into y once (kernels/gemv/tuned.cu)."""
    return get_precision(precision).a_type.itemsize < 4


def adds_into_y(variant: Variant, params: Params, shape: Shape) -> bool:
    """Whether the launch adds partial sums into y (so y is zeroed first): a kernel whose geometry
    says it accumulates does, when its grid has more than one column of blocks."""
    return evaluate(variant.geometry.get("accumulates", "0"), params) > 0 and launch_grid(variant, params, shape)[1] > 1


class Gemv(Operation, BatchedCheck, CpuBaseline, LibraryBaseline):
    """Tuned batched by default (BatchedCheck): the mesh is 1536 kernels at some 4000 shapes."""

    name = "gemv"
    dims = ("m", "n")
    buffers = ("A", "x", "y")
    layout = "y (m) = A (m x n) . x (n), A column-major (element (i, j) at A[i + j * m])"
    # float64, float16 and bfloat16 A, x, y too (sums in float32, float64 at fp64): gemv_tuned and cuBLAS
    precisions = ("fp32", "fp64", "fp16", "bf16")
    rate = "gflops_median"
    score = "gflops_median"
    yardstick = "cublas_gemv"
    size_forms = "mesh, mesh:MIB, cell:IxJ, tall:/square:/wide:SPEC"  # GEMV_FORMS says more
    # 1 x 1, single rows and columns, sizes either side of a block (32 ... 256 threads) and primes
    tested_sizes = "1,1x4097,4097x1,31,33,63,65,127,129,255,257,1000x37,37x1000,997x1009,2x3001,3001x3"

    def parse_sizes(self, spec: str) -> list[Shape]:
        """The common forms (1000x37, 4096, ranges) and GEMV's own: the mesh, one cell, the paper's
        tall, square and wide families (GEMV_FORMS)."""
        shapes: dict[Shape, None] = {}
        for item in split_items(spec.replace(" ", "")):
            own = _gemv_item(item)
            try:
                found = own if own is not None else parse_sizes(item, 2)
            except SizeSpecError as exc:
                raise SizeSpecError(f"{exc}; for GEMV also {GEMV_FORMS}") from None
            for shape in found:
                shapes.setdefault(shape, None)
        return list(shapes)

    def flops(self, shape: Shape) -> float:
        return 2.0 * shape.m * shape.n

    def min_bytes(self, shape: Shape, precision: str = DEFAULT) -> float:
        only_default(self, precision)
        return float(get_precision(precision).a_type.itemsize * (shape.m * shape.n + shape.m + shape.n))

    def host_bytes(self, shape: Shape, precision: str = DEFAULT) -> int:
        """A as drawn (float32, float64 at fp64) and in its type, its float64 and absolute copies for
        the reference and bound (20 bytes an element at fp32), and a few vectors."""
        p = get_precision(precision)
        drawn = 8 if p.a_type == np.float64 else 4
        return (16 + drawn + (p.a_type.itemsize if p.a_type.itemsize < 4 else 0)) * shape.m * shape.n \
            + 64 * (shape.m + shape.n)

    def device_bytes(self, shape: Shape, precision: str = DEFAULT) -> int:
        """A, x and y, and the workspace: partial sums (at most as many as A has elements / 32) and
        the one-pass kernel's arrival counts (one per 32 rows at most)."""
        return int(self.min_bytes(shape, precision)) + sum_bytes(precision) * workspace_words(shape.m, shape.n)

    def make_inputs(self, shape: Shape, rng: np.random.Generator, products: Products | None = None,
                    precision: str = DEFAULT, layout: str = DEFAULT_LAYOUT) -> GemvInputs:
        only_default(self, precision, layout)
        return make_gemv_inputs(shape, rng, precision)

    def output_shape(self, shape: Shape) -> tuple[int, ...]:
        return (shape.m,)

    def check(self, out: np.ndarray, inputs: GemvInputs) -> Check:
        return check_sums(out, inputs.reference, inputs.bound, inputs.x.size, get_precision(inputs.precision),
                          inputs.magnitude_norm)

    def upload(self, gpu, inputs: GemvInputs) -> DeviceBuffers:
        """A, x, y, and the workspace of the kernels that write partial sums (one row of m for each
        column of blocks: at most ceil(n / 32), as a block covers at least 32 columns), zeroed once:
        the one-pass kernel's arrival counts start at zero and each launch leaves them so."""
        n, m = inputs.a.shape
        size = sum_bytes(inputs.precision) * workspace_words(m, n)
        work = gpu.alloc(size)
        gpu.drv.memset_d32(work, 0, size // 4)
        return DeviceBuffers((gpu.upload(raw_view(inputs.a)), gpu.upload(raw_view(inputs.x))),
                             gpu.alloc(m * inputs.a.dtype.itemsize), m, (work,), inputs.precision)

    def sum_check(self, inputs: GemvInputs) -> tuple[np.ndarray, np.ndarray, int]:
        return inputs.reference, inputs.bound, inputs.x.size

    def entries(self, variant: Variant, precision: str = DEFAULT) -> tuple[str, ...]:
        """The variant's own kernel; the two-launch wide kernel's reduction; at fp16 and bf16, a typed
        kernel's store of a narrow y (kernels/gemv/tuned.cu builds it there alone)."""
        if "workspace" in variant.geometry:
            return variant.name, f"{variant.name}_reduce"
        store = len(variant.dtypes) > 1 and narrow(precision)
        return (variant.entry_name,) + ((f"{variant.name}_store",) if store else ())

    def kernel(self, gpu, variant: Variant, params: Params, shape: Shape, bufs: DeviceBuffers) -> Callable[[], None]:
        """Prepared launches (a few microseconds of Python each: the batched tuner makes millions)."""
        grid = launch_grid(variant, params, shape)
        block = variant.block_dims(params)
        (a, x), y = (int(b) for b in bufs.inputs), bufs.output  # device pointers, as the prepared calls pack them
        m, n = np.int32(shape.m), np.int32(shape.n)
        zero = adds_into_y(variant, params, shape)
        # (A, x, y, m, n) or, for a kernel that reduces in one launch, (A, x, y, m, n, W)
        extra = (int(bufs.scratch[0]),) if "workspace_arg" in variant.geometry else ()
        fn = prepared(gpu.function(variant, params), "PPPii" + "P" * len(extra))
        if zero and narrow(bufs.precision):
            return _narrow_launch(gpu, variant, params, shape, bufs, fn, grid, block)
        if zero and bufs.precision != DEFAULT and not extra:
            raise Unsupported(f"{variant.name} adds partial sums into y: at {bufs.precision} only a kernel of "
                              f"kernels/gemv/tuned.cu's design adds them up before rounding")
        if uses_workspace(variant, params):
            parts, work = grid[1], int(bufs.scratch[0])
            reduce = prepared(gpu.function(variant, params, f"{variant.name}_reduce"), "PPii")
            rgrid = (math.ceil(shape.m / block[0]), 1)

            def launch_two() -> None:
                fn.prepared_async_call(grid[:2], block, gpu.stream, a, x, work, m, n)
                reduce.prepared_async_call(rgrid, block, gpu.stream, work, int(y), m, np.int32(parts))

            return launch_two

        words = shape.m * sum_bytes(bufs.precision) // 4  # y's, zeroed where the kernel adds into it

        def launch() -> None:
            if zero:
                gpu.zero_async(y, words)
            fn.prepared_async_call(grid[:2], block, gpu.stream, a, x, int(y), m, n, *extra)

        return launch

    def cpu(self, variant: Variant, inputs: GemvInputs) -> tuple[Callable[[], None], np.ndarray]:
        a_t, x = inputs.a.T, inputs.x  # A as an m x n view: numpy hands BLAS sgemv the transposed flag
        y = np.full(a_t.shape[0], np.nan, dtype=np.float32)
        return (lambda: np.matmul(a_t, x, out=y)), y

    def library(self, variant: Variant, gpu):
        from ..cublas import Cublas

        return Cublas(gpu.stream.handle)

    def library_call(self, handle, shape: Shape, bufs: DeviceBuffers) -> Callable[[], None]:
        """cuBLAS at the buffers' precision (cublas.py's gemv): SGEMV, y (m) = A x, A column-major
        m x n (lda = m), no transposition; DGEMV at fp64; at fp16 and bf16 cublasGemmEx of one column."""
        return handle.gemv(shape, bufs)

    def size_class(self, shape: Shape) -> str:
        """The cell of the tuning mesh the shape falls in: "cell05x07"."""
        return cell_name(*mesh_cell(shape.m, shape.n))

    def tuning_skip(self, variant: Variant, params: Params, shape: Shape) -> str | None:
        """The geometry's "tuned_where", an expression over the parameters and m, n: false where
        the configuration's design is not meant to run (gemv_tuned's threads-along-columns design,
        the paper's Fig. 2e, is for m <= BLOCKSIZE)."""
        rule = variant.geometry.get("tuned_where")
        if rule is None or evaluate(rule, (*params, ("m", shape.m), ("n", shape.n))):
            return None
        return f"not this design's shapes ({rule} does not hold at m = {shape.m})"

    def class_distance(self, wanted: str, cls: str) -> tuple:
        """The nearest tuned cell of the mesh (a shape past the tuned cells takes the nearest one);
        ties go to the larger cell."""
        (i, j), (p, q) = parse_cell(wanted), parse_cell(cls)
        return ((i - p) ** 2 + (j - q) ** 2, -(p + q))


def _narrow_launch(gpu, variant: Variant, params: Params, shape: Shape, bufs: DeviceBuffers, fn, grid,
                   block) -> Callable[[], None]:
    """A narrow y from a kernel that adds partial sums: it adds them into the workspace's first m
    float32 words (zeroed first, as y is at float32), and <name>_store rounds them into y once."""
    (a, x), y, work = (int(b) for b in bufs.inputs), int(bufs.output), int(bufs.scratch[0])
    m, n = np.int32(shape.m), np.int32(shape.n)
    store = prepared(gpu.function(variant, params, f"{variant.name}_store"), "PPi")
    sgrid = (math.ceil(shape.m / block[0]), 1)

    def launch() -> None:
        gpu.zero_async(work, shape.m)
        fn.prepared_async_call(grid[:2], block, gpu.stream, a, x, y, m, n, work)
        store.prepared_async_call(sgrid, block, gpu.stream, work, y, m)

    return launch


GEMV = Gemv()
