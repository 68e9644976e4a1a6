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
from mmbench.studies import rule
from mmbench.studies.lameski2013.claims import ahead_beyond_spread, mechanism_verdicts, padded_bytes, untested, verdicts
from mmbench.studies.lameski2013.figures import aligned_sides, by_size, fig3, fig4, fig_hierarchy
from mmbench.studies.lameski2013.measures import (APPROACH, BORDERS, DEPTHS, GAIN, PADDING, PAPER_KERNEL_RUN,
                                                  PAPER_PERCENT, PROFILE_COMMAND, hierarchy_shapes, mechanism,
                                                  normalized_speed, summary)
from mmbench.studies.lameski2013.report import report as lameski_report

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
    return next(v for v in verdicts(df) if v.finding.startswith(start))


def _kernel_ratios(run, k):
    r = normalized_speed(run, "kernel")
    return r[r.index.get_level_values("k") == k]


@pytest.mark.parametrize("k,paper,gain,faster", [(32, 15.51, 2.39, 87), (64, 10.24, 3.36, 97)])
def test_average_verdict_is_judged_in_the_kernel_scope_direction_and_size(run, k, paper, gain, faster):
    """The paper timed the kernels: padding wins at 87 and 97 of 100 shapes (direction: yes) but by +2.4 and
    +3.4 % against 15.51 and 10.24 % (size: under half, partly); the weaker is the verdict. The device and
    end_to_end scopes, where padding loses, are extra evidence only."""
    r = _kernel_ratios(run, k)
    mean = 100 * np.mean([1 / x - 1 for x in r])
    assert len(r) == 100 and int((r < 1).sum()) == faster and mean == pytest.approx(gain, abs=0.005)
    assert rule.by_share(faster, 100) == "yes" and rule.by_size(mean, paper) == "partly"
    verdict = _verdict(run, f"Padding beats border checks on average, k = {k}")
    assert verdict.holds == "partly" and verdict.paper.startswith(f"{PAPER_PERCENT[k]} %")
    assert verdict.evidence.startswith(f"kernel: {mean:+.1f} % (padding faster at {faster} of 100), "
                                       f"{mean / paper:.2f} of the paper's size; other scopes (not the verdict): device: -")
    assert verdict.test == (f"kernel scope, 100 shapes; the direction by the share rule ({rule.SHARE_RULE}); the size "
                            f"against {paper} % (a percentage, not a factor) by the size rule ({rule.SIZE_RULE}); "
                            "the weaker")


@pytest.mark.parametrize("k,fraction", [(32, 0.15), (64, 0.33)])
def test_average_size_is_partly_whether_read_as_a_percentage_or_a_factor(run, k, fraction):
    """"15.51 % improvement" is a size in %, so the size rule judges it; read as a speed factor (1.1551x) on the
    factor rule's log scale it stays "partly" too: 2.4 and 3.4 % are well under half the paper's either way,
    and strictly more than half would be needed for "yes"."""
    gain = float(summary(run).query("scope == 'kernel'").loc[k, GAIN])
    paper = PAPER_PERCENT[k]
    assert gain / paper == pytest.approx(fraction, abs=0.005) and rule.by_size(gain, paper) == "partly"
    assert rule.by_factor(1 + gain / 100, 1 + paper / 100) == "partly"
    assert rule.by_size(paper / 2, paper) == "partly" and rule.by_size(0.51 * paper, paper) == "yes"


def test_conclusion_holds_in_the_kernel_scope_and_the_order_of_k_is_reversed(run):
    both = _verdict(run, "Padding outperforms border checks for both k")
    assert both.holds == "yes"  # 87 and 97 of 100: both at 3/4 or more
    assert both.evidence.startswith("kernel: padding faster at 87 of 100 (k = 32) and 97 of 100 (k = 64); other scopes")
    assert "device: padding faster at 0 of 100 (k = 32) and 0 of 100 (k = 64)" in both.evidence
    order = _verdict(run, "Padding gains more at k = 32")
    table = summary(run)
    kernel = table[table.scope == "kernel"][GAIN]
    assert kernel[64] > kernel[32]  # the kernel scope gains more at k = 64, against the paper
    assert order.holds == "no" and order.evidence.startswith("kernel: +2.4 % against +3.4 % (k = 64 gains more)")
    assert both.test.endswith(f"the share rule ({rule.SHARE_RULE}) at each k, the weaker")
    assert order.test.endswith(f"order rule ({rule.ORDER_RULE})")
    # end to end k = 32 "gains" more (-59.5 against -59.7 %): evidence of another scope, not the verdict
    assert "end_to_end: -59.5 % against -59.7 %" in order.evidence.split("other scopes (not the verdict)")[1]


