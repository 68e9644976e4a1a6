"""Variant files that say what their kernels take: precisions and layouts, typed scalar arguments
(float alpha and beta, FP8's scales), and the shapes they take (`requires`). No GPU: loading,
refusals, the declared launch's arguments, the shapes a check runs, the plans of run and tune."""

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from mmbench import checking
from mmbench.cli import main
from mmbench.ops import get_op
from mmbench.ops.base import DeviceBuffers
from mmbench.ops.declared import declared_arguments
from mmbench.precisions import SCALE_OFFSETS
from mmbench.sizes import Shape
from mmbench.variants import files

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "gemm"
WMMA, BLAS = EXAMPLES / "wmma_bf16.toml", EXAMPLES / "blas_sgemm.toml"


pytestmark = pytest.mark.usefixtures("registry_kept")


TEMPLATE = """
[[variant]]
name = "typed"
op = "gemm"
source = "typed.cu"
arguments = {arguments}
block = ["16", "16"]
grid = ["ceil_div(n, 16)", "ceil_div(m, 16)"]
{extra}
"""


def write(tmp_path, arguments='["m", "n", "k", 1.0, "A", "B", 0.0, "C"]', extra="") -> Path:
    (tmp_path / "typed.cu").write_text('extern "C" __global__ void typed() {}\n')
    path = tmp_path / "typed.toml"
    path.write_text(TEMPLATE.format(arguments=arguments, extra=extra))
    return path


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


class Buffer(int):
    """A device pointer stand-in: an int, as PyCUDA's allocations convert to one."""


def test_the_examples_say_what_they_take():
    (wmma,) = files.load(WMMA)
    assert (wmma.dtypes, wmma.layouts) == (("bf16",), ("nt",))
    assert wmma.requires == ("m % (16 * WARPS_M) == 0", "n % (16 * WARPS_N) == 0", "k % 16 == 0")
    assert wmma.arguments == ("m", "n", "k", "float32(1.0)", "A", "B", "float32(0.0)", "C")
    (blas,) = files.load(BLAS)
    assert (blas.dtypes, blas.layouts, blas.requires) == (("fp32",), ("nn",), ())


def test_float_scalars_are_passed_as_their_type():
    (blas,) = files.load(BLAS)
    bufs = DeviceBuffers((Buffer(100), Buffer(200)), Buffer(300), 12)
    args = declared_arguments(get_op("gemm"), blas, (("TILE", 16),), Shape(3, 4, 5), bufs)
    assert args == [3, 4, 5, 1.0, 100, 200, 0.0, 300]
    assert [type(a) for a in args] == [np.int32] * 3 + [np.float32, Buffer, Buffer, np.float32, Buffer]


def test_typed_scalars_and_fp8_scales(tmp_path):
    path = write(tmp_path, '["m", { type = "float64", value = 2 }, { type = "int64", value = "m * k" }, "scale_a", '
                           '"scale_b_ptr", "A", "B", "C"]', 'dtypes = ["fp8e4m3"]\nlayouts = ["nt"]')
    (v,) = files.load(path)
    assert v.arguments == ("m", "float64(2.0)", "int64(m * k)", "scale_a", "scale_b_ptr", "A", "B", "C")
    bufs = DeviceBuffers((Buffer(100), Buffer(200)), Buffer(300), 12, (Buffer(4096),), "fp8e4m3", "nt", (0.25, 0.5))
    args = declared_arguments(get_op("gemm"), v, (), Shape(3, 4, 5), bufs)
    assert args == [3, 2.0, 15, 0.25, 4096 + SCALE_OFFSETS[1], 100, 200, 300]
    assert [type(a) for a in args[:5]] == [np.int32, np.float64, np.int64, np.float32, np.uintp]


