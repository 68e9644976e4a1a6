"""The transpose and copy operations on the CPU: shapes, work, the exact check, the CPU baseline."""

import numpy as np
import pytest
from click.testing import CliRunner

from mmbench.cli import main
from mmbench.ops import get_op
from mmbench.ops.transpose import COPY, TRANSPOSE, check_exact
from mmbench.results import read_results
from mmbench.sizes import Shape


def test_shapes_have_two_dimensions_and_the_work_is_bytes_moved():
    assert TRANSPOSE.parse_sizes("8192,33x4097") == [Shape(8192, 8192, 0), Shape(33, 4097, 0)]
    s = Shape(33, 4097, 0)
    assert TRANSPOSE.flops(s) == 0 and TRANSPOSE.min_bytes(s) == 2 * 4 * 33 * 4097 == COPY.min_bytes(s)
    assert TRANSPOSE.output_shape(s) == (4097, 33) and COPY.output_shape(s) == (33, 4097)
    assert TRANSPOSE.size_class(Shape(8192, 8192, 0)) == "8192" and TRANSPOSE.size_class(Shape(4097, 31, 0)) == "256u"
    assert get_op("transpose") is TRANSPOSE and get_op("copy") is COPY


@pytest.mark.parametrize("shape", [Shape(1, 1, 0), Shape(1, 7, 0), Shape(7, 1, 0), Shape(33, 65, 0)], ids=str)
def test_the_exact_check(shape):
    inputs = TRANSPOSE.make_inputs(shape, np.random.default_rng(0))
    assert (inputs.a >= 1).all() and inputs.reference.shape == (shape.n, shape.m)
    good = np.ascontiguousarray(inputs.a.T)
    assert check_exact(good, inputs.reference).ok
    bad = good.copy()
    bad.flat[-1] = np.nan  # an unwritten element
    check = check_exact(bad, inputs.reference)
    assert not check.ok and "1 not written" in check.reason
    if shape.m > 1 and shape.n > 1:  # the input itself is not its transpose
        assert not check_exact(inputs.a.reshape(good.shape), inputs.reference).ok
    assert not check_exact(good.reshape(-1), inputs.reference).ok  # another shape


def test_a_cpu_transpose_run_reports_gb_per_s_and_no_gflops(tmp_path):
    out = tmp_path / "t.csv"
    result = CliRunner().invoke(main, ["run", "-v", "numpy_transpose", "-s", "64,1x100,33x7", "--runs", "2",
                                       "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "GB/s" in result.output
    df = read_results(out)
    assert (df.op == "transpose").all() and (df.status == "ok").all() and (df.k == 0).all()
    assert df.gflops_mean.isna().all() and (df.gbytes_per_s > 0).all()
    row = df[df.m == 33].iloc[0]
    assert row.gbytes_per_s == pytest.approx(8 * 33 * 7 / (row.time_ms_median * 1e6), rel=1e-12)


def test_a_gemm_spec_with_two_dimensions_is_refused_for_gemm_variants():
    result = CliRunner().invoke(main, ["run", "-v", "numpy_transpose,blas", "-s", "33x7", "--dry-run"])
    assert result.exit_code == 2 and "three dimensions, MxNxK" in result.output


@pytest.mark.parametrize("tr,tc,rows,ok", [(64, 64, 32, True), (34, 64, 2, False), (64, 66, 16, False),
                                           (128, 128, 16, False), (64, 64, 3, False)])
def test_transpose_pipe_builds_only_whole_float4_tiles_that_fit(tr, tc, rows, ok):
    """transpose_pipe moves float4s: a tile's rows and columns are multiples of 4 (else stores are
    misaligned and tile rows go unwritten), its threads divide it, and it fits 48 KiB of shared memory."""
    from mmbench.variants import REGISTRY

    params = (("HINT", 0), ("ORDER", 0), ("PAD", 1), ("ROWS", rows), ("TC", tc), ("TILES", 1), ("TR", tr))
    assert (REGISTRY["transpose_pipe"].problem(params) is None) == ok
