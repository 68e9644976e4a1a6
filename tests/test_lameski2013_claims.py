"""Lameski 2013: every verdict of the report recomputed from the committed reference run's rows,
the figures' form (own y-axis per scope, no zigzag, no repeated legend text), the heatmap's text
colours, and the kernel additions read from the source."""

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

from mmbench import plots
from mmbench.profile import read_profile
from mmbench.results import ResultsError
from mmbench.kernel_text import additions, kernel_additions
from mmbench.results import read_metadata, read_results
from mmbench.studies import lameski2013 as L

REPO = Path(__file__).resolve().parent.parent
RUN = REPO / "results" / "lameski2013-h100" / "lameski2013-h100.csv.gz"
PROFILE = RUN.with_name("lameski2013-h100.profile.csv")


@pytest.fixture(scope="module")
def run():
    return read_results(RUN)


@pytest.fixture(scope="module")
def profile():
    return read_profile(PROFILE)


def _ratio(df, scope, m, n, k):
    """Approach 1's median time over approach 2's at one shape, from the raw rows."""
    def t(variant, pad):
        row = df[(df.variant == variant) & (df.params == "BLOCK=32") & (df.scope == scope) & (df.pad == pad)
                 & (df.m == m) & (df.n == n) & (df.k == k) & (df.status == "ok")]
        assert len(row) == 1
        return float(row.time_ms_median.iloc[0])
    return t("shared_padded", 1) / t("shared", 0)


def _verdict(df, start):
    return next(v for v in L.verdicts(df) if v.finding.startswith(start))


@pytest.mark.parametrize("k", L.DEPTHS)
def test_average_verdict_is_the_sign_of_the_mean_improvement_in_each_scope(run, k):
    wins = {}
    for scope in ("kernel", "device", "end_to_end"):
        r = L.normalized_speed(run, scope)
        r = r[r.index.get_level_values("k") == k]
        gain = 100 * np.mean([1 / x - 1 for x in r])
        wins[scope] = gain > 0
        verdict = _verdict(run, f"Padding beats border checks on average, k = {k}")
        assert f"{scope}: {gain:+.1f} %" in verdict.evidence
    assert wins == {"kernel": True, "device": False, "end_to_end": False}
    assert verdict.holds == "partly" and verdict.paper.startswith(f"{L.PAPER_PERCENT[k]} %")


def test_conclusion_and_order_of_the_averages(run):
    both = _verdict(run, "Padding outperforms border checks for both k")
    assert both.holds == "partly" and "kernel: yes; device: no; end_to_end: no" in both.evidence
    order = _verdict(run, "Padding gains more at k = 32")
    table = L.summary(run)
    kernel = table[table.scope == "kernel"][L.GAIN]
    assert not kernel[32] > kernel[64]  # the kernel scope gains more at k = 64, against the paper
    assert order.holds == "partly" and "end_to_end scope only" in order.evidence


@pytest.mark.parametrize("figure,k", [(3, 32), (4, 64)])
def test_figure_verdict_counts_the_shapes_below_one(run, figure, k):
    verdict = _verdict(run, f"Fig. {figure}:")
    r = L.normalized_speed(run, "kernel")
    r = r[r.index.get_level_values("k") == k]
    assert f"kernel: below 1 at {int((r < 1).sum())} of {len(r)}" in verdict.evidence
    assert r[(33, 4096, k)] == pytest.approx(_ratio(run, "kernel", 33, 4096, k), rel=1e-12)
    assert verdict.holds == "partly"  # a majority below 1 in the kernel scope only


def test_some_shapes_go_the_other_way_in_every_scope(run):
    verdict = _verdict(run, "At both k, some shapes")
    r = L.normalized_speed(run, "kernel")
    above = [int((r[r.index.get_level_values("k") == k] > 1).sum()) for k in L.DEPTHS]
    assert verdict.holds == "yes" and f"kernel: above 1 at {above[0]} (k = 32) and {above[1]} (k = 64)" in verdict.evidence


def test_padded_bytes_counts_a_b_and_c_padded_over_as_given():
    assert L.padded_bytes(33, 4096, 32, "64x4096x32") == (64 * 32 + 32 * 4096 + 64 * 4096) / (33 * 32 + 32 * 4096 + 33 * 4096)
    assert L.padded_bytes(32, 32, 32, "32") == 1.0  # a cube's padded shape is written as one number


def test_transfer_verdict_from_the_padded_shapes(run):
    verdict = _verdict(run, "Border checks save transfer bytes")
    rows = run[(run.variant == "shared_padded") & (run.status == "ok")].drop_duplicates(["m", "n", "k"])
    ratio = np.array([L.padded_bytes(m, n, k, p) for m, n, k, p in zip(rows.m, rows.n, rows.k, rows.padded_shape)])
    assert verdict.holds == "yes" and f"{100 * (ratio.mean() - 1):.1f} % more bytes on average over {len(ratio)}" in verdict.evidence
    assert f"none at the {int((ratio == 1).sum())} aligned ones" in verdict.evidence