@pytest.mark.parametrize("arguments,extra,said", [
    ('["m", { type = "int32", value = 1.5 }, "A", "B", "C"]', "", "arguments: 1.5 is not a int32 value"),
    ('["m", { type = "half", value = 1.0 }, "A", "B", "C"]', "",
     "arguments: scalar type 'half'; choose from: int32, int64, float32, float64"),
    ('["m", { type = "float32", value = "one" }, "A", "B", "C"]', "", "'one' is not a float32 value (a number)"),
    ('["m", { value = 1.0 }, "A", "B", "C"]', "", "is not an argument: a buffer's name, an integer expression"),
    ('["m", true, "A", "B", "C"]', "", "arguments: True is not an argument"),
    ('["m", "scale_a", "A", "B", "C"]', 'dtypes = ["bf16"]', "'scale_a' is an FP8 scale; its dtypes bf16 have none"),
    ('["m", "A", "B", "C"]', 'dtypes = ["bf17"]',
     "dtypes: 'bf17' is no precision a gemm takes; choose from: fp64, fp32, tf32, fp16, bf16, fp8e4m3, fp8e5m2"),
    ('["m", "A", "B", "C"]', 'layouts = ["nx"]', "layouts: 'nx' is no layout a gemm takes; choose from: nn, nt, tn, tt"),
    ('["m", "A", "B", "C"]', 'dtypes = "bf16"', "dtypes: 'bf16' is not a list of names"),
    ('["m", "A", "B", "C"]', 'requires = ["q % 16 == 0"]', "requires: 'q % 16 == 0' names 'q', which is no parameter"),
    ('["m", "A", "B", "C"]', 'requires = ["m % 16.0 == 0"]', "requires: expression 'm % 16.0 == 0'"),
])
def test_a_mistake_is_one_line_exit_2_naming_the_key(tmp_path, arguments, extra, said):
    path = write(tmp_path, arguments, extra)
    for args in (["check", path], ["-f", path, "list"]):
        result = invoke(*args)
        assert result.exit_code == 2, result.output
        assert said in result.output and len(result.output.strip().splitlines()) == 1, result.output


def test_requirements_name_the_shape_that_misses_them():
    (wmma,) = files.load(WMMA)
    params = (("WARPS_M", 2), ("WARPS_N", 2))
    assert wmma.unmet(params, {"m": 64, "n": 64, "k": 32}) is None
    assert wmma.unmet(params, {"m": 33, "n": 64, "k": 32}) == "wmma_bf16 requires m % (16 * WARPS_M) == 0; m = 33"
    assert wmma.unmet(params, {"m": 64, "n": 64, "k": 8}) == "wmma_bf16 requires k % 16 == 0; k = 8"


def test_a_check_runs_the_shapes_a_kernel_takes_and_says_which_it_left_out():
    (wmma,) = files.load(WMMA)
    spec, left_out = checking.check_shapes(wmma)
    assert spec == "128,256,512x256x384,1024x512x2048"
    assert len(left_out) == len(get_op("gemm").parse_sizes(get_op("gemm").tested_sizes))
    assert left_out[0] == "1 (m % (16 * WARPS_M) == 0; m = 1)"
    (blas,) = files.load(BLAS)
    assert checking.check_shapes(blas) == (",".join(str(s) for s in get_op("gemm").parse_sizes(
        get_op("gemm").tested_sizes)), [])


def test_run_and_tune_plan_a_kernel_at_what_it_takes(tmp_path):
    refused = invoke("-f", WMMA, "run", "-v", "wmma_bf16,cublas", "-s", "256", "--dry-run")
    assert refused.exit_code == 2 and "--dtype fp32: wmma_bf16 takes bf16 at layout nt; none of these" in refused.output
    planned = invoke("-f", WMMA, "run", "-v", "wmma_bf16,cublas", "-s", "256", "--dtype", "bf16", "--layout", "nt",
                     "--dry-run", "-o", tmp_path / "r.csv")
    assert planned.exit_code == 0, planned.output
    assert "wmma_bf16 bf16 nt" in planned.output and "cublas bf16 nt" in planned.output
    tuned = invoke("-f", WMMA, "tune", "-v", "wmma_bf16", "-s", "256", "--strategy", "brute", "--dry-run",
                   "-o", tmp_path / "t.csv")
    assert tuned.exit_code == 0, tuned.output
    assert "trying 9 (brute) at 1 shape(s) bf16 nt" in tuned.output
    wrong = invoke("-f", WMMA, "tune", "-v", "wmma_bf16", "-s", "256", "--strategy", "brute", "--dtype", "fp16",
                   "--dry-run")
    assert wrong.exit_code == 2 and "--dtype fp16 --layout nt: wmma_bf16 takes bf16 at layout nt; none of these" in wrong.output
    batched = invoke("-f", WMMA, "tune", "-v", "wmma_bf16", "-s", "256", "--strategy", "brute", "--engine", "batched",
                     "--dry-run")
    assert batched.exit_code == 2 and "bf16, layout nt is tuned with --engine points" in batched.output