@pytest.mark.parametrize("figure,k,below", [(3, 32, 87), (4, 64, 97)])
def test_figure_verdict_is_the_share_below_one_in_the_kernel_scope(run, figure, k, below):
    verdict = _verdict(run, f"Fig. {figure}:")
    r = _kernel_ratios(run, k)
    assert int((r < 1).sum()) == below
    assert verdict.evidence.startswith(f"kernel: below 1 at {below} of {len(r)}")
    assert r[(33, 4096, k)] == pytest.approx(_ratio(run, "kernel", 33, 4096, k), rel=1e-12)
    assert verdict.holds == "yes" and verdict.test == f"kernel scope, 100 shapes; share rule ({rule.SHARE_RULE})"


def _ahead(df, scope, k, faster, slower):
    """Shapes at k where `faster`'s median is under `slower`'s fastest sample, from the raw rows."""
    rows = df[(df.status == "ok") & (df.scope == scope) & (df.k == k) & (df.params == "BLOCK=32")]
    f = rows[(rows.variant == faster) & (rows.pad == (faster == "shared_padded"))].set_index(["m", "n"])
    s = rows[(rows.variant == slower) & (rows.pad == (slower == "shared_padded"))].set_index(["m", "n"])
    return sorted((m, n) for m, n in f.index if f.time_ms_median[(m, n)] < s.time_ms_min[(m, n)])


def test_some_shapes_go_the_other_way_only_at_k_32_beyond_the_samples_spread(run):
    """Our reading of the paper's vague "some": at each k, a shape where border checks' median is under
    padding's fastest sample. At k = 32 the four largest shapes; at k = 64 none (its 3 medians above 1 are
    within the spread), so "at both k" does not hold."""
    assert _ahead(run, "kernel", 32, "shared", "shared_padded") == [(4000, 4000), (4000, 4096), (4096, 4000), (4096, 4096)]
    assert _ahead(run, "kernel", 64, "shared", "shared_padded") == []
    assert len(ahead_beyond_spread(run, "kernel", 64, PADDING, BORDERS)) == len(
        _ahead(run, "kernel", 64, "shared_padded", "shared")) == 24
    verdict = _verdict(run, "At both k, some shapes")
    above = [int((_kernel_ratios(run, k) > 1).sum()) for k in DEPTHS]
    assert above == [13, 3] and verdict.holds == "no"
    assert verdict.evidence.startswith("kernel: ahead beyond the samples' spread at 4 (k = 32: 4000 x 4000, 4000 x 4096, "
                                       "4096 x 4000, 4096 x 4096) and 0 (k = 64); medians above 1 at 13 (k = 32")
    assert "an existence, \"some\" read as at least one shape at each k" in verdict.test
    assert verdict.test.endswith(f"order rule ({rule.ORDER_RULE})")


def test_some_shapes_go_the_other_way_is_an_existence_judged_yes_or_no(run):
    """The existence claim by the order rule: "yes" once border checks lead beyond the spread at one shape of
    each k. Made faster at one k = 64 shape (its median under padding's fastest sample), the verdict turns."""
    assert _verdict(run, "At both k, some shapes").holds == rule.by_order(False) == "no"
    faster = run.copy()
    at = ((faster.variant == "shared") & (faster.params == "BLOCK=32") & (faster.scope == "kernel")
          & (faster.m == 4096) & (faster.n == 4096) & (faster.k == 64))
    assert at.sum() == 1
    faster.loc[at, "time_ms_median"] *= 0.5
    assert _verdict(faster, "At both k, some shapes").holds == rule.by_order(True) == "yes"


def test_padded_bytes_counts_a_b_and_c_padded_over_as_given():
    assert padded_bytes(33, 4096, 32, "64x4096x32") == (64 * 32 + 32 * 4096 + 64 * 4096) / (33 * 32 + 32 * 4096 + 33 * 4096)
    assert padded_bytes(32, 32, 32, "32") == 1.0  # a cube's padded shape is written as one number


def test_transfer_verdict_from_the_padded_shapes(run):
    verdict = _verdict(run, "Border checks save transfer bytes")
    rows = run[(run.variant == "shared_padded") & (run.status == "ok")].drop_duplicates(["m", "n", "k"])
    ratio = np.array([padded_bytes(m, n, k, p) for m, n, k, p in zip(rows.m, rows.n, rows.k, rows.padded_shape)])
    assert verdict.holds == rule.BY_CONSTRUCTION  # the padded shapes' arithmetic, not a measurement
    assert f"{100 * (ratio.mean() - 1):.1f} % more bytes on average over {len(ratio)}" in verdict.evidence
    assert f"none at the {int((ratio == 1).sum())} aligned ones" in verdict.evidence