def test_by_size_puts_shapes_of_equal_size_on_one_point(run):
    r = L.normalized_speed(run, "kernel")
    r = r[r.index.get_level_values("k") == 32]
    table = L.by_size(r)
    same = [r[(32, 4096, 32)], r[(4096, 32, 32)], r[(128, 1024, 32)], r[(1024, 128, 32)]]  # all 131072
    assert table.loc[32 * 4096, "shapes"] == 4
    assert table.loc[32 * 4096, "geomean"] == pytest.approx(np.prod(same) ** 0.25, rel=1e-12)
    assert list(L.aligned_sides(r[[(32, 33, 32)]])) == [1]


@pytest.mark.parametrize("draw", [L.fig3, L.fig4])
def test_fig3_and_4_each_scope_on_its_own_axis_no_zigzag_no_repeated_legend(run, draw):
    fig = draw(run, read_metadata(RUN))
    limits = [ax.get_ylim() for ax in fig.axes]
    assert len(set(limits)) == 3  # not shared: the kernel scope is not flattened by the others
    kernel_axis = fig.axes[0]
    assert kernel_axis.get_ylim()[1] < 1.2  # its ratios, 0.93 to 1.04, fill it
    for ax in fig.axes:
        for line in ax.get_lines():
            x = np.asarray(line.get_xdata(), dtype=float)
            if len(x) > 2:
                assert (np.diff(x) > 0).all()  # one point per size: no zigzag between equal sizes
        texts = [t.get_text() for t in ax.get_legend().get_texts()]
        assert len(texts) == len(set(texts))
    plt.close(fig)


def test_heatmap_text_is_white_on_dark_cells_and_black_on_light():
    assert plots.text_colour((0.0, 0.0, 0.0, 1.0)) == "white" and plots.text_colour((1.0, 1.0, 1.0, 1.0)) == "black"
    assert plots.text_colour((0.4, 0.0, 0.12, 1.0)) == "white"  # RdBu_r's dark red end
    import pandas as pd
    fig, ax = plt.subplots()
    plots.heatmap(ax, pd.DataFrame([[0.5, 1.0], [1.0, 4.0]]), "ratio", center=1.0)
    colours = {t.get_text(): t.get_color() for t in ax.texts}
    assert colours["4.00"] == "white" and colours["1.00"] == "black" and colours["0.50"] == "white"
    plt.close(fig)


def test_kernel_additions_read_the_code_not_its_comments():
    source = "// no __restrict__ here\n/* #pragma unroll */\n__global__ void __launch_bounds__(256) f(float* a) { return; }"
    found = additions(source)
    assert len(found) == 2 and "__launch_bounds__" in found[0] and "early return" in found[1]
    shared = kernel_additions("gemm/shared.cu")
    assert any("__restrict__" in a for a in shared) and any("#pragma unroll" in a for a in shared)


def test_report_states_departures_and_untested_claims(run, tmp_path):
    report = L.report(run, read_metadata(RUN), {"device": "a GTX 680"}, {}, None, RUN)
    assert f"Claims judged: {len(L.verdicts(run))}; claims this run cannot judge: {len(L.UNTESTED) + 2}" in report
    assert "No profile of shared_padded and shared" in report  # without a profile the mechanism stays untested
    assert "32, 33, 100, 128, 500, 512, 1000, 1024, 4000, 4096 (200 shapes" in report
    assert all(a in report for a in kernel_additions("gemm/shared.cu"))
    assert "`mmbench profile --config configs/lameski2013.toml" in report


# -- the mechanism, from the committed Nsight Compute profile ---------------------------------------------------
def _prof(profile, variant, m, n, k):
    row = profile[(profile.variant == variant) & (profile.params == "BLOCK=32") & (profile.m == m) & (profile.n == n)
                  & (profile.k == k)]
    assert len(row) == 1
    return row.iloc[0]


