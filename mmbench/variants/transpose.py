"""The transpose's built-in variants (ops/transpose.py is the operation, with the copy that is its
yardstick): Lab 3's kernels, those beyond the lab, and the baselines (numpy, the naive CPU loop,
the device copy).
"""

from __future__ import annotations

from types import MappingProxyType

from .model import Variant

# The precisions the typed transposes and the copy take: elements of 4, 8, 2 and 1 bytes (ops/transpose.py)
MOVED = ("fp32", "fp64", "fp16", "bf16", "fp8e4m3", "fp8e5m2")

_LAB3 = (
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
            space=MappingProxyType({"TILE": (16, 32, 64), "ROWS": (1, 2, 4, 8, 16, 32), "PAD": (0, 1)}),
            dtypes=MOVED),
)

_BEYOND_LAB3 = (
    Variant(name="transpose_vec", backend="cuda", op="transpose", paper="lab3", family="transpose/vec",
            label="tiled + vectors", description="beyond the lab: TR x TC tiles moved by VEC-element loads and "
            "stores (float2, float4 at fp32), TC / VEC x ROWS threads; elements of 1 to 8 bytes", dtypes=MOVED,
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
)

# {place in the registry's order: entries}; mmbench/variants/registry.py says what a place is
BUILT_IN = {
    2: _LAB3,
    4: _BEYOND_LAB3,
    6: (Variant(name="numpy_transpose", backend="numpy", op="transpose", paper="lab3", label="numpy (CPU)",
                description="numpy copy of the transposed view, float32 (the CPU baseline)"),),
    8: (Variant(name="cpu_naive_transpose", backend="cpu", op="transpose", paper="lab3", label="Naive CPU",
                description="the lab's naive CPU double loop, single-threaded compiled C (kernels/cpu/naive.c); a "
                "size that would overrun the CPU time budget is a skipped row with its estimate"),
        Variant(name="memcpy", backend="driver", op="copy", paper="lab3", label="GPU memcpy",
                description="cuMemcpyDtoD of the same bytes on the same stream: the copy bandwidth a transpose is "
                "held to", dtypes=MOVED)),
}