def test_by_size_puts_shapes_of_equal_size_on_one_point(run):
    r = normalized_speed(run, "kernel")
    r = r[r.index.get_level_values("k") == 32]
    table = by_size(r)
    same = [r[(32, 4096, 32)], r[(4096, 32, 32)], r[(128, 1024, 32)], r[(1024, 128, 32)]]  # all 131072
    assert table.loc[32 * 4096, "shapes"] == 4
    assert table.loc[32 * 4096, "geomean"] == pytest.approx(np.prod(same) ** 0.25, rel=1e-12)
    assert list(aligned_sides(r[[(32, 33, 32)]])) == [1]


@pytest.mark.parametrize("draw", [fig3, fig4])
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


def test_construction_verdicts_are_marked_so_with_their_numbers(run, profile):
    judged = verdicts(run, profile)
    built = [v for v in judged if v.holds == rule.BY_CONSTRUCTION]
    assert [v.finding.split(" ")[0] for v in built] == ["Each", "Border", "Padding", "Both"]
    same = _verdict_with(run, profile, "Both approaches give formula (1)'s C")
    grid = run[(run.status == "ok") & run.k.isin(DEPTHS) & (run.params == "BLOCK=32")]
    pad = grid[grid.variant == "shared_padded"]
    assert same.evidence.startswith(f"{len(pad)} padding and 600 border-check points verified against float64, "
                                    f"relative error at most {pad.rel_err.max():.1e}")
    assert "equal approach 2's at 8 of 8 profiled shapes" in _verdict_with(run, profile, "Padding removes").evidence


def test_every_claim_of_the_paper_is_counted_once(run, profile):
    """24 claims: 10 findings judged, 4 by construction, 10 no run here can test (each saying what would)."""
    left = untested()
    assert all(v.holds == rule.NOT_TESTABLE and v.evidence.startswith("what would test it: ") and v.test for v in left)
    assert any("GTX 680 is the latest Kepler" in v.finding for v in left)
    outcomes = [v.holds for v in [*verdicts(run, profile), *left]]
    assert rule.claims_line(outcomes) == ("Claims of the paper: 24; findings: 10 (4 yes, 2 partly, 4 no); not counted "
                                          "with them: 4 by construction, 10 not testable here.")
    report = lameski_report(run, read_metadata(RUN), {"device": "a GTX 680"}, {}, profile, RUN)
    assert report.count("Claims of the paper:") == 1 and "Claims judged" not in report
    assert report.index("## Claims this run cannot test") < report.index("Claims of the paper: 24;")


def test_report_states_departures_and_untested_claims(run, tmp_path):
    report = lameski_report(run, read_metadata(RUN), {"device": "a GTX 680"}, {}, None, RUN)
    outcomes = [v.holds for v in [*verdicts(run), *untested()]]
    assert outcomes.count(rule.NOT_CHECKED) == 3  # the profile's three claims, without a profile
    assert rule.claims_line(outcomes) in report and "3 not checked" in rule.claims_line(outcomes)
    assert "No hierarchy: no Nsight Compute profile" in report  # without a profile the mechanism stays untested
    assert "judged in the kernel scope; the device and end_to_end scopes (ours) are extra evidence" in report
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
    table = mechanism(profile, run)
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
    """Judged on our kernel (checks predicated in every block): no shape branches more, so the paper's
    mechanism (branching against transfers) is not ours: "no", saying the paper's border-block branch was
    not measured and what would measure it."""
    branching = _verdict_with(run, profile, "Border checks put branching in the kernel")
    assert branching.holds == "no" and "at 0 of 8 profiled shapes (the same count at 8)" in branching.evidence
    assert "divergent branches: 0 in approach 2, 0 in approach 1" in branching.evidence
    assert "judged on ours (checks predicated in every block), not the paper's border-block branch" in branching.test
    trade = _verdict_with(run, profile, "The difference comes from branching")
    table = mechanism(profile, run)
    faster = int((table["run time ratio"] < 1).sum())
    assert faster == 7 and trade.holds == "no" and f"approach 1's kernel faster at {faster} of 8" in trade.evidence
    assert "at the 6 unaligned shapes (+0.0 % at the 2 aligned)" in trade.evidence and "not branching" in trade.evidence
    assert "judged on ours" in trade.test and "the weakest" in trade.test
    for verdict in (branching, trade):
        assert verdict.evidence.endswith(f"was not measured: {PAPER_KERNEL_RUN} would test it")
    assert "border blocks only" in PAPER_KERNEL_RUN and "kernel scope at the study's shapes" in PAPER_KERNEL_RUN


