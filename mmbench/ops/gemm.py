"""GEMM: C (m x n) = A (m x k) . B (k x n), float32, row-major.

Everything GEMM-specific lives here: the work (2mnk flops, each operand moved once), the inputs
and float64 reference with the float32 sum rule of ``base.check_sums`` (k terms), the launch
model of the GEMM kernels (tiles over C, k-tiles, split-K layers, strip kernels, stream-K
grids) read from a variant's ``geometry`` expressions, the CPU BLAS and cuBLAS baselines, and
the size classes tuning keys its entries by.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ..draws import draw
from ..precisions import (DEFAULT, DEFAULT_LAYOUT, LAYOUTS, PRECISIONS, Precision, as_float64, fp8_scale,
                          get_precision, raw_view, scale_block, transposed)
from ..sizes import Shape
from ..variants.model import Params, Variant, VariantError, evaluate
from .base import (SCOPES, Check, DeviceBuffers, Operation, Products, ScopeError, Timed, Unsupported, check_sums,
                   error_bound, kernel_alone, prepared)
from .capabilities import CpuBaseline, InputsOnGpu, LibraryBaseline, Padded
from .on_gpu import MadeOnGpu, product_sums

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
    # 1: the kernel has no border checks and runs only on inputs padded to its tile multiple (issue
    # 15's approach 1, after Lameski 2013); every point of it is padded.
    "unchecked": "0",
    # Blocks per SM of a persistent grid whose blocks walk C's tiles themselves (the tensor-core
    # ladder's, not stream-K's): the grid is min(that many a SM, the tiles) along x; 0: a block a tile.
    "tile_walkers": "0",
    # Above 0: tile walkers that share the last wave's k-tiles out (stream-K, tc_ws.cu's STREAMK), with
    # this many flags a block: the grid is every block the GPU holds at once, and the kernel takes a
    # workspace last (the flags, 256-byte aligned, then a tile of float sums a block; the flags zeroed
    # once: the kernel lowers each flag it raised).
    "stream_k": "0",
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
    """Host inputs of one GEMM check, stored as the layout says, with their float64 reference and
    error bound. Inputs of a precision narrower than float32 hold the quantized values the kernel
    receives; FP8 inputs hold A / scale_a and B / scale_b."""

    a: np.ndarray  # m x k, or k x m where the layout stores A transposed
    b: np.ndarray  # k x n, or n x k where the layout stores B transposed
    reference: np.ndarray  # float64 A.B of the inputs as stored (their scales applied)
    bound: np.ndarray  # the elementwise error bound (precisions.bound_terms)
    precision: str = DEFAULT
    layout: str = DEFAULT_LAYOUT
    scales: tuple[float, float] = (1.0, 1.0)  # of A and B (FP8); C = scale_a scale_b (A.B)
    magnitude_norm: float | None = None  # || |A||B| || (float32: derived from the bound)

    @property
    def k(self) -> int:
        return self.a.shape[0] if transposed(self.layout)[0] else self.a.shape[1]


def gemm_flops(shape: Shape) -> float:
    return 2.0 * shape.m * shape.n * shape.k


def rows_aligned(shape: Shape) -> bool:
    """Whether A's and B's rows (k and n floats long, as stored) start on 16 bytes: K and N multiples of 4.
    Kernels take another path where they do not."""
    return shape.k % 4 == 0 and shape.n % 4 == 0


def gemm_min_bytes(shape: Shape, precision: str = DEFAULT) -> float:
    """Fewest bytes a GEMM moves: each input read once, C written once, at their element sizes."""
    p = get_precision(precision)
    return float(p.a_type.itemsize * shape.m * shape.k + p.b_type.itemsize * shape.k * shape.n
                 + p.c_type.itemsize * shape.m * shape.n)


def host_products(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A.B and |A|.|B| in float64 on the host (numpy's BLAS)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return a64 @ b64, np.abs(a64) @ np.abs(b64)


def make_gemm_inputs(shape: Shape, rng: np.random.Generator, products: Products | None = None,
                     precision: str = DEFAULT, layout: str = DEFAULT_LAYOUT) -> GemmInputs:
    """Random inputs in [-1, 1) (never zeros: they hide unwritten outputs) in the precision (float32
    values rounded to its type; FP8 divided by its scale first, precisions.fp8_scale; float64 drawn
    as such), stored as the layout says; their float64 reference A.B, and its error bound from |A|.|B|
    and the precision's rounding. `products` makes both products (default: the host's)."""
    p = get_precision(precision)
    a, b, scales = draw_operands(shape, rng, p)
    exact = p.a_type in (np.float32, np.float64) and p.b_type == p.a_type  # products take them as they are
    reference, magnitude = (products or host_products)(*((a, b) if exact else
                                                        (as_float64(a, scales[0]), as_float64(b, scales[1]))))
    bound, norm = error_bound(p, shape.k, reference, magnitude)
    return GemmInputs(*stored(a, b, layout), reference, bound, p.name, layout, scales, norm)


def draw_operands(shape: Shape, rng, p: Precision) -> tuple[np.ndarray, np.ndarray, tuple]:
    """A (m x k) and B (k x n) drawn in (-1, 1) (float32, float64 for fp64) and rounded to the
    precision's types, FP8's divided by their scales first (draws.draw: a run's counter draws, made on
    its GPU, or a numpy Generator's); and the scales."""
    scales = (fp8_scale(p.inputs), fp8_scale(p.b or p.inputs)) if p.scaled else (1.0, 1.0)
    return (draw(rng, "symmetric", (shape.m, shape.k), p.a_type, scales[0]),
            draw(rng, "symmetric", (shape.k, shape.n), p.b_type, scales[1]), scales)


def stored(a: np.ndarray, b: np.ndarray, layout: str) -> tuple[np.ndarray, np.ndarray]:
    """A and B as the layout stores them."""
    ta, tb = transposed(layout)
    return (np.ascontiguousarray(a.T) if ta else a), (np.ascontiguousarray(b.T) if tb else b)


def device_buffers(gpu, a: np.ndarray, b: np.ndarray, shape: Shape, precision: str, layout: str,
                   scales: tuple[float, float]) -> DeviceBuffers:
    """A and B (stored) on the device, C of the precision's output type; FP8's scales as float32 in
    device memory (the scratch buffer, SCALE_OFFSETS): what cuBLASLt and kernels read them from."""
    p = get_precision(precision)
    block = (gpu.upload(scale_block(scales)),) if p.scaled else ()
    return DeviceBuffers((gpu.upload(raw_view(a)), gpu.upload(raw_view(b))),
                         gpu.alloc(shape.m * shape.n * p.c_type.itemsize), shape.m * shape.n, block, p.name, layout,
                         scales)


class GemmOnGpu(MadeOnGpu):
    """One shape's inputs drawn on the GPU into its buffers (.buffers) with their reference and bound
    there (.sums), checked there; the fields of GemmInputs too, brought to the host on first use (a
    CPU baseline, the end-to-end scope's copies, a check of a result on the host)."""

    def __init__(self, shape: Shape, buffers: DeviceBuffers, sums):
        self.shape, self.buffers, self.sums = shape, buffers, sums
        self.precision, self.layout, self.scales = buffers.precision, buffers.layout, buffers.scales
        self.magnitude_norm = sums.magnitude_norm
        self.k = shape.k
        self._host: dict[str, np.ndarray] = {}

    def _operand(self, name: str) -> np.ndarray:
        if name not in self._host:
            p = get_precision(self.precision)
            buf, dtype = (self.buffers.inputs[0], p.a_type) if name == "A" else (self.buffers.inputs[1], p.b_type)
            self._host[name] = self.sums.gpu.download(buf, stored_dims(name, self.shape, self.layout), dtype)
        return self._host[name]

    @property
    def a(self) -> np.ndarray:
        return self._operand("A")

    @property
    def b(self) -> np.ndarray:
        return self._operand("B")

    def _checked(self, name: str) -> np.ndarray:
        if name not in self._host:  # the reference and the bound come over together
            self._host["reference"], self._host["bound"] = self.sums.download()
        return self._host[name]

    @property
    def reference(self) -> np.ndarray:
        return self._checked("reference")

    @property
    def bound(self) -> np.ndarray:
        return self._checked("bound")

    def free(self) -> None:
        super().free()
        self._host.clear()


def gemm_inputs_on_gpu(gpu, shape: Shape, key: int, precision: str, layout: str) -> GemmOnGpu:
    """make_gemm_inputs on the GPU: A and B drawn from the key into device buffers as the layout stores
    them (the same values the host's draws make), their float64 reference and bound made there
    (ops/on_gpu.py)."""
    p = get_precision(precision)
    scales = (fp8_scale(p.inputs), fp8_scale(p.b or p.inputs)) if p.scaled else (1.0, 1.0)
    m, n, k = shape.m, shape.n, shape.k
    made = [gpu.alloc(p.a_type.itemsize * m * k), gpu.alloc(p.b_type.itemsize * k * n)]
    try:
        made.append(gpu.alloc(m * n * p.c_type.itemsize))
        if p.scaled:
            made.append(gpu.upload(scale_block(scales)))
        bufs = DeviceBuffers(tuple(made[:2]), made[2], m * n, tuple(made[3:]), p.name, layout, scales)
        ta, tb = transposed(layout)
        for stream, (name, buf, storage, scale) in enumerate((("A", made[0], p.a_type, scales[0]),
                                                              ("B", made[1], p.b_type, scales[1]))):
            gpu.draw_into(buf, *stored_dims(name, shape, layout), (ta, tb)[stream], key, stream, "symmetric", storage,
                          scale)
        return GemmOnGpu(shape, bufs, product_sums(gpu, made[0], made[1], m, n, k, ta, tb, p, scales))
    except BaseException:
        for buf in made:
            buf.free()
        raise


def check_gemm(c: np.ndarray, inputs: GemmInputs) -> Check:
    """Compare a result with the float64 reference: sums of k products, in the inputs' precision."""
    return check_sums(c, inputs.reference, inputs.bound, inputs.k, get_precision(inputs.precision),
                      inputs.magnitude_norm)


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
    return (variant.entry_name,) + ((f"{variant.name}_row_strip", f"{variant.name}_col_strip") if strips else ())


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


# -- padding (Lameski 2013's approach 1, and `--pad` for any kernel) ---------------------------------------
def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def padded_shape(variant: Variant, params: Params, shape: Shape) -> Shape:
    """The shape a kernel runs at on padded inputs: m and n rounded up to its tile (the rows and
    columns of C a block computes), k to its k-tile (the k one step of its loop covers)."""
    problem = tile_problem(variant)
    if problem:
        raise ScopeError(problem)
    rows, cols = (evaluate(e, params) for e in _geometry(variant, "tile"))
    depth = evaluate(_geometry(variant, "k_tile"), params)
    return Shape(_round_up(shape.m, rows), _round_up(shape.n, cols), _round_up(shape.k, depth))


def tile_problem(variant: Variant) -> str | None:
    """Why a variant cannot run padded to its tile (a library call, or a kernel whose grid is not
    laid over C), or None."""
    if variant.backend != "cuda" or tuple(_geometry(variant, "grid")) != GEOMETRY["grid"]:
        return f"{variant.name} has no tile over C to pad to"
    if variant.arguments:
        return f"{variant.name} launches as its variant file declares: it runs on the shapes given, never padded"
    return None


def pad_into(out: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """The host half of padding: out zero-filled, the matrix copied into its top-left corner (the
    paper zero-fills the whole padded matrix, then copies the data in)."""
    out.fill(0.0)
    out[:matrix.shape[0], :matrix.shape[1]] = matrix
    return out


def pad_host(matrix: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """A zero-padded rows x cols copy of a matrix."""
    return pad_into(np.empty((rows, cols), dtype=matrix.dtype), matrix)


def scoped(gpu, shape: Shape, scope: str, padded: Shape | None, bufs: DeviceBuffers, inputs: GemmInputs,
           compute: Callable[[Shape, DeviceBuffers], Callable[[], None]]) -> Timed:
    """A GEMM point's timed sequence for a scope (base.SCOPES), on its inputs as given (padded None)
    or padded to a shape: the padded buffers are allocated here, zero-filled and filled before
    timing in the kernel scope, inside it in the device scope (memsets and 2D copies on the
    stream), and on the host in the end-to-end scope."""
    m, n, k = shape.m, shape.n, shape.k
    a, b, c = bufs.all[:3]
    if padded is None:
        run = compute(shape, bufs)
        if scope != "end_to_end":
            return kernel_alone(gpu, GEMM, shape, bufs, run)  # nothing to pad: the device scope is the kernel
        ha, hb, hc = gpu.pinned((m, k)), gpu.pinned((k, n)), gpu.pinned((m, n))
        ha[:], hb[:] = inputs.a, inputs.b

        def launch() -> None:
            gpu.htod_async(a, ha)
            gpu.htod_async(b, hb)
            run()
            gpu.dtoh_async(hc, c)
            gpu.synchronize()

        return Timed(launch, lambda: (hc.fill(np.nan), gpu.poison(c, m * n)), hc.copy, host_work=True)
    pm, pn, pk = padded.m, padded.n, padded.k
    item, out_item = PRECISIONS[bufs.precision].a_type.itemsize, bufs.output_type.itemsize
    need, free = item * (pm * pk + pk * pn) + out_item * pm * pn, gpu.free_memory()
    if need > free:
        raise ScopeError(f"the padded buffers ({padded}) need {need / 2**20:.0f} MiB of GPU memory; "
                         f"{free / 2**20:.0f} MiB free")
    made = []
    try:
        for nbytes in (item * pm * pk, item * pk * pn, out_item * pm * pn):
            made.append(gpu.alloc(nbytes))
        # the padded shape's buffers at the point's precision and layout, FP8's scales shared with the point's
        pbufs = replace(bufs, inputs=tuple(made[:2]), output=made[2], output_count=pm * pn)
        timed = _scoped_padded(gpu, shape, scope, padded, bufs, pbufs, inputs, compute(padded, pbufs))
    except BaseException:
        for buf in made:
            buf.free()
        raise
    timed.release = lambda: [buf.free() for buf in made]  # not the scratch: the point's own buffers hold it
    return timed


def _scoped_padded(gpu, shape: Shape, scope: str, padded: Shape, bufs: DeviceBuffers, pbufs: DeviceBuffers,
                   inputs: GemmInputs, run: Callable[[], None]) -> Timed:
    """scoped() on padded buffers already allocated (pbufs), run being the kernel on them."""
    m, n = shape.m, shape.n
    a, b, c = bufs.all[:3]
    pm, pn, pk = padded.m, padded.n, padded.k
    (pa, pb), pc = pbufs.inputs, pbufs.output
    item, out_type = PRECISIONS[bufs.precision].a_type.itemsize, bufs.output_type
    # A and B as the layout stores them (rows x columns, row-major), the point's and the padded
    stored = [(stored_dims(x, shape, bufs.layout), stored_dims(x, padded, bufs.layout)) for x in ("A", "B")]

    def pad_on_device() -> None:
        for buf, (_, (rows, cols)) in zip((pa, pb), stored):
            if item == 4:
                gpu.zero_async(buf, rows * cols)
            else:
                gpu.zero_bytes_async(buf, item * rows * cols)
        for dst, src, ((rows, cols), (_, padded_cols)) in zip((pa, pb), (a, b), stored):
            gpu.copy2d_async(dst, padded_cols, src, cols, rows, cols, item)

    def poison() -> None:
        gpu.poison(pc, pm * pn, out_type)
        gpu.poison(c, m * n, out_type)

    if scope == "kernel":
        pad_on_device()
        gpu.synchronize()
        timed = Timed(run, poison, lambda: gpu.download(pc, (pm, pn), out_type)[:m, :n].copy(), on_device=(pc, pn))
    elif scope == "device":
        def launch() -> None:
            pad_on_device()
            run()
            gpu.copy2d_async(c, n, pc, pn, m, n, out_type.itemsize)

        timed = Timed(launch, poison, lambda: gpu.download(c, (m, n), out_type), on_device=(c, n))
    else:
        hpa, hpb, hpc, hc = gpu.pinned((pm, pk)), gpu.pinned((pk, pn)), gpu.pinned((pm, pn)), gpu.pinned((m, n))

        def launch() -> None:
            pad_into(hpa, inputs.a)
            pad_into(hpb, inputs.b)
            gpu.htod_async(pa, hpa)
            gpu.htod_async(pb, hpb)
            run()
            gpu.dtoh_async(hpc, pc)
            gpu.synchronize()
            hc[:] = hpc[:m, :n]

        def poison_all() -> None:
            poison()
            hc.fill(np.nan)

        timed = Timed(launch, poison_all, hc.copy, host_work=True)
    timed.padded = padded
    return timed


def gemm_launcher(gpu, variant: Variant, params: Params, shape: Shape, a, b, c) -> Callable[[], None]:
    """A no-argument launch of a GEMM on the GPU's stream: every kernel of launches(). A kernel
    that adds into C gets C zeroed first; the zeroing is part of what gets timed. Strip kernels
    after a tiled kernel run beside it on the side stream (they write other parts of C), in
    whatever room its grid leaves; the stream waits for them."""
    plan = launches(variant, params, shape, gpu.facts.sm_count)
    pointers = tuple(int(x) for x in (a, b, c))  # as the prepared calls pack them
    calls = [(prepared(gpu.function(variant, params, x.entry), "PPP" + "i" * len(x.args)), x.block, x.grid,
              tuple(np.int32(v) for v in x.args), x.shared) for x in plan]
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
            fn.prepared_async_call(grid, block, gpu.side if beside and i else gpu.stream, *pointers, *args,
                                   shared_size=shared)
        if beside:
            gpu.join()

    return launch


def stored_dims(buffer: str, shape: Shape, layout: str) -> tuple[int, int]:
    """(rows, columns) of a GEMM buffer as the layout stores it, row-major."""
    ta, tb = transposed(layout)
    return {"A": (shape.k, shape.m) if ta else (shape.m, shape.k),
            "B": (shape.n, shape.k) if tb else (shape.k, shape.n), "C": (shape.m, shape.n)}[buffer]


def tile_walker_grid(variant: Variant, params: Params, grid: tuple[int, int, int], sms: int) -> tuple[int, int, int]:
    """The grid of a kernel whose blocks walk C's tiles (geometry tile_walkers): as many as the tiles,
    at most that many a SM; all of them where the walkers share k-tiles out (stream_k). Else the grid
    as it is."""
    per_sm = evaluate(_geometry(variant, "tile_walkers"), params)
    if not per_sm:
        return grid
    return (per_sm * sms if stream_k(variant, params) else min(per_sm * sms, grid[0] * grid[1]), 1, 1)


def stream_k(variant: Variant, params: Params) -> int:
    """The flags a block of a stream-K kernel raises (geometry stream_k); 0: not one."""
    return evaluate(_geometry(variant, "stream_k"), params)


def stream_k_workspace(gpu, variant: Variant, params: Params, blocks: int):
    """The workspace of a stream-K launch of `blocks` blocks: its 4-byte flags (256-byte aligned), then a
    tile of float sums a block; the flags zeroed once, on the stream before the first launch."""
    rows, cols = (evaluate(e, params) for e in _geometry(variant, "tile"))
    flags = -(-blocks * stream_k(variant, params) * 4 // 256) * 256
    nbytes = flags + blocks * rows * cols * 4
    workspace = gpu.alloc(nbytes)
    gpu.zero_bytes_async(workspace, flags)
    return workspace


def gemm_tensor_maps(specs, params: Params, shape: Shape, bufs: DeviceBuffers) -> dict:
    """The tensor maps of GEMM buffers by buffer name: each of A, B or C as the layout stores it, its
    box at the point's parameters; Unsupported (a skipped row) naming the map where TMA cannot
    describe it at this shape (rows that are not 16-byte multiples, ...)."""
    from ..launch_ex import encode_tensor_map, map_problem

    p = get_precision(bufs.precision)
    pointers = dict(zip("ABC", bufs.all[:3]))
    types = {"A": p.a_type, "B": p.b_type, "C": p.c_type}
    out = {}
    for t in specs:
        dims, box = stored_dims(t.buffer, shape, bufs.layout), tuple(evaluate(e, params) for e in t.box)
        problem = map_problem(t.buffer, *dims, types[t.buffer], box, t.swizzle)
        if problem:
            raise Unsupported(problem)
        out[t.buffer] = encode_tensor_map(int(pointers[t.buffer]), *dims, types[t.buffer], box, t.swizzle)
    return out


def gemm_launcher_ex(gpu, variant: Variant, params: Params, shape: Shape, bufs: DeviceBuffers) -> Callable[[], None]:
    """A no-argument launch through cuda-python (launch_ex.py) of a kernel that takes tensor maps or
    runs in clusters: its tensor maps of A, B or C first, then A, B, C, m, n, k, one kernel over C."""
    p = get_precision(bufs.precision)
    pointers = dict(zip("ABC", bufs.all[:3]))
    maps = list(gemm_tensor_maps(variant.tensor_maps, params, shape, bufs).values())
    block, grid = launch_geometry(variant, params, shape)
    shared, cluster = variant.dynamic_shared(params), variant.cluster_dims(params)
    fn = gpu.function(variant, params)
    gpu.allow_dynamic_shared(fn, shared)
    walkers = tile_walker_grid(variant, params, grid, gpu.facts.sm_count)
    # walkers in clusters: no more than the GPU holds at once (stream-K's blocks wait on one another,
    # so one left for a second wave would never come), however few the tiles
    if evaluate(_geometry(variant, "tile_walkers"), params) and cluster != (1, 1, 1):
        walkers = (min(walkers[0], fn.resident_clusters(block, shared, cluster) * cluster[0]), 1, 1)
    grid = walkers
    args = (*maps, *pointers.values(), *(np.int32(v) for v in (shape.m, shape.n, shape.k)))
    if p.scaled:  # FP8's per-tensor scales: pointers into the scales' device buffer
        args += bufs.scale_pointers
    if stream_k(variant, params):  # the allocation itself: the launch holds its arguments, so it lives as long
        blocks = -(-grid[0] // cluster[0]) * cluster[0]  # gridDim.x, which the kernel indexes: whole clusters
        args += (stream_k_workspace(gpu, variant, params, blocks),)
    run = fn.launcher(args, grid, block, shared, gpu.stream.handle, cluster)
    if not accumulates(variant, params):
        return run
    c, count = pointers["C"], shape.m * shape.n

    def launch() -> None:
        gpu.zero_bytes_async(c, count * p.c_type.itemsize)
        run()

    return launch


# -- the operation ------------------------------------------------------------------------------------
class Gemm(Operation, Padded, CpuBaseline, LibraryBaseline, InputsOnGpu):
    name = "gemm"
    dims = ("m", "n", "k")
    buffers = ("A", "B", "C")
    layout = "C (m x n) = A (m x k) . B (k x n), float32, row-major"
    rate = "gflops_median"
    score = "gflops_median"
    yardstick = "cublas"  # the vendor library at the point's precision (pure FP32 SGEMM at fp32)
    tested_sizes = "1,31,33,63,65,127,1000x37x2049,37x1000x65"
    scopes = tuple(SCOPES)
    precisions = tuple(PRECISIONS)
    layouts = tuple(LAYOUTS)

    def flops(self, shape: Shape) -> float:
        return gemm_flops(shape)

    def min_bytes(self, shape: Shape, precision: str = DEFAULT) -> float:
        return gemm_min_bytes(shape, precision)

    def host_bytes(self, shape: Shape, precision: str = DEFAULT) -> int:
        """The inputs as drawn (float32, float64 for fp64) and, narrower, as quantized, their float64
        copies and absolute values for the reference and its bound (20 bytes an input element at
        fp32), and the reference, bound, downloaded output and the check's float64 temporaries (64
        an output element)."""
        p = get_precision(precision)
        wide = p.a_type == np.float64
        narrow = 0 if p.a_type in (np.float32, np.float64) else p.a_type.itemsize
        return (16 + (8 if wide else 4) + narrow) * (shape.m * shape.k + shape.k * shape.n) + 64 * shape.m * shape.n

    def device_bytes(self, shape: Shape, precision: str = DEFAULT) -> int:
        """A, B and C at their element sizes, and at the tensor-core precisions cuBLASLt's workspace
        (the library's points need it; a kernel's are the more sure to fit)."""
        from ..cublaslt import WORKSPACE_BYTES

        return int(gemm_min_bytes(shape, precision)) + (WORKSPACE_BYTES if get_precision(precision).tensor_cores else 0)

    def make_inputs(self, shape: Shape, rng: np.random.Generator, products: Products | None = None,
                    precision: str = DEFAULT, layout: str = DEFAULT_LAYOUT) -> GemmInputs:
        return make_gemm_inputs(shape, rng, products, precision, layout)

    def output_shape(self, shape: Shape) -> tuple[int, ...]:
        return (shape.m, shape.n)

    def gpu_bytes(self, shape: Shape, precision: str = DEFAULT) -> int:
        """device_bytes, the reference and bound (float64 each, m x n) and while they are made A and B
        widened to float64."""
        return self.device_bytes(shape, precision) + 16 * shape.m * shape.n + 8 * (shape.m + shape.n) * shape.k

    def inputs_on_gpu(self, gpu, shape: Shape, key: int, precision: str, layout: str) -> GemmOnGpu:
        return gemm_inputs_on_gpu(gpu, shape, key, precision, layout)

    def check(self, out: np.ndarray, inputs: GemmInputs) -> Check:
        return check_gemm(out, inputs)

    def upload(self, gpu, inputs: GemmInputs) -> DeviceBuffers:
        m, n = inputs.reference.shape
        return device_buffers(gpu, inputs.a, inputs.b, Shape(m, n, inputs.k), inputs.precision, inputs.layout,
                              inputs.scales)

    def entries(self, variant: Variant, precision: str = DEFAULT) -> tuple[str, ...]:
        return entries(variant)

    def kernel(self, gpu, variant: Variant, params: Params, shape: Shape, bufs: DeviceBuffers) -> Callable[[], None]:
        if variant.launches_ex:
            return gemm_launcher_ex(gpu, variant, params, shape, bufs)
        return gemm_launcher(gpu, variant, params, shape, *bufs.all[:3])

    def cpu(self, variant: Variant, inputs: GemmInputs) -> tuple[Callable[[], None], np.ndarray]:
        if (inputs.precision, inputs.layout) != (DEFAULT, DEFAULT_LAYOUT):
            raise ScopeError(f"{variant.name} computes {DEFAULT} at layout {DEFAULT_LAYOUT} only")
        a, b = inputs.a, inputs.b
        c = np.full((a.shape[0], b.shape[1]), np.nan, dtype=np.float32)
        if variant.backend == "cpu":  # the compiled ijk loop
            from .. import naive_cpu

            return (lambda: naive_cpu.matmul_ijk(a, b, c)), c
        return (lambda: np.matmul(a, b, out=c)), c

    def padded_shape(self, variant: Variant, params: Params, shape: Shape) -> Shape:
        return padded_shape(variant, params, shape)

    def must_pad(self, variant: Variant) -> bool:
        return _geometry(variant, "unchecked") != "0"

    def pad_problem(self, variant: Variant) -> str | None:
        return tile_problem(variant)

    def timed(self, gpu, variant: Variant, params: Params, shape: Shape, scope: str, pad: bool, bufs: DeviceBuffers,
              inputs: GemmInputs, compute) -> Timed:
        if scope not in SCOPES:
            raise ScopeError(f"scope '{scope}'; choose from: {', '.join(SCOPES)}")
        if scope == "end_to_end" and (inputs.precision, inputs.layout) != (DEFAULT, DEFAULT_LAYOUT):
            raise ScopeError(f"scope {scope} is timed at {DEFAULT}, layout {DEFAULT_LAYOUT} only; this point is "
                             f"{inputs.precision}, layout {inputs.layout}")
        return scoped(gpu, shape, scope, padded_shape(variant, params, shape) if pad else None, bufs, inputs, compute)

    def library(self, variant: Variant, gpu):
        from ..cublas import Cublas

        return Cublas(gpu.stream.handle, gpu.alloc)

    def library_call(self, handle, shape: Shape, bufs: DeviceBuffers) -> Callable[[], None]:
        """The vendor library at the buffers' precision and layout (cublas.py): SGEMM in pedantic
        FP32 math at fp32, DGEMM at fp64, cuBLASLt's matmul at the tensor-core precisions."""
        return handle.gemm(shape, bufs)

    def size_class(self, shape: Shape) -> str:
        """The power of two nearest the shape's geometric-mean dimension, and whether its rows are
        16-byte aligned (K and N multiples of 4), since kernels take another path when they are
        not: 2048 -> "2048", 2049 -> "2048u", 1000x37x2049 -> "512u"."""
        mean = (shape.m * shape.n * shape.k) ** (1 / 3)
        return f"{2 ** max(0, round(math.log2(mean)))}{'' if rows_aligned(shape) else 'u'}"


GEMM = Gemm()
