"""Precisions and layouts (mmbench/precisions.py): what each name means, the error bound each one's
check allows, and that the check catches the defects a kernel of that precision can have: each
defect planted in an output computed here on the host, in float64 with the defect's roundings."""

import math

import ml_dtypes
import numpy as np
import pytest

from mmbench import precisions as P
from mmbench.ops.base import check_sums, frobenius_tolerance, gamma
from mmbench.ops.gemm import GEMM, check_gemm, gemm_min_bytes, make_gemm_inputs
from mmbench.sizes import Shape

SHAPE = Shape(48, 40, 512)  # k long enough for reduced accumulation to show (its error grows as sqrt(k))


def inputs(precision: str, layout: str = "nn", shape: Shape = SHAPE, seed: int = 3):
    return make_gemm_inputs(shape, np.random.default_rng(seed), None, precision, layout)


def logical(x, transposed_: bool, scale: float) -> np.ndarray:
    """An operand as the product reads it, in float64 with its scale."""
    x = P.as_float64(x, scale)
    return x.T if transposed_ else x


def operands(i):
    ta, tb = P.transposed(i.layout)
    return logical(i.a, ta, i.scales[0]), logical(i.b, tb, i.scales[1])


def rounded(values: np.ndarray, precision: str) -> np.ndarray:
    """The product's float64 values rounded to the precision's output type (a correct kernel's C)."""
    return values.astype(P.PRECISIONS[precision].c_type)


def accumulate_in(a: np.ndarray, b: np.ndarray, storage) -> np.ndarray:
    """A . B summed one product at a time, every partial sum rounded to `storage` (exact products)."""
    acc = np.zeros((a.shape[0], b.shape[1]), dtype=storage)
    for i in range(a.shape[1]):
        acc = (acc.astype(np.float64) + np.outer(a[:, i], b[i, :])).astype(storage)
    return acc


