"""Issue 15's studies from cuts of their real H100 runs (tests/data), on the CPU: the AMD tiling
tutorial and Lameski's padding versus border checks, their computed columns, figures and reports."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from mmbench.analysis import along, by_shape
from mmbench.plots import save
from mmbench.results import ResultsError, read_metadata, read_results
from mmbench.studies import study
from mmbench.studies.amd_tiling.figures import fig_speedup
from mmbench.studies.amd_tiling.measures import (FAMILIES, REGISTER_DEFAULT, STEPS, percent_of_cublas, speedups,
                                                 tile_table)
from mmbench.studies.amd_tiling.report import family_summary
from mmbench.studies.lameski2013.figures import fig_heatmap
from mmbench.studies.lameski2013.measures import improvement, normalized_speed, summary
from mmbench.studies.lameski2013.report import edge_costs

DATA = Path(__file__).parent / "data"
AMD = DATA / "amd-tiling-h100-cut.csv"


@pytest.fixture(scope="module")
def amd():
    return read_results(AMD)


def _median(df, variant, params, m, n, k, column="time_ms_median"):
    row = df[(df.variant == variant) & (df.params == params) & (df.m == m) & (df.n == n) & (df.k == k)]
    assert len(row) == 1
    return float(row[column].iloc[0])


def test_by_shape_keeps_rectangular_rows_and_along_cuts_a_family(amd):
    t = by_shape(amd, variant="naive", params="BLOCK=16")
    assert (256, 1024, 1024) in t.index and (2049, 2049, 2049) in t.index
    tall = along(t, "m", n=1024, k=1024)
    assert list(tall.index) == [256, 257, 1024, 1025, 4096, 4097, 16384, 16385]
    assert tall[257] == _median(amd, "naive", "BLOCK=16", 257, 1024, 1024)
    assert list(along(t, "n").index) == [1024, 2048, 2049]  # no fixed dimensions: the square shapes


def test_speedup_over_naive_is_naive_time_over_the_steps_time(amd):
    sp = speedups(amd)
    lds, reg = STEPS[1][2], STEPS[2][2]
    shape = (4097, 1024, 1024)
    naive = _median(amd, "naive", "BLOCK=16", *shape)
    assert sp[lds][shape] == pytest.approx(naive / _median(amd, "shared", "BLOCK=16", *shape), rel=1e-12)
    assert sp[reg][shape] == pytest.approx(naive / _median(amd, "register_tiling", REGISTER_DEFAULT, *shape),
                                           rel=1e-12)


def test_family_summary_is_the_geometric_mean_over_the_familys_aligned_or_unaligned_sizes(amd):
    table = family_summary(amd)
    lds = STEPS[1][2]
    tall = table.loc[FAMILIES[1][2]]
    aligned_row = tall[tall.aligned == "yes"].iloc[0]
    sp = speedups(amd)[lds]
    sizes = [256, 1024, 4096, 16384]
    expected = math.exp(np.mean([math.log(sp[(m, 1024, 1024)]) for m in sizes]))
    assert aligned_row[f"{lds} / naive"] == pytest.approx(expected, rel=1e-12)
    reg = STEPS[2][2]
    assert aligned_row["register / LDS"] == pytest.approx(aligned_row[f"{reg} / naive"] / expected, rel=1e-12)


def test_percent_of_cublas_is_gflops_over_cublas_gflops(amd):
    pct = percent_of_cublas(amd)
    shape = (2048, 2048, 2048)
    expected = 100 * _median(amd, "shared", "BLOCK=16", *shape, "gflops_median") / _median(
        amd, "cublas", "", *shape, "gflops_median")
    assert pct[STEPS[1][2]][shape] == pytest.approx(expected, rel=1e-12)


def test_tile_table_lists_lds_then_register_configurations_in_numeric_order(amd):
    table = tile_table(amd)
    assert list(table.columns) == ["2048x2048x2048"]
    assert list(table.index[:3]) == ["LDS 8 x 8", "LDS 16 x 16", "LDS 32 x 32"]
    assert table.index[3] == "reg 2x2 KT=8" and "reg 4x4 KT=16 WARP=64" in table.index
    assert table.loc["reg 2x4 KT=8", "2048x2048x2048"] == _median(
        amd, "register_tiling", "APAD=4,BWM=2,BWN=2,KT=8,TM=2,TN=4,WARP=32,WTN=4", 2048, 2048, 2048, "gflops_median")


def test_amd_figures_and_report_from_the_cut(amd, tmp_path):
    meta = read_metadata(AMD)
    module = study("amd-tiling")
    figures = {}
    for family in module.FIGURES.values():
        for f in family.figures:
            if f.stem == "fig-amd-hierarchy":  # drawn from a profile, which the cut has none of
                with pytest.raises(ResultsError, match="no Nsight Compute profile"):
                    f.draw(amd, meta, None, None, AMD)
                continue
            figures[f.stem] = save(f.draw(amd, meta, None, None, AMD), tmp_path, f.stem)[0]
    assert len(figures) == 4 and len(fig_speedup(amd, meta).axes) == 4
    report = module.report(amd, meta, {}, figures, None, AMD)
    assert "NVIDIA H100 80GB HBM3" in report and "| Register tiling adds to LDS tiling | " in report
    assert "| WARP = 64 (the tutorial's), the 1 shape this run timed it at; share rule |" in report
    assert "![speedup over naive](fig-amd-speedup.png)" in report
    assert "![register over LDS tiling at both widths](fig-amd-register-lds.png)" in report


LAMESKI = DATA / "lameski2013-h100-cut.csv"


@pytest.fixture(scope="module")
def lameski():
    return read_results(LAMESKI)


def _time(df, variant, scope, pad, m, n, k):
    row = df[(df.variant == variant) & (df.scope == scope) & (df.pad == pad) & (df.m == m) & (df.n == n) & (df.k == k)
             & ((df.variant != "shared") | (df.params == "BLOCK=32"))]
    assert len(row) == 1
    return float(row.time_ms_median.iloc[0])


@pytest.mark.parametrize("scope", ["kernel", "device", "end_to_end"])
def test_normalized_speed_is_the_padding_time_over_the_border_checks_time(lameski, scope):
    r = normalized_speed(lameski, scope)
    assert len(r) == 9  # hA x wB in {32, 33, 4096}^2 at k = 32
    expected = _time(lameski, "shared_padded", scope, 1, 33, 4096, 32) / _time(lameski, "shared", scope, 0, 33, 4096, 32)
    assert r[(33, 4096, 32)] == pytest.approx(expected, rel=1e-12)


def test_padding_improvement_is_the_papers_mean_of_speed_ratios_less_one(lameski):
    ratio = normalized_speed(lameski, "kernel")
    assert improvement(ratio) == pytest.approx(100 * np.mean([1 / x - 1 for x in ratio]), rel=1e-12)
    table = summary(lameski)
    row = table[table.scope == "device"].iloc[0]
    r = normalized_speed(lameski, "device")
    assert row["padding faster at"] == int((r < 1).sum()) and row["borders faster at"] == int((r > 1).sum())
    assert row["paper %"] == 15.51 and row["shapes"] == 9


def test_edge_costs_compare_a_kernel_as_given_with_it_padded(lameski):
    lines = edge_costs(lameski)
    given, padded = _time(lameski, "dbuf", "kernel", 0, 4095, 4095, 4095), _time(lameski, "dbuf", "kernel", 1, 4095, 4095, 4095)
    dbuf = next(line for line in lines if line.startswith("- dbuf at 4095"))
    assert f"{given:.3f} ms on the matrices as given and {padded:.3f} ms padded to 4096" in dbuf
    assert f"{100 * (given / padded - 1):+.1f} %" in dbuf


def test_lameski_figures_and_report_from_the_cut(lameski, tmp_path):
    meta = read_metadata(LAMESKI)
    module = study("lameski2013")
    figures = {}
    for family in module.FIGURES.values():
        for f in family.figures:
            if f.stem == "fig-lameski-fig4":  # k = 64 is not in the cut
                with pytest.raises(Exception, match="k = 64"):
                    f.draw(lameski, meta, None, None, LAMESKI)
                continue
            if f.stem == "fig-lameski-hierarchy":  # the cut has no profile beside it
                with pytest.raises(Exception, match="needs a profile"):
                    f.draw(lameski, meta, None, None, LAMESKI)
                continue
            figures[f.stem] = save(f.draw(lameski, meta, None, None, LAMESKI), tmp_path, f.stem)[0]
    assert len(fig_heatmap(lameski, meta).axes) >= 3
    report = module.report(lameski, meta, {"device": "a GTX 680"}, figures, None, LAMESKI)
    assert "| Padding beats border checks on average, k = 32 | 15.51 % average improvement (GTX 680) |" in report
    assert "dbuf 4095 -> 4096" in report and "![Fig. 3](fig-lameski-fig3.png)" in report
