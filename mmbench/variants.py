"""The registry: every kernel variant and baseline, one entry each.

A CUDA variant's registry key is also its ``extern "C" __global__`` name in
``kernels/<family>.cu`` (a family is ``<op>/<file>``); nothing else in Python repeats it.
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache, partial
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping

Params = tuple[tuple[str, int], ...]  # sorted (name, value) pairs; hashable


class VariantError(ValueError):
    """An unknown variant or a bad parameter; the message names the choices."""


@dataclass(frozen=True)
class Variant:
    """One kernel variant or baseline and how to build and launch it."""

    name: str
    backend: str  # "cuda" (a kernel of ours), a GPU library ("cublas", "driver"), or CPU ("blas", "numpy", "cpu")
    label: str  # legend text, as the paper wrote it
    description: str
    paper: str = "zosa2017"
    op: str = "gemm"
    family: str | None = None  # kernels/<family>.cu, CUDA variants only
    # name -> default values; left out of hashing (a mapping is unhashable, the name is unique)
    axes: Mapping[str, tuple[int, ...]] = field(default_factory=dict, hash=False)
    # Thread-block dimensions as expressions over the parameters.
    threads: tuple[str, ...] = ("BLOCK", "BLOCK")
    # Bytes of dynamic shared memory a block asks for at launch (above 48 KiB the harness opts in).
    shared: str = "0"
    # The operation's launch model for this kernel, as expressions over the parameters (for GEMM:
    # tile, k_tile, layers, strips, persistent; ops/gemm.py reads them). Left out of hashing.
    geometry: Mapping[str, Any] = field(default_factory=dict, hash=False)
    constraints: tuple[str, ...] = ()  # expressions that must hold for a parameter point to build
    space: Mapping[str, tuple[int, ...]] = field(default_factory=dict, hash=False)  # what `tune` explores
    source_dir: Path | None = None  # only for kernels outside kernels/ (tests)

    @property
    def on_gpu(self) -> bool:
        return self.backend not in CPU_BACKENDS

    def block_dims(self, params: Params) -> tuple[int, int, int]:
        dims = [evaluate(e, params) for e in self.threads]
        return tuple(dims + [1] * (3 - len(dims)))  # type: ignore[return-value]

    def block_threads(self, params: Params) -> int:
        return math.prod(self.block_dims(params))

    def dynamic_shared(self, params: Params) -> int:
        """Bytes of dynamic shared memory the variant's own kernel asks for at launch."""
        return evaluate(self.shared, params)

    def violated(self, params: Params) -> list[str]:
        """The constraints a parameter point breaks (empty when it may be built)."""
        bound = dict(params)
        return [c for c in self.constraints if not _holds(c, bound)]

    def problem(self, params: Params) -> str | None:
        """Why a parameter point cannot run on any GPU, known without one: a broken constraint or
        more threads per block than CUDA allows; None when it may run."""
        broken = self.violated(params)
        if broken:
            return f"constraint '{broken[0]}' does not hold"
        if self.backend == "cuda" and self.block_threads(params) > MAX_THREADS_PER_BLOCK:
            return f"{self.block_threads(params)} threads per block exceed CUDA's limit of {MAX_THREADS_PER_BLOCK}"
        return None


MAX_THREADS_PER_BLOCK = 1024  # every CUDA GPU since compute capability 2.0
CPU_BACKENDS = ("blas", "numpy", "cpu")  # cpu: compiled C loops (kernels/cpu/), single-threaded


def _holds(constraint: str, bound: Mapping[str, int]) -> bool:
    """Whether a constraint holds for these parameter values (tuning_space tests it on a partial
    point, once its names are bound)."""
    try:
        return bool(eval(_compiled(constraint), {"__builtins__": {}}, bound))  # registry text, never user input
    except ZeroDivisionError:  # a derived size of zero: the point cannot be built
        return False


@lru_cache(maxsize=None)
def _compiled(expression: str):
    return compile(expression, "<constraint>", "eval")


@lru_cache(maxsize=1 << 16)  # a batched tuning asks the same few millions of times
def evaluate(expression: str, params: Params) -> int:
    """An integer expression over parameter names, e.g. "(BM // TM) * (BN // TN)"."""
    return eval(_compiled(expression), {"__builtins__": {}}, dict(params))  # registry text, never user input


