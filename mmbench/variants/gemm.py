"""GEMM's built-in variants (ops/gemm.py is the operation): Zosa 2017's kernels, Lameski 2013's
padded one, the ladder beyond the paper, the AMD tutorial's register tiling, Lab 3's matrix
multiplications, and the baselines (the naive CPU loop, CPU BLAS, cuBLAS).

A CUDA variant's key is also its ``extern "C" __global__`` name in ``kernels/<family>.cu``.
"""

from __future__ import annotations

from types import MappingProxyType

from ..precisions import LAYOUTS, PRECISIONS
from .model import TensorMapSpec, Variant


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
                "WN": (32, 64, 128), "TM": (4, 8, 16), "TN": (4, 8, 16), "THREADS": (64, 128, 256),
                "STAGES": (2, 3, 4), "SPLITK": (1, 2, 3, 4), "MINB": (1, 2)}
# cuBLAS's shape at 4096 on the H200: 256 x 128 x 8, three stages, 8 warps of 64 x 64, 8 x 16 a lane
_MULTI_DEFAULT = {"BM": (256,), "BN": (128,), "BK": (8,), "WM": (64,), "WN": (64,), "TM": (8,), "TN": (16,),
                  "THREADS": (256,), "STAGES": (3,), "SPLITK": (1,), "MINB": (1,)}


# kmajor: multistage's pipeline with A transposed on the way in (every A element by a 4-byte cp.async) and
# a lane's tile in 4 x 4 blocks; the next k's fragments read during this k's products (two sets a lane)
_KMAJOR_SHARED = "4 * STAGES * (BK * (BM + 4) + BK * BN)"
# its copies index A and B with 32-bit products (C's stores with 64-bit ones): past 2**31 elements a shape is skipped
_KMAJOR_INDEXES = ("m * k < 2147483648", "k * n < 2147483648")
_KMAJOR_RULES = (
    "THREADS == (BM // WM) * (BN // WN) * 32", "BM % WM == 0", "BN % WN == 0", "WM % TM == 0", "WN % TN == 0",
    "(WM // TM) * (WN // TN) == 32", "TM % 4 == 0", "TN % 4 == 0", "BK >= 2", "STAGES >= 2",
    "(BM * BK) % THREADS == 0", "(BK * BN // 4) % THREADS == 0", "BK % 2 == 0",  # two sets of fragments
    "THREADS % BK == 0",  # a thread's A copies are whole rows apart
    # a row of B's tile is copied by whole threads, or a thread's copies lie along whole rows
    "THREADS % (BN // 4) == 0 or (BN // 4) % THREADS == 0", "THREADS % BN == 0 or BN % THREADS == 0",
    "BM * BK <= 16 * THREADS", "BK * BN <= 16 * THREADS",  # a thread's copies of a k-tile: a bit each in a mask
    "TM * TN <= 128",  # accumulators, beside two sets of fragments
    "TM * TN + 2 * (TM + TN) + 40 <= 65536 // (MINB * THREADS)",
    f"MINB * {_KMAJOR_SHARED} <= 227 * 1024",
)
_KMAJOR_SPACE = {"BM": (64, 128, 256), "BN": (64, 128, 256), "BK": (8, 16), "WM": (32, 64, 128),
                 "WN": (32, 64, 128), "TM": (4, 8, 16), "TN": (4, 8, 16), "THREADS": (64, 128, 256),
                 "STAGES": (2, 3, 4, 5), "SPLITK": (1, 2, 3, 4), "MINB": (1, 2), "COPY_AT": (0, 1)}
# CUTLASS's tile at 1951 to 2048: 256 x 128 x 8, 8 warps of 64 x 64, 8 x 16 a lane, four stages
_KMAJOR_DEFAULT = {"BM": (256,), "BN": (128,), "BK": (8,), "WM": (64,), "WN": (64,), "TM": (8,), "TN": (16,),
                   "THREADS": (256,), "STAGES": (4,), "SPLITK": (1,), "MINB": (1,), "COPY_AT": (1,)}


