"""Lameski 2013's figures: Fig. 3 and 4 (border checks' speed normalized to padding's, per scope),
the heatmap by (hA, wB) and the hierarchical roofline; and their families (FIGURES)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ... import hierarchy, plots
from ...ops.base import SCOPES
from ...results import ResultsError
from ..contract import Figure, FigureFamily
from .measures import APPROACH, DEPTHS, PROFILE_COMMAND, _name, hierarchy_shapes, normalized_speed

plt = plots.plt


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


def fig3(df: pd.DataFrame, meta: dict, profile=None, size=None, results_path=None) -> plt.Figure:
    return _normalized_figure(df, meta, 32, 3)


def fig4(df: pd.DataFrame, meta: dict, profile=None, size=None, results_path=None) -> plt.Figure:
    return _normalized_figure(df, meta, 64, 4)


def fig_heatmap(df: pd.DataFrame, meta: dict, profile=None, size=None, results_path=None) -> plt.Figure:
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


def fig_hierarchy(df: pd.DataFrame, meta: dict, profile=None, size=None, results_path=None) -> plt.Figure:
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