def _cuda(name: str, family: str, label: str, description: str, outputs_per_thread: int = 1,
          paper: str = "zosa2017", unchecked: bool = False) -> Variant:
    """A kernel of the paper: a BLOCK x BLOCK thread block, each thread outputs_per_thread^2 outputs,
    k-tiles of BLOCK; unchecked: no border checks (it runs on inputs padded to its tiles)."""
    span = "BLOCK" if outputs_per_thread == 1 else f"{outputs_per_thread} * BLOCK"
    geometry = {"tile": (span, span), "k_tile": "BLOCK", **({"unchecked": "1"} if unchecked else {})}
    return Variant(name=name, backend="cuda", label=label, description=description, family=f"gemm/{family}",
                   paper=paper, axes=MappingProxyType({"BLOCK": (32,)}), geometry=MappingProxyType(geometry),
                   space=MappingProxyType({"BLOCK": (8, 16, 32)}))


# -- the ladder beyond the paper (issue: close the gap to cuBLAS) ---------------------------------
_TILE_THREADS = "(BM // TM) * (BN // TN)"
_TILE_RULES = ("BM % TM == 0", "BN % TN == 0", f"{_TILE_THREADS} <= 1024", f"{_TILE_THREADS} >= 32",
               "4 * (BM * BK + BK * BN) <= 48 * 1024")
_TILE_SPACE = {"BM": (64, 128), "BN": (64, 128), "BK": (8, 16, 32), "TM": (4, 8), "TN": (4, 8)}
_VEC_RULES = ("TM % 4 == 0", "TN % 4 == 0", "BK % 4 == 0", f"(BM * BK // 4) % ({_TILE_THREADS}) == 0",
              f"(BK * BN // 4) % ({_TILE_THREADS}) == 0")
_WMITER = "((WM * WN) // (32 * TM * TN * WNITER))"
_WARP_RULES = (
    "THREADS == (BM // WM) * (BN // WN) * 32", "BM % WM == 0", "BN % WN == 0",
    "WM * WN >= 32 * TM * TN * WNITER", "(WM * WN) % (32 * TM * TN * WNITER) == 0", f"WM % {_WMITER} == 0",
    "WN % WNITER == 0", f"(WM // {_WMITER}) % TM == 0", "(WN // WNITER) % TN == 0",
    f"((WM // {_WMITER}) // TM) * ((WN // WNITER) // TN) == 32",  # a warp's 32 lanes tile a sub-tile
    "TM % 4 == 0", "TN % 4 == 0", "BK % 4 == 0", "(BM * BK // 4) % THREADS == 0", "(BK * BN // 4) % THREADS == 0",
    "WM * WN // 32 <= 128",  # accumulators per lane: more would spill
)
_WARP_SPACE = {"BM": (64, 128, 256), "BN": (64, 128, 256), "BK": (8, 16, 32), "WM": (32, 64, 128),
               "WN": (32, 64, 128), "WNITER": (1, 2, 4), "TM": (4, 8), "TN": (4, 8), "THREADS": (128, 256)}
_WARP_DEFAULT = {"BM": (128,), "BN": (128,), "BK": (16,), "WM": (64,), "WN": (64,), "WNITER": (4,), "TM": (8,),
                 "TN": (4,), "THREADS": (128,)}

# The fastest dbuf configuration at 2048 and 4096 on the H200, no split; thin remainders as strips
_DBUF_DEFAULT = {"BM": (128,), "BN": (128,), "BK": (16,), "WM": (64,), "WN": (32,), "WNITER": (2,), "TM": (8,),
                 "TN": (4,), "THREADS": (256,), "SPLITK": (1,), "MINB": (2,), "VEC4": (1,), "STAGE": (0,),
                 "STRIP": (4,), "SK": (0,), "ORDER": (1,)}