def _ladder(name: str, label: str, description: str, defaults: dict, space: dict, rules: tuple, threads: str,
            layers: str = "1", strips: str = "0", shared: str = "0", persistent: str = "0",
            requires: tuple[str, ...] = ()) -> Variant:
    family = "gemm/" + ("warptile" if name == "pipelined" else name)  # pipelined shares warptile.cu's warp tiles
    geometry = {"tile": ("BM", "BN"), "k_tile": "BK", "layers": layers, "strips": strips, "persistent": persistent}
    return Variant(name=name, backend="cuda", label=label, description=description, paper="ladder", family=family,
                   axes=MappingProxyType(defaults), threads=(threads,), shared=shared, constraints=rules,
                   geometry=MappingProxyType(geometry), space=MappingProxyType(space), requires=requires)


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

_KERNELS = (
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
            "(one barrier per k-tile; B by cp.async with VEC4 = 2), split-K over SPLITK grid layers or stream-K "
            "(SK), thin remainders as strips",
            _DBUF_DEFAULT, {**_WARP_SPACE, "BK": (8, 16), "THREADS": (64, 128, 256),  # 64: 2 warps, for mid sizes
                            "SPLITK": (1, 2, 3, 4), "MINB": (1, 2), "VEC4": (0, 1, 2),
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
            "straight into shared memory, A as stored, read as float4s along k; split-K over SPLITK grid layers",
            _MULTI_DEFAULT, _MULTI_SPACE, _MULTI_RULES + ("SPLITK >= 1",), "THREADS", shared=_MULTI_SHARED,
            layers="SPLITK"),
    _ladder("kmajor", "k-major cp.async", "CUTLASS's SIMT kernel shape: every element of A by a 4-byte cp.async, "
            "transposed into shared memory, B by 16 bytes where its rows are aligned, STAGES k-tiles in flight, the "
            "next k's fragments read during this k's products; split-K over SPLITK grid layers",
            _KMAJOR_DEFAULT, _KMAJOR_SPACE, _KMAJOR_RULES + ("SPLITK >= 1",), "THREADS", shared=_KMAJOR_SHARED,
            layers="SPLITK", requires=_KMAJOR_INDEXES),
    # -- the AMD tiling tutorial's register tiling (its naive and LDS kernels are naive and shared) --
    Variant(name="register_tiling", backend="cuda", paper="amd-tiling", family="gemm/register_tiling",
            label="register tiling", description="the AMD tutorial's kernel: TM x TN outputs a thread in registers, "
            "(WARP / WTN) x WTN thread tiles a warp, BWM x BWN warps a block, k-tiles of KT, A's tile padded by APAD; "
            "WARP = 32 (NVIDIA) gives a 64 x 32 block tile, 64 the tutorial's AMD wavefront and 128 x 32",
            axes=MappingProxyType(_REG_DEFAULT), threads=(_REG_THREADS,),
            geometry=MappingProxyType({"tile": _REG_TILE, "k_tile": "KT"}), constraints=_REG_RULES,
            space=MappingProxyType(_REG_SPACE)),
)

_LAB3 = (
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
)

