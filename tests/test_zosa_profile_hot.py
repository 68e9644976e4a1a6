"""Zosa 2017's claims that the Nsight Compute profile decides, the hot-L2 companion's verdicts and
the memory-hierarchy section (issue 32): recomputed from the committed runs, formulas pinned on
made-up counts."""

from pathlib import Path

import pandas as pd
import pytest

from mmbench.analysis import ok_rows
from mmbench.profile import read_profile
from mmbench.results import read_results
from mmbench.studies import zosa2017
from mmbench.studies.common import companion

REPO = Path(__file__).resolve().parent.parent
ZOSA = REPO / "results" / "zosa2017-h200" / "zosa2017-h200.csv.gz"


@pytest.fixture(scope="module")
def profile():
    return read_profile(ZOSA.with_name("zosa2017-h200.profile.csv"))


def _fake(**columns) -> pd.DataFrame:
    """A profile of one size (n = 1024): columns given as {variant: value} for each column name."""
    variants = sorted({v for values in columns.values() for v in values})
    return pd.DataFrame({"variant": variants, "params": "BLOCK=32", "n": 1024,
                         **{c: [values.get(v, float("nan")) for v in variants] for c, values in columns.items()}})


def test_shared_reads_have_no_bank_conflicts(profile):
    v = zosa2017.shared_reads_conflict_free(profile)
    assert v.holds == "yes" and "under our 0.01 at 8 of 8 profiled points" in v.evidence
    assert "31 a store in CUDA-1u" in v.evidence
    made_up = _fake(conflicts_per_shared_ld={"shared": 0.0, "best": 0.5}, conflicts_per_shared_st={})
    assert zosa2017.shared_reads_conflict_free(made_up).holds == "partly"


def test_coalesced_loads_take_four_sectors_uncoalesced_thirty_two(profile):
    v = zosa2017.coalesced_loads(profile)
    assert v.holds == "yes" and "CUDA-1 4.0 (max 4.0" in v.evidence and "CUDA-1u 32.0" in v.evidence
    assert zosa2017.coalesced_loads(_fake(sectors_per_global_ld={"shared": 8, "shared_uncoalesced": 32})).holds == "no"
    assert zosa2017.coalesced_loads(_fake(sectors_per_global_ld={"shared": 4, "shared_uncoalesced": 6})).holds == "no"


def test_four_outputs_halve_the_shared_loads_per_flop(profile):
    v = zosa2017.four_outputs_halve_loads(profile)
    assert v.holds == "yes" and "CUDA-Best 0.625, CUDA-1 1.250" in v.evidence and "0.500 to 0.500" in v.evidence
    # 2n -> n: best's loads per FMA half of shared's holds; two thirds does not
    flops = {"best": 2e9, "shared": 2e9}
    assert zosa2017.four_outputs_halve_loads(_fake(shared_ld_inst={"best": 1e7, "shared": 2e7}, fp32_flops=flops)).holds == "yes"
    assert zosa2017.four_outputs_halve_loads(_fake(shared_ld_inst={"best": 2e7, "shared": 3e7}, fp32_flops=flops)).holds == "no"


def test_interleaving_halves_the_barriers_counted_in_the_source(profile):
    assert {v: zosa2017.barriers_per_tile(f"gemm/{v}.cu") for v in ("shared", "interleaved", "best")} == \
        {"shared": 2, "interleaved": 1, "best": 2}
    v = zosa2017.interleaving_halves_barriers(profile)
    assert v.holds == "yes" and "CUDA-1IL 1, CUDA-1 2 (ratio 0.50" in v.evidence and "2.5 at 4096" in v.evidence
    assert "measured" not in zosa2017.interleaving_halves_barriers(None).evidence


def test_naive_and_uncoalesced_both_hit_the_caches(profile):
    v = zosa2017.naive_hits_caches(profile)
    assert v.holds == "partly" and "Naive 95 % at 256" in v.evidence and "1u 87 % at 256" in v.evidence
    assert "1u's 32 sectors a load request against Naive's 2.5" in v.evidence

    def fake(naive, u):
        return _fake(l1_hit_pct={"naive": naive, "shared_uncoalesced": u}, l2_hit_pct={"naive": 90, "shared_uncoalesced": 90},
                     sectors_per_global_ld={"naive": 2.5, "shared_uncoalesced": 32},
                     barrier_stall_per_issue={"shared": 3, "shared_uncoalesced": 15})
    assert zosa2017.naive_hits_caches(fake(95, 40)).holds == "yes"  # hits, 55 points above 1u
    assert zosa2017.naive_hits_caches(fake(95, 80)).holds == "partly"  # hits, within 20 points of 1u
    assert zosa2017.naive_hits_caches(fake(30, 10)).holds == "no"  # under half its sectors hit


def test_without_a_profile_the_profile_claims_name_the_command():
    for f in (zosa2017.shared_reads_conflict_free, zosa2017.coalesced_loads, zosa2017.four_outputs_halve_loads,
              zosa2017.naive_hits_caches):
        v = f(None)
        assert v.holds == "not checked" and "mmbench profile --config configs/zosa2017.toml" in v.evidence


def test_hot_l2_verdicts_differ_only_on_uncoalesced_below_naive():
    cold = ok_rows(read_results(ZOSA))
    hot = ok_rows(companion(ZOSA, *zosa2017.HOT).df)
    pairs = zosa2017.hot_verdicts(cold, hot)
    assert len(pairs) == len(zosa2017.FINDINGS) == 13
    assert [(c.finding, c.holds, h.holds) for c, h in pairs if c.holds != h.holds] == \
        [("CUDA-1u is slower than CUDA-Naive", "partly", "yes")]
    rows = {r[0]: r for r in zosa2017.hot_vs_cold(cold, hot, [1024])}
    assert rows["CUDA-Best (32x32)"][1:] == ["15859 / 16544", "1.04 (1.00 to 1.18)"]


def test_the_roofline_stays_at_the_largest_size_the_run_timed(profile):
    curve = zosa2017.analysis.curve(ok_rows(read_results(ZOSA)), zosa2017.best_series(ok_rows(read_results(ZOSA))))
    assert int(profile.n.max()) == 4096 and zosa2017._timed_and_profiled(curve, profile) == 2048


def test_report_has_the_hierarchy_and_hot_sections_and_their_departures():
    text = (REPO / "results" / "zosa2017-h200" / "REPORT.md").read_text()
    for needle in ("## Memory hierarchy (Nsight Compute)", "![hierarchical roofline](fig-hierarchical-roofline.png)",
                   "Closest roof at n = 4096: shared memory for 7", "## With a hot L2", "they agree on 12 of 13",
                   "cache control `all`", "clock control `none`", "was never timed in the run", "**Hot-L2 run**"):
        assert needle in text, needle
    assert "zosa-hierarchy" in zosa2017.FIGURES
