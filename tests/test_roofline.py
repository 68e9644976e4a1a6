"""The roofline draws every operation of a run: GEMMs and GEMVs at their intensity under the roofs,
copies and transposes (no FLOPs, so no place on a FLOP axis) as GB/s against the DRAM roofs in a
strip at its left. From the committed Lab 3 run (GEMM, transposes, the copy) and a cut of the
Sørensen run (GEMV and the copy)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from mmbench import analysis, plots
from mmbench.results import read_metadata, read_results
from mmbench.studies.zosa2017 import figures

REPO = Path(__file__).resolve().parent.parent
LAB3 = REPO / "results" / "lab3-h200" / "lab3-h200.csv"
GEMV = Path(__file__).parent / "data" / "sorensen2012-h100-cut.csv"
ZOSA = Path(__file__).parent / "data" / "zosa2017-h200-cut.csv"


@pytest.fixture(scope="module")
def lab3():
    profile = pd.read_csv(LAB3.with_name("lab3-h200.profile.csv"), dtype={"params": str}).fillna({"params": ""})
    return read_results(LAB3), read_metadata(LAB3), profile


def points_of(ax) -> dict[str, tuple[float, float]]:
    """Each scattered point of an axes by its legend label: (x, y)."""
    return {c.get_label(): tuple(c.get_offsets()[0]) for c in ax.collections}


def test_transposes_and_the_copy_stand_against_the_dram_roofs_beside_the_gemms(lab3):
    df, meta, profile = lab3
    fig = figures.fig_roofline(df, meta, profile, None)
    strip, roof = fig.axes
    assert roof.get_title().startswith("Figures 3-4: roofline at n = 4096\n")  # the largest size of every op, profiled
    at = df[(df.n == 4096) & (df.status == "ok")]
    moved = points_of(strip)
    gpu_moves = at[at.op.isin(["transpose", "copy"]) & (at.backend.isin(["cuda", "driver"]))]
    assert len(moved) == len(gpu_moves) == 9  # numpy's and the C loop's transposes ran on the CPU: not drawn
    assert moved["GPU memcpy"][1] == at[at.variant == "memcpy"].gbytes_per_s.iloc[0]
    assert moved["Naive GPU"][1] == at[at.variant == "transpose_naive"].gbytes_per_s.iloc[0]
    assert strip.get_yscale() == "log" and "GB/s" in strip.get_ylabel()
    assert [line.get_ydata()[0] for line in strip.get_lines()] == [pytest.approx(4814.4, abs=0.1)]  # datasheet DRAM
    placed = points_of(roof)
    naive = at[at.variant == "naive"].iloc[0]
    # measured by Nsight Compute since the profile holds it (issue 32's profile of every series), not 2mnk / 4(mk+kn+mn)
    assert placed["CUDA-Naive (32x32)"] == (pytest.approx(31.72, abs=0.01), naive.gflops_mean)
    assert placed["Shared GPU PAD=1"][0] == pytest.approx(16.19, abs=0.01)  # measured by Nsight Compute
    assert "Shared GPU PAD=0" in placed and "cuBLAS" in placed  # two series of one label told apart
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "GPU memcpy" in legend and "cuBLAS" in legend and legend[0].startswith("datasheet")
    plt.close(fig)


def test_gemvs_sit_at_their_own_intensity_and_the_copy_beside_them():
    df, meta = read_results(GEMV), read_metadata(GEMV)
    size = analysis.roofline_size(df, None)
    assert size == 16380  # the largest n at which both the GEMVs and the copy ran n x n
    fig = plots.fig_roofline(df, meta, None, size)
    strip, roof = fig.axes
    placed = points_of(roof)
    tuned = df[(df.variant == "gemv_tuned") & (df.m == size) & (df.n == size)].iloc[0]
    n = float(size)
    assert placed["auto-tuned"] == (2 * n * n / (4 * (n * n + 2 * n)), tuned.gflops_mean)  # 2mn / 4(mn + m + n)
    assert set(placed) == {"auto-tuned", "cuBLAS sgemv"} and set(points_of(strip)) == {"GPU memcpy"}
    assert "each operation's FLOPs over its fewest DRAM bytes" in roof.get_title()
    plt.close(fig)


def test_a_gemm_run_keeps_its_one_panel_and_corner_legend():
    """What the committed GEMM rooflines drew, unchanged: one axes, the legend in its corner."""
    fig = plots.fig_roofline(read_results(ZOSA), read_metadata(ZOSA), None, 1024)
    [ax] = fig.axes
    assert ax.get_legend() is not None and not fig.legends
    assert "algorithmic minimum 2mnk / 4(mk+kn+mn), hollow markers" in ax.get_title()
    plt.close(fig)


def test_a_run_of_transposes_alone_has_its_strip_and_empty_roofs(lab3):
    df, meta, _ = lab3
    fig = plots.fig_roofline(df[df.op != "gemm"], meta, None, 16384)
    strip, roof = fig.axes
    at = df[(df.n == 16384) & (df.status == "ok") & ~df.backend.isin(["numpy", "cpu"])]
    assert len(points_of(strip)) == len(at) == 9 and not roof.collections
    assert "no operation with FLOPs" in roof.get_title()
    plt.close(fig)


def test_default_size_is_where_every_operation_ran(lab3):
    df, _, profile = lab3
    assert analysis.roofline_size(df, None) == 4096  # transposes go on to 16384, the GEMMs stop at 4096
    assert analysis.roofline_size(df, profile[profile.n == 1024]) == 1024  # profiled sizes first
    assert analysis.roofline_size(df[df.op == "transpose"], None) == 16384


def test_an_architecture_without_a_known_fp32_peak_draws_its_bandwidth_roof():
    df, meta = read_results(ZOSA), read_metadata(ZOSA)
    meta = {**meta, "gpu": {**meta["gpu"], "compute_capability": "12.0"}, "ceilings": None}
    fig = plots.fig_roofline(df, meta, None, 1024)
    [roof] = [line.get_label() for line in fig.axes[0].get_lines()]
    assert roof.startswith("datasheet: FP32 peak unknown, 4814 GB/s DRAM")
    plt.close(fig)


def test_the_fp32_roofline_takes_the_fp32_profile_row_of_a_series(lab3):
    """A profile of a typed run holds a series' rows at several precisions (profile --results):
    the roofline of the papers' fp32 rows reads the fp32, nn one."""
    from mmbench.plots import roofline_points

    df, _, profile = lab3
    at = roofline_points(df, profile, 4096)
    other = profile.assign(dtype="bf16", layout="nt", dram_intensity=123.0)
    both = pd.concat([other, profile.assign(dtype="fp32", layout="nn")], ignore_index=True)
    again = roofline_points(df, both, 4096)
    assert again.intensity.tolist() == at.intensity.tolist() and 123.0 not in again.intensity.tolist()