# The simple tensor-core GEMM of the 16-bit types (the fast ladder is another study's): any shape, any
# layout; block tile (16 WARPS_M FRAG_M) x (16 WARPS_N FRAG_N), BK-deep stages.
_WMMA_TILE = ("16 * WARPS_M * FRAG_M", "16 * WARPS_N * FRAG_N")
_TENSOR_CORES = (
    Variant(name="wmma_gemm", backend="cuda", paper="", family="gemm/wmma", label="WMMA (tensor cores)",
            description="the simple tensor-core GEMM of fp16 and bf16 at any shape and layout: WMMA fragments "
            "from BK-deep slices of A and B staged in shared memory as stored, float accumulation, C rounded once",
            axes=MappingProxyType({"WARPS_M": (2,), "WARPS_N": (2,), "FRAG_M": (2,), "FRAG_N": (2,), "BK": (32,)}),
            threads=("32 * WARPS_M * WARPS_N",), geometry=MappingProxyType({"tile": _WMMA_TILE, "k_tile": "BK"}),
            constraints=("BK % 16 == 0", "WARPS_M * WARPS_N <= 16",
                         # both slices at their larger stored form, 2-byte elements, and a warp's 16 x 16 floats
                         f"2 * ({_WMMA_TILE[0]} + 8 + {_WMMA_TILE[1]} + 8) * (BK + 8) + 1024 * WARPS_M * WARPS_N "
                         "<= 48 * 1024"),
            space=MappingProxyType({"WARPS_M": (1, 2, 4), "WARPS_N": (1, 2, 4), "FRAG_M": (1, 2, 4),
                                    "FRAG_N": (1, 2, 4), "BK": (16, 32, 64)}),
            dtypes=("fp16", "bf16"), layouts=tuple(LAYOUTS)),
)

# -- the tensor-core ladder (its study: configs/tensor-cores.toml): BF16 and FP16 GEMMs with K-major
# operands (layout nt), each step a technique; k a multiple of 8 (16-byte rows for cp.async and TMA).
_SHARED_LIMIT = "227 * 1024"  # dynamic shared memory a block may opt in to on sm_90
_TC_FORMS = {"dtypes": ("bf16", "fp16"), "layouts": ("nt",), "requires": ("k % 8 == 0",)}


def _one_of(name: str, values: tuple[int, ...]) -> str:
    """A constraint that the parameter takes one of the values: "(BN == 64 or BN == 128)"."""
    return "(" + " or ".join(f"{name} == {v}" for v in values) + ")"


# The wgmma widths (common/hopper.cuh's WGMMA_TILE) whose tiles every step stores in whole 64-column boxes;
# tc_ws also takes 144, 160, 168 and 176 columns (its TMA store boxes 128 of them and stores the rest directly).
_WGMMA_WIDTHS = (64, 128, 192, 256)
_WGMMA_N = _one_of("BN", _WGMMA_WIDTHS)
_WS_WGMMA_N = _one_of("BN", _WGMMA_WIDTHS + (144, 160, 168, 176))
_MMA_SHARED = "STAGES * (BM + BN) * (BK + 8) * 2"
_TMA_SHARED = "STAGES * (BM + BN) * 128 + 1024"  # 64 k of 2 bytes a row, and room to align to 1024
_WS_ROWS = "64 * WM * CONSUMERS"
_WS_B_SHARE = "((BN // CLUSTER + 7) // 8 * 8)"  # a block's rows of B's box: whole 8-row swizzle atoms (tc_ws.cu)
_WS_SHARED = (f"STAGES * ({_WS_ROWS} + CLUSTER * {_WS_B_SHARE}) * 128 + 1024"
              f" + TMA_STORE * {_WS_ROWS} * BN * 2")  # + C's staging
_WS_AXES = {"CONSUMERS": (2,), "WM": (1,), "BN": (256,), "STAGES": (4,)}
_WS_SPACE = {"CONSUMERS": (1, 2), "WM": (1, 2), "BN": (64, 128, 144, 160, 168, 176, 192, 256),
             "STAGES": (2, 3, 4, 5, 6)}
_WS_RULES = (_WS_WGMMA_N, "WM * BN // 2 <= 128", f"{_WS_SHARED} <= {_SHARED_LIMIT}",
             "CLUSTER == 1 or WALK == 1",  # a cluster's blocks walk tiles together
             "STREAMK == 0 or WALK == 1")  # stream-K shares out the walkers' last wave
_WS_SWITCHES = {"WALK": 0, "OVERLAP": 0, "CLUSTER": 1, "ORDER": 0, "TMA_STORE": 0, "STREAMK": 0}


