"""Lameski et al. 2013 (../shared/papers/lameski-border-conditions.txt): rectangular matrix
multiplication with zero-padded inputs (approach 1: a kernel without border checks) against
border checks inside the kernel (approach 2), 32 x 32 shared-memory tiles either way.

Approach 1 is `shared_padded` (always run padded), approach 2 `shared` at BLOCK = 32: the same
kernel but for its checks. The paper fixes wA = hB (k here) at 32 and 64 and varies hA (m) and
wB (n). It timed the kernels (section IV), where its claims are judged; every point is also timed
with the padding on the device and end to end from host to host (the `scope` column), extra
evidence. Beyond the paper, `--pad` asks the same of the fastest kernels (the `modern` sweep).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .. import analysis, hierarchy, plots
from ..analysis import by_shape, ok_rows, shape_ratio
from ..ops.base import SCOPES
from ..results import ResultsError
from ..sizes import row_shape
from . import rule
from .common import Verdict, markdown_table, provenance, report_text, text_table, verdict_table
from .contract import Figure, FigureFamily
from ..kernel_text import kernel_additions

plt = plots.plt

PADDING = dict(variant="shared_padded", params="BLOCK=32", pad=1)  # approach 1
BORDERS = dict(variant="shared", params="BLOCK=32", pad=0)  # approach 2
DEPTHS = (32, 64)  # the paper's wA = hB
PAPER_PERCENT = {32: 15.51, 64: 10.24}  # padding's average improvement, per k (section V)
MODERN = ("dbuf", "shared", "cublas")  # the `modern` sweep's kernels: --pad on the fastest
GAIN = "padding's mean improvement %"


def normalized_speed(df: pd.DataFrame, scope: str) -> pd.Series:
    """Approach 2's speed normalized to approach 1's, by shape (m, n, k): approach 1's time over
    approach 2's (medians of the samples). Below 1, padding is faster (the paper's Fig. 3 and 4)."""
    ok = ok_rows(df)
    return shape_ratio(by_shape(ok, scope=scope, **PADDING), by_shape(ok, scope=scope, **BORDERS))


def improvement(ratio: pd.Series) -> float:
    """The paper's "average improvement of performance" of padding: the mean over shapes of
    approach 1's speed over approach 2's, less 1, in percent."""
    return float(100 * (1 / ratio - 1).mean()) if len(ratio) else np.nan


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per k and scope: shapes, padding's mean improvement (the paper's number), its geometric
    mean, and where each approach wins."""
    rows = []
    for scope in SCOPES:
        r = normalized_speed(df, scope)
        for k in DEPTHS:
            cut = r[r.index.get_level_values("k") == k] if len(r) else r
            if cut.empty:
                continue
            rows.append({"k (wA = hB)": k, "scope": scope, "shapes": len(cut),
                         GAIN: improvement(cut),
                         "geometric mean %": float(100 * (np.exp(-np.log(cut).mean()) - 1)),
                         "paper %": PAPER_PERCENT[k], "padding faster at": int((cut < 1).sum()),
                         "borders faster at": int((cut > 1).sum())})
    if not rows:
        raise ResultsError("the Lameski report needs shared_padded and shared (BLOCK=32) rows of one scope")
    return pd.DataFrame(rows).set_index("k (wA = hB)")


def where_the_time_goes(df: pd.DataFrame) -> str:
    """The largest shape of each k, both approaches in every scope (ms): what padding adds."""
    ok = ok_rows(df)
    parts = []
    for k in DEPTHS:
        at_k = ok[(ok.k == k) & ok.variant.isin([PADDING["variant"], BORDERS["variant"]])]
        if at_k.empty:
            continue
        big = at_k.loc[(at_k.m * at_k.n).idxmax()]
        m, n = int(big.m), int(big.n)
        times = []
        for scope in SCOPES:
            pad = by_shape(ok, scope=scope, **PADDING).get((m, n, k))
            border = by_shape(ok, scope=scope, **BORDERS).get((m, n, k))
            if pad is not None and border is not None:
                times.append(f"{scope} {pad:.3f} against {border:.3f}")
        parts.append(f"at {m} x {n} x {k}, padding against border checks (ms): " + ", ".join(times))
    return "; ".join(parts)


def _title(fig, what: str, meta: dict) -> None:
    fig.suptitle(f"{what}\n{(meta.get('gpu') or {}).get('name', 'no GPU')}, {str(meta.get('started_at', ''))[:10]}",
                 fontsize=11)


# Fig. 3 and 4's series: the shapes by how many of hA and wB are multiples of the 32 x 32 block
ALIGNMENT = ((2, "hA and wB multiples of 32", "tab:blue"), (1, "one of hA, wB a multiple of 32", "tab:purple"),
             (0, "neither a multiple of 32", "tab:red"))


def by_size(cut: pd.Series) -> pd.DataFrame:
    """Normalized speeds by problem size hA x wB (one row per size, ascending): the geometric mean,
    least and greatest over the shapes of that size (32 x 4096 and 4096 x 32 share one), and how
    many shapes; what Fig. 3 and 4 draw, one point per size rather than a zigzag through them."""
    frame = pd.DataFrame({"size": [m * n for m, n, _ in cut.index], "ratio": cut.to_numpy(dtype=float)})
    grouped = frame.groupby("size").ratio
    return pd.DataFrame({"geomean": grouped.apply(lambda r: float(np.exp(np.log(r).mean()))),
                         "low": grouped.min(), "high": grouped.max(), "shapes": grouped.size()})


def aligned_sides(cut: pd.Series) -> np.ndarray:
    """Per shape of a normalized-speed Series: how many of hA and wB are multiples of 32 (0 to 2)."""
    return np.array([(m % 32 == 0) + (n % 32 == 0) for m, n, _ in cut.index])


def _normalized_panel(ax, cut: pd.Series) -> None:
    sides = aligned_sides(cut)
    for count, label, colour in ALIGNMENT:
        part = cut[sides == count]
        if part.empty:
            continue
        table = by_size(part)
        ax.plot(table.index, table.geomean, marker="o", markersize=3, linewidth=1.0, color=colour, label=label)


