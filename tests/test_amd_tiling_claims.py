"""The AMD tiling tutorial: every verdict of the report recomputed from the committed reference
run's rows, its WARP = 64 companion and their Nsight Compute profiles (register against LDS tiling
at WARP = 32 and at the tutorial's 64, the profile claims), and the departures."""

from pathlib import Path

import numpy as np
import pytest

from mmbench.kernel_text import kernel_additions
from mmbench.profile import read_profile
from mmbench.results import read_metadata, read_results
from mmbench.studies import amd_tiling as A
from mmbench.studies.common import companion

REPO = Path(__file__).resolve().parent.parent
RUN = REPO / "results" / "amd-tiling-h100" / "amd-tiling-h100.csv"
PROFILE = RUN.with_name("amd-tiling-h100.profile.csv")
BIG, SMALL = (4096, 4096, 4096), (1024, 1024, 1024)


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
    report = A.report(run, read_metadata(RUN), {}, {}, read_profile(PROFILE), RUN)
    n = len(A.verdicts(run)) + len(A.profile_verdicts(read_profile(PROFILE), _wave().profile, read_metadata(RUN)))
    assert n == 18 and f"Claims judged: {n}; claims this run cannot judge: {len(A.UNTESTED)} (below)." in report
    for path in ("gemm/naive.cu", "gemm/shared.cu", "gemm/register_tiling.cu"):
        assert all(a in report for a in kernel_additions(path))
    assert any("early return" in a for a in kernel_additions("gemm/naive.cu"))
    # the WARP = 64 run exists: the report gives its result, not the command that would make it
    assert "--params WARP=64" not in report and "30 shapes of the companion run `warp64/amd-tiling-warp64.csv`" in report
    assert "caches flushed before each kernel (`--cache-control all`), clocks not locked" in report
    assert "## Memory hierarchy (Nsight Compute)" in report and "fig-amd-hierarchy.png" in report
    assert "(the same code)" not in report
    assert not any(row[0].startswith(("Profiling", "LDS tiling", "Register tiling")) for row in A.UNTESTED)


def test_a_run_without_companion_or_profile_says_what_would_judge_them(run, tmp_path):
    """A user's run alone: WARP = 64 judged where it was timed, the command for the rest, and the
    profile claims not checked with the command that takes the profile."""
    alone = tmp_path / RUN.name
    alone.write_bytes(RUN.read_bytes())
    report = A.report(run, read_metadata(RUN), {}, {}, None, alone)
    assert "`mmbench run -v register_tiling --params WARP=64 --sizes 256x1024x1024," in report
    assert "Claims judged: 10; claims this run cannot judge: 5 (below); not checked for want of a profile or a run: 8." in report


def _wave():
    return companion(RUN, *A.WAVEFRONT_RUN)


def test_register_adds_to_lds_at_the_wavefront_over_every_shape_of_the_companion(run):
    wave = _wave()
    over = A.register_over_lds(wave.df, A.REGISTER_WAVEFRONT)
    assert len(over) == 30
    expected = _median(wave.df, "shared", "BLOCK=16", 4096, 4096, 4096) / _median(
        wave.df, "register_tiling", A.REGISTER_WAVEFRONT, 4096, 4096, 4096)
    assert over[BIG] == pytest.approx(expected, rel=1e-12)
    at64 = next(v for v in A.verdicts(run, wave.df) if v.finding.startswith("Register tiling adds to LDS tiling, the tutorial"))
    assert at64.holds == "partly" and f"faster than LDS at {int((over > 1).sum())} of 30 shapes" in at64.evidence
    assert int((over > 1).sum()) == 13
    alone = next(v for v in A.verdicts(run, wave.df) if v.finding.startswith("Some workloads do better"))
    assert f"WARP = 64: LDS faster at {int((over < 1).sum())} shapes" in alone.evidence
    table = A.wavefront_summary(run, wave.df)
    square = over[[s for s in over.index if s[0] == s[1] == s[2] and s[0] % A.ALIGN == 0]]
    assert table.iloc[0]["register / LDS, WARP = 64"] == pytest.approx(float(np.exp(np.log(square).mean())))


def _profile_verdict(start):
    found = A.profile_verdicts(read_profile(PROFILE), _wave().profile, read_metadata(RUN))
    return next(v for v in found if v.finding.startswith(start))


def _row(profile, variant, params, shape):
    row = profile[(profile.variant == variant) & (profile.params == params) & (profile.m == shape[0])
                  & (profile.n == shape[1]) & (profile.k == shape[2])]
    assert len(row) == 1
    return row.iloc[0]