def to_tf32(x: np.ndarray) -> np.ndarray:
    """float32 values with their significand cut to TF32's 10 explicit bits (round to nearest even)."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    bias = 0xFFF + ((bits >> 13) & 1)
    return ((bits + bias) & ~np.uint64(0x1FFF)).astype(np.uint32).view(np.float32)


# -- the table ----------------------------------------------------------------------------------------
def test_each_precision_says_its_types_and_accumulation():
    assert list(P.PRECISIONS) == ["fp64", "fp32", "tf32", "fp16", "bf16", "fp8e4m3", "fp8e5m2"]
    types = {name: (p.a_type, p.b_type, p.c_type, p.accumulate, p.scaled) for name, p in P.PRECISIONS.items()}
    assert types["fp64"] == (np.float64, np.float64, np.float64, "fp64", False)
    assert types["fp32"] == (np.float32, np.float32, np.float32, "fp32", False)
    assert types["tf32"] == (np.float32, np.float32, np.float32, "fp32-tc", False)
    assert types["bf16"] == (ml_dtypes.bfloat16, ml_dtypes.bfloat16, ml_dtypes.bfloat16, "fp32-tc", False)
    assert types["fp8e4m3"] == (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fn, ml_dtypes.bfloat16, "fp32-tc", True)
    assert types["fp8e5m2"] == (ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fn, ml_dtypes.bfloat16, "fp32-tc", True)
    assert [p.tensor_cores for p in P.PRECISIONS.values()] == [False, False, True, True, True, True, True]


def test_unit_roundoffs_are_half_an_epsilon():
    assert P.unit_roundoff("float32") == 2.0**-24 and P.unit_roundoff("bfloat16") == 2.0**-8
    assert P.unit_roundoff("float16") == 2.0**-11 and P.unit_roundoff("float8_e4m3") == 2.0**-4
    assert P.PRECISIONS["bf16"].rounding == P.Rounding(0.0, 2.0**-23, 2.0**-8, P.smallest_subnormal("bfloat16") / 2)
    assert P.PRECISIONS["tf32"].rounding.u_in == 2.0**-10  # rounded or truncated to 10 bits


def test_fp32_rules_are_the_ones_before_precisions():
    rounding = P.PRECISIONS["fp32"].rounding
    for k in (1, 7, 1024, 8191):
        assert P.bound_terms(rounding, k) == (gamma(k), 0.0, 0.0)
        assert P.frobenius_tolerance(rounding, k) == frobenius_tolerance(k) == 8.0 * 2.0**-24 * math.sqrt(k)


def test_bound_terms_formula():
    r = P.Rounding(u_in=2.0**-11, u_acc=2.0**-23, u_out=2.0**-8, tiny_out=1e-40)
    k = 300
    g = k * 2.0**-23 / (1 - k * 2.0**-23)
    products, of_reference, absolute = P.bound_terms(r, k)
    assert products == pytest.approx(((1 + 2.0**-11) ** 2 - 1 + g * (1 + 2.0**-11) ** 2) * (1 + 2.0**-8), rel=1e-15)
    assert (of_reference, absolute) == (2.0**-8, 1e-40)
    twice = P.bound_terms(P.Rounding(0.0, 2.0**-53, 0.0, reference_twice=True), k)[0]
    assert twice == pytest.approx(2 * k * 2.0**-53, rel=1e-12)
    assert P.gamma(2**30, 2.0**-23) == math.inf  # k u >= 1: no bound
    assert P.frobenius_tolerance(r, k) == pytest.approx(8 * 2.0**-23 * math.sqrt(k) + 4 * 2.0**-11 + 2 * 2.0**-8)


def test_layouts_and_bad_names():
    assert list(P.LAYOUTS) == ["nn", "nt", "tn", "tt"] and P.transposed("nt") == (False, True)
    with pytest.raises(P.PrecisionError, match=r"unknown precision 'fp12'; choose from: fp64, fp32, tf32"):
        P.get_precision("fp12")
    with pytest.raises(P.PrecisionError, match=r"unknown layout 'nx'; choose from: nn, nt, tn, tt"):
        P.check_layout("nx")


def test_nan_bits_of_every_output_type():
    assert P.nan_bits(np.float32) == (0x7FC00000, 4) and P.nan_bits(np.float16) == (0x7E00, 2)
    assert P.nan_bits(ml_dtypes.bfloat16) == (0x7FC0, 2)
    bits, width = P.nan_bits(np.float64)
    assert width == 8 and np.isnan(np.array([bits], np.uint64).view(np.float64)[0])
    # device.poison fills a float64 output with 0x7FF8 in every 16 bits: a NaN (the float32 NaN in both
    # halves would not be one)
    from mmbench.device import FLOAT64_NAN_HALVES

    assert np.isnan(np.array([FLOAT64_NAN_HALVES * 0x0001000100010001], np.uint64).view(np.float64)[0])
    assert not np.isnan(np.array([0x7FC000007FC00000], np.uint64).view(np.float64)[0])


# -- inputs --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("precision", list(P.PRECISIONS))
def test_inputs_hold_the_types_the_kernel_receives_and_the_reference_is_theirs(precision):
    p = P.PRECISIONS[precision]
    i = inputs(precision, "nn", Shape(16, 12, 20))
    assert i.a.dtype == p.a_type and i.b.dtype == p.b_type and i.k == 20
    a, b = operands(i)
    assert np.allclose(i.reference, a @ b, rtol=1e-13, atol=1e-13)
    assert np.all(i.bound > 0) and np.count_nonzero(i.a.astype(np.float64)) > 0.9 * i.a.size  # never zeros


def test_the_same_draws_at_every_precision():
    f32, bf16 = inputs("fp32"), inputs("bf16")
    assert np.array_equal(f32.a.astype(ml_dtypes.bfloat16), bf16.a)
    fp8 = inputs("fp8e4m3")
    assert fp8.scales == (P.fp8_scale("float8_e4m3"),) * 2 and 0.004 < fp8.scales[0] < 0.005
    assert np.abs(fp8.a.astype(np.float64)).max() <= 224  # within half of e4m3's 448
    assert np.array_equal((f32.a / np.float32(fp8.scales[0])).astype(ml_dtypes.float8_e4m3fn), fp8.a)


@pytest.mark.parametrize("layout", ["nt", "tn", "tt"])
def test_layouts_store_the_same_product_transposed(layout):
    plain, other = inputs("bf16"), inputs("bf16", layout)
    ta, tb = P.transposed(layout)
    assert np.array_equal(other.a, plain.a.T if ta else plain.a) and np.array_equal(other.b, plain.b.T if tb else plain.b)
    assert np.array_equal(other.reference, plain.reference) and other.k == plain.k


def test_bytes_follow_the_element_sizes():
    s = Shape(10, 20, 30)
    assert gemm_min_bytes(s) == 4 * (300 + 600 + 200) == GEMM.min_bytes(s, "fp32")
    assert GEMM.min_bytes(s, "bf16") == 2 * (300 + 600 + 200)
    assert GEMM.min_bytes(s, "fp8e4m3") == 300 + 600 + 2 * 200  # bf16 out
    assert GEMM.min_bytes(s, "fp64") == 8 * 1100 == GEMM.device_bytes(s, "fp64")
    assert GEMM.device_bytes(s, "bf16") == 2 * 1100 + (32 << 20)  # cuBLASLt's workspace at the tensor-core precisions


# -- a correct product passes; each defect is caught -----------------------------------------------------
@pytest.mark.parametrize("precision", list(P.PRECISIONS))
@pytest.mark.parametrize("layout", ["nn", "nt"])
def test_a_correctly_rounded_product_passes(precision, layout):
    i = inputs(precision, layout)
    a, b = operands(i)
    exact = np.asarray(a @ b)
    if precision == "tf32":  # inputs rounded to TF32, exact sums
        exact = to_tf32(a.astype(np.float32)).astype(np.float64) @ to_tf32(b.astype(np.float32)).astype(np.float64)
    check = check_gemm(rounded(exact, precision), i)
    assert check.ok, check.reason
    assert check.err_bound_ratio <= 1.0


@pytest.mark.parametrize("precision", ["fp16", "bf16", "fp8e4m3"])
def test_float32_accumulation_passes(precision):
    i = inputs(precision)
    check = check_gemm(rounded(accumulate_in(*operands(i), np.float32), precision), i)
    assert check.ok, check.reason


def test_nan_never_passes_at_any_precision():
    for precision in P.PRECISIONS:
        i = inputs(precision)
        out = rounded(i.reference, precision)
        out[3, 5] = np.nan
        check = check_gemm(out, i)
        assert not check.ok and "1 of 1920 outputs not finite" in check.reason


def test_planted_bf16_kernel_accumulating_in_bf16_is_caught():
    i = inputs("bf16")
    check = check_gemm(accumulate_in(*operands(i), ml_dtypes.bfloat16), i)
    assert not check.ok and "exceed the bf16 error bound" in check.reason
    assert check.err_bound_ratio > 3  # in units of the bound: far over it


def test_planted_fp16_accumulation_claiming_fp32_accumulation_is_caught():
    i = inputs("fp16")
    check = check_gemm(accumulate_in(*operands(i), np.float16), i)
    assert not check.ok and check.err_bound_ratio > 3


def test_planted_tf32_kernel_claiming_fp32_is_caught_and_passes_as_tf32():
    claims_fp32, honest = inputs("fp32"), inputs("tf32")
    a, b = operands(claims_fp32)
    tf32 = (to_tf32(a.astype(np.float32)).astype(np.float64) @ to_tf32(b.astype(np.float32)).astype(np.float64))
    check = check_gemm(tf32.astype(np.float32), claims_fp32)
    assert not check.ok and "float32" in check.reason  # over the bound, and 15x over the tolerance:
    assert check.rel_err > 10 * frobenius_tolerance(SHAPE.k)
    assert check_gemm(tf32.astype(np.float32), honest).ok


@pytest.mark.parametrize("precision", ["fp8e4m3", "fp8e5m2"])
def test_planted_fp8_kernel_ignoring_a_scale_is_caught(precision):
    i = inputs(precision)
    a, b = operands(i)
    for wrong in (a / i.scales[0] @ b, a @ (b / i.scales[1]), a @ b * i.scales[0]):  # a scale ignored, or twice
        check = check_gemm(rounded(wrong, precision), i)
        assert not check.ok and check.err_bound_ratio > 10


@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp8e4m3"])
def test_planted_kernel_reading_b_with_the_wrong_layout_is_caught(precision):
    shape = Shape(40, 40, 40)  # square, so a kernel that reads B's buffer as k x n runs without faulting
    i = inputs(precision, "nt", shape)
    a = logical(i.a, False, i.scales[0])
    b_misread = P.as_float64(i.b, i.scales[1])  # the n x k buffer taken for k x n
    check = check_gemm(rounded(a @ b_misread, precision), i)
    assert not check.ok and check.err_bound_ratio > 10


def test_check_sums_keeps_float32_behaviour_by_default():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (30, 64)).astype(np.float32), rng.uniform(-1, 1, (64, 20)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    bound = gamma(64) * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))
    out = (a @ b).astype(np.float32)
    assert check_sums(out, ref, bound, 64) == check_sums(out, ref, bound, 64, P.PRECISIONS["fp32"])


def test_fp8_accumulates_in_14_bit_chunks_of_128_promoted_to_fp32():
    r = P.PRECISIONS["fp8e4m3"].rounding
    assert (r.u_acc, r.chunk, r.u_chunks) == (2.0**-13, 128, 2.0**-23) and r.u_out == 2.0**-8 + 2.0**-23
    within = 128 * 2.0**-13 / (1 - 128 * 2.0**-13)
    for k, chunks in ((100, 1), (256, 2), (8192, 64)):
        inside = P.gamma(min(k, 128), 2.0**-13)
        assert P.bound_terms(r, k)[0] == pytest.approx((inside + P.gamma(chunks, 2.0**-23) * (1 + inside))
                                                       * (1 + r.u_out), rel=1e-14)
    assert P.bound_terms(r, 8192)[0] < 1.02 * within * (1 + r.u_out) + 1e-4  # bounded at any k
    assert P.frobenius_tolerance(r, 8192) == pytest.approx(8 * (2.0**-13 * math.sqrt(128) + 2.0**-23 * 8) + 2 * r.u_out)


# -- the reference run ------------------------------------------------------------------------------------
def test_the_precisions_report_quotes_its_run():
    """results/precisions-h100/REPORT.md's rate table and % of peak at 8192 are the committed CSV's."""
    import json
    import re
    from pathlib import Path

    import pandas as pd

    from mmbench.analysis import percent_of_peak
    from mmbench.ceilings import datasheet

    folder = Path(__file__).resolve().parent.parent / "results" / "precisions-h100"
    df = pd.read_csv(folder / "precisions-h100.csv")
    meta = json.loads((folder / "precisions-h100.meta.json").read_text())
    report = (folder / "REPORT.md").read_text()
    ok = df[df.status == "ok"]
    assert (len(df), len(ok)) == (84, 72) and meta["git"]["commit"].startswith("94d5096")
    for line in re.findall(r"^\| (fp\w+) \| (nn|nt) \| (.+) \|$", report, re.M):
        dtype, layout, cells = line
        rows = ok[(ok.dtype == dtype) & (ok.layout == layout)].sort_values("n")
        assert [float(c) for c in cells.split(" | ")] == [round(v / 1e3, 1) for v in rows.gflops_median], dtype
    pct = percent_of_peak(df, datasheet(meta["gpu"])["precision_tflops"])
    at = pct[(pct.n == 8192) & ((pct.layout == "nn") | pct.dtype.str.startswith("fp8"))]
    quoted = re.search(r"^\| % of the peak at 8192 \(nn; FP8 nt\) \| (.+) \|$", report, re.M).group(1)
    order = ["fp64", "fp32", "tf32", "fp16", "bf16", "fp8e4m3", "fp8e5m2"]
    assert [float(c) for c in quoted.split(" | ")] == [round(at[at.dtype == d].percent.iloc[0], 1) for d in order]


def test_the_roofline_of_a_bf16_run_draws_bf16_roofs_and_intensities():
    import json
    from pathlib import Path

    from mmbench import plots
    from mmbench.results import read_results

    folder = Path(__file__).resolve().parent.parent / "results" / "precisions-h100"
    df = read_results(folder / "precisions-h100.csv")
    meta = json.loads((folder / "precisions-h100.meta.json").read_text())
    assert plots.roofline_precision(df, 4096) == "fp32"  # the papers' precision, where a run has it
    bf16 = df[df.dtype == "bf16"]
    assert plots.roofline_precision(bf16, 4096) == "bf16"
    points = plots.roofline_points(bf16, None, 4096, "bf16")
    assert list(points.intensity) == [pytest.approx(2 * 4096**3 / (2 * 3 * 4096**2))] * 2  # nn and nt
    assert [p.label for p in points.series] == ["cuBLAS", "cuBLAS nt"]
    roofs = plots._roofs({**meta, "ceilings": {"fp32_fma_tflops": 60.0, "dram_copy_gbytes_per_s": 3000.0,
                                               "library_tflops": {"bf16": {"tflops": 800.0, "at": 8192}}}}, "bf16")
    assert [(r[0], round(r[1], 1)) for r in roofs] == [("datasheet", 1070.5), ("measured (library)", 800.0)]
    fig = plots.fig_roofline(bf16, meta, None, 4096)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert "datasheet: 1070.5 TFLOP/s BF16, 3352 GB/s DRAM" in labels
    assert "Roofline at n = 4096, bf16" in fig.axes[0].get_title()
    plots.plt.close(fig)


def test_fp64_keeps_the_norm_of_its_magnitudes_for_the_cancellation_guard():
    i = inputs("fp64", "nn", Shape(16, 12, 64))
    a, b = operands(i)
    assert i.magnitude_norm == pytest.approx(np.linalg.norm(np.abs(a) @ np.abs(b)), rel=1e-12)
    assert inputs("fp32").magnitude_norm is None  # fp32's check finds it from its bound, as before precisions


def test_library_ceilings_without_the_library_say_so_for_every_precision():
    from types import SimpleNamespace

    from mmbench.ceilings import library_ceilings

    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed here: the library would open")
    except ImportError:
        pass
    out = library_ceilings(SimpleNamespace(stream=SimpleNamespace(handle=0), alloc=None))
    assert list(out) == list(P.PRECISIONS) and all("CuPy is not installed" in v["unavailable"] for v in out.values())


def test_a_points_rerun_command_names_its_precision_and_layout():
    from mmbench.engine.plan import Point
    from mmbench.engine.points_isolated import rerun_command
    from mmbench.variants import REGISTRY

    command = rerun_command(Point(REGISTRY["cublas"], (), Shape(64, 64, 64), "cold", dtype="bf16", layout="nt"),
                            "compute-sanitizer")
    assert "--dtype bf16 --layout nt" in command
    assert "--dtype" not in rerun_command(Point(REGISTRY["cublas"], (), Shape(64, 64, 64), "cold"), "x")


def test_a_config_sweep_names_its_precisions_and_layouts(tmp_path):
    from mmbench.config import ConfigError, load_config

    sweep = '[[sweep]]\nname = "s"\nvariants = ["cublas", "best"]\nsizes = "64"\n'
    path = tmp_path / "c.toml"
    path.write_text(sweep + 'dtypes = ["fp32", "bf16"]\nlayouts = ["nn"]\n')
    (s,) = load_config(path).sweeps
    assert (s.dtypes, s.layouts) == (("fp32", "bf16"), ("nn",))
    path.write_text(sweep.replace('"cublas", "best"', '"best"') + 'dtypes = ["bf16"]\n')
    with pytest.raises(ConfigError, match=r"sweep\[0\].dtypes bf16: best takes fp32 at layout nn; none of these"):
        load_config(path)
    path.write_text(sweep + 'dtypes = "bf16"\n')
    with pytest.raises(ConfigError, match=r"dtypes: expected a list of names"):
        load_config(path)
    path.write_text(sweep.replace('"cublas", "best"', '"cublas"') + 'dtypes = ["bf16"]\nscopes = ["kernel", "end_to_end"]\n')
    with pytest.raises(ConfigError, match=r"scopes/pad: end_to_end is timed at fp32, layout nn only; not at bf16"):
        load_config(path)
    path.write_text(sweep.replace('"cublas", "best"', '"cublas"') + 'dtypes = ["bf16"]\nscopes = ["kernel", "device"]\n')
    assert load_config(path).sweeps[0].scopes == ("kernel", "device")  # the device scope takes any precision
