"""The AMD tiling study's figures, checked without pixels (issue 44: figures that show the claim):
register tiling drawn at the tutorial's WARP = 64, the width its verdicts judge (from the companion
run), solid beside LDS tiling and naive, NVIDIA's WARP = 32 dashed and lighter as other evidence;
and register over LDS tiling shape by shape, with the counts the verdicts rest on."""

from pathlib import Path

import pandas as pd
import pytest
from matplotlib.colors import to_rgb

from mmbench.analysis import by_shape, ok_rows
from mmbench.plots import plt
from mmbench.profile import read_profile
from mmbench.results import read_metadata, read_results
from mmbench.studies.amd_tiling.claims import register_verdicts
from mmbench.studies.amd_tiling.figures import (LDS, W32, W64, fig_hierarchy, fig_percent_cublas, fig_register_lds,
                                                fig_speedup, percent_series, register_lds_series, speedup_series)
from mmbench.studies.amd_tiling.measures import (KERNEL_NAMES, MATTERS, REGISTER_DEFAULT, REGISTER_WAVEFRONT,
                                                 WAVEFRONT_RUN, percent_of_cublas_at, register_over_lds)
from mmbench.studies.common import companion

REPO = Path(__file__).resolve().parent.parent
RUN = REPO / "results" / "amd-tiling-h100" / "amd-tiling-h100.csv"
CUT = REPO / "tests" / "data" / "amd-tiling-h100-cut.csv"
COMPANION = "companion run warp64/amd-tiling-warp64.csv"


@pytest.fixture(scope="module")
def run():
    return read_results(RUN)


@pytest.fixture(scope="module")
def meta():
    return read_metadata(RUN)


@pytest.fixture(scope="module")
def wave():
    return ok_rows(companion(RUN, *WAVEFRONT_RUN).df)


@pytest.fixture(autouse=True)
def _closed():
    yield
    plt.close("all")


def _lines(ax) -> dict:
    """The drawn series of a panel by label (reference lines and bands have none)."""
    return {line.get_label(): line for line in ax.lines if not line.get_label().startswith("_")}


def _widths_styled(fig) -> None:
    """In every panel register tiling at WARP = 64 is solid and full, at WARP = 32 dashed and lighter, one colour."""
    for ax in fig.axes:
        lines = _lines(ax)
        assert lines[W64].get_linestyle() == "-" and lines[W64].get_alpha() == 1.0
        assert lines[W32].get_linestyle() == "--" and lines[W32].get_alpha() < 1.0
        assert to_rgb(lines[W64].get_color()) == to_rgb(lines[W32].get_color())


def test_the_speedup_figure_draws_the_tutorials_width_beside_lds_tiling_and_naive(run, meta):
    fig = fig_speedup(run, meta, results_path=RUN)
    assert len(fig.axes) == 4 and all(ax.get_yscale() == "log" for ax in fig.axes)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["naive (= 1)", LDS, W64, W32, "cuBLAS"]
    _widths_styled(fig)
    assert COMPANION in fig._suptitle.get_text()


def test_the_speedup_at_warp_64_is_this_runs_naive_over_the_companions_register_time(run, meta, wave):
    series, source = speedup_series(run, meta, RUN)
    assert COMPANION.removeprefix("companion run ") in source
    assert len(series[W64]) == len(series[W32]) == 29  # the 30 shapes less 8192x512x2048, where naive was not timed
    naive = by_shape(ok_rows(run), variant="naive", params="BLOCK=16")
    register = by_shape(wave, variant="register_tiling", params=REGISTER_WAVEFRONT)
    shape = (16384, 1024, 1024)
    assert series[W64][shape] == pytest.approx(naive[shape] / register[shape], rel=1e-12)