def _normalized_figure(df: pd.DataFrame, meta: dict, k: int, figure: int) -> plt.Figure:
    fig, axes = plt.subplots(1, len(SCOPES), figsize=(15, 4.8), layout="constrained")
    drawn = 0
    for ax, scope in zip(axes, SCOPES):
        r = normalized_speed(df, scope)
        cut = r[r.index.get_level_values("k") == k] if len(r) else r
        if len(cut):
            drawn += 1
            _normalized_panel(ax, cut)
        ax.axhline(1.0, color="black", linewidth=1.2, label="approach 1: padding (= 1)")
        ax.set_xscale("log")
        ax.set_xlabel("problem size hA x wB (elements of C), log scale")
        ax.set_ylabel("approach 2 (border checks) speed / approach 1's")
        ax.set_title(f"scope: {scope}", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    if not drawn:
        raise ResultsError(f"Fig. {figure} needs shared_padded and shared (BLOCK=32) rows at k = {k}")
    _title(fig, f"Lameski 2013, Fig. {figure}: normalized speed for wA = hB = {k}; above 1 border checks are faster, "
                "below 1 padding;\neach panel on its own scale; shapes of one size and alignment: their geometric mean",
           meta)
    return fig


def fig3(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    return _normalized_figure(df, meta, 32, 3)


def fig4(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    return _normalized_figure(df, meta, 64, 4)


def fig_heatmap(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    fig, axes = plt.subplots(len(DEPTHS), len(SCOPES), figsize=(17, 10), layout="constrained")
    drawn = 0
    for i, k in enumerate(DEPTHS):
        for j, scope in enumerate(SCOPES):
            ax = axes[i, j]
            r = normalized_speed(df, scope)
            cut = r[r.index.get_level_values("k") == k] if len(r) else r
            if cut.empty:
                ax.set_axis_off()
                continue
            drawn += 1
            table = cut.reset_index().pivot_table(index="m", columns="n", values=cut.name or 0, aggfunc="mean")
            table.index.name, table.columns.name = "hA (m)", "wB (n)"
            plots.heatmap(ax, table, "approach 2 / approach 1 speed", center=1.0)
            ax.set_title(f"k = {k}, scope: {scope}", fontsize=10)
    if not drawn:
        raise ResultsError("the heatmap needs shared_padded and shared (BLOCK=32) rows")
    _title(fig, "Lameski 2013: border checks' speed over padding's, by (hA, wB); blue: padding faster", meta)
    return fig


def modern_table(df: pd.DataFrame) -> pd.DataFrame:
    """The modern kernels at the `modern` sweep's sizes: median time (ms) unpadded and padded, per
    scope, and the padded shape; cuBLAS unpadded as the yardstick."""
    ok = ok_rows(df)
    rows = ok[ok.variant.isin(MODERN) & ((ok.variant != "shared") | (ok.params == "BLOCK=32"))]
    rows = rows[(rows.m == rows.n) & (rows.n == rows.k) & rows.n.isin(ok[ok.variant == MODERN[0]].n)]
    if rows.empty:
        raise ResultsError("no modern-kernel rows (dbuf, shared, cublas at square sizes)")
    rows = rows.assign(series=[f"{v}{' padded' if p else ''} ({s})" for v, p, s in zip(rows.variant, rows.pad, rows.scope)])
    table = rows.pivot_table(index="n", columns="series", values="time_ms_median", aggfunc="mean")
    table.index.name = "n"
    return table


def edge_costs(df: pd.DataFrame) -> list[str]:
    """Per modern kernel and unaligned size: its kernel time on the matrices as given, padded (the
    kernel alone), and padded with the device copies; what its border handling costs."""
    ok = ok_rows(df)
    lines = []
    for variant in MODERN[:2]:
        rows = ok[(ok.variant == variant) & (ok.m == ok.n) & (ok.n == ok.k)]
        rows = rows[(rows.variant != "shared") | (rows.params == "BLOCK=32")]
        for n in sorted(rows[rows.pad == 1].n.unique()):
            at = rows[rows.n == n].set_index(["scope", "pad"]).time_ms_median
            padded = rows[(rows.n == n) & (rows.pad == 1)].padded_shape.iloc[0]
            if padded in (str(n), f"{n}x{n}x{n}") or ("kernel", 0) not in at or ("kernel", 1) not in at:
                continue
            given, alone = at[("kernel", 0)], at[("kernel", 1)]
            text = (f"{variant} at {n}: the kernel takes {given:.3f} ms on the matrices as given and {alone:.3f} ms padded "
                    f"to {padded} (as given: {100 * (given / alone - 1):+.1f} %)")
            if ("device", 1) in at:
                text += (f"; with the device padding {at[('device', 1)]:.3f} ms (against as given: "
                         f"{100 * (at[('device', 1)] / given - 1):+.1f} %)")
            lines.append(f"- {text}")
    return lines


# The paper timed the kernels (section IV: "measuring the speed performance of the CUDA matrix
# multiplication kernels"): every timed claim is judged there; device and end_to_end are extra evidence.
PAPER_SCOPE = "kernel"
# The paper's approach 2 branches in border blocks only; ours predicates its checks in every block.
PAPER_KERNEL_RUN = ("a variant checking borders in border blocks only, branching there as the paper's pseudo-code "
                    "does, run in the kernel scope at the study's shapes and profiled at the same shapes")
# rule.py's thresholds as each verdict's "judged by" cell quotes them
SHARE = f"share rule ({rule.SHARE_RULE})"
SIZE = f"size rule ({rule.SIZE_RULE})"
ORDER = f"order rule ({rule.ORDER_RULE})"


def _ratios(df: pd.DataFrame, k: int) -> dict[str, pd.Series]:
    """Per scope: the normalized speeds (approach 2 over approach 1) at k, by shape."""
    out = {}
    for scope in SCOPES:
        r = normalized_speed(df, scope)
        cut = r[r.index.get_level_values("k") == k] if len(r) else r
        if len(cut):
            out[scope] = cut
    return out


def _scoped(values: dict[str, str]) -> str:
    """The evidence of the paper's scope, then the other scopes' named as extra (rule.other_scopes)."""
    head = f"{PAPER_SCOPE}: {values[PAPER_SCOPE]}" if PAPER_SCOPE in values else f"no {PAPER_SCOPE}-scope rows"
    return head + rule.other_scopes(values, PAPER_SCOPE)


def _shapes_per_k(counts: list) -> str:
    """How many shapes each k has ("100 shapes per k"), from counts or the Series counted."""
    counts = [0 if c is None else c if isinstance(c, int) else len(c) for c in counts]
    return (f"{counts[0]} shapes per k" if len(set(counts)) == 1
            else " and ".join(f"{c} shapes at k = {k}" for c, k in zip(counts, DEPTHS)))


def ahead_beyond_spread(df: pd.DataFrame, scope: str, k: int, faster: dict, slower: dict) -> list[tuple]:
    """The shapes at k where approach `faster`'s median time is under approach `slower`'s fastest sample:
    ahead by more than the samples' spread (a 5-µs kernel's samples spread over 10 % and more, so a
    median 1 % ahead there is no lead)."""
    ok = ok_rows(df)
    median = by_shape(ok, scope=scope, **faster)
    fastest = by_shape(ok, "time_ms_min", scope=scope, **slower)
    shapes = [s for s in median.index.intersection(fastest.index) if s[2] == k]
    return [s for s in shapes if median[s] < fastest[s]]


def average_verdicts(df: pd.DataFrame) -> list[Verdict]:
    """Section V's averages (15.51 % at k = 32, 10.24 % at 64), each a direction over the shapes and a
    size, the weaker of the two; then the conclusion (padding wins at both k) and the order the two
    averages imply (k = 32 gains more). Judged in the kernel scope."""
    table = summary(df)
    out, gains, faster = [], {}, {}
    for k in DEPTHS:
        if k not in table.index:
            continue
        at_k = table.loc[[k]]
        values = {r.scope: f"{r[GAIN]:+.1f} % (padding faster at {r['padding faster at']} of {r.shapes})"
                  for _, r in at_k.iterrows()}
        holds, shapes = rule.NOT_CHECKED, 0
        mine = at_k[at_k.scope == PAPER_SCOPE]
        if len(mine):
            row = mine.iloc[0]
            gains[k], shapes = float(row[GAIN]), int(row.shapes)
            faster[k] = (int(row["padding faster at"]), shapes)
            holds = rule.weakest(rule.by_share(*faster[k]), rule.by_size(gains[k], PAPER_PERCENT[k]))
            values[PAPER_SCOPE] += f", {gains[k] / PAPER_PERCENT[k]:.2f} of the paper's size"
        out.append(Verdict(f"Padding beats border checks on average, k = {k}",
                           f"{PAPER_PERCENT[k]} % average improvement (GTX 680)", holds, _scoped(values),
                           f"kernel scope, {shapes} shapes; the direction by the {SHARE}; the size against "
                           f"{PAPER_PERCENT[k]} % (a percentage, not a factor) by the {SIZE}; the weaker"))
    if not all(k in table.index for k in DEPTHS):
        return out
    rows = {scope: table[table.scope == scope] for scope in table.scope.unique()}
    both = {scope: " and ".join(f"{int(t.loc[k, 'padding faster at'])} of {int(t.loc[k, 'shapes'])} (k = {k})"
                                for k in DEPTHS) for scope, t in rows.items() if all(k in t.index for k in DEPTHS)}
    holds = (rule.weakest(*(rule.by_share(*faster[k]) for k in DEPTHS)) if len(faster) == len(DEPTHS)
             else rule.NOT_CHECKED)
    out.append(Verdict("Padding outperforms border checks for both k (the conclusion)", "\"for both cases the "
                       "approach with few more memory transfers outperforms\"", holds,
                       _scoped({s: f"padding faster at {text}" for s, text in both.items()}),
                       f"kernel scope, {_shapes_per_k([faster.get(k, (0, 0))[1] for k in DEPTHS])}; the {SHARE} at "
                       "each k, the weaker"))
    order = {scope: f"{t.loc[32, GAIN]:+.1f} % against {t.loc[64, GAIN]:+.1f} %" for scope, t in rows.items()
             if all(k in t.index for k in DEPTHS)}
    if len(gains) == len(DEPTHS):
        order[PAPER_SCOPE] += " (k = 32 gains more)" if gains[32] > gains[64] else " (k = 64 gains more)"
    out.append(Verdict("Padding gains more at k = 32 than at k = 64", f"{PAPER_PERCENT[32]} % against "
                       f"{PAPER_PERCENT[64]} %", rule.by_order(gains[32] > gains[64]) if len(gains) == len(DEPTHS)
                       else rule.NOT_CHECKED, _scoped(order), "kernel scope, mean improvement at k = 32 against "
                       f"k = 64; {ORDER}"))
    return out


def figure_verdicts(df: pd.DataFrame) -> list[Verdict]:
    """Fig. 3 and 4: approach 2 below 1 at most shapes (its values are not in the text; "every value
    ... below 1 confirms" padding's gain), judged in the kernel scope by the share rule."""
    out = []
    for figure, k in zip((3, 4), DEPTHS):
        ratios = _ratios(df, k)
        if not ratios:
            continue
        values = {s: f"below 1 at {int((r < 1).sum())} of {len(r)}, {r.min():.2f} to {r.max():.2f}"
                  for s, r in ratios.items()}
        r = ratios.get(PAPER_SCOPE)
        holds = rule.NOT_CHECKED if r is None else rule.by_share(int((r < 1).sum()), len(r))
        if r is not None:
            clear = len(ahead_beyond_spread(df, PAPER_SCOPE, k, PADDING, BORDERS))
            values[PAPER_SCOPE] += f" (padding's median under border checks' fastest sample at {clear} of them)"
        out.append(Verdict(f"Fig. {figure}: border checks' normalized speed below 1 (padding faster) at most shapes, "
                           f"k = {k}", "approach 2's curve under approach 1's line at 1; its points are not in the "
                           "text", holds, _scoped(values),
                           f"kernel scope, {0 if r is None else len(r)} shapes; {SHARE}"))
    return out


def other_way_verdict(df: pd.DataFrame) -> list[Verdict]:
    """Section V's "performance increases for some data requirements", read as shapes where border
    checks come out ahead (the paper does not say which shapes it means): "some" at each k, and
    ahead by more than the samples' spread, as a median 0.1 % ahead of a 5-µs kernel is noise."""
    if not all(_ratios(df, k) for k in DEPTHS):
        return []
    values, counts, shapes = {}, {}, _shapes_per_k([_ratios(df, k).get(PAPER_SCOPE) for k in DEPTHS])
    for scope in SCOPES:
        ratios = [_ratios(df, k).get(scope) for k in DEPTHS]
        if any(r is None for r in ratios):
            continue
        ahead = [ahead_beyond_spread(df, scope, k, BORDERS, PADDING) for k in DEPTHS]
        counts[scope] = [len(a) for a in ahead]
        values[scope] = "ahead beyond the samples' spread at " + " and ".join(
            f"{len(a)} (k = {k}{': ' + ', '.join(f'{m} x {n}' for m, n, _ in a) if 0 < len(a) <= 4 else ''})"
            for a, k in zip(ahead, DEPTHS))
        if scope == PAPER_SCOPE:
            values[scope] += "; medians above 1 at " + " and ".join(
                f"{int((r > 1).sum())} (k = {k}, by at most {100 * (r.max() - 1):.1f} %)" for r, k in zip(ratios, DEPTHS))
    holds = (rule.NOT_CHECKED if PAPER_SCOPE not in counts
             else rule.by_order(all(n > 0 for n in counts[PAPER_SCOPE])))
    return [Verdict("At both k, some shapes go the other way (border checks ahead)", "\"for both cases the "
                    "results present performance increases for some data requirements\" (our reading)", holds,
                    _scoped(values), f"kernel scope, {shapes}; an existence, \"some\" read as at least one shape "
                    f"at each k where border checks' median is under padding's fastest sample; {ORDER}")]


def padded_bytes(m: int, n: int, k: int, padded: str) -> float:
    """The floats approach 1 moves over approach 2's: (A + B + C padded) / (A + B + C as given)."""
    dims = [int(x) for x in str(padded).split("x")] if isinstance(padded, str) or not pd.isna(padded) else [m, n, k]
    big_m, big_n, big_k = dims if len(dims) == 3 else dims * 3
    return (big_m * big_k + big_k * big_n + big_m * big_n) / (m * k + k * n + m * n)


def transfer_verdict(df: pd.DataFrame) -> list[Verdict]:
    """Section III: approach 2 "save[s] on the memory transfer bandwidth" (it copies A, B and C as
    they are, approach 1 their padded copies): true of padding by its arithmetic, so by construction;
    the byte ratio at every shape."""
    ok = ok_rows(df)
    rows = ok[(ok.variant == PADDING["variant"]) & (ok.pad == 1) & ok.k.isin(DEPTHS)]
    rows = rows[["m", "n", "k", "padded_shape"]].drop_duplicates(["m", "n", "k"])
    if rows.empty:
        return []
    ratio = pd.Series([padded_bytes(int(m), int(n), int(k), p) for m, n, k, p in rows.itertuples(index=False)])
    return [Verdict("Border checks save transfer bytes (approach 2 copies the matrices as they are)",
                    "section III, no number: \"we save on the memory transfer bandwidth\"; \"the first approach moves "
                    "bigger matrices\"", rule.BY_CONSTRUCTION,
                    f"padding moves {100 * (ratio.mean() - 1):.1f} % more bytes on average over {len(ratio)} shapes "
                    f"(at most {100 * (ratio.max() - 1):.0f} %, none at the {int((ratio == 1).sum())} aligned ones)",
                    "the padded shapes' arithmetic (Listing 1), not a measurement")]


def construction_verdicts(df: pd.DataFrame, table: pd.DataFrame) -> list[Verdict]:
    """Section III's claims that hold by how both approaches are built: a thread per element of C
    over 32 x 32 shared tiles, no border test in approach 1, and the same C from both (every point
    is verified against float64 before it is timed)."""
    ok = ok_rows(df)
    grid = ok[ok.k.isin(DEPTHS) & (ok.params == "BLOCK=32")]
    errors = [grid[(grid.variant == spec["variant"]) & (grid.pad == spec["pad"])].rel_err for spec in (PADDING, BORDERS)]
    loops = (f"; its branch instructions, the tile loop's, equal approach 2's at "
             f"{int((table['branches padding'] == table['branches checks']).sum())} of {len(table)} profiled shapes"
             if len(table) else "")
    return [
        Verdict("Each element of C is computed by its own thread over 32 x 32 shared-memory tiles", "section III",
                rule.BY_CONSTRUCTION, "kernels/gemm/shared.cu at BLOCK = 32 for both approaches: 32 x 32 threads a "
                "block, one output each (the modern sweep's dbuf computes several a thread)", "the kernel as built"),
        *transfer_verdict(df),
        Verdict("Padding removes the border conditions: its kernel needs no branching for them", "section III: \"the "
                "kernel doesn't have the need of logical branching\"", rule.BY_CONSTRUCTION,
                "approach 1 is shared.cu with its checks compiled out (BORDERS = false)" + loops, "the kernel as built"),
        Verdict("Both approaches give formula (1)'s C: padding's zeros do not interfere, approach 2 zero-fills and "
                "guards its stores", "section III: \"The result will be the same\"", rule.BY_CONSTRUCTION,
                f"{len(errors[0])} padding and {len(errors[1])} border-check points verified against float64, "
                f"relative error at most {errors[0].max():.1e} and {errors[1].max():.1e}",
                "the harness verifies every point before timing it"),
    ]


# -- the mechanism, from the Nsight Compute profile beside the run -----------------------------------------------
SAME = 0.01  # ours: two counts within 1 % of each other are the same count
PROFILE_COMMAND = ("`mmbench profile --config configs/lameski2013.toml --points \"[1000,4000]x[1000,4000]x[32,64]\" "
                   "-v shared_padded,shared --results RUN.csv.gz` (branch, instruction and byte counts)")
MECHANISM_CLAIMS = (("The approaches differ in global-to-shared transfers (padding more) and in the kernel's "
                     "operations (border checks more)", "section I: \"The approaches differ in the size of memory "
                     "transfer between the global memory and the device shared memory, and in the number of operations\""),
                    ("Border checks put branching in the kernel", "section III: \"we introduce code branching inside "
                     "the kernel function\""),
                    ("The difference comes from branching in the kernel against extra memory transfers",
                     "sections I, V: \"more memory transfers provides increased performance than having conditional "
                     "branching\""))
COUNTS = ("branch_inst", "divergent_branches", "warp_inst", "global_ld_sectors", "global_st_sectors", "l2_bytes",
          "dram_bytes_read", "gpu_time_ns")


def _profiled(profile: pd.DataFrame | None, variant: str) -> pd.DataFrame:
    """One approach's profile rows at BLOCK = 32 by shape (m, n, k), with the counts the mechanism reads."""
    if profile is None or any(c not in profile for c in COUNTS):
        return pd.DataFrame()
    rows = profile[(profile.variant == variant) & (profile.params == "BLOCK=32")].dropna(subset=list(COUNTS))
    return rows.set_index(["m", "n", "k"])[list(COUNTS)]


def mechanism(profile: pd.DataFrame | None, df: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per shape profiled for both approaches (approach 1 at its padded shape, the kernel alone):
    branch instructions and divergent branches of each, the warp instructions the checks add, the
    global-memory sectors (loads and stores, 32 B each), L2 bytes and DRAM bytes read that padding
    adds, Nsight Compute's kernel times and, from the run, approach 1's median kernel time over
    approach 2's. Empty without a profile holding both."""
    pad, chk = _profiled(profile, PADDING["variant"]), _profiled(profile, BORDERS["variant"])
    shapes = pad.index.intersection(chk.index).sort_values()
    if shapes.empty:
        return pd.DataFrame()
    pad, chk = pad.loc[shapes], chk.loc[shapes]
    sectors = lambda t: t.global_ld_sectors + t.global_st_sectors
    out = pd.DataFrame({
        "aligned": [m % 32 == 0 and n % 32 == 0 for m, n, _ in shapes],
        "branches padding": pad.branch_inst, "branches checks": chk.branch_inst,
        "divergent padding": pad.divergent_branches, "divergent checks": chk.divergent_branches,
        "instructions checks %": 100 * (chk.warp_inst / pad.warp_inst - 1),
        "sectors padding %": 100 * (sectors(pad) / sectors(chk) - 1),
        "l2 padding %": 100 * (pad.l2_bytes / chk.l2_bytes - 1),
        "dram read padding %": 100 * (pad.dram_bytes_read / chk.dram_bytes_read - 1),
        "time padding us": pad.gpu_time_ns / 1e3, "time checks us": chk.gpu_time_ns / 1e3}, index=shapes)
    run = normalized_speed(df, "kernel") if df is not None else pd.Series(dtype=float)
    out["run time ratio"] = [run.get(s, np.nan) for s in shapes]
    return out


def _span(values: pd.Series, fmt: str = "{:+.1f}") -> str:
    lo, hi = float(values.min()), float(values.max())
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)} to {fmt.format(hi)}"


def mechanism_verdicts(table: pd.DataFrame) -> list[Verdict]:
    """Section I's two differences (transfers, operations), section III's "we introduce code branching
    inside the kernel" (approach 2) and sections I and V's reading of the times as branching against
    memory transfers, from the profile's counts, each part by the share rule over the profiled shapes:
    the checks branch at a shape if approach 2 runs more than 1 % more branch instructions or any
    divergent branch; padding moves more if its kernel requests more than 1 % more global sectors
    (unaligned shapes: at aligned ones the two are one kernel's loads). Judged on our kernel, whose
    checks are predicated in every block; the paper's branch in border blocks only was not measured."""
    if table.empty:
        return [Verdict(claim, where, rule.NOT_CHECKED, "no profile beside this run: " + PROFILE_COMMAND,
                        "needs Nsight Compute's branch, instruction and byte counts, not times")
                for claim, where in MECHANISM_CLAIMS]
    shapes = len(table)
    added = table["branches checks"] > table["branches padding"] * (1 + SAME)
    branching = added | (table["divergent checks"] > 0)
    more_inst = int((table["instructions checks %"] > 100 * SAME).sum())
    unaligned, aligned = table[~table.aligned], table[table.aligned]
    more_bytes = int((unaligned["sectors padding %"] > 100 * SAME).sum())
    faster = table["run time ratio"].dropna()
    ours = "judged on ours (checks predicated in every block), not the paper's border-block branch"
    untried = f"; the paper's kernel, branching in border blocks only, was not measured: {PAPER_KERNEL_RUN} would test it"
    differ = (f"padding's kernel requests more global-memory sectors (the tiles' loads, C's stores) at {more_bytes} of "
              f"the {len(unaligned)} unaligned shapes ({_span(unaligned['sectors padding %'])} %; "
              f"{_span(aligned['sectors padding %'])} % at the {len(aligned)} aligned); border checks run more warp "
              f"instructions at {more_inst} of {shapes} ({_span(table['instructions checks %'])} %) (ours: more than 1 % "
              "counts)")
    branches = (f"branch instructions: approach 2 runs more than approach 1 at {int(added.sum())} of {shapes} profiled "
                f"shapes (the same count at {int((table['branches checks'] == table['branches padding']).sum())}); "
                f"divergent branches: {int(table['divergent checks'].sum())} in approach 2, "
                f"{int(table['divergent padding'].sum())} in approach 1; instead approach 2 runs "
                f"{_span(table['instructions checks %'])} % more warp instructions (ours: more than 1 % counts)")
    times = (f"; approach 1's kernel faster at {int((faster < 1).sum())} of {len(faster)} (the run's kernel medians, "
             f"approach 1's time over approach 2's {_span(faster, '{:.3f}')})" if len(faster) else "")
    if len(aligned) and len(faster):
        times += (", at the aligned " + ", ".join(f"{m} x {n} x {k}: {r:.3f}" for (m, n, k), r in
                                                  aligned["run time ratio"].dropna().items())
                  + " where both request the same sectors")
    trade = (f"padding's kernel requests {_span(unaligned['sectors padding %'])} % more global-memory sectors at the "
             f"{len(unaligned)} unaligned shapes ({_span(aligned['sectors padding %'])} % at the {len(aligned)} "
             f"aligned), DRAM reads {_span(unaligned['dram read padding %'])} %; the checks add "
             f"{'branches at ' + str(int(branching.sum())) + ' shapes and' if branching.any() else 'no branch and no divergence but'} "
             f"{_span(table['instructions checks %'])} % warp instructions{times}; so on ours the trade is instructions "
             "against bytes" + ("" if branching.any() else ", not branching") + " (ours: more than 1 % counts)")
    parts = (rule.by_share(more_bytes, len(unaligned)), rule.by_share(int(branching.sum()), shapes),
             rule.by_share(int((faster < 1).sum()), len(faster)))
    claim = dict(zip(("differ", "branching", "trade"), MECHANISM_CLAIMS))
    return [Verdict(*claim["differ"], rule.weakest(rule.by_share(more_bytes, len(unaligned)),
                                                   rule.by_share(more_inst, shapes)), differ,
                    f"kernel (Nsight counts), {len(unaligned)} unaligned and {shapes} profiled shapes; the {SHARE} "
                    "on both parts, the weaker; judged on ours (checks in every block)"),
            Verdict(*claim["branching"], rule.by_share(int(branching.sum()), shapes), branches + untried,
                    f"kernel (Nsight counts), {shapes} profiled shapes; {SHARE}; {ours}"),
            Verdict(*claim["trade"], rule.weakest(*parts), trade + untried,
                    f"kernel scope (Nsight counts, the run's kernel medians), {shapes} profiled shapes; the {SHARE} "
                    f"on each part (padding's extra bytes, branching, padding faster), the weakest; {ours}")]


def verdicts(df: pd.DataFrame, profile: pd.DataFrame | None = None) -> list[Verdict]:
    """Every claim of the paper the run (and its profile, where given) can judge, in the paper's
    order of argument."""
    table = mechanism(profile, df)
    differ, branching, trade = mechanism_verdicts(table)
    return [differ, *construction_verdicts(df, table), branching, *figure_verdicts(df), trade,
            *average_verdicts(df), *other_way_verdict(df)]


# The paper's claims a run of this study cannot judge: (claim, where, why not, what would test it)
UNTESTED = (
    ("Strassen O(n^2.807), Coppersmith-Winograd O(n^2.376), Williams O(n^2.373); rectangular O(nmp)",
     "section I", "results from the literature, not measurements", "none (this study times one O(nmp) algorithm)"),
    ("Architecture-specific optimizations (ILP, tiling, avoiding cache conflicts, pre-fetching) speed GEMM up; vendor "
     "libraries (MKL, ACML) carry BLAS, whose performance depends on the architecture; not all algorithms parallelize "
     "efficiently; every GEMM optimization rests on the hardware", "section I [3-5]",
     "the literature's findings, about CPUs and libraries this study does not run", "none here (the cited works)"),
    ("CUBLAS does not document which hardware characteristics give its speed, and has been outperformed on certain "
     "architectures [6]", "section I", "a citation (and [6] is a DGEMV paper on Fermi) and a remark on 2013's "
     "documentation", "[6]'s DGEMV against CUBLAS of 2011 on a Fermi GPU; the modern sweep puts today's cuBLAS beside "
     "our kernels"),
    ("GPUs have entered high-performance computing and are the most powerful processors for their cost",
     "abstract, section II", "a price, not a measurement", "none"),
    ("Kepler gives almost 3 TFLOPS", "section II", "the GTX 680's datasheet; another GPU",
     "a GTX 680; this GPU's own peak: `mmbench ceilings`"),
    ("NVIDIA released CUDA in 2007; OpenCL is a vendor-independent standard on ANSI C99; CUDA is reached from Fortran, "
     "Java, Python, Perl and MATLAB through wrappers", "section II", "history, not a measurement",
     "none (the cited sources [10, 11])"),
    ("The GTX 680 is the latest Kepler GPU", "section II", "2013's product line; another GPU",
     "none (NVIDIA's product list of 2013)"),
    ("GTX 680 memory: L1 16/32/48 KB, L2 512 KB, 2 GB global (Fig. 1)", "section II, Fig. 1",
     "another GPU's hierarchy (a diagram)", "a GTX 680; ours is in the run's metadata (L2, memory)"),
    ("Without border handling the border blocks compute wrong results", "section III, Fig. 2",
     "the harness never runs the unchecked kernel on unpadded matrices (it would read and write past the buffers)",
     "compute-sanitizer on shared_padded launched at an unaligned shape unpadded"),
    ("Table 1: i7-3770, 32 GB, GTX 680, Ubuntu 12.04, CUDA 5.0", "section IV", "their machine",
     "that machine; ours is in the run's metadata"),
)


def untested() -> list[Verdict]:
    """The claims no run of this study can judge, each with what would test it."""
    return [Verdict(claim, where, rule.NOT_TESTABLE, f"what would test it: {what}", why)
            for claim, where, why, what in UNTESTED]


def profile_meta(results_path: Path) -> dict:
    """NAME.profile.meta.json beside the run ({} without one): how Nsight Compute was run."""
    import json

    from ..profile import profile_path

    path = profile_path(results_path).with_suffix(".meta.json")
    return json.loads(path.read_text()) if path.exists() else {}


def profile_departures(profile: pd.DataFrame | None, results_path: Path) -> list[str]:
    """What the profile's counts rest on, where the paper has no profile at all."""
    table = mechanism(profile)
    if table.empty:
        return []
    ncu = profile_meta(results_path).get("ncu") or {}
    sides = sorted({v for m, n, _ in table.index for v in (m, n)})
    depths = sorted({k for *_, k in table.index})
    first = profile[(profile.variant == PADDING["variant"]) & (profile.m % 32 != 0)]
    flops = ""
    if len(first):
        row = first.iloc[0]
        flops = (f" Nsight Compute counts the FMAs executed, so both approaches' FLOPs include the zero-filled parts of "
                 f"the border tiles ({row.fp32_flops / 1e6:.1f} M at {row_shape(row.m, row.n, row.k)} against "
                 f"{2 * row.m * row.n * row.k / 1e6:.1f} M useful).")
    return [f"- **The profile** (no such thing in the paper): Nsight Compute {ncu.get('version', '(version not recorded)')}, "
            f"caches {'flushed before each kernel' if ncu.get('cache_control', 'all') == 'all' else 'warm'}, clocks "
            f"{'not locked' if ncu.get('clock_control', 'none') == 'none' else 'locked'}, one launch of each kernel, at "
            f"{len(table)} shapes (hA, wB in {', '.join(map(str, sides))}; k = {' and '.join(map(str, depths))}); "
            "approach 1 profiled at its padded shape (e.g. 1000 x 1000 x 32 ran as 1024 x 1024 x 32), the kernel "
            "alone: its padding copies are in no count." + flops]


def departures(df: pd.DataFrame, meta: dict, reference: dict) -> list[str]:
    """Every choice of ours a verdict rests on, where the paper says otherwise or nothing."""
    ok = ok_rows(df)
    grid = ok[(ok.variant == BORDERS["variant"]) & ok.k.isin(DEPTHS)]
    sizes = ", ".join(str(int(v)) for v in sorted(set(grid.m) | set(grid.n)))
    additions = kernel_additions("gemm/shared.cu")
    settings = meta.get("settings") or {}
    return [
        f"- **GPU and compiler**: {(meta.get('gpu') or {}).get('name', 'no GPU')} with nvcc "
        f"{(meta.get('software') or {}).get('nvcc', '?')}, not {reference.get('device', 'a GTX 680 with CUDA 5.0')}.",
        "- **What was timed**: the paper measured \"the speed performance of the CUDA matrix multiplication kernels\" "
        "(section IV), so every timed verdict is judged in the kernel scope; the device and end_to_end scopes (ours) "
        "are extra evidence beside it. Only the kernel scope leaves the padding out, and only there does padding win.",
        f"- **The (hA, wB) grid**: the paper does not list its sizes; ours is every pair of {sizes} "
        f"({len(grid[['m', 'n', 'k']].drop_duplicates())} shapes over k = {' and '.join(map(str, DEPTHS))}), aligned "
        "to 32 and not.",
        "- **\"Average improvement\"**: the paper does not define it; ours is the arithmetic mean over the grid of "
        "approach 2's time over approach 1's, less 1 (the geometric mean beside it in the table).",
        "- **Approach 2's checks**: the paper's pseudo-code tests only border blocks, with `bx*BLOCK_SIZE+tx > weightA "
        "&& by*BLOCK_SIZE > heightA` (as printed, zero only where both bounds are crossed); ours tests every tile load in every block with the "
        "exact bounds, zero-filling past the edges, and guards every store. nvcc makes these selects and predicated "
        "loads and stores rather than branches (the profile's branch counts, below). So the mechanism's verdicts "
        f"judge ours, not the paper's branch in border blocks; {PAPER_KERNEL_RUN} would test the paper's.",
        "- **One kernel for both approaches**: the paper's kernels are not published; ours are one source "
        "(kernels/gemm/shared.cu), approach 1 with its checks compiled out, so the two differ only by the checks.",
        "- **Added to the paper's pseudo-code** (both approaches): " + "; ".join(additions) + ".",
        "- **Where the padding happens**: Listing 1 pads on the host and copies the padded matrices (our end_to_end "
        "scope); the device scope, padding on the GPU with memsets and 2D copies, is ours.",
        "- **wA = hB is never padded**: 32 and 64 are multiples of 32, so only hA and wB are.",
        f"- **Timing**: L2 {settings.get('cache', 'cold') == 'cold' and 'flushed before every sample' or 'warm'}, "
        f"{settings.get('warmup', '?')} untimed launches, then {settings.get('runs', '?')} timed samples, the median "
        "kept; the paper says none of this.",
        "- **The `modern` sweep** (dbuf, cuBLAS, `--pad`) is beyond the paper.",
    ]


def claims_lines(ok: pd.DataFrame, meta: dict, reference: dict, profile: pd.DataFrame | None = None,
                 results_path: Path | None = None) -> list[str]:
    """The report's verdict tables (the claims judged, then those no run here can test), the count of
    every claim of the paper, and the departures."""
    judged, left = verdicts(ok, profile), untested()
    return [*verdict_table(judged), "", "## Claims this run cannot test", "", *verdict_table(left), "",
            rule.claims_line(v.holds for v in [*judged, *left]), "", "## Where this study departs from the paper", "",
            *departures(ok, meta, reference), *profile_departures(profile, results_path), ""]


MECHANISM_COLUMNS = ["shape (hA x wB x k)", "aligned to 32", "branch instructions (1 / 2)", "divergent (1 / 2)",
                     "approach 2's extra warp instructions", "approach 1's extra global sectors",
                     "approach 1's extra L2 bytes", "approach 1's extra DRAM reads", "Nsight time µs (1 / 2)",
                     "run: approach 1's time / 2's"]


def mechanism_rows(table: pd.DataFrame) -> list[list[str]]:
    """The mechanism table's cells, a profiled shape a row."""
    return [[str(row_shape(m, n, k)), "yes" if r.aligned else "no",
             f"{r['branches padding']:,.0f} / {r['branches checks']:,.0f}",
             f"{r['divergent padding']:,.0f} / {r['divergent checks']:,.0f}", f"{r['instructions checks %']:+.1f} %",
             f"{r['sectors padding %']:+.1f} %", f"{r['l2 padding %']:+.1f} %", f"{r['dram read padding %']:+.1f} %",
             f"{r['time padding us']:.1f} / {r['time checks us']:.1f}",
             "-" if pd.isna(r["run time ratio"]) else f"{r['run time ratio']:.3f}"]
            for (m, n, k), r in table.iterrows()]


def hierarchy_shapes(profile: pd.DataFrame | None) -> list[tuple]:
    """The two profiled shapes the hierarchy shows: the smallest (its operands fit in L2, both sides
    unaligned) and the largest (past L2)."""
    table = mechanism(profile)
    if table.empty:
        return []
    shapes = sorted(table.index, key=lambda s: (hierarchy.working_set_mb("gemm", *s), s))
    return list(dict.fromkeys([shapes[0], shapes[-1]]))


def hierarchy_lines(profile: pd.DataFrame | None, df: pd.DataFrame, meta: dict) -> list[str]:
    """The report's memory-hierarchy section: what bounds the one kernel both approaches share,
    the level table at the two shapes drawn, and the branch and traffic counts at every shape."""
    table = mechanism(profile, df)
    if table.empty:
        return ["## Memory hierarchy (Nsight Compute)", "", "No profile of shared_padded and shared (BLOCK = 32) "
                "beside this run: " + PROFILE_COMMAND + ".", ""]
    variants = list(APPROACH)
    lv = hierarchy.levels(profile)
    lv = lv[lv.variant.isin(variants) & (lv.params == "BLOCK=32")]
    bound = lv.bound.value_counts()
    top = bound.index[0]
    name = "FP32" if top == "fp32" else hierarchy.NAMES[top]
    pct = lv[f"{top}_pct"]
    lines = ["## Memory hierarchy (Nsight Compute)", "",
             f"Both approaches are one kernel, so they sit together at every level: at {int(bound.iloc[0])} of "
             f"{len(lv)} profiled kernels the closest roof is {name} ({pct.min():.0f} to {pct.max():.0f} % of its peak, "
             f"at {_span(lv.shared_intensity, '{:.2f}')} FLOP per shared-memory byte), while L2 reaches at most "
             f"{lv.l2_pct.max():.0f} % and DRAM {lv.dram_pct.max():.0f} % of theirs"
             + (": the bytes padding adds go to levels far from their limits (ours: under half their peak)"
                if max(lv.l2_pct.max(), lv.dram_pct.max()) < 50 else "") + ". Approach 1's GFLOP/s count its padded product's FMAs; so do approach 2's, whose "
             "border tiles multiply zeros too. The hierarchical roofline (figure `fig-lameski-hierarchy.png`) draws "
             "both at the smallest profiled shape and the largest.", ""]
    for shape in hierarchy_shapes(profile):
        lines += [f"At {row_shape(*shape)} (operands {hierarchy.working_set_mb('gemm', *shape):.0f} MB; "
                  f"L2 {(meta.get('gpu') or {}).get('l2_bytes', 0) / 1e6:.0f} MB):", "",
                  *text_table(hierarchy.LEVEL_COLUMNS, [[_name(r[0]), *r[1:]] for r in
                                                        hierarchy.level_rows(profile, shape, variants)]), ""]
    lines += ["Branches, instructions and traffic at every profiled shape (1: padding, at its padded shape; 2: border "
              "checks). Sectors are the global loads and stores the kernel asked of L1 (32 B each), exact counts; "
              "L2 bytes also hold traffic besides the kernel's and move a few % between identical kernels (see the "
              "aligned shapes, where the two request the same sectors); DRAM writes are left out, as C stays in L2, "
              "wholly or in part, when the kernel ends.", "", *text_table(MECHANISM_COLUMNS, mechanism_rows(table)), ""]
    return lines


APPROACH = {PADDING["variant"]: "approach 1: padding (shared_padded, 32x32)",
            BORDERS["variant"]: "approach 2: border checks (shared, 32x32)"}


def _name(label: str) -> str:
    """A hierarchy label in this study's words (the hierarchy names `shared` CUDA-1, Zosa's name for it)."""
    for spec in (PADDING, BORDERS):
        if label == analysis.series_of(spec["variant"], spec["params"]).label:
            return APPROACH[spec["variant"]]
    return label


def fig_hierarchy(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    """The hierarchical roofline of both approaches at the smallest profiled shape and the largest
    (past L2), its legend in this study's words."""
    shapes = hierarchy_shapes(profile)
    if not shapes:
        raise ResultsError("the hierarchy needs a profile of shared_padded and shared (BLOCK = 32): " + PROFILE_COMMAND)
    keep = pd.Series([(m, n, k) in shapes for m, n, k in zip(profile.m, profile.n, profile.k)], index=profile.index)
    fig = hierarchy.fig_hierarchical_roofline(profile[keep & (profile.params == "BLOCK=32")], meta,
                                              "Lameski 2013: padding and border checks at each memory level "
                                              "(their points nearly coincide: one kernel, with or without its checks)",
                                              variants=list(APPROACH), most=len(shapes))
    for legend in fig.legends:
        for text in legend.get_texts():
            text.set_text(_name(text.get_text()))
    return fig


def report(df: pd.DataFrame, meta: dict, reference: dict, figures: dict[str, Path],
           profile: pd.DataFrame | None, results_path: Path) -> str:
    ok = ok_rows(df)
    table = summary(ok)
    try:
        modern = markdown_table(modern_table(ok))
    except ResultsError as exc:
        modern = str(exc)
    padded = ok[(ok.pad == 1) & ok.variant.isin(MODERN)][["variant", "m", "n", "k", "padded_shape"]].drop_duplicates()
    padded = padded[[p != f"{m}x{n}x{k}" and p != str(n) for m, n, k, p in
                     zip(padded.m, padded.n, padded.k, padded.padded_shape)]]
    counts = [c for c in table.columns if c.endswith(" at") or c == "shapes"]
    table[counts] = table[counts].astype(int).astype(str)  # counts, not measures
    lines = [
        "# Lameski 2013 on today's GPU: padding versus border checks",
        "",
        provenance(results_path, df, meta) + f". The paper ran on {reference.get('device', 'a GTX 680')}. "
        "Times are medians of the samples, cold L2; every point was verified against float64.",
        "",
        "Approach 1 (padding) is `shared_padded`: the 32 x 32 shared-memory kernel without any border check, run on "
        "A and B zero-padded to multiples of 32, with C taken out of the padded result. Approach 2 (border checks) is "
        "`shared` at BLOCK = 32: the same kernel, zero-filling its tiles past the edges and guarding its stores.",
        "",
        "What a sample covers (the `scope` column):",
        "",
        *[f"- **{name}**: {text}" for name, text in SCOPES.items()],
        "",
        "## The paper's claims, checked",
        "",
        *claims_lines(ok, meta, reference, profile, results_path),
        "## Padding's improvement over border checks, per k and scope",
        "",
        "Mean improvement: the paper's measure, the mean over the (hA, wB) grid of approach 1's speed over approach "
        "2's, less 1. Positive: padding faster.",
        "",
        markdown_table(table),
        "",
        "Where the time goes: " + where_the_time_goes(ok) + ". The device scope adds two memsets and three 2D "
        "copies to each product, microseconds each; end to end, approach 1 also zero-fills and fills padded copies "
        "of A and B on the host and copies C out of the padded result on the host, a pass over C that approach 2 "
        "does not make.",
        "",
        "## Beyond the paper: `--pad` on the fastest kernels",
        "",
        "Median time (ms) of each kernel on its inputs as given and padded to its tile multiple, the kernel alone and "
        "with the device padding copies; cuBLAS as given for scale. Padded shapes that differ from the matrices': "
        + (", ".join(f"{r.variant} {r.n} -> {r.padded_shape}" for r in padded.itertuples()) or "none") + ".",
        "",
        *edge_costs(ok),
        "",
        modern,
        "",
        *hierarchy_lines(profile, ok, meta),
    ]
    return report_text(lines, figures, {"fig-lameski-fig3": "Fig. 3", "fig-lameski-fig4": "Fig. 4",
                                        "fig-lameski-heatmap": "heatmap",
                                        "fig-lameski-hierarchy": "hierarchical roofline"})


# Its reference run in the repository: what a command suggests when no run of the user's will do.
REFERENCE_RUN = "results/lameski2013-h100/lameski2013-h100.csv.gz"

FIGURES = {
    "lameski-fig3": FigureFamily("Lameski Fig. 3: border checks over padding, k=32", "Lameski Fig. 3: border checks' speed normalized to padding's, k = 32, per scope",
                                 (Figure("fig-lameski-fig3", fig3),)),
    "lameski-fig4": FigureFamily("Lameski Fig. 4: border checks over padding, k=64", "Lameski Fig. 4: the same for k = 64", (Figure("fig-lameski-fig4", fig4),)),
    "lameski-heatmap": FigureFamily("Lameski: border checks over padding by (hA, wB)", "Lameski: border checks over padding by (hA, wB), per k and scope",
                                    (Figure("fig-lameski-heatmap", fig_heatmap),)),
    "lameski-hierarchy": FigureFamily("Lameski: both approaches on the hierarchical roofline",
                                      "Lameski: padding and border checks at each memory level (Nsight Compute), "
                                      "the smallest profiled shape and the largest, past L2",
                                      (Figure("fig-lameski-hierarchy", fig_hierarchy),)),
}