# multistage: a lane's TM x TN tile, its rows WM / TM apart; both operands by 16-byte shared loads
_MULTI_SHARED = "4 * STAGES * (BM * (BK + 4) + BK * BN)"
_MULTI_RULES = (
    "THREADS == (BM // WM) * (BN // WN) * 32", "BM % WM == 0", "BN % WN == 0", "WM % TM == 0", "WN % TN == 0",
    "(WM // TM) * (WN // TN) == 32", "TN % 4 == 0", "BK % 4 == 0", "STAGES >= 2",
    "(BM * BK // 4) % THREADS == 0", "(BK * BN // 4) % THREADS == 0",
    "TM * TN <= 128",  # accumulators; with the A and B fragments they must fit what MINB blocks leave a thread
    "TM * TN + TN + 32 <= 65536 // (MINB * THREADS)",
    f"MINB * {_MULTI_SHARED} <= 227 * 1024",  # dynamic shared memory of MINB blocks on an SM (sm_90)
)
_MULTI_SPACE = {"BM": (64, 128, 256), "BN": (64, 128, 256), "BK": (8, 16, 32), "WM": (32, 64, 128),
                "WN": (32, 64, 128), "TM": (4, 8, 16), "TN": (4, 8, 16), "THREADS": (128, 256),
                "STAGES": (2, 3, 4), "MINB": (1, 2)}
# cuBLAS's shape at 4096 on the H200: 256 x 128 x 8, three stages, 8 warps of 64 x 64, 8 x 16 a lane
_MULTI_DEFAULT = {"BM": (256,), "BN": (128,), "BK": (8,), "WM": (64,), "WN": (64,), "TM": (8,), "TN": (16,),
                  "THREADS": (256,), "STAGES": (3,), "MINB": (1,)}


def _ladder(name: str, label: str, description: str, defaults: dict, space: dict, rules: tuple, threads: str,
            layers: str = "1", strips: str = "0", shared: str = "0", persistent: str = "0") -> Variant:
    family = "gemm/" + ("warptile" if name == "pipelined" else name)  # pipelined shares warptile.cu's warp tiles
    geometry = {"tile": ("BM", "BN"), "k_tile": "BK", "layers": layers, "strips": strips, "persistent": persistent}
    return Variant(name=name, backend="cuda", label=label, description=description, paper="ladder", family=family,
                   axes=MappingProxyType(defaults), threads=(threads,), shared=shared, constraints=rules,
                   geometry=MappingProxyType(geometry), space=MappingProxyType(space))


# register_tiling (the AMD tutorial): its values, its block tile and the rules its even loads need
_REG_DEFAULT = {"TM": (4,), "TN": (4,), "WTN": (4,), "BWM": (2,), "BWN": (2,), "KT": (16,), "APAD": (4,), "WARP": (32,)}
_REG_THREADS = "WARP * BWM * BWN"
_REG_TILE = ("BWM * (WARP // WTN) * TM", "BWN * WTN * TN")
_REG_RULES = ("WARP % WTN == 0", f"({_REG_TILE[0]} * KT) % ({_REG_THREADS}) == 0",
              f"(KT * {_REG_TILE[1]}) % ({_REG_THREADS}) == 0", f"{_REG_THREADS} <= 1024",
              f"4 * ({_REG_TILE[0]} * (KT + APAD) + KT * {_REG_TILE[1]}) <= 48 * 1024",
              "TM * TN <= 64")  # accumulators: more would spill
_REG_SPACE = {"TM": (2, 4, 8), "TN": (2, 4, 8), "WTN": (2, 4, 8), "BWM": (1, 2, 4), "BWN": (1, 2, 4),
              "KT": (8, 16, 32), "APAD": (0, 4), "WARP": (32, 64)}

# Sørensen's exhaustive space: BLOCKSIZE 32 to 256 by 32, WORKSIZE_M and WORKSIZE_N 1 to 8.
GEMV_SPACE = {"BLOCKSIZE": tuple(range(32, 257, 32)), "WORKSIZE_M": tuple(range(1, 9)), "WORKSIZE_N": tuple(range(1, 9))}

