"""The hierarchical roofline's arithmetic from a profile: intensities per level, the shares of
each level's peak, the closest roof, and the figures' refusals."""

import math

import pandas as pd
import pytest

from mmbench import hierarchy
from mmbench.results import ResultsError

PEAKS = {"peak_fp32_flops_per_s": 64e12, "peak_shared_bytes_per_s": 32e12, "peak_l1_bytes_per_s": 32e12,
         "peak_l2_bytes_per_s": 16e12, "peak_dram_bytes_per_s": 4e12}


def a_profile(*rows) -> pd.DataFrame:
    return pd.DataFrame([{"variant": v, "params": p, "m": n, "n": n, "k": k, "gpu_time_ns": t, "fp32_flops": f,
                          "shared_bytes": sb, "l1_bytes": l1, "l2_bytes": l2, "dram_bytes_read": dr, "dram_bytes_write": 0.0,
                          **PEAKS} for v, p, n, k, t, f, sb, l1, l2, dr in rows])


def test_each_levels_intensity_and_share_of_its_peak():
    # 1 ms, 32 GFLOP: 32 TFLOP/s (50 % of FP32); 16 GB of L2 traffic: 16 TB/s (100 % of L2's peak)
    prof = a_profile(("best", "BLOCK=32", 4096, 4096, 1e6, 32e9, 8e9, 4e9, 16e9, 1e9))
    row = hierarchy.levels(prof).iloc[0]
    assert row.gflops == pytest.approx(32e3) and row.fp32_pct == pytest.approx(50)
    assert row.shared_intensity == pytest.approx(4) and row.l1_intensity == pytest.approx(8)
    assert row.l2_intensity == pytest.approx(2) and row.dram_intensity == pytest.approx(32)
    assert row.l2_pct == pytest.approx(100) and row.dram_pct == pytest.approx(25)  # 1 GB in 1 ms of 4 TB/s
    assert row.bound == "l2" and row.bound_pct == pytest.approx(100)  # the roof it came closest to, and how close
    assert hierarchy.roof_name(row.bound) == "L2" and hierarchy.roof_name("fp32") == "FP32"


def test_a_transpose_has_bandwidths_but_no_intensity():
    prof = a_profile(("transpose_shmem", "", 4096, 0, 1e5, 0.0, 134e6, 134e6, 134e6, 134e6))
    row = hierarchy.levels(prof).iloc[0]
    assert math.isnan(row.dram_intensity) and row.op == "transpose"
    assert row.dram_gbytes_per_s == pytest.approx(1340) and row.bound == "dram"


def test_l1_and_shared_memory_share_one_roof():
    assert hierarchy.roof_groups({"shared": 32e12, "l1": 32e12, "l2": 16e12, "dram": 4e12}) == [
        ("shared", "l1"), ("l2",), ("dram",)]


def test_a_profile_before_the_hierarchical_counts_is_refused_in_one_line():
    old = a_profile(("best", "BLOCK=32", 1024, 1024, 1e5, 2e9, 1, 1, 1, 1)).drop(columns=["l2_bytes"])
    with pytest.raises(ResultsError, match="predates the hierarchical counts"):
        hierarchy.levels(old)
    with pytest.raises(ResultsError, match="no Nsight Compute profile"):
        hierarchy.levels(None)


def test_the_figures_draw_a_panel_per_shape():
    prof = a_profile(("best", "BLOCK=32", 1024, 1024, 1e5, 2e9, 1e9, 1e9, 1e8, 1e7),
                     ("best", "BLOCK=32", 4096, 4096, 1e6, 32e9, 8e9, 4e9, 16e9, 1e9),
                     ("transpose_shmem", "", 4096, 0, 1e5, 0.0, 134e6, 134e6, 134e6, 134e6))
    meta = {"gpu": {"name": "NVIDIA H200", "l2_bytes": 60 * 2**20}}
    fig = hierarchy.fig_hierarchical_roofline(prof, meta, "t")
    assert len(fig.axes) == 2 and "past the 63 MB L2" in fig.axes[1].get_title()
    assert len(hierarchy.fig_memory_levels(prof, meta, "t").axes) == 1


def test_one_variant_at_two_parameter_points_of_one_block_gets_a_dash_each():
    """Lab 3's shared matmul at PAD = 0 and 1 share a colour and a block size: a dash each tells them
    apart; block sizes keep their own styles (Zosa's CUDA-Best at 8, 16 and 32)."""
    from mmbench.plots import LINESTYLE

    rows = pd.DataFrame({"variant": ["matmul_shared", "matmul_shared", "naive"], "params": ["PAD=0", "PAD=1", ""]})
    dashes = hierarchy._dashes(rows)
    assert dashes[0] != dashes[1] and dashes[:2] == list(hierarchy.PARAM_DASHES[:2])
    best = pd.DataFrame({"variant": ["best"] * 3, "params": ["BLOCK=8", "BLOCK=16", "BLOCK=32"]})
    assert hierarchy._dashes(best) == [LINESTYLE.get(b, "-") for b in (8, 16, 32)]