def test_register_over_lds_is_the_ratio_and_the_count_the_verdicts_judge(run, meta, wave):
    fig = fig_register_lds(run, meta, results_path=RUN)
    series, _ = register_lds_series(run, meta, RUN)
    pd.testing.assert_series_equal(series[W64], register_over_lds(wave, REGISTER_WAVEFRONT))
    pd.testing.assert_series_equal(series[W32], register_over_lds(ok_rows(run), REGISTER_DEFAULT))
    faster = int((series[W64] > 1).sum())
    adds = register_verdicts(ok_rows(run), wave)[0]
    title = fig._suptitle.get_text()
    assert f"register faster at {faster} of 30 shapes" in title
    assert f"register faster at {faster} of 30 shapes" in adds.evidence
    reg, lds = int((series[W64] > 1 + MATTERS).sum()), int((series[W64] < 1 - MATTERS).sum())
    assert f"by more than 10 %: register at {reg}, LDS at {lds}" in title
    assert "8192x512x2048 (in no panel)" in title  # the one shape of the 30 in no family is named, not dropped
    assert len(fig.axes) == 4
    _widths_styled(fig)
    for ax in fig.axes:  # one y range, the ratio's ticks labelled, the 10 % band shaded
        assert ax.get_yscale() == "log" and ax.get_ylim() == fig.axes[0].get_ylim()
        assert {0.5, 1, 1.5} <= set(ax.get_yticks())
        assert len(ax.patches) == 1
    assert fig.axes[3].get_title().startswith("along k: 1024 x 1024 x k: WARP = 64 register faster at 0 of 10")


def test_percent_of_cublas_draws_warp_64_against_the_cublas_timed_with_it(run, meta, wave):
    fig = fig_percent_cublas(run, meta, results_path=RUN)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["naive", LDS, W64, W32, "cuBLAS (= 100 %)"]
    _widths_styled(fig)
    series, _ = percent_series(run, meta, RUN)
    expected = percent_of_cublas_at(wave, (("register_tiling", REGISTER_WAVEFRONT, W64),))[W64]
    pd.testing.assert_series_equal(series[W64], expected)


def test_the_hierarchy_draws_both_widths_warp_64_solid_and_32_lighter(run, meta):
    fig = fig_hierarchy(run, meta, read_profile(RUN.with_name("amd-tiling-h100.profile.csv")), results_path=RUN)
    assert "register tiling at the tutorial's WARP = 64 (and 32, lighter)" in fig._suptitle.get_text()
    legend = fig.legends[0]
    handles = {t.get_text(): h for t, h in zip(legend.get_texts(), legend.legend_handles)}
    at64, at32 = handles[KERNEL_NAMES["register_tiling", REGISTER_WAVEFRONT]], handles[
        KERNEL_NAMES["register_tiling", REGISTER_DEFAULT]]
    assert at64.get_linestyle() == "-" and at64.get_alpha() == 1.0
    assert at32.get_linestyle() == "--" and at32.get_alpha() < 1.0
    for ax in fig.axes:  # each panel: both widths' lines, WARP = 32's lighter
        register = [line for line in ax.lines if to_rgb(line.get_color()) == to_rgb(at64.get_color())]
        assert sorted(line.get_linestyle() for line in register) == ["-", "--"]


def test_a_run_with_no_companion_beside_it_draws_its_own_warp_64_rows(run, meta, tmp_path):
    """A figure finds the companion beside the results file it draws: a run with none there (the
    reference run copied elsewhere, a cut of it, rows from no file) draws WARP = 64 where it timed it,
    as its report judges it."""
    alone = tmp_path / RUN.name
    alone.write_bytes(RUN.read_bytes())
    for path in (alone, None):
        series, source = register_lds_series(run, meta, path)
        assert source == "this run" and sorted(series[W64].index) == [(2048, 2048, 2048), (2049, 2049, 2049),
                                                                       (8192, 512, 2048)]
    series, source = register_lds_series(read_results(CUT), read_metadata(CUT), CUT)
    assert source == "this run" and len(series[W64]) == 1
    fig = fig_speedup(run, meta, results_path=alone)
    assert "timed in this run" in fig._suptitle.get_text() and len(fig.axes) == 4
