"""The Zosa 2017 and Lab 3 claims added for issue 32: each verdict computed from the committed runs."""

import tomllib
from pathlib import Path

import pandas as pd
import pytest

from mmbench.analysis import ok_rows
from mmbench.results import read_metadata, read_results
from mmbench.studies import lab3, zosa2017

REPO = Path(__file__).resolve().parent.parent
ZOSA = REPO / "results" / "zosa2017-h200" / "zosa2017-h200.csv.gz"
LAB3 = REPO / "results" / "lab3-h200" / "lab3-h200.csv"


def _profile(path: Path) -> pd.DataFrame:
    return pd.read_csv(path.parent / (path.name.split(".")[0] + ".profile.csv"), dtype={"params": str}).fillna({"params": ""})


def _reference(name: str) -> dict:
    return tomllib.loads((REPO / "configs" / f"{name}.toml").read_text())["reference"]


@pytest.fixture(scope="module")
def zosa():
    vs = zosa2017.verdicts(read_results(ZOSA), read_metadata(ZOSA), _profile(ZOSA), _reference("zosa2017"))
    return {v.finding: v for v in vs}


def _lab3_tiles() -> pd.DataFrame:
    return ok_rows(read_results(LAB3.parent / "tiles" / "lab3-tiles.csv"))


@pytest.fixture(scope="module")
def lab():
    vs = lab3.verdicts(ok_rows(read_results(LAB3)), _profile(LAB3), _reference("lab3"), _lab3_tiles())
    return {v.finding: v for v in vs}


def test_zosa_every_claim_has_a_row(zosa):
    assert len(zosa) == len(zosa2017.FINDINGS) + len(zosa2017.CONTEXT_FINDINGS) + len(zosa2017.PROFILE_FINDINGS) == 22
    assert sum(v.holds == "not checked" for v in zosa.values()) == len(zosa2017.UNTESTED) == 0


def test_zosa_uncoalesced_is_never_overtaken_by_blas_on_the_h200(zosa):
    v = zosa["CUDA-1u is overtaken by multicore BLAS past n = 512"]
    assert v.holds == "no" and "BLAS ahead of 1u at 0 of 145 sizes past 512" in v.evidence


def test_zosa_shared_is_not_twice_naive(zosa):
    v = zosa["CUDA-1 is more than twice CUDA-Naive"]
    assert v.holds == "no" and "(median 1.36)" in v.evidence


def test_zosa_four_outputs_about_twice_interleaved_at_half_the_sizes(zosa):
    v = zosa["CUDA-Best (four outputs a thread) is about twice CUDA-1IL"]
    assert v.holds == "partly" and "median 1.52" in v.evidence and "79 of 146 sizes" in v.evidence


def test_zosa_roofline_read_off_is_not_the_measured_intensity(zosa):
    fig3 = zosa["Figure 3: the kernel runs at about 2 FLOP/B (240 GB/s roof)"]
    fig4 = zosa["Figure 4: the kernel runs at about 3 FLOP/B (154 GB/s roof)"]
    assert fig3.holds == fig4.holds == "no"
    assert "= 3.6 FLOP/B at n = 2048" in fig3.evidence and "= 4.1 FLOP/B" in fig4.evidence
    assert "measures 379 FLOP per DRAM byte" in fig4.evidence and "Past the L2 (n = 4096" in fig4.evidence
    assert "480 GFLOP/s / 240 GB/s = 2.0" in fig3.paper and "/ 154 GB/s = 3.1" in fig4.paper


def test_zosa_roofline_without_profile_is_not_checked():
    df, meta = read_results(ZOSA), read_metadata(ZOSA)
    v = zosa2017.roofline_read_off(ok_rows(df), meta, None, _reference("zosa2017"), "measured")
    assert v.holds == "not checked" and "mmbench profile" in v.evidence


def test_zosa_plateau_constant_block_occupancy_and_shared_limit(zosa):
    assert zosa["CUDA-Best plateaus early, at its peak from n = 512"].holds == "no"
    assert "35% of its peak" in zosa["CUDA-Best plateaus early, at its peak from n = 512"].evidence
    const = zosa["Dropping the tile bound's min() (constant block size) is faster"]
    assert const.holds == "yes" and "189 of 189" in const.evidence
    occ = zosa["32x32 CUDA-Best runs at full occupancy (registers and shared memory no limit)"]
    assert occ.holds == "yes" and "32 registers" in occ.evidence and "occupancy 1.00" in occ.evidence
    fit = zosa["Interleaving cannot be added to the four-output version: shared memory would exceed the default limit"]
    assert fit.holds == "no" and "32 KB, within the default 48 KB" in fit.evidence and "64 KB, over it" in fit.evidence
    peak = zosa["The peak comes from a four-output version, above the 360 GFLOP/s goal"]
    assert peak.holds == "yes" and "CUDA-Best const (32x32), 17840 GFLOP/s" in peak.evidence


def test_zosa_table1_has_best_and_best_const():
    t = zosa2017.table1(ok_rows(read_results(ZOSA)), zosa2017.TABLE1_SIZES)
    assert {"CUDA-Best (32x32)", "CUDA-Best const (32x32)", "CUDA-Best const (32x32) / BLAS"} <= set(t.columns)
    assert (t["CUDA-Best const (32x32)"] > t["CUDA-Best (32x32)"]).all()


def test_zosa_report_states_the_departures():
    text = (REPO / "results" / "zosa2017-h200" / "REPORT.md").read_text()
    for needle in ("## What we ran differently from the paper", "cold L2", "3 untimed warm-ups", "`best_const`",
                   "`__restrict__`", "`__launch_bounds__(BLOCK*BLOCK)`", "returns early", "CUDA-1u** is our reconstruction",
                   "22 claims: 8 yes, 7 partly, 7 no, 0 not checked"):
        assert needle in text, needle


