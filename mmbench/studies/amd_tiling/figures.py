"""The AMD tiling study's figures: the speedup of each step over naive, register over LDS tiling
(the ratio its register-tiling verdicts judge) and each step's % of cuBLAS per shape family, the tile
sweep's GFLOP/s and the hierarchical roofline; and their families (FIGURES).

Register tiling is drawn at the tutorial's WARP = 64 (solid) beside LDS tiling and naive, as the
verdicts judge it, with NVIDIA's WARP = 32 (the study's default) dashed and lighter as other
evidence. WARP = 64 comes from the companion run beside the results drawn (the reference run's:
register tiling, LDS tiling and cuBLAS timed together at every shape), else from the run's own
WARP = 64 rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.patches import Patch
from matplotlib.ticker import NullLocator

from ... import plots
from ...analysis import by_shape, ok_rows, series_of, shape_ratio, with_clock
from ...hierarchy import fig_hierarchical_roofline
from ...results import ResultsError
from ..common import companion
from ..contract import Figure, FigureFamily
from .measures import (ALIGN, BASE, FAMILIES, KERNEL_NAMES, MATTERS, REGISTER_DEFAULT, REGISTER_WAVEFRONT, STEPS,
                       WAVEFRONT_RUN, _plain, aligned, family, hierarchy_profile, percent_of_cublas,
                       percent_of_cublas_at, register_over_lds, speedups, step_values, tile_table)

plt = plots.plt

# The series' names: the tutorial's steps, register tiling at its width and at ours
NAIVE, LDS, CUBLAS_NAME = STEPS[0][2], STEPS[1][2], "cuBLAS"
W64 = f"{KERNEL_NAMES['register_tiling', REGISTER_WAVEFRONT]} (the tutorial's)"
W32 = f"{KERNEL_NAMES['register_tiling', REGISTER_DEFAULT]} (NVIDIA's warp, ours)"
# Each series' colour and line: register tiling at the tutorial's width in full, at ours dashed and lighter
STYLES = {NAIVE: {"color": "tab:brown"}, LDS: {"color": "tab:purple"}, W64: {"color": "tab:red"},
          W32: {"color": "tab:red", "linestyle": "--", "alpha": 0.45}, CUBLAS_NAME: {"color": "tab:olive"}}


def tutorial_rows(df: pd.DataFrame, meta: dict, results_path: Path | None = None) -> tuple[pd.DataFrame, str]:
    """The verified rows register tiling at WARP = 64 is drawn from, and where they were timed: the
    companion's beside the run at results_path (with its own LDS tiling and cuBLAS), in the figures'
    clock; else this run's own (its WARP = 64 rows, if any)."""
    wave = companion(results_path, *WAVEFRONT_RUN)
    rows = None if wave is None else with_clock(wave.df, meta.get("figure_clock") or "events")
    if rows is None or not ((rows.status == "ok") & rows.time_ms_median.notna()).any():
        return ok_rows(df), "this run"
    return ok_rows(rows), f"the companion run {WAVEFRONT_RUN[0]}/{wave.path.name}"


def speedup_series(df: pd.DataFrame, meta: dict,
                   results_path: Path | None = None) -> tuple[dict[str, pd.Series], str]:
    """Each step's speedup over naive by shape (naive time / its time), register tiling at both
    widths (WARP = 64 over this run's naive), and where WARP = 64 was timed."""
    ok = ok_rows(df)
    over = speedups(ok)
    rows, source = tutorial_rows(df, meta, results_path)
    at64 = by_shape(_plain(rows), variant="register_tiling", params=REGISTER_WAVEFRONT)
    series = {LDS: over.get(LDS), W64: shape_ratio(step_values(ok)[NAIVE], at64), W32: over.get(STEPS[2][2]),
              CUBLAS_NAME: over.get(CUBLAS_NAME)}
    return {k: v for k, v in series.items() if v is not None and len(v)}, source


