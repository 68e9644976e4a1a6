"""The AMD tiling tutorial: every verdict of the report recomputed from the committed reference
run's rows, register against LDS tiling at WARP = 32 and at the tutorial's 64, and the departures."""

from pathlib import Path

import numpy as np
import pytest

from mmbench.kernel_text import kernel_additions
from mmbench.results import read_metadata, read_results
from mmbench.studies import amd_tiling as A

REPO = Path(__file__).resolve().parent.parent
RUN = REPO / "results" / "amd-tiling-h100" / "amd-tiling-h100.csv"


@pytest.fixture(scope="module")
def run():
    return read_results(RUN)


def _median(df, variant, params, m, n, k, column="time_ms_median"):
    row = df[(df.variant == variant) & (df.params == params) & (df.m == m) & (df.n == n) & (df.k == k)
             & (df.scope == "kernel") & (df.pad == 0) & (df.status == "ok")]
    assert len(row) == 1
    return float(row[column].iloc[0])


def _verdict(df, start):
    return next(v for v in A.verdicts(df) if v.finding.startswith(start))


def test_the_wavefront_parameters_are_the_default_at_64():
    assert A.REGISTER_WAVEFRONT == A.REGISTER_DEFAULT.replace("WARP=32", "WARP=64")


def test_register_over_lds_at_the_tutorials_wavefront(run):
    over = A.register_over_lds(run, A.REGISTER_WAVEFRONT)
    assert sorted(over.index) == [(2048, 2048, 2048), (2049, 2049, 2049), (8192, 512, 2048)]
    expected = _median(run, "shared", "BLOCK=16", 8192, 512, 2048) / _median(run, "register_tiling", A.REGISTER_WAVEFRONT,
                                                                           8192, 512, 2048)
    assert over[(8192, 512, 2048)] == pytest.approx(expected, rel=1e-12)
    assert (over > 1).all()


def test_register_verdicts_both_widths(run):
    at32 = _verdict(run, "Register tiling adds to LDS tiling, NVIDIA's warp of 32")
    at64 = _verdict(run, "Register tiling adds to LDS tiling, the tutorial's wavefront of 64")
    over = A.register_over_lds(run, A.REGISTER_DEFAULT)
    assert at32.holds == "partly" and f"faster than LDS at {int((over > 1).sum())} of {len(over)} shapes" in at32.evidence
    assert at64.holds == "yes" and "faster than LDS at 3 of 3 shapes" in at64.evidence
    alone = _verdict(run, "Some workloads do better with LDS tiling alone")
    assert alone.holds == "yes" and f"WARP = 32: LDS faster at {int((over < 1).sum())} shapes" in alone.evidence


def test_naive_scaling_is_the_rate_at_the_largest_aligned_size_over_the_smallest(run):
    verdict = _verdict(run, "Naive slows down")
    square = _median(run, "naive", "BLOCK=16", 4096, 4096, 4096, "gflops_median") / _median(
        run, "naive", "BLOCK=16", 1024, 1024, 1024, "gflops_median")
    deep = _median(run, "naive", "BLOCK=16", 1024, 1024, 16384, "gflops_median") / _median(
        run, "naive", "BLOCK=16", 1024, 1024, 64, "gflops_median")
    assert f"square {square:.2f}" in verdict.evidence and f"k {deep:.2f}" in verdict.evidence
    assert verdict.holds == "no"  # naive gets faster with size here: the H100's 50 MB L2


def test_flop_count_and_naive_against_cublas(run):
    flops = _verdict(run, "A product is 2 x m x n x k")
    assert flops.holds == "yes"
    plain = run[(run.scope == "kernel") & (run.status == "ok")]
    implied = 2 * plain.m * plain.n * plain.k / (plain.time_ms_median * 1e6)
    assert np.allclose(plain.gflops_median, implied, rtol=0.01)
    naive = _verdict(run, "The naive kernel's performance is not ideal")
    pct = 100 * _median(run, "naive", "BLOCK=16", 1024, 1024, 1024, "gflops_median") / _median(
        run, "cublas", "", 1024, 1024, 1024, "gflops_median")
    assert naive.holds == "yes" and pct < 50


def test_lds_verdicts(run):
    sp = A.speedups(run)[A.STEPS[1][2]]
    significant = _verdict(run, "LDS tiling gives a significant speedup")
    assert significant.holds == "partly" and f">= {A.SIGNIFICANT} at {int((sp >= A.SIGNIFICANT).sum())}" in significant.evidence
    shape = _verdict(run, "Tiling's speedup depends on the matrix dimensions")
    assert shape.holds == "yes" and f"{sp.min():.2f} to {sp.max():.2f}" in shape.evidence


def test_report_states_departures_both_widths_and_untested_claims(run):
    report = A.report(run, read_metadata(RUN), {}, {}, None, RUN)
    assert f"Claims judged: {len(A.verdicts(run))}; claims this run cannot judge: {len(A.UNTESTED)}" in report
    for path in ("gemm/naive.cu", "gemm/shared.cu", "gemm/register_tiling.cu"):
        assert all(a in report for a in kernel_additions(path))
    assert any("early return" in a for a in kernel_additions("gemm/naive.cu"))
    assert "`mmbench run -v register_tiling --params WARP=64 --sizes 256x1024x1024," in report
    assert "(the same code)" not in report