def test_the_planted_kernels_of_the_gpu_tests_load_and_compile():
    planted = Path(__file__).resolve().parent / "planted" / "planted.toml"
    result = invoke("check", planted, "--compile-only")
    assert result.exit_code == 0, result.output
    assert {v.name: v.dtypes for v in files.load(planted)} == {
        "planted_bf16_sum_in_bf16": ("bf16",), "planted_tf32_claims_fp32": ("fp32",), "planted_tf32_honest": ("tf32",),
        "planted_fp8_without_scale_a": ("fp8e4m3",), "planted_b_read_as_nn": ("fp32",)}


def test_check_shows_the_compilers_warnings(tmp_path):
    """A kernel's own #define over one of mmbench's (what made KernelTuner's example compute a 512-wide product
    at every size): nvcc warns, and check says so (the run's metadata keeps it as nvcc_warnings)."""
    (tmp_path / "typed.cu").write_text('#define TILE 32\nextern "C" __global__ void typed(float* C, const float* A, '
                                       'const float* B) { C[threadIdx.x] = A[0] * B[0] * TILE; }\n')
    path = tmp_path / "typed.toml"
    path.write_text(TEMPLATE.format(arguments='["C", "A", "B"]', extra="params = { TILE = 16 }"))
    result = invoke("check", path, "--compile-only")
    assert result.exit_code == 0, result.output
    assert 'typed [TILE=16] nvcc warns: typed.cu:1: warning: "TILE" redefined' in result.output


def test_the_python_api_takes_precisions_and_layouts_as_the_options_do():
    import mmbench

    points = mmbench.plan("cublas", "64", dtype=["fp32", "bf16"], layout="nt")
    assert [(p.dtype, p.layout) for p in points] == [("fp32", "nt"), ("bf16", "nt")]
    assert [p.dtype for p in mmbench.plan("cublas", "64", dtype="fp64,tf32")] == ["fp64", "tf32"]
    with pytest.raises(mmbench.RunRefused, match="--dtype: unknown precision 'half'"):
        mmbench.plan("cublas", "64", dtype="half")


def test_a_variant_takes_one_precision_and_one_layout(tmp_path):
    """A kernel compiled once and told no precision is right at one only: two are refused."""
    for extra, key in (('dtypes = ["fp16", "bf16"]', "dtypes"), ('layouts = ["nn", "nt"]', "layouts")):
        result = invoke("-f", write(tmp_path, '["m", "A", "B", "C"]', extra), "list")
        assert result.exit_code == 2 and f"{key}: [" in result.output and "declare one" in result.output


def test_list_says_what_a_variant_takes():
    result = invoke("-f", WMMA, "list", "-v", "wmma_bf16")
    assert result.exit_code == 0, result.output
    assert "takes: bf16 at layout nt" in result.output and "requires: k % 16 == 0" in result.output
    assert "float32, row-major" not in result.output  # the operation's fp32 description is not this kernel's
    library = invoke("list", "-v", "cublas").output
    assert "takes: fp64, fp32, tf32, fp16, bf16, fp8e4m3, fp8e5m2 at layout nn, nt, tn, tt" in library
    assert "takes:" not in invoke("list", "-v", "best").output


def test_kmajor_skips_a_shape_whose_a_or_b_outgrows_its_32_bit_indexes():
    """kmajor's copies index A (m x k) and B (k x n) with 32-bit products: a shape past 2**31 elements of
    either is a skipped row saying so, never a wrong one."""
    from mmbench.variants import REGISTRY

    kmajor = REGISTRY["kmajor"]
    assert kmajor.unmet((), {"m": 46340, "n": 46340, "k": 46340}) is None  # 2,147,395,600 elements
    assert kmajor.unmet((), {"m": 46341, "n": 8, "k": 46341}) == "kmajor requires m * k < 2147483648; k = 46341, m = 46341"
    assert kmajor.unmet((), {"m": 8, "n": 2**20, "k": 2**11}) == "kmajor requires k * n < 2147483648; k = 2048, n = 1048576"