_ALL = (
    _cuda("best_const", "best", "CUDA-Best const",
          "four outputs per thread, block size fixed at compile time, no min() bounds", 2),
    _cuda("best", "best", "CUDA-Best",
          "four outputs per thread a block apart (Algorithm 3), robust min() tile bounds", 2),
    _cuda("interleaved", "interleaved", "CUDA-1IL",
          "double-buffered tiles, next loads overlap current compute (Algorithm 2)"),
    _cuda("unroll_k2", "unroll_k2", "CUDA-C_Unroll", "two k-tiles per barrier, two accumulators"),
    _cuda("shared", "shared", "CUDA-1", "coalesced shared-memory tiles, one output per thread (Algorithm 1)"),
    _cuda("naive", "naive", "CUDA-Naive", "one thread per output, operands from global memory"),
    _cuda("shared_uncoalesced", "shared", "CUDA-1u", "shared-memory tiles loaded with uncoalesced reads"),
    _cuda("shared_padded", "shared", "padding (no border checks)", "CUDA-1 without border checks, run on A and B "
          "zero-padded to multiples of BLOCK (Lameski 2013's approach 1)", paper="lameski2013", unchecked=True),
    _ladder("tile2d", "2D tiling", "2D block tiling, TM x TN register tile per thread",
            {"BM": (128,), "BN": (128,), "BK": (8,), "TM": (8,), "TN": (8,)}, _TILE_SPACE, _TILE_RULES, _TILE_THREADS),
    _ladder("vec4", "2D tiling + float4", "2D tiling, 16-byte global and shared loads, A transposed in shared memory",
            {"BM": (128,), "BN": (128,), "BK": (8,), "TM": (8,), "TN": (8,)}, _TILE_SPACE, _TILE_RULES + _VEC_RULES,
            _TILE_THREADS),
    _ladder("warptile", "warp tiling", "warp tiles of register tiles, float4 loads",
            _WARP_DEFAULT, _WARP_SPACE, _WARP_RULES + ("4 * BK * (BM + BN) <= 48 * 1024",), "THREADS"),
    _ladder("pipelined", "warp tiling + cp.async", "warp tiling fed by a STAGES-deep cp.async pipeline",
            {**_WARP_DEFAULT, "STAGES": (3,)}, {**_WARP_SPACE, "STAGES": (2, 3, 4)},
            _WARP_RULES + ("STAGES >= 2", "4 * STAGES * BK * (BM + BN) <= 48 * 1024"), "THREADS"),
    _ladder("dbuf", "warp tiling + double buffer", "warp tiling, two shared buffers fed through registers "
            "(one barrier per k-tile), split-K over SPLITK grid layers or stream-K (SK), thin remainders as strips",
            _DBUF_DEFAULT, {**_WARP_SPACE, "BK": (8, 16), "SPLITK": (1, 2, 3, 4), "MINB": (1, 2), "VEC4": (0, 1),
                            "STAGE": (0, 1), "STRIP": (0, 4), "SK": (0, 1), "ORDER": (0, 1)},
            _WARP_RULES + ("SPLITK >= 1", "MINB * THREADS <= 1024",
                           # accumulators plus ~60 working registers must fit what MINB blocks leave a thread
                           "WM * WN // 32 + 60 <= 65536 // (MINB * THREADS)",
                           "WM * WN // 32 * BK <= 1024",  # 128 accumulators leave no room for BK = 16
                           "STAGE == 0 or THREADS * TN <= 2 * BK * (BM + 4)",  # the staging fits the A buffers
                           "8 * BK * (BM + 4 + BN) <= 48 * 1024",
                           "STRIP <= 4",  # the col strip gathers STRIP * 2048 floats of B into shared memory
                           "SK == 0 or SPLITK == 1"),  # stream-K splits k itself
            "THREADS", layers="SPLITK", strips="STRIP", persistent="SK * MINB"),
    _ladder("multistage", "multistage cp.async", "cuBLAS's kernel shape: STAGES k-tiles in flight by cp.async "
            "straight into shared memory, A as stored, read as float4s along k",
            _MULTI_DEFAULT, _MULTI_SPACE, _MULTI_RULES, "THREADS", shared=_MULTI_SHARED),
    # -- the AMD tiling tutorial's register tiling (its naive and LDS kernels are naive and shared) --
    Variant(name="register_tiling", backend="cuda", paper="amd-tiling", family="gemm/register_tiling",
            label="register tiling", description="the AMD tutorial's kernel: TM x TN outputs a thread in registers, "
            "(WARP / WTN) x WTN thread tiles a warp, BWM x BWN warps a block, k-tiles of KT, A's tile padded by APAD; "
            "WARP = 32 (NVIDIA) gives a 64 x 32 block tile, 64 the tutorial's AMD wavefront and 128 x 32",
            axes=MappingProxyType(_REG_DEFAULT), threads=(_REG_THREADS,),
            geometry=MappingProxyType({"tile": _REG_TILE, "k_tile": "KT"}), constraints=_REG_RULES,
            space=MappingProxyType(_REG_SPACE)),
    # -- transpose (Lab 3) and its yardstick, the device copy -------------------------------------
    Variant(name="transpose_naive", backend="cuda", op="transpose", paper="lab3", family="transpose/lab3",
            label="Naive GPU", description="the lab's given kernel: 64 x 64 per block, a 1 x 4 strip a thread, "
            "reads coalesced, writes strided, no shared memory", threads=("64", "16"),
            geometry=MappingProxyType({"tile": ("64", "64")})),
    *(Variant(name=f"transpose_{name}", backend="cuda", op="transpose", paper="lab3", family="transpose/lab3",
              label=label, description=description, threads=("32", "8"), geometry=MappingProxyType({"tile": ("32", "32")}))
      for name, label, description in (
          ("shmem", "shmem GPU", "32 x 32 tiles through a [32][33] shared array, a 1 x 4 strip a thread"),
          ("shmem_unpadded", "shmem GPU, [32][32]", "shmem with an unpadded [32][32] array: a 32-way bank conflict"),
          ("optimized", "Optimized GPU", "shmem with its loops unrolled by pragma"))),
    Variant(name="transpose_tiled", backend="cuda", op="transpose", paper="lab3", family="transpose/tiled",
            label="tiled", description="beyond the lab: TILE x TILE tiles, TILE x ROWS threads, PAD floats a row",
            axes=MappingProxyType({"TILE": (32,), "ROWS": (8,), "PAD": (1,)}), threads=("TILE", "ROWS"),
            geometry=MappingProxyType({"tile": ("TILE", "TILE")}),
            constraints=("TILE % ROWS == 0", "TILE * ROWS <= 1024", "4 * TILE * (TILE + PAD) <= 48 * 1024"),
            space=MappingProxyType({"TILE": (16, 32, 64), "ROWS": (1, 2, 4, 8, 16, 32), "PAD": (0, 1)})),
    # -- Lab 3's matrix multiplications (its naive GPU version is `naive`) ----------------------
    *(Variant(name=name, backend="cuda", paper="lab3", family="gemm/lab3", label=label, description=description,
              threads=("32", "8"), geometry=MappingProxyType({"grid": ("k", "m"), "tile": ("8", "32"),
                                                              "accumulates": "1"}))
      for name, label, description in (
          ("matmul_cache", "Cache GPU", "a thread per element of A, walking rows of B and C, atomicAdd into C"),
          ("matmul_shared_cache", "Shared-Cache-Optimized GPU", "matmul_cache with B's rows staged in shared memory"))),
    Variant(name="matmul_shared", backend="cuda", paper="lab3", family="gemm/lab3_shared", label="Shared GPU",
            description="32 x 32 tiles of A and B, one output a thread; PAD = 1 pads A's tile to [32][33]",
            axes=MappingProxyType({"PAD": (0,)}), threads=("32", "32"),
            geometry=MappingProxyType({"tile": ("32", "32")}), space=MappingProxyType({"PAD": (0, 1)})),
    Variant(name="transpose_vec", backend="cuda", op="transpose", paper="lab3", family="transpose/vec",
            label="tiled + vectors", description="beyond the lab: TR x TC tiles moved by VEC-float loads and "
            "stores (float2, float4), TC / VEC x ROWS threads",
            axes=MappingProxyType({"TR": (64,), "TC": (64,), "VEC": (4,), "ROWS": (4,), "PAD": (1,), "GROUP": (1,),
                                   "STREAM": (0,)}),
            threads=("TC // VEC", "ROWS"), geometry=MappingProxyType({"tile": ("TR", "TC")}),
            constraints=("TC % VEC == 0", "TR % VEC == 0", "ROWS <= TR", "TC // VEC * ROWS <= 1024",
                         "TC // VEC * ROWS >= 32", "(TC // VEC * ROWS) % (TR // VEC) == 0",
                         "4 * TR * (TC + PAD) <= 48 * 1024"),
            space=MappingProxyType({"TR": (32, 64, 128), "TC": (32, 64, 128), "VEC": (1, 2, 4),
                                    "ROWS": (1, 2, 4, 8, 16), "PAD": (0, 1), "GROUP": (1, 4, 16, 64),
                                    "STREAM": (0, 1)})),
    Variant(name="transpose_swizzle", backend="cuda", op="transpose", paper="lab3", family="transpose/swizzle",
            label="swizzled 4 x 4", description="beyond the lab: TR x TC tiles of float4 granules, "
            "XOR-swizzled so every 16-byte shared access is conflict-free; 4 x 4 blocks transposed in registers",
            axes=MappingProxyType({"TR": (64,), "TC": (64,), "ROWS": (8,), "GROUP": (1,)}),
            threads=("TC // 4", "ROWS"), geometry=MappingProxyType({"tile": ("TR", "TC")}),
            constraints=("TR % 32 == 0", "TC % 32 == 0", "(TC // 4) & (TC // 4 - 1) == 0", "ROWS <= TR",
                         "TC // 4 * ROWS <= 1024", "TC // 4 * ROWS >= 32", "4 * TR * TC <= 48 * 1024"),
            space=MappingProxyType({"TR": (32, 64, 128), "TC": (32, 64, 128), "ROWS": (2, 4, 8, 16, 32), "GROUP": (1, 4, 16, 64)})),
    Variant(name="transpose_pipe", backend="cuda", op="transpose", paper="lab3", family="transpose/pipe",
            label="tiled + vectors, pipelined", description="beyond the lab: transpose_vec at float4 with TILES "
            "tiles a block, the next tile's loads in flight while the current one is stored; optional 256-byte "
            "L2 fetches (HINT) and diagonal block order (ORDER)",
            axes=MappingProxyType({"TR": (64,), "TC": (64,), "ROWS": (16,), "PAD": (1,), "TILES": (2,), "HINT": (0,),
                                   "ORDER": (0,)}),
            threads=("TC // 4", "ROWS"), geometry=MappingProxyType({"tile": ("TR", "TC * TILES")}),
            constraints=("TR % 4 == 0", "TC % 4 == 0", "TR % ROWS == 0", "TC // 4 * ROWS <= 1024", "TC // 4 * ROWS >= 32",
                         "(TC // 4 * ROWS) % (TR // 4) == 0", "4 * TR * (TC + PAD) <= 48 * 1024"),
            space=MappingProxyType({"TR": (32, 64, 128), "TC": (32, 64, 128), "ROWS": (4, 8, 16, 32), "PAD": (0, 1),
                                    "TILES": (1, 2, 4, 8), "HINT": (0, 1), "ORDER": (0, 1)})),
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
            "workspace's partial sums), as the paper's tuner picks among its 3 implementations",
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
            description="cuBLAS sgemv through CuPy on the same device buffers (column-major, no transposition)"),
    Variant(name="numpy_transpose", backend="numpy", op="transpose", paper="lab3", label="numpy (CPU)",
            description="numpy copy of the transposed view, float32 (the CPU baseline)"),
    *(Variant(name=f"cpu_naive_{op_name}", backend="cpu", op=op, paper="lab3", label="Naive CPU",
              description=f"the lab's naive CPU {what}, single-threaded compiled C (kernels/cpu/naive.c); a size "
              "that would overrun the CPU time budget is a skipped row with its estimate")
      for op_name, op, what in (("matmul", "gemm", "ijk triple loop"), ("transpose", "transpose", "double loop"))),
    Variant(name="memcpy", backend="driver", op="copy", paper="lab3", label="GPU memcpy",
            description="cuMemcpyDtoD of the same bytes on the same stream: the copy bandwidth a transpose is held to"),
    Variant(name="blas", backend="blas", label="BLAS (multicore)",
            description="CPU BLAS sgemm through numpy (float32), threads recorded"),
    Variant(name="cublas", backend="cublas", label="cuBLAS",
            description="cuBLAS sgemm through CuPy on the same device buffers, pedantic pure FP32"),
)