def test_the_approaches_differ_in_transfers_and_operations(run, profile):
    differ = _verdict_with(run, profile, "The approaches differ in global-to-shared transfers")
    table = mechanism(profile, run)
    unaligned = table[~table.aligned]
    assert (unaligned["sectors padding %"] > 1).sum() == 6 and (table["instructions checks %"] > 1).sum() == 8
    assert differ.holds == "yes" and "at 6 of the 6 unaligned shapes" in differ.evidence
    assert "more warp instructions at 8 of 8 (+9.1 to +9.7 %)" in differ.evidence


def _verdict_with(df, profile, start):
    return next(v for v in verdicts(df, profile) if v.finding.startswith(start))


def _made_up(branches=0, divergent=0, sectors=0, instructions=0):
    """A two-shape mechanism table: one unaligned, one aligned; the checks' extras as given."""
    import pandas as pd
    index = pd.MultiIndex.from_tuples([(1000, 1000, 32), (4000, 4000, 32)], names=["m", "n", "k"])
    return pd.DataFrame({"aligned": [False, True], "branches padding": [100, 100],
                         "branches checks": [100 + branches] * 2, "divergent padding": [0, 0],
                         "divergent checks": [divergent] * 2, "instructions checks %": [instructions] * 2,
                         "sectors padding %": [sectors, 0.0], "l2 padding %": [0.0, 0.0],
                         "dram read padding %": [0.0, 0.0], "time padding us": [1.0, 1.0],
                         "time checks us": [1.0, 1.0], "run time ratio": [0.9, 0.95]}, index=index)


@pytest.mark.parametrize("extras,differ,branching,trade", [
    (dict(branches=5, sectors=3), "no", "yes", "yes"),  # the paper's picture: branches against bytes
    (dict(divergent=7, sectors=3), "no", "yes", "yes"),  # divergence alone is branching
    (dict(instructions=9, sectors=3), "yes", "no", "no"),  # this GPU's: instructions, not branches, against bytes
    (dict(branches=0.5, sectors=0.5), "no", "no", "no"),  # under 1 %: the same counts
])
def test_mechanism_verdicts_on_made_up_counts(extras, differ, branching, trade):
    verdicts = mechanism_verdicts(_made_up(**extras))
    assert [v.holds for v in verdicts] == [differ, branching, trade]
    slower = _made_up(**extras).assign(**{"run time ratio": [0.9, 1.05]})  # padding faster at 1 of 2: partly
    assert mechanism_verdicts(slower)[2].holds == rule.weakest(trade, "partly")


def test_mechanism_without_a_profile_is_not_checked_and_names_the_command():
    import pandas as pd
    verdicts = mechanism_verdicts(pd.DataFrame())
    assert [v.holds for v in verdicts] == [rule.NOT_CHECKED] * 3
    assert all(PROFILE_COMMAND in v.evidence for v in verdicts)


def test_report_with_the_profile_judges_the_mechanism_and_shows_the_hierarchy(run, profile):
    report = lameski_report(run, read_metadata(RUN), {"device": "a GTX 680"}, {}, profile, RUN)
    assert "Claims of the paper: 24; findings: 10 (4 yes, 2 partly, 4 no)" in report
    assert len(verdicts(run, profile)) == len(verdicts(run))  # without a profile its claims read "not checked"
    assert "## Memory hierarchy (Nsight Compute)" in report and "caches flushed before each kernel" in report
    assert "| 1000x1000x32 | no | 65,536 / 65,536 | 0 / 0 |" in report
    assert "at 16 of 16 profiled kernels the closest roof is shared memory" in report


def test_hierarchy_figure_shows_both_approaches_in_and_past_l2(run, profile):
    assert hierarchy_shapes(profile) == [(1000, 1000, 32), (4000, 4000, 64)]
    fig = fig_hierarchy(run, read_metadata(RUN), profile)
    assert len(fig.axes) == 2 and "past the 52 MB L2" in fig.axes[1].get_title()
    texts = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert set(APPROACH.values()) <= set(texts) and not any("CUDA-1" in t for t in texts)
    plt.close(fig)
    with pytest.raises(ResultsError, match="needs a profile"):
        fig_hierarchy(run, read_metadata(RUN), None)