def percent_series(df: pd.DataFrame, meta: dict,
                   results_path: Path | None = None) -> tuple[dict[str, pd.Series], str]:
    """Each step's GFLOP/s as % of cuBLAS's by shape, register tiling at both widths (WARP = 64 of
    the cuBLAS timed with it), and where WARP = 64 was timed."""
    ok = ok_rows(df)
    pct = percent_of_cublas(ok)
    rows, source = tutorial_rows(df, meta, results_path)
    at64 = percent_of_cublas_at(rows, (("register_tiling", REGISTER_WAVEFRONT, W64),)).get(W64)
    series = {NAIVE: pct.get(NAIVE), LDS: pct.get(LDS), W64: at64, W32: pct.get(STEPS[2][2])}
    return {k: v for k, v in series.items() if v is not None and len(v)}, source


def register_lds_series(df: pd.DataFrame, meta: dict,
                        results_path: Path | None = None) -> tuple[dict[str, pd.Series], str]:
    """Register over LDS tiling by shape (LDS time / register time, each width against the LDS
    tiling timed in its own run), and where WARP = 64 was timed."""
    ok = ok_rows(df)
    rows, source = tutorial_rows(df, meta, results_path)
    series = {W64: register_over_lds(rows, REGISTER_WAVEFRONT), W32: register_over_lds(ok, REGISTER_DEFAULT)}
    series = {k: v for k, v in series.items() if len(v)}
    if not series:
        raise ResultsError(f"register over LDS tiling needs register_tiling and {STEPS[1][0]} ({STEPS[1][1]}) rows "
                           "at the same shapes")
    return series, source


def _draw_family(ax, series: dict[str, pd.Series], name: str) -> None:
    """One family's panel: each series by the varying size, filled where aligned and hollow where not."""
    for step, values in series.items():
        cut = family(values, name)
        if cut.empty:
            continue
        style = STYLES.get(step, {"color": "black"})
        colour, alpha = style["color"], style.get("alpha", 1.0)
        ax.plot(cut.index, cut.values, color=colour, linewidth=1.3, linestyle=style.get("linestyle", "-"),
                alpha=alpha, label=step)
        on = np.array([aligned(int(x)) for x in cut.index])
        ax.scatter(cut.index[on], cut.values[on], color=colour, s=24, zorder=3, alpha=alpha)
        ax.scatter(cut.index[~on], cut.values[~on], facecolors="white", edgecolors=colour, s=24, zorder=3,
                   alpha=alpha)


def _family_panels(series: dict[str, pd.Series], meta: dict, title: str, ylabel: str,
                   line: tuple, log_y: bool = False, band: tuple[float, float, str] | None = None,
                   titles: dict[str, str] | None = None, yticks: tuple[float, ...] = ()) -> plt.Figure:
    """A panel per shape family (2 x 2), a reference line (value, legend text[, the step it stands
    for]) and an optional shaded band (low, high, legend text); one legend for the figure, below the
    panels. With yticks, the panels share that y range (log_y: a ratio's few ticks, which log2 alone
    would not label)."""
    fig, axes = plt.subplots(2, 2, figsize=(12, 9.5 if yticks else 9), layout="constrained", sharey=bool(yticks))
    for ax, (name, dim, label) in zip(axes.flat, FAMILIES):
        _draw_family(ax, series, name)
        if band:
            ax.axhspan(band[0], band[1], color="gray", alpha=0.15, linewidth=0)
        ax.axhline(line[0], color="gray", linewidth=1.0, linestyle=":")
        ax.set_xscale("log", base=2)
        if log_y:
            ax.set_yscale("log", base=2)
            ax.yaxis.set_major_formatter(plots.FuncFormatter(lambda v, _: f"{v:g}"))
        if yticks:
            ax.set_yticks(yticks, minor=False)
            ax.yaxis.set_minor_locator(NullLocator())
            ax.set_ylim(min(yticks) * 0.92, max(yticks) * 1.06)
        ax.set_xlabel(f"{dim} (filled: aligned to {ALIGN}; hollow: one past)")
        if ax.get_subplotspec().is_first_col():
            ax.set_ylabel(ylabel)
        ax.set_title((titles or {}).get(name, label), fontsize=10)
        ax.grid(True, alpha=0.3)
    # the legend in the steps' order, the reference line in its step's place (naive = 1, cuBLAS = 100 %)
    keyed = [(step, plt.Line2D([], [], marker="o", linewidth=1.3, markersize=5, label=step,
                               **STYLES.get(step, {"color": "black"}))) for step in series]
    keyed.append((line[2] if len(line) > 2 else "", plt.Line2D([], [], color="gray", linewidth=1.0, linestyle=":",
                                                                label=line[1])))
    order = list(STYLES)
    handles = [h for _, h in sorted(keyed, key=lambda kh: order.index(kh[0]) if kh[0] in order else len(order))]
    if band:
        handles.append(Patch(color="gray", alpha=0.15, linewidth=0, label=band[2]))
    fig.legend(handles=handles, loc="outside lower center", ncol=3 if len(handles) > 4 else 2, fontsize=9,
               frameon=False)
    where = (meta.get("gpu") or {}).get("name", "no GPU")
    fig.suptitle(f"{title}\n{where}, {str(meta.get('started_at', ''))[:10]}", fontsize=11)
    return fig