REGISTRY: Mapping[str, Variant] = MappingProxyType({v.name: v for v in _ALL})


def get_variant(name: str) -> Variant:
    try:
        return REGISTRY[name]
    except KeyError:
        raise VariantError(f"unknown variant '{name}'; choose from: {', '.join(REGISTRY)}") from None


def series_label(variant: Variant, params: Params) -> str:
    """Legend text as the paper writes it: "CUDA-Best (16x16)"."""
    block = dict(params).get("BLOCK")
    return f"{variant.label} ({block}x{block})" if block else variant.label


def format_params(params: Params) -> str:
    return ",".join(f"{k}={v}" for k, v in params)


def parse_params(text: str) -> Params:
    """Inverse of format_params ("BLOCK=32" -> (("BLOCK", 32),)); "" means no parameters."""
    if not isinstance(text, str) or not text:
        return ()
    pairs = (item.split("=", 1) for item in text.split(","))
    return tuple(sorted((k, int(v)) for k, v in pairs))


def param_points(variant: Variant, overrides: Mapping[str, tuple[int, ...]] | None = None) -> list[Params]:
    """Every parameter combination of a variant: its axes' defaults, overridden where given.

    Overrides naming an axis the variant lacks are ignored (``--block`` means nothing to BLAS);
    values must be positive integers (or 0, for a switch whose tuning space has 0).
    """
    axes = dict(variant.axes)
    for name, values in (overrides or {}).items():
        if name not in axes:
            continue
        least = 0 if 0 in variant.space.get(name, ()) else 1  # 0 only for on/off switches such as VEC4
        bad = [v for v in values if not isinstance(v, int) or v < least]
        if bad or not values:
            kind = "non-negative" if least == 0 else "positive"
            raise VariantError(f"parameter {name}={bad or values!r} for '{variant.name}': values must be {kind} integers")
        axes[name] = tuple(values)
    names = sorted(axes)
    return [tuple(zip(names, combo)) for combo in itertools.product(*(axes[n] for n in names))]