def test_naive_reads_dram_several_times_its_inputs_only_past_the_l2():
    p = read_profile(PROFILE)
    big = _row(p, "naive", "BLOCK=16", BIG).dram_bytes_read / (4 * 2 * 4096 * 4096)
    small = _row(p, "naive", "BLOCK=16", SMALL).dram_bytes_read / (4 * 2 * 1024 * 1024)
    verdict = _profile_verdict("Profiling shows naive reading DRAM")
    assert big >= A.SEVERAL > small
    assert verdict.holds == "partly" and f"4096x4096x4096 {big:.1f} x (past the L2)" in verdict.evidence


def test_lds_cuts_l1_traffic_but_not_l2_or_dram():
    p = read_profile(PROFILE)
    naive, lds = _row(p, "naive", "BLOCK=16", BIG), _row(p, "shared", "BLOCK=16", BIG)
    assert naive.l1_bytes / lds.l1_bytes >= A.REDUCES > naive.l2_bytes / lds.l2_bytes
    glob = _profile_verdict("LDS tiling dramatically reduces global memory access")
    assert glob.holds == "partly" and f"4096x4096x4096 L1 {naive.l1_bytes / lds.l1_bytes:.2f} x" in glob.evidence
    dram = (naive.dram_bytes_read + naive.dram_bytes_write) / (lds.dram_bytes_read + lds.dram_bytes_write)
    verdict = _profile_verdict("LDS tiling reduces DRAM access")
    assert dram < 1 and verdict.holds == "no" and f"4096x4096x4096 {dram:.2f} x (past the L2)" in verdict.evidence


def test_register_against_lds_in_the_profiles():
    p, w = read_profile(PROFILE), _wave().profile
    for prof, params in ((p, A.REGISTER_DEFAULT), (w, A.REGISTER_WAVEFRONT)):
        for shape in (SMALL, BIG):
            lds, reg = _row(prof, "shared", "BLOCK=16", shape), _row(prof, "register_tiling", params, shape)
            assert lds.shared_ld_inst / reg.shared_ld_inst >= A.REDUCES  # many shared reads gone
            assert reg.shared_ld_conflicts + reg.shared_st_conflicts > lds.shared_ld_conflicts + lds.shared_st_conflicts
            assert reg.barrier_stall_per_issue < (1 - A.MATTERS) * lds.barrier_stall_per_issue
            assert reg.ipc_per_smsp < lds.ipc_per_smsp
    assert _profile_verdict("Register tiling eliminates many shared-memory reads").holds == "yes"
    assert _profile_verdict("Register tiling avoids bank conflicts").holds == "no"
    assert _profile_verdict("Register tiling reduces synchronization overhead").holds == "yes"
    assert _profile_verdict("Register tiling achieves better instruction-level parallelism").holds == "no"
    traffic = _profile_verdict("Register tiling further reduces memory traffic")
    lds, reg = _row(p, "shared", "BLOCK=16", BIG), _row(p, "register_tiling", A.REGISTER_DEFAULT, BIG)
    assert traffic.holds == "yes" and f"4096x4096x4096 {lds.l1_bytes / reg.l1_bytes:.2f} / " in traffic.evidence


def test_dram_is_judged_past_the_l2_only():
    """Below the L2 every kernel reads its inputs once: a DRAM count there decides nothing."""
    p = read_profile(PROFILE)
    meta = read_metadata(RUN)
    assert A.past_l2(BIG, meta) and not A.past_l2(SMALL, meta)
    worse = p.copy()
    at = (worse.variant == "register_tiling") & (worse.m == 1024)
    worse.loc[at, "dram_bytes_read"] *= 10  # register tiling reading 10 x LDS's DRAM where both fit in L2
    pairs = A.register_pairs(worse, None)
    traffic = A.register_profile_verdicts(pairs, meta)[0]
    assert traffic.holds == "yes"
    assert A._holds([]) == "not checked" and A._holds([True, False]) == "partly" and A._holds([False]) == "no"


def test_hierarchy_section_from_the_profiles():
    table = A.hierarchy_profile(read_profile(PROFILE), _wave().profile)
    text = "\n".join(A.hierarchy_section(table, read_metadata(RUN)))
    assert "register tiling (4 x 4 a thread), WARP = 64" in text and "4096: operands 201 MB, past the" in text
    naive = _row(read_profile(PROFILE), "naive", "BLOCK=16", BIG)
    assert f"naive (16 x 16) 256 to {naive.dram_intensity:.0f}" in text
    assert f"none is held by a level's bandwidth or by the FP32 units (held: at least {A.HELD} %" in text