def _timed(source: str) -> str:
    return f"register tiling at WARP = 64 timed in {source}"


def fig_speedup(df: pd.DataFrame, meta: dict, profile=None, size=None, results_path=None) -> plt.Figure:
    series, source = speedup_series(df, meta, results_path)
    return _family_panels(series, meta, "AMD tiling tutorial: speedup of each step over naive\n"
                          f"({_timed(source)}, over this run's naive)",
                          "speedup over naive (naive time / time), log2 scale", (1.0, "naive (= 1)", NAIVE),
                          log_y=True)


def _counts(over: pd.Series) -> tuple[int, int, int]:
    """(register faster, register faster by more than MATTERS, LDS faster by more than MATTERS)."""
    return int((over > 1).sum()), int((over > 1 + MATTERS).sum()), int((over < 1 - MATTERS).sum())


def _tally(over: pd.Series) -> str:
    faster, reg, lds = _counts(over)
    return (f"register faster at {faster} of {len(over)} shapes; by more than {100 * MATTERS:.0f} %: "
            f"register at {reg}, LDS at {lds}")


def _in_no_family(over: pd.Series) -> list[tuple]:
    """The shapes of a by-shape Series that no family's panel draws (neither square nor two of m, n
    and k at BASE): the tile sweep's 8192 x 512 x 2048."""
    return [s for s in over.index if not (s[0] == s[1] == s[2] or sum(d == BASE for d in s) >= 2)]


def _apart(at64: pd.Series, at32: pd.Series) -> str:
    """The ratios at the shapes in no family, for the title (nothing measured is left unsaid)."""
    shapes = sorted(set(_in_no_family(at64)) | set(_in_no_family(at32)))
    at = lambda s, o: f"{o[s]:.2f}" if s in o.index else "-"  # noqa: E731
    return "".join(f"; {'x'.join(map(str, s))} (in no panel): {at(s, at64)} at WARP = 64, {at(s, at32)} at 32"
                   for s in shapes)


def fig_register_lds(df: pd.DataFrame, meta: dict, profile=None, size=None, results_path=None) -> plt.Figure:
    """Register over LDS tiling, the ratio the register-tiling verdicts judge: at the tutorial's
    WARP = 64 with the counts they rest on, WARP = 32 dashed beside it."""
    series, source = register_lds_series(df, meta, results_path)
    at64, at32 = series.get(W64, pd.Series(dtype=float)), series.get(W32, pd.Series(dtype=float))
    cuts = {name: family(at64, name) if len(at64) else at64 for name, _, _ in FAMILIES}
    titles = {name: f"{label}: WARP = 64 " + (f"register faster at {_counts(cuts[name])[0]} of {len(cuts[name])}"
                                              if len(cuts[name]) else "not timed") for name, _, label in FAMILIES}
    return _family_panels(
        series, meta, "AMD tiling tutorial: register tiling over LDS tiling (16 x 16), each width against the LDS "
        f"tiling timed with it\nWARP = 64 (the tutorial's, solid): {_tally(at64)}\nWARP = 32 (ours, dashed): "
        f"{_tally(at32)}\nWARP = 64 timed in {source}{_apart(at64, at32)}",
        "LDS time / register time, log2 scale", (1.0, "equal times (above: register tiling faster)"), log_y=True,
        band=(1 - MATTERS, 1 + MATTERS, f"within {100 * MATTERS:.0f} % of equal: neither faster by more (our line)"),
        titles=titles, yticks=(0.25, 0.5, 0.75, 1, 1.25, 1.5))


