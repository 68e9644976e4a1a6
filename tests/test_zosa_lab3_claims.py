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


@pytest.fixture(scope="module")
def lab():
    vs = lab3.verdicts(ok_rows(read_results(LAB3)), _profile(LAB3), _reference("lab3"))
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
    assert sum(v.holds == "not checked" for v in lab.values()) == len(lab3.UNTESTED) == 3 and len(lab) == 16


def test_lab3_conflict_verdict_without_profile():
    v = lab3.matmul_conflict(None)
    assert v.holds == "not checked" and "mmbench profile" in v.evidence


def test_lab3_report_states_the_departures():
    text = (REPO / "results" / "lab3-h200" / "REPORT.md").read_text()
    for needle in ("## What we ran differently from the lab", "0.049 ms at 512 where the lab's took 26.6 ms",
                   "cannot be reconstructed from the text", "is a reconstruction", "16 claims: 4 yes, 4 partly, 5 no, 3 not checked"):
        assert needle in text, needle
