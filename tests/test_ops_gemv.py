"""GEMV on the CPU: the reference and its check, the work, the mesh, the launch grid."""

import numpy as np
import pytest

from mmbench.ops import get_op
from mmbench.ops.gemv import MESH_CELLS, MESH_MAX, adds_into_y, cell_points, launch_grid, mesh_cell
from mmbench.sizes import Shape
from mmbench.variants import REGISTRY, param_points

GEMV = get_op("gemv")


def test_work_pins_its_formulas():
    s = Shape(1000, 37, 0)
    assert GEMV.flops(s) == 2 * 1000 * 37 and GEMV.min_bytes(s) == 4 * (1000 * 37 + 1000 + 37)
    assert GEMV.parse_sizes("1000x37") == [s] and GEMV.parse_sizes("33") == [Shape(33, 33, 0)]


@pytest.mark.parametrize("m,n", [(1, 1), (1, 4097), (4097, 1), (33, 65), (997, 1009)])
def test_a_float32_gemv_passes_and_one_wrong_element_fails(m, n):
    inputs = GEMV.make_inputs(Shape(m, n, 0), np.random.default_rng(1))
    assert inputs.a.shape == (n, m) and inputs.x.shape == (n,)  # A column-major: column j is row j
    a = inputs.a.T  # A, m x n
    y = np.zeros(m, np.float32)
    for j in range(n):  # a float32 sum in another order than BLAS's
        y += a[:, j] * inputs.x[j]
    assert GEMV.check(y, inputs).ok
    wrong = y.copy()
    wrong[m // 2] += 2 * inputs.bound[m // 2] + 1e-6  # past the float32 bound of that element
    assert not GEMV.check(wrong, inputs).ok
    unwritten = y.copy()
    unwritten[-1] = np.nan
    check = GEMV.check(unwritten, inputs)
    assert not check.ok and "not finite" in check.reason


def test_reduced_precision_fails():
    inputs = GEMV.make_inputs(Shape(512, 4096, 0), np.random.default_rng(2))
    half = (inputs.a.T.astype(np.float16).astype(np.float64) @ inputs.x.astype(np.float16).astype(np.float64))
    assert not GEMV.check(half.astype(np.float32), inputs).ok


def test_mesh_cells_and_their_points():
    assert mesh_cell(1, 1) == (0, 0) and mesh_cell(MESH_MAX, MESH_MAX) == (MESH_CELLS - 1, MESH_CELLS - 1)
    for i in range(MESH_CELLS):
        points = cell_points(i, MESH_CELLS - 1 - i)
        assert 1 <= len(points) <= 9 and all(mesh_cell(p.m, p.n) == (i, MESH_CELLS - 1 - i) for p in points)
    assert len(cell_points(12, 12)) == 9  # a 3 x 3 grid where the cell is wide enough
    assert GEMV.size_class(Shape(1000, 37, 0)) == "cell11x06"


def test_launch_grid_and_when_y_is_zeroed():
    s = Shape(1000, 3000, 0)
    row, split = REGISTRY["gemv_row"], REGISTRY["gemv_split"]
    assert launch_grid(row, (("BLOCKSIZE", 128),), s) == (8, 1, 1) and not adds_into_y(row, (("BLOCKSIZE", 128),), s)
    p = (("BLOCKSIZE", 128), ("WORKSIZE_N", 4))
    assert launch_grid(split, p, s) == (8, 6, 1) and adds_into_y(split, p, s)
    assert not adds_into_y(split, p, Shape(1000, 512, 0))  # one column of blocks: stored, not added
    v = REGISTRY["gemv_versatile"]
    assert launch_grid(v, param_points(v, {"WORKSIZE_M": (3,)})[0], s) == (3, 6, 1)


def test_gemv_size_specs_mesh_cells_and_families():
    from mmbench.ops.gemv import mesh_shapes
    from mmbench.sizes import SizeSpecError

    assert GEMV.parse_sizes("cell:12x3") == cell_points(12, 3)
    assert GEMV.parse_sizes("tall:10:40:x2,square:10,wide:10") == [Shape(1000, 10, 0), Shape(2000, 20, 0),
                                                                    Shape(4000, 40, 0), Shape(100, 100, 0),
                                                                    Shape(10, 1000, 0)]
    whole, capped = GEMV.parse_sizes("mesh"), GEMV.parse_sizes("mesh:64")
    assert whole == mesh_shapes() and set(capped) < set(whole)
    assert max(4 * s.m * s.n for s in capped) <= 64 * 2**20 and max(4 * s.m * s.n for s in whole) <= 4096 * 2**20
    assert {mesh_cell(s.m, s.n) for s in capped} < {mesh_cell(s.m, s.n) for s in whole}  # whole cells left out
    for bad in ("cell:24x0", "cell:3", "mesh:0", "tall:", "bogus"):
        with pytest.raises(SizeSpecError, match="size spec"):
            GEMV.parse_sizes(bad)


def test_columns_and_wide_kernels_launch_model():
    from mmbench.ops.gemv import uses_workspace

    s = Shape(20, 5000, 0)
    cols, wide = REGISTRY["gemv_columns"], REGISTRY["gemv_wide"]
    p = (("BLOCKSIZE", 128), ("WORKSIZE_N", 4))
    assert launch_grid(cols, p, s) == (1, 10, 1) and adds_into_y(cols, p, s)  # one block row covers all rows
    assert GEMV.entries(cols) == ("gemv_columns",) and not uses_workspace(cols, p)
    q = param_points(wide)[0]
    assert uses_workspace(wide, q) and GEMV.entries(wide) == ("gemv_wide", "gemv_wide_reduce")
    assert not adds_into_y(wide, q, s)  # partial sums go to the workspace, not into y


def test_the_tuned_kernel_takes_each_designs_launch_model():
    """gemv_tuned's KERNEL picks versatile (0), columns (1) or wide (2): each with that kernel's grid
    and zeroing; wide reduces in the same launch (the workspace is its last argument, no second
    kernel); the tuner's space is the paper's 3 x 8 x 8 x 8 = 1536 kernels."""
    from mmbench.ops.gemv import uses_workspace, workspace_words
    from mmbench.variants import tuning_space

    tuned, s = REGISTRY["gemv_tuned"], Shape(1000, 5000, 0)
    base = {"BLOCKSIZE": 128, "WORKSIZE_M": 2, "WORKSIZE_N": 4}
    for kernel, twin in ((0, "gemv_versatile"), (1, "gemv_columns"), (2, "gemv_wide")):
        p = tuple(sorted({**base, "KERNEL": kernel}.items()))
        q = tuple(sorted((k, v) for k, v in base.items() if k in REGISTRY[twin].space))
        assert launch_grid(tuned, p, s) == launch_grid(REGISTRY[twin], q, s)
        assert adds_into_y(tuned, p, s) == adds_into_y(REGISTRY[twin], q, s)
        assert not uses_workspace(tuned, p)
    assert launch_grid(tuned, (("BLOCKSIZE", 128), ("KERNEL", 1), ("WORKSIZE_M", 2), ("WORKSIZE_N", 4)), s) == (1, 10, 1)
    assert GEMV.entries(tuned) == ("gemv_tuned",) and "workspace_arg" in tuned.geometry
    assert GEMV.entries(tuned, "fp16") == ("gemv_tuned", "gemv_tuned_store") == GEMV.entries(tuned, "bf16")
    assert GEMV.entries(tuned, "fp64") == ("gemv_tuned",)
    assert workspace_words(1000, 5000) == 1000 * 157 + 32  # partial sums of 32-column blocks, then counts
    assert len(tuning_space(tuned)) == 1536


def test_the_tuner_leaves_fig_2e_untimed_where_m_exceeds_blocksize():
    """Threads along columns (KERNEL 1, the paper's Fig. 2e) is the design for m <= BLOCKSIZE: the
    batched tuner skips it on taller A, and times every other design everywhere."""
    tuned = REGISTRY["gemv_tuned"]
    p = lambda kernel, bs: (("BLOCKSIZE", bs), ("KERNEL", kernel), ("WORKSIZE_M", 1), ("WORKSIZE_N", 4))  # noqa: E731
    assert GEMV.tuning_skip(tuned, p(1, 128), Shape(128, 5000, 0)) is None
    assert "m <= BLOCKSIZE" in GEMV.tuning_skip(tuned, p(1, 128), Shape(129, 5000, 0))
    assert GEMV.tuning_skip(tuned, p(0, 32), Shape(100000, 10, 0)) is None
    assert GEMV.tuning_skip(tuned, p(2, 32), Shape(100000, 10, 0)) is None
    assert GEMV.tuning_skip(REGISTRY["gemv_columns"], (("BLOCKSIZE", 32), ("WORKSIZE_N", 1)), Shape(9999, 9, 0)) is None