def fig_percent_cublas(df: pd.DataFrame, meta: dict, profile=None, size=None, results_path=None) -> plt.Figure:
    series, source = percent_series(df, meta, results_path)
    return _family_panels(series, meta, "AMD tiling tutorial: GFLOP/s as % of cuBLAS\n"
                          f"({_timed(source)}, against the cuBLAS timed there)",
                          "% of cuBLAS GFLOP/s (same shape)", (100.0, "cuBLAS (= 100 %)", CUBLAS_NAME))


def fig_tiles(df: pd.DataFrame, meta: dict, profile=None, size=None, results_path=None) -> plt.Figure:
    table = tile_table(df)
    fig, ax = plt.subplots(figsize=(8, max(5, 0.32 * len(table) + 2)), layout="constrained")
    plots.heatmap(ax, table, "GFLOP/s (median)", fmt="{:.0f}")
    ax.set_xlabel("shape (m x n x k)")
    ax.set_ylabel("tile configuration")
    plots._title(ax, "AMD tiling tutorial: which tile sizes pay off", meta)
    return fig


def fig_hierarchy(df: pd.DataFrame, meta: dict, profile=None, size=None, results_path=None) -> plt.Figure:
    """The shared hierarchical roofline of the run's profile, with register tiling at the tutorial's
    WARP = 64 from the companion's profile where there is one (WARP = 32 beside it, lighter)."""
    wave = companion(results_path, *WAVEFRONT_RUN)
    both = hierarchy_profile(profile, None if wave is None else wave.profile)
    widths = set() if both is None else set(both.params[both.variant == "register_tiling"])
    named = {REGISTER_WAVEFRONT: " at the tutorial's WARP = 64", REGISTER_DEFAULT: " at WARP = 32"}
    named = " at the tutorial's WARP = 64 (and 32, lighter)" if len(widths) > 1 else "".join(
        named.get(p, "") for p in widths)
    # register tiling at the tutorial's WARP = 64 solid, at WARP = 32 dashed and lighter, as in the other figures
    styles = {("register_tiling", REGISTER_WAVEFRONT): ("-", 1.0),
              ("register_tiling", REGISTER_DEFAULT): ("--", STYLES[W32]["alpha"])} if len(widths) > 1 else None
    fig = fig_hierarchical_roofline(both, meta, f"AMD tiling tutorial: naive, LDS tiling, register tiling{named} "
                                    "and cuBLAS at every memory level (Nsight Compute)", most=2, styles=styles)
    # the shared figure names kernels by mmbench's series labels (with their parameters where two share one);
    # a reader of this study knows the tutorial's names
    drawn = set(zip(both.variant, both.params.fillna("")))
    names = {}
    for (v, p), name in KERNEL_NAMES.items():
        if (v, p) in drawn:
            names[series_of(v, p).label] = names[f"{series_of(v, p).label} {p}"] = name
    for text in fig.legends[0].get_texts():
        text.set_text(names.get(text.get_text(), text.get_text()))
    return fig


FIGURES = {
    "amd-speedup": FigureFamily("AMD tiling: LDS and register tiling over naive", "AMD tiling: speedup of LDS and "
                                "register tiling (the tutorial's WARP = 64, and 32) over naive, and register over "
                                "LDS tiling, per shape family",
                                (Figure("fig-amd-speedup", fig_speedup),
                                 Figure("fig-amd-register-lds", fig_register_lds))),
    "amd-cublas": FigureFamily("AMD tiling: each step as % of cuBLAS", "AMD tiling: each step's GFLOP/s as % of cuBLAS, per shape family",
                               (Figure("fig-amd-percent-cublas", fig_percent_cublas),)),
    "amd-tiles": FigureFamily("AMD tiling: GFLOP/s of each tile configuration", "AMD tiling: GFLOP/s of each tile configuration at the tuning shapes",
                              (Figure("fig-amd-tiles", fig_tiles),)),
    "amd-hierarchy": FigureFamily("AMD tiling: hierarchical roofline from a profile", "AMD tiling: each kernel's "
                                  "intensity at shared memory, L1, L2 and DRAM under each level's roof, from the "
                                  "Nsight Compute profile beside the run",
                                  (Figure("fig-amd-hierarchy", fig_hierarchy),)),
}