def test_lab3_headline_ten_times(lab):
    naive = lab["Shared GPU on the order of 10x faster than Naive GPU"]
    cache = lab["Shared GPU on the order of 10x faster than Cache GPU"]
    assert naive.holds == "no" and "0.27 to 0.29" in naive.evidence and "34.1 to 34.3" in naive.evidence
    assert cache.holds == "yes" and "13.36 to 14.13" in cache.evidence and "20.4 to 21.3" in cache.evidence
    assert lab["Shared GPU on the order of 10x faster than Shared-Cache-Optimized GPU"].holds == "yes"


def test_lab3_other_new_claims(lab):
    assert lab["Staging B in shared memory improves the cache version"].holds == "partly"
    steady = lab["Times barely change from run to run"]
    assert steady.holds == "partly" and "67 of 74" in steady.evidence
    conflict = lab["A 32-way bank conflict in the shared matmul's products"]
    assert conflict.holds == "partly" and "n=1024: 5.60" in conflict.evidence
    cache = lab["Cache GPU about 85 % faster than naive at 4096"]
    assert "its table says 61% faster, not 85 %" in cache.evidence
    assert sum(v.holds == "not checked" for v in lab.values()) == 0 and len(lab) == 16


def test_lab3_conflict_verdict_without_profile():
    v = lab3.matmul_conflict(None)
    assert v.holds == "not checked" and "mmbench profile" in v.evidence


def test_lab3_report_states_the_departures():
    text = (REPO / "results" / "lab3-h200" / "REPORT.md").read_text()
    for needle in ("## What we ran differently from the lab", "0.049 ms at 512 where the lab's took 26.6 ms",
                   "cannot be reconstructed from the text", "is a reconstruction", "16 claims: 6 yes, 5 partly, 5 no, 0 not checked",
                   "profiled at their default parameters", "`#pragma unroll` over a loop whose trip count depends on threadIdx.y",
                   "caches flushed before each kernel", "## Memory hierarchy (Nsight Compute)", "## Tile sweep",
                   "(fig-matmul-hierarchy.png)", "(fig-transpose-levels.png)"):
        assert needle in text, needle


def test_lab3_block_size_32_from_the_tile_sweep(lab):
    v = lab["Block size 32 is the best choice for the transposes"]
    assert v.holds == "partly"
    assert "at the lab's 1 x 4 strips (ROWS = TILE / 4): tile 32 the fastest at 5 of 6 sizes, within 5% of the fastest at 6 of 6" in v.evidence
    assert "at each tile's fastest ROWS: tile 32 the fastest at 2 of 6 sizes, within 5% of the fastest at 5 of 6" in v.evidence
    assert "94.6% of tile 64's, ROWS=2, at n=16384" in v.evidence


def test_lab3_tile_32_share_on_made_up_numbers():
    def row(tile, rows, n, gbs):
        return {"variant": "transpose_tiled", "params": f"PAD=1,ROWS={rows},TILE={tile}", "n": n, "gbytes_per_s": gbs}

    tiles = pd.DataFrame([row(16, 4, 512, 100), row(32, 8, 512, 96), row(32, 2, 512, 90), row(64, 16, 512, 50),
                          row(64, 2, 512, 120)])
    share = lab3.tile_32_share(lab3.tile_sweep(tiles)).set_index("view")
    assert share.loc["strips", "fastest"] == 16 and share.loc["strips", "share"] == pytest.approx(0.96)
    assert share.loc["best", "fastest"] == 64 and share.loc["best", "fastest_rows"] == 2
    assert share.loc["best", "share"] == pytest.approx(96 / 120)
    assert lab3.best_tile(tiles).holds == "partly"  # within 5 % at the strips, 20 % behind at the best ROWS


def test_lab3_naive_transpose_stores_do_not_coalesce(lab):
    v = lab["The naive transpose uses the warps well but does not coalesce"]
    assert v.holds == "yes"
    assert "n=1024: 32.0 / 4.0; n=4096: 32.0 / 4.0" in v.evidence and "(shmem GPU: n=1024: 4.0 / 4.0" in v.evidence
    assert "divergent branches n=1024: 0 of 32768; n=4096: 0 of 524288" in v.evidence


def test_lab3_a_shared_conflict_costs_less_than_an_uncoalesced_store(lab):
    v = lab["Shared-memory conflicts cost less than global ones would"]
    assert v.holds == "yes"
    assert "n=4096: 43.8 us / 16.4 M = 2.7 ps a wavefront against 217.0 us / 14.7 M = 14.8 ps a sector (5.5x)" in v.evidence


def test_lab3_new_claims_without_their_data_are_not_checked():
    for v in (lab3.best_tile(None), lab3.naive_coalescing(None), lab3.conflicts_vs_global(None)):
        assert v.holds == "not checked" and "what would check it" in v.evidence


def test_lab3_report_reads_the_profile_levels_and_the_tile_sweep():
    text = (REPO / "results" / "lab3-h200" / "REPORT.md").read_text()
    assert "The lab's own kernels reach at most 45 % of a roof (Shared GPU, A's tile [32][33], shared memory)" in text
    assert "shmem GPU moves DRAM at 67 % of its peak, the unpadded one at 30 % and naive at 12 %" in text
    assert "| 16384 | 4,259 | 851 | **3,334** | 3,292 | 3,021 |" in text  # tile 16 ahead at the strips at 16384
    assert "n=4096: 39.4 us against transpose_shmem's 34.7 us" in text