def _tc_ws(name: str, label: str, description: str, stages: int = 4, fp8: bool = False, **switches: int) -> Variant:
    """A step of tc_ws.cu: warp specialization, and the switches of the later steps (fixed; the tile,
    the ring and, from step (g), the tile order are tuned). TMA stores take C's rows 16-byte aligned."""
    fixed = {**_WS_SWITCHES, **switches}
    # the switches sit in the space at their one value: the constraints name them
    # from step (g): the tile order, and stream-K for the last wave, are tuned
    tuned = {"ORDER": (1, 2, 4, 8, 16), "STREAMK": (0, 1)} if fixed["ORDER"] else {}
    space = {**_WS_SPACE, **{k: (v,) for k, v in fixed.items()}, **tuned}
    c_map = (TensorMapSpec("C", ("64", "64")),) if fixed["TMA_STORE"] else ()  # C: 16-bit (bfloat16 at FP8)
    k_row = "128" if fp8 else "64"  # elements in a 128-byte row
    forms = {**_TC_FORMS, "requires": ("k % 16 == 0",) if fp8 else _TC_FORMS["requires"]}
    forms["requires"] += ("n % 8 == 0",) if fixed["TMA_STORE"] else ()
    if fp8:
        forms["dtypes"] = ("fp8e4m3",)
    return Variant(name=name, backend="cuda", paper="", family="gemm/tc_ws", entry="tc_ws", label=label,
                   description=description,
                   axes=MappingProxyType({**_WS_AXES, "STAGES": (stages,), **{k: (v,) for k, v in fixed.items()}}),
                   threads=("128 * (CONSUMERS + 1)",), shared=_WS_SHARED,
                   geometry=MappingProxyType({"tile": (_WS_ROWS, "BN"), "k_tile": k_row, "tile_walkers": "WALK",
                                               "stream_k": "STREAMK * CONSUMERS"}),  # a flag a consumer
                   constraints=_WS_RULES, space=MappingProxyType(space), target="sm_90a",
                   cluster=("CLUSTER", "1", "1"),
                   tensor_maps=(TensorMapSpec("A", (_WS_ROWS, k_row)), TensorMapSpec("B", (_WS_B_SHARE, k_row)),
                                *c_map), **forms)


