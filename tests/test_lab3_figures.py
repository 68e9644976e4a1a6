"""Lab 3's transpose figure shows the lab's comparison (issue 44, figures that show the claim): each GPU
transpose as % of memcpy on a linear axis, where shmem against memcpy can be read, above every
transpose's GB/s on a log axis that keeps the CPU's in view. Checked on the returned Figure, not pixels."""

import json
from pathlib import Path

import matplotlib.colors as mcolors
import pandas as pd
import pytest

from mmbench.analysis import ok_rows
from mmbench.results import ResultsError, read_results
from mmbench.studies.lab3 import figures, measures

REPO = Path(__file__).resolve().parent.parent
LAB3 = REPO / "results" / "lab3-h200" / "lab3-h200.csv"
GPU = ["Naive GPU", "shmem GPU", "shmem GPU, [32][32]", "Optimized GPU", "tiled", "tiled + vectors", "swizzled 4 x 4",
       "tiled + vectors, pipelined"]
CPU = ["numpy (CPU)", "Naive CPU"]


@pytest.fixture(scope="module")
def run():
    return read_results(LAB3), json.loads(LAB3.with_suffix(".meta.json").read_text())


def _lines(ax) -> dict:
    return {line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")}


def test_the_transposes_against_memcpy_on_a_linear_axis_above_their_gb_s_on_a_log_one(run):
    fig = figures.fig_transpose_bandwidth(*run)
    top, below = fig.axes
    assert (top.get_yscale(), below.get_yscale(), below.get_xscale()) == ("linear", "log", "log")
    assert top.get_ylim() == (0, 105.0) and "% of GPU memcpy" in top.get_ylabel()
    # above: the GPU's transposes alone, at every size of the run, against memcpy's 100 % (and the verdict's 91 %)
    lines = _lines(top)
    assert list(lines) == GPU
    assert list(lines["shmem GPU"].get_xdata()) == [512, 1024, 2048, 4096, 8192, 16384]
    bw = measures.transpose_bandwidth(ok_rows(run[0]))
    assert lines["shmem GPU"].get_ydata() == pytest.approx(100 * bw["shmem GPU"] / bw["GPU memcpy"])
    assert lines["shmem GPU"].get_ydata()[0] == pytest.approx(98.06, abs=0.01)
    assert lines["Naive GPU"].get_ydata()[-1] == pytest.approx(12.53, abs=0.01)
    levels = sorted(line.get_ydata()[0] for line in top.get_lines() if line.get_label().startswith("_"))
    assert levels == pytest.approx([100 / 1.1, 100])
    # below: every series, the CPU's three decades under the GPU's, and memcpy dashed
    assert list(_lines(below)) == ["GPU memcpy", *GPU, *CPU]
    assert _lines(below)["GPU memcpy"].get_linestyle() == "--"
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["GPU memcpy", *GPU, *CPU]
    width, height = fig.get_size_inches() * 150  # the committed PNG's dpi
    assert width < 2400 and height < 2400


def test_shmem_and_optimized_stay_apart_and_keep_the_memory_levels_colours(run):
    """Optimized lies within 2 % of shmem: another dash and marker. The lab's four kernels take the
    colours of the profile's memory-levels figure, so a kernel is one colour across the study."""
    top = figures.fig_transpose_bandwidth(*run).axes[0]
    shmem, optimized = _lines(top)["shmem GPU"], _lines(top)["Optimized GPU"]
    assert (shmem.get_linestyle(), shmem.get_marker()) != (optimized.get_linestyle(), optimized.get_marker())
    profile = pd.read_csv(LAB3.with_name("lab3-h200.profile.csv"), dtype={"params": str}).fillna({"params": ""})
    levels = figures.fig_transpose_levels(run[0], run[1], profile)
    bars = {label: mcolors.to_hex(container.patches[0].get_facecolor())
            for label, container in zip(*reversed(levels.axes[0].get_legend_handles_labels()))}
    assert set(bars) == {"Naive GPU", "shmem GPU", "shmem GPU, [32][32]", "Optimized GPU"}
    assert {label: mcolors.to_hex(_lines(top)[label].get_color()) for label in bars} == bars


def test_a_run_without_memcpy_has_the_gb_s_panel_alone(run):
    df, meta = run
    fig = figures.fig_transpose_bandwidth(df[df.op != "copy"], meta)
    (ax,) = fig.axes
    assert ax.get_yscale() == "log" and list(_lines(ax)) == [*GPU, *CPU]
    assert "no GPU memcpy" in ax.get_title()
    with pytest.raises(ResultsError, match="needs transpose rows"):
        figures.fig_transpose_bandwidth(df[df.op == "copy"], meta)
