"""launch_ex (no GPU needed for these): arguments laid out as nvcc lays out a kernel's parameters,
what a tensor map can describe, grids rounded to whole clusters; the GEMM model of the kernels that
launch through it (stored shapes, the tile walkers' grid) and the variant fields that send them there."""

from __future__ import annotations

import numpy as np
import pytest

from mmbench.launch_ex import TENSOR_MAP_BYTES, cluster_grid, pack_arguments, tensor_map_problem
from mmbench.ops.gemm import launch_geometry, stored_dims, stream_k_workspace, tile_walker_grid
from mmbench.sizes import Shape
from mmbench.variants import REGISTRY, param_points


def _map(fill: int) -> np.void:
    return np.frombuffer(bytes([fill]) * TENSOR_MAP_BYTES, dtype=np.dtype((np.void, TENSOR_MAP_BYTES)))[0]


def test_tensor_maps_sit_on_64_bytes_and_the_rest_on_their_own_alignment():
    packed = pack_arguments([np.int32(7), _map(1), _map(2), 0x1234, np.int32(5), np.float32(1.5), np.float64(2.0)])
    # int32 at 0; a map at 64 (not 4), the next at 192; a pointer at 320; int32 328; float 332; double 336
    assert packed.offsets == (0, 64, 192, 320, 328, 332, 336)
    raw = packed.storage.tobytes()
    assert raw[64:192] == bytes([1]) * 128 and raw[192:320] == bytes([2]) * 128
    assert int.from_bytes(raw[320:328], "little") == 0x1234
    assert np.frombuffer(raw[332:336], np.float32)[0] == 1.5 and np.frombuffer(raw[336:344], np.float64)[0] == 2.0
    assert packed.storage.ctypes.data % 64 == 0
    assert list(packed.pointers) == [packed.storage.ctypes.data + o for o in packed.offsets]


@pytest.mark.parametrize("rows,cols,itemsize,box,swizzle,needle", [
    (64, 33, 2, (64, 64), 128, "a row of 33 elements is 66 bytes"),
    (64, 64, 2, (64, 128), 128, "wider than its 128-byte swizzle"),
    (64, 64, 2, (300, 64), 128, "each side 1 to 256"),
    (64, 64, 2, (64, 4), 0, "not a multiple of 16"),
    (64, 64, 2, (64, 64), 96, "swizzle 96"),
])
def test_a_tensor_map_tma_cannot_make_is_named(rows, cols, itemsize, box, swizzle, needle):
    assert needle in tensor_map_problem(rows, cols, itemsize, box, swizzle)


def test_a_tensor_map_of_the_ladder_is_fine():
    assert tensor_map_problem(4095, 4096, 2, (128, 64), 128) is None
    assert tensor_map_problem(37, 8, 2, (256, 64), 128) is None  # the box may exceed the matrix: zeros


def test_grids_round_up_to_whole_clusters():
    assert cluster_grid((33, 7, 1), (2, 1, 1)) == (34, 7, 1)
    assert cluster_grid((33, 7, 1), (1, 4, 1)) == (33, 8, 1)


@pytest.mark.parametrize("layout,a,b", [("nn", (5, 7), (7, 3)), ("nt", (5, 7), (3, 7)), ("tn", (7, 5), (7, 3)),
                                         ("tt", (7, 5), (3, 7))])
def test_a_gemm_buffer_is_stored_as_its_layout_says(layout, a, b):
    shape = Shape(5, 3, 7)
    assert (stored_dims("A", shape, layout), stored_dims("B", shape, layout), stored_dims("C", shape, layout)) \
        == (a, b, (5, 3))


def test_the_tensor_core_ladder_launches_through_cuda_python_where_it_takes_tensor_maps():
    assert not REGISTRY["tc_mma"].launches_ex and not REGISTRY["wmma_gemm"].launches_ex
    for name in ("tc_tma", "tc_ws", "tc_persistent", "tc_overlap"):
        v = REGISTRY[name]
        assert v.launches_ex and v.target == "sm_90a" and [t.buffer for t in v.tensor_maps] == ["A", "B"]
        assert v.layouts == ("nt",) and v.requires == ("k % 8 == 0",)


def test_tile_walkers_get_a_grid_of_their_blocks_per_sm_capped_by_the_tiles():
    walker, fixed = REGISTRY["tc_persistent"], REGISTRY["tc_ws"]
    params = param_points(walker)[0]  # 128 x 256 tiles
    _, grid = launch_geometry(walker, params, Shape(4096, 4096, 4096))
    assert grid == (16, 32, 1)
    assert tile_walker_grid(walker, params, grid, 132) == (132, 1, 1)
    assert tile_walker_grid(walker, params, (2, 3, 1), 132) == (6, 1, 1)
    assert tile_walker_grid(fixed, param_points(fixed)[0], grid, 132) == grid