def test_mechanism_table_recomputes_the_profiles_counts(run, profile):
    table = L.mechanism(profile, run)
    assert len(table) == 8 and list(table.aligned) == [False] * 6 + [True] * 2
    pad, chk = _prof(profile, "shared_padded", 1000, 1000, 32), _prof(profile, "shared", 1000, 1000, 32)
    row = table.loc[(1000, 1000, 32)]
    assert row["instructions checks %"] == pytest.approx(100 * (chk.warp_inst / pad.warp_inst - 1))
    sectors = lambda r: r.global_ld_sectors + r.global_st_sectors
    assert row["sectors padding %"] == pytest.approx(100 * (sectors(pad) / sectors(chk) - 1))
    # approach 1 ran at 1024 x 1024 x 32: 32 x 32 blocks each load one 32 x 32 tile of A and of B (128 sectors of
    # 32 B each), and C's 1024 x 1024 floats are stored once
    assert sectors(pad) == 32 * 32 * 2 * 128 + 1024 * 1024 * 4 / 32
    assert row["run time ratio"] == pytest.approx(_ratio(run, "kernel", 1000, 1000, 32), rel=1e-12)
    assert (table["branches padding"] == table["branches checks"]).all()
    assert (table[["divergent padding", "divergent checks"]] == 0).all().all()
    assert (table[table.aligned]["sectors padding %"] == 0).all()


def test_the_checks_add_no_branch_and_the_trade_is_instructions_against_bytes(run, profile):
    branching = _verdict_with(run, profile, "Border checks put branching in the kernel")
    assert branching.holds == "no" and "at 0 of 8 profiled shapes (the same count at 8)" in branching.evidence
    assert "divergent branches: 0 in approach 2, 0 in approach 1" in branching.evidence
    trade = _verdict_with(run, profile, "The difference comes from branching")
    table = L.mechanism(profile, run)
    faster = int((table["run time ratio"] < 1).sum())
    assert trade.holds == "partly" and f"approach 1's kernel faster at {faster} of 8" in trade.evidence
    assert "at the 6 unaligned shapes (+0.0 % at the 2 aligned)" in trade.evidence and "not branching" in trade.evidence


def _verdict_with(df, profile, start):
    return next(v for v in L.verdicts(df, profile) if v.finding.startswith(start))


def _made_up(branches=0, divergent=0, sectors=0, instructions=0):
    """A two-shape mechanism table: one unaligned, one aligned; the checks' extras as given."""
    import pandas as pd
    index = pd.MultiIndex.from_tuples([(1000, 1000, 32), (4000, 4000, 32)], names=["m", "n", "k"])
    return pd.DataFrame({"aligned": [False, True], "branches padding": [100, 100],
                         "branches checks": [100 + branches] * 2, "divergent padding": [0, 0],
                         "divergent checks": [divergent] * 2, "instructions checks %": [instructions] * 2,
                         "sectors padding %": [sectors, 0.0], "l2 padding %": [0.0, 0.0],
                         "dram read padding %": [0.0, 0.0], "time padding us": [1.0, 1.0],
                         "time checks us": [1.0, 1.0], "run time ratio": [0.9, 1.0]}, index=index)


@pytest.mark.parametrize("extras,branching,trade", [
    (dict(branches=5, sectors=3), "yes", "yes"),  # the paper's picture: branches against bytes
    (dict(divergent=7, sectors=3), "yes", "yes"),  # divergence alone is branching
    (dict(instructions=9, sectors=3), "no", "partly"),  # this GPU's: instructions, not branches, against bytes
    (dict(branches=0.5, sectors=0.5), "no", "no"),  # under 1 %: the same counts
])
def test_mechanism_verdicts_on_made_up_counts(extras, branching, trade):
    first, second = L.mechanism_verdicts(_made_up(**extras))
    assert (first.holds, second.holds) == (branching, trade)


def test_report_with_the_profile_judges_the_mechanism_and_shows_the_hierarchy(run, profile):
    report = L.report(run, read_metadata(RUN), {"device": "a GTX 680"}, {}, profile, RUN)
    assert f"Claims judged: {len(L.verdicts(run, profile))}; claims this run cannot judge: {len(L.UNTESTED)}" in report
    assert len(L.verdicts(run, profile)) == len(L.verdicts(run)) + 2
    assert "## Memory hierarchy (Nsight Compute)" in report and "caches flushed before each kernel" in report
    assert "| 1000x1000x32 | no | 65,536 / 65,536 | 0 / 0 |" in report
    assert "at 16 of 16 profiled kernels the closest roof is shared memory" in report


def test_hierarchy_figure_shows_both_approaches_in_and_past_l2(run, profile):
    assert L.hierarchy_shapes(profile) == [(1000, 1000, 32), (4000, 4000, 64)]
    fig = L.fig_hierarchy(run, read_metadata(RUN), profile)
    assert len(fig.axes) == 2 and "past the 52 MB L2" in fig.axes[1].get_title()
    texts = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert set(L.APPROACH.values()) <= set(texts) and not any("CUDA-1" in t for t in texts)
    plt.close(fig)
    with pytest.raises(ResultsError, match="needs a profile"):
        L.fig_hierarchy(run, read_metadata(RUN), None)