_TC_LADDER = (
    Variant(name="tc_mma", backend="cuda", paper="", family="gemm/tc_mma", label="(a) mma.sync + cp.async",
            description="step (a): mma.sync m16n8k16 on fragments read by ldmatrix from padded shared rows, STAGES "
            "k-tiles in flight by cp.async; WARPS_M x WARPS_N warps a BM x BN tile",
            axes=MappingProxyType({"BM": (128,), "BN": (128,), "BK": (32,), "WARPS_M": (2,), "WARPS_N": (2,),
                                   "STAGES": (4,)}),
            threads=("32 * WARPS_M * WARPS_N",), shared=_MMA_SHARED,
            geometry=MappingProxyType({"tile": ("BM", "BN"), "k_tile": "BK"}),
            constraints=("BM % (16 * WARPS_M) == 0", "BN % (16 * WARPS_N) == 0", "BK % 16 == 0", "STAGES >= 2",
                         # a warp's accumulators (BM BN / 32 / warps floats a thread) leave room for fragments
                         "BM * BN // (32 * WARPS_M * WARPS_N) <= 128", f"{_MMA_SHARED} <= {_SHARED_LIMIT}"),
            space=MappingProxyType({"BM": (64, 128, 256), "BN": (64, 128, 256), "BK": (32, 64),
                                    "WARPS_M": (1, 2, 4), "WARPS_N": (1, 2, 4), "STAGES": (2, 3, 4, 5)}),
            **_TC_FORMS),
    Variant(name="tc_tma", backend="cuda", paper="", family="gemm/tc_tma", label="(b) TMA + wgmma",
            description="step (b): TMA copies A's and B's boxes into a ring of STAGES slots (an mbarrier each); "
            "one warpgroup runs m64nBNk16 wgmmas on a BM x BN tile and waits for them before a slot is refilled",
            axes=MappingProxyType({"BM": (128,), "BN": (128,), "STAGES": (4,)}), threads=("128",),
            shared=_TMA_SHARED, geometry=MappingProxyType({"tile": ("BM", "BN"), "k_tile": "64"}),
            constraints=("BM == 64 or BM == 128", _WGMMA_N, "BM // 64 * BN // 2 <= 128",
                         f"{_TMA_SHARED} <= {_SHARED_LIMIT}"),
            space=MappingProxyType({"BM": (64, 128), "BN": (64, 128, 256), "STAGES": (2, 3, 4, 5, 6)}),
            target="sm_90a", tensor_maps=(TensorMapSpec("A", ("BM", "64")), TensorMapSpec("B", ("BN", "64"))),
            **_TC_FORMS),
    _tc_ws("tc_ws", "(c) warp specialization", "step (c): a producer warpgroup issues the TMA copies "
           "(40 registers), CONSUMERS warpgroups run the wgmmas of WM x 64 rows each; full and empty mbarriers a "
           "slot"),
    _tc_ws("tc_persistent", "(d) persistent", "step (d): step (c) on a grid of one block an SM that walks C's "
           "tiles, the producer running on into the next tile while the consumers store", WALK=1),
    _tc_ws("tc_overlap", "(e) wgmmas in flight", "step (e): step (d) with one k-tile's wgmmas kept in flight "
           "(wait_group 1) and each slot freed as soon as the wgmmas that read it end", WALK=1, OVERLAP=1),
    _tc_ws("tc_cluster", "(f) 2-block clusters", "step (f): step (e) in clusters of two blocks on vertically "
           "adjacent tiles, each loading half of their shared B box and multicasting it to both", WALK=1,
           OVERLAP=1, CLUSTER=2),
    _tc_ws("tc_tiles", "(g) tile order, TMA stores", "step (g): step (f) walking ORDER rows of tiles at a time "
           "(tiles in flight share their boxes in L2), C staged in shared memory and stored by TMA", stages=3, WALK=1,
           OVERLAP=1, CLUSTER=2, ORDER=8, TMA_STORE=1),
    _tc_ws("tc_fp8", "FP8 (e4m3) of step (g)", "step (g) at FP8 e4m3: wgmma m64nBNk32 on 128-byte rows of 128 "
           "elements, float accumulation, C bfloat16 scaled by the per-tensor scales", stages=3, fp8=True, WALK=1,
           OVERLAP=1, CLUSTER=2, ORDER=8, TMA_STORE=1),
)

# {place in the registry's order: entries}; mmbench/variants/registry.py says what a place is
BUILT_IN = {
    1: _KERNELS,
    3: _LAB3,
    7: (Variant(name="cpu_naive_matmul", backend="cpu", paper="lab3", label="Naive CPU",
                description="the lab's naive CPU ijk triple loop, single-threaded compiled C (kernels/cpu/naive.c); "
                "a size that would overrun the CPU time budget is a skipped row with its estimate"),),
    9: (Variant(name="blas", backend="blas", label="BLAS (multicore)",
                description="CPU BLAS sgemm through numpy (float32), threads recorded"),
        Variant(name="cublas", backend="cublas", label="cuBLAS",
                description="the vendor library on the same device buffers at the point's precision and layout: "
                "cuBLAS SGEMM in pedantic pure FP32 (fp32) and DGEMM (fp64) through CuPy, cuBLASLt's matmul "
                "through nvmath-python (tf32, fp16, bf16, fp8)", dtypes=tuple(PRECISIONS), layouts=tuple(LAYOUTS))),
    10: _TENSOR_CORES + _TC_LADDER,
}
