"""Zosa's roofline (Figures 3 and 4) shows what separates the versions and the paper's own read-off
(issue 44, figures that show the claim): each version at its measured DRAM intensity at a size past
the L2, where they differ (inside it they all stack on about one intensity), and the paper's 2 and
3 FLOP/B at its 480 GFLOP/s on the K80's roofs, left of the fewest DRAM bytes CUDA-Best can move.
Checked on the returned Figure, not pixels."""

import tomllib
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from mmbench.profile import read_profile
from mmbench.results import read_metadata, read_results
from mmbench.studies.zosa2017 import figures
from mmbench.studies.zosa2017.paper import PAPER

REPO = Path(__file__).resolve().parent.parent
ZOSA = REPO / "results" / "zosa2017-h200" / "zosa2017-h200.csv.gz"
CUT = REPO / "tests" / "data" / "zosa2017-h200-cut.csv"
VERSIONS = ["CUDA-Best const (32x32)", "CUDA-Best (32x32)", "CUDA-Best (16x16)", "CUDA-Best (8x8)", "CUDA-1IL (32x32)",
            "CUDA-C_Unroll (32x32)", "CUDA-1 (32x32)", "CUDA-Naive (32x32)", "CUDA-1u (32x32)", "cuBLAS"]


@pytest.fixture(scope="module")
def run():
    return read_results(ZOSA), read_metadata(ZOSA), read_profile(ZOSA.with_name("zosa2017-h200.profile.csv"))


def _points(ax, gid: str) -> list[tuple[float, float]]:
    return [tuple(xy) for c in ax.collections if c.get_gid() == gid for xy in c.get_offsets()]


def _names(ax) -> list[str]:
    return [t.get_text() for t in ax.texts if t.get_text() in VERSIONS]


def test_each_version_sits_at_its_dram_intensity_past_the_l2(run):
    df, meta, profile = run
    fig = figures.fig_roofline(df, meta, profile, None)
    ax = fig.axes[0]
    assert ax.get_title().startswith("Figures 3-4: roofline at n = 4096\n201 MB of operands, past the 63 MB L2; "
                                     "intensity: measured DRAM traffic (Nsight Compute)")
    assert "profiled, not timed" in ax.get_ylabel() and (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    at = profile[profile.n == 4096]
    points = _points(ax, figures.KERNEL_GID)
    assert sorted(x for x, _ in points) == pytest.approx(sorted(at.dram_intensity))  # Nsight's, not 2mnk/4(...)
    assert sorted(y for _, y in points) == pytest.approx(sorted(at.fp32_flops / at.gpu_time_ns))
    ours = sorted(x for x, _ in points)[:-1]  # cuBLAS the last, at 347
    assert ours[0] < 10 and ours[-1] > 60  # 9.2 (8x8) to 62 (32x32): what n = 2048 stacks at 380 hides
    assert sorted(_names(ax)) == sorted(VERSIONS)  # each named beside its point
    note = [t.get_text() for t in ax.texts if t.get_text().startswith("At n = 2048")]
    assert note and "measures 378 to 382 FLOP per DRAM byte (cuBLAS 477)" in note[0]
    plt.close(fig)


def test_the_papers_read_off_points_and_the_floor_they_miss(run):
    df, meta, profile = run
    fig = figures.fig_roofline(df, meta, profile, None)
    ax = fig.axes[0]
    assert _points(ax, "paper read-off") == [(2, 480), (3, 480)]  # its Figs. 3 and 4, at its 480 GFLOP/s
    k80 = [line for line in ax.get_lines() if line.get_label().startswith("the paper's K80")]
    assert [line.get_label() for line in k80] == ["the paper's K80 datasheet roof: 240 GB/s (its Fig. 3)",
                                                  "the paper's K80 measured roof: 154 GB/s (its Fig. 4)"]
    for line, gbs in zip(k80, (240, 154)):
        assert line.get_ydata() / line.get_xdata() == pytest.approx(gbs)
    (floor,) = _points(ax, "floor")  # CUDA-Best's global-memory sectors: 14.2 FLOP/B at 256, the least
    assert floor[0] == pytest.approx(14.2, abs=0.05) and floor[1] == PAPER["peak_gflops"]
    (read,) = _points(ax, "read off the roof")  # CUDA-Best read the paper's way off our measured roof
    assert read[0] == pytest.approx(17503 / 4234, rel=0.01)
    assert any("not its 2 or 3" in t.get_text() for t in ax.texts)
    plt.close(fig)


def test_the_read_off_is_the_papers_and_the_configs():
    reference = tomllib.loads((REPO / "configs" / "zosa2017.toml").read_text())["reference"]
    assert [r[1] for r in figures.PAPER_READ_OFF] == [reference["dram_datasheet_gbytes_per_s"],
                                                       reference["dram_measured_gbytes_per_s"]]
    assert [r[2] for r in figures.PAPER_READ_OFF] == [2, 3]  # section 3: "an estimated 2", "3 flops/byte"
    assert round(PAPER["peak_gflops"] / 240) == 2 and round(PAPER["peak_gflops"] / 154) == 3


def test_a_size_inside_the_l2_or_without_a_profile_still_draws(run):
    df, meta, profile = run
    fig = figures.fig_roofline(df, meta, profile, 1024)  # timed and profiled: the run's GFLOP/s
    ax = fig.axes[0]
    assert ax.get_title().startswith("Figures 3-4: roofline at n = 1024\n13 MB of operands, in the 63 MB L2")
    assert "mean of samples" in ax.get_ylabel() and len(_points(ax, figures.KERNEL_GID)) == 10
    assert not [t for t in ax.texts if t.get_text().startswith("At n = ")]  # the note is for a size past the L2
    plt.close(fig)
    cut = read_results(CUT)
    fig = figures.fig_roofline(cut[cut.variant == "best"], read_metadata(CUT), None, None)  # the design card's run
    ax = fig.axes[0]
    assert "algorithmic minimum" in ax.get_title() and len(_points(ax, figures.KERNEL_GID)) == 3
    assert _points(ax, "paper read-off") == [(2, 480), (3, 480)] and not _points(ax, "floor")
    plt.close(fig)