@lru_cache(maxsize=None)
def tuning_space(variant: Variant) -> list[Params]:
    """Every point of the variant's tuning space that satisfies its constraints, in the order of
    the raw product over the sorted names (a seeded random choice depends on it; cached: callers
    must not modify the list). Built one parameter at a time, each constraint tested as soon as
    its names are bound, so that a failing prefix is not multiplied out: dbuf's 995,328 raw points
    took 5 s as one eval of the constraints' conjunction each, 45 s as one eval per constraint.
    A point is kept when Variant.violated passes it: each constraint on its own, a zero divisor
    failing it, any other error raised (as there)."""
    if not variant.space:
        return []
    names = sorted(variant.space)
    prefixes: list[tuple[dict[str, int], dict[str, int]]] = [({}, {})]  # (values, their positions) bound so far
    for name, tests in _binding_order(variant.space, tuple(variant.constraints)):
        longer = (({**values, name: value}, {**where, name: i})
                  for values, where in prefixes for i, value in enumerate(variant.space[name]))
        prefixes = [(values, where) for values, where in longer if all(holds(values) for holds in tests)]
    prefixes.sort(key=lambda bound: [bound[1][name] for name in names])
    return [tuple((name, values[name]) for name in names) for values, _ in prefixes]


def _binding_order(space: Mapping[str, tuple[int, ...]], constraints: tuple[str, ...]):
    """(name, the tests of the constraints it completes) for every parameter: greedily, the one
    that completes the most constraints next, then the one in the most constraints left, then
    fewer values, so that pruning comes early and free parameters multiply the points last."""
    unbound = {c: set(_compiled(c).co_names) & set(space) for c in constraints}
    order, left = [], sorted(space)
    while left:
        def gain(name):
            return (-sum(names <= {name} for names in unbound.values()),
                    -sum(name in names for names in unbound.values()), len(space[name]), name)
        name = min(left, key=gain)
        left.remove(name)
        done = [c for c, names in unbound.items() if names <= {name}]
        for c in unbound:
            unbound[c] = unbound[c] - {name}
        for c in done:
            del unbound[c]
        order.append((name, [partial(_holds, c) for c in done]))
    return order
