"""Lameski et al. 2013 (../shared/papers/lameski-border-conditions.txt): rectangular matrix
multiplication with zero-padded inputs (approach 1: a kernel without border checks) against
border checks inside the kernel (approach 2), 32 x 32 shared-memory tiles either way.

Approach 1 is `shared_padded` (always run padded), approach 2 `shared` at BLOCK = 32: the same
kernel but for its checks. The paper fixes wA = hB (k here) at 32 and 64 and varies hA (m) and
wB (n). It does not say what it timed, so every point is timed in three scopes (the `scope`
column): the kernel alone, with the padding on the device, and end to end from host to host.
Beyond the paper, `--pad` asks the same of the fastest kernels (the `modern` sweep).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .. import plots
from ..analysis import by_shape, ok_rows, shape_ratio
from ..ops.base import SCOPES
from ..results import ResultsError
from .common import Verdict, markdown_table, provenance, report_text, verdict_table
from .contract import Figure, FigureFamily

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


def _normalized_figure(df: pd.DataFrame, meta: dict, k: int, figure: int) -> plt.Figure:
    fig, axes = plt.subplots(1, len(SCOPES), figsize=(15, 4.8), layout="constrained", sharey=True)
    drawn = 0
    for ax, scope in zip(axes, SCOPES):
        r = normalized_speed(df, scope)
        cut = r[r.index.get_level_values("k") == k] if len(r) else r
        if len(cut):
            drawn += 1
            size = np.array([m * n for m, n, _ in cut.index])
            order = np.argsort(size, kind="stable")
            ax.plot(size[order], cut.values[order], marker="o", markersize=3, linewidth=0.8, color="tab:red",
                    label="approach 2: border checks")
        ax.axhline(1.0, color="black", linewidth=1.2, label="approach 1: padding (= 1)")
        ax.set_xscale("log")
        ax.set_xlabel("problem size hA x wB (elements of C), log scale")
        ax.set_title(f"scope: {scope}", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    if not drawn:
        raise ResultsError(f"Fig. {figure} needs shared_padded and shared (BLOCK=32) rows at k = {k}")
    axes[0].set_ylabel("speed normalized to approach 1")
    _title(fig, f"Lameski 2013, Fig. {figure}: normalized speed for wA = hB = {k}", meta)
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


def verdicts(df: pd.DataFrame) -> list[Verdict]:
    table = summary(df)
    out = []
    for k in DEPTHS:
        if k not in table.index:
            continue
        at_k = table.loc[[k]]
        ours = "; ".join(f"{r.scope}: {r[GAIN]:+.1f} % (padding faster at {r['padding faster at']} of {r.shapes})"
                         for _, r in at_k.iterrows())
        wins = {r.scope: r[GAIN] > 0 for _, r in at_k.iterrows()}
        holds = "yes" if all(wins.values()) else "no" if not any(wins.values()) else "partly"
        only = [scope for scope, won in wins.items() if won]
        out.append(Verdict(f"Padding beats border checks on average, k = {k}",
                           f"{PAPER_PERCENT[k]} % average improvement (GTX 680)", holds,
                           ours + (f"; padding wins in the {' and '.join(only)} scope only" if holds == "partly" else "")))
    return out


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
        *verdict_table(verdicts(ok)),
        "",
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
    ]
    return report_text(lines, figures, {"fig-lameski-fig3": "Fig. 3", "fig-lameski-fig4": "Fig. 4",
                                                 "fig-lameski-heatmap": "heatmap"})


# Its reference run in the repository: what a command suggests when no run of the user's will do.
REFERENCE_RUN = "results/lameski2013-h100/lameski2013-h100.csv.gz"

FIGURES = {
    "lameski-fig3": FigureFamily("Lameski Fig. 3: border checks over padding, k=32", "Lameski Fig. 3: border checks' speed normalized to padding's, k = 32, per scope",
                                 (Figure("fig-lameski-fig3", fig3),)),
    "lameski-fig4": FigureFamily("Lameski Fig. 4: border checks over padding, k=64", "Lameski Fig. 4: the same for k = 64", (Figure("fig-lameski-fig4", fig4),)),
    "lameski-heatmap": FigureFamily("Lameski: border checks over padding by (hA, wB)", "Lameski: border checks over padding by (hA, wB), per k and scope",
                                    (Figure("fig-lameski-heatmap", fig_heatmap),)),
}