def test_stream_k_walkers_fill_the_gpu_and_take_a_workspace_of_flags_and_a_float_tile_a_block():
    """Stream-K shares a last wave out over every block the GPU holds, however few the tiles; its
    workspace: a 4-byte flag a block and consumer (256-byte aligned), then a 4-byte sum a tile element a
    block, of which only the flags are zeroed (the kernel lowers each flag it raised)."""
    walker = REGISTRY["tc_tiles"]
    params = tuple(sorted({**dict(param_points(walker)[0]), "STREAMK": 1}.items()))
    assert dict(param_points(walker)[0])["STREAMK"] == 0 and not walker.violated(params)
    assert tile_walker_grid(walker, params, (2, 3, 1), 132) == (132, 1, 1)

    class Recorder:
        def __init__(self):
            self.calls = []

        def alloc(self, nbytes):
            self.calls.append(("alloc", nbytes))
            return 1 << 20

        def zero_bytes_async(self, buf, nbytes):
            self.calls.append(("zero", nbytes))

    gpu = Recorder()
    assert stream_k_workspace(gpu, walker, params, 132) == 1 << 20
    rows, cols = 64 * 1 * 2, 256  # 64 WM CONSUMERS x BN at the defaults
    assert gpu.calls == [("alloc", 1280 + 132 * rows * cols * 4), ("zero", 1280)]  # 132 x 2 flags: 1056 -> 1280


def test_only_the_last_step_and_its_fp8_form_tune_stream_k():
    for name in ("tc_ws", "tc_persistent", "tc_overlap", "tc_cluster"):
        assert REGISTRY[name].space["STREAMK"] == (0,)
    for name in ("tc_tiles", "tc_fp8"):
        assert REGISTRY[name].space["STREAMK"] == (0, 1)
        unwalked = {**dict(param_points(REGISTRY[name])[0]), "STREAMK": 1, "WALK": 0, "CLUSTER": 1}
        assert REGISTRY[name].violated(tuple(sorted(unwalked.items()))) == ["STREAMK == 0 or WALK == 1"]


@pytest.mark.parametrize("name", ["tc_ws", "tc_persistent", "tc_overlap", "tc_cluster", "tc_tiles", "tc_fp8"])
def test_the_boxes_bring_the_bytes_each_slot_expects(name):
    """tc_ws.cu's producer expects (A_SLOT + B_SLOT) elements a slot: A's box of TILE_M rows and, from every
    block of the cluster, B's share of BN / CLUSTER rows rounded up to whole 8-row swizzle atoms (88 of
    168 in a cluster of two), each row 128 bytes. Boxes declared otherwise would leave the barrier waiting
    for bytes that never come: a hang, not a wrong row. The slots in shared memory hold every share."""
    from mmbench.precisions import PRECISIONS
    from mmbench.variants.model import evaluate
    from mmbench.variants import tuning_space

    v = REGISTRY[name]
    width = PRECISIONS[v.dtypes[0]].a_type.itemsize
    maps = {t.buffer: t for t in v.tensor_maps}
    for params in tuning_space(v):
        p = dict(params)
        a_rows, a_cols = (evaluate(e, params) for e in maps["A"].box)
        b_rows, b_cols = (evaluate(e, params) for e in maps["B"].box)
        assert a_rows == 64 * p["WM"] * p["CONSUMERS"] and b_rows % 8 == 0, params
        assert 0 <= b_rows * p["CLUSTER"] - p["BN"] < 8 * p["CLUSTER"], params
        assert a_cols * width == b_cols * width == 128, params
        assert evaluate(v.shared, params) >= p["STAGES"] * (a_rows + b_rows * p["CLUSTER"]) * 128, params


def test_a_kernel_launched_in_clusters_or_with_tensor_maps_is_skipped_before_sm_90():
    from mmbench import source

    assert "sm_90 or later" in source.target_problem(REGISTRY["tc_tiles"], "sm_80")
    assert source.target_problem(REGISTRY["tc_tiles"], "sm_90") is None
    assert source.target_problem(REGISTRY["tc_mma"], "sm_80") is None


def test_a_runs_metadata_names_the_versions_of_what_launches_and_checks_its_kernels():
    from mmbench.environment import package_versions

    assert {"pycuda", "cuda-bindings", "nvmath-python", "cupti-python", "ml_dtypes"} <= set(package_versions())
