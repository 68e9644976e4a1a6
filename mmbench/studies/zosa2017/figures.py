"""Zosa 2017's figures: Figure 1 (block sizes), Figure 2 (every version over all sizes), Figures 3
and 4 (the roofline), Figure 5 (speed-ups), the hierarchical roofline, and their FIGURES families."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.transforms import Bbox

from ... import analysis, hierarchy, plots
from ...precisions import DEFAULT
from ...results import ResultsError
from ..contract import Figure, FigureFamily
from .measures import best_series
from .paper import FIG1_SIZES, PAPER

plt = plots.plt  # pyplot as plots loaded it, after choosing the Agg backend


# -- its figures -------------------------------------------------------------------------------------
def fig_block_sizes(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figure 1: CUDA-Best GFLOP/s at 256, 512, 1024, 2048 for each block size."""
    ok = analysis.ok_rows(df)
    series = sorted((s for s in analysis.series_list(ok) if s.variant == "best"), key=lambda s: s.block or 0)
    if not series:
        raise ResultsError("Figure 1 needs CUDA-Best ('best') rows")
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    x = np.arange(len(FIG1_SIZES))
    width = 0.8 / len(series)
    for i, s in enumerate(series):
        values = analysis.curve(ok, s).reindex(FIG1_SIZES)
        bars = ax.bar(x + (i - (len(series) - 1) / 2) * width, values, width, label=s.label,
                      color=plots.style(s)["color"], alpha=0.35 + 0.65 * (i + 1) / len(series), edgecolor="black", linewidth=0.5)
        ax.bar_label(bars, fmt="%.0f", fontsize=7, padding=2)
    ax.set_xticks(x, [str(n) for n in FIG1_SIZES])
    ax.set_xlabel("matrix size n (n x n x n)")
    ax.set_ylabel("GFLOP/s (mean of samples)")
    ax.legend(title="block size")
    ax.grid(True, axis="y", alpha=0.3)
    plots._title(ax, "Figure 1: CUDA-Best by thread-block size", meta)
    return fig


def fig_gflops(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figure 2: GFLOP/s of every variant and baseline over all square sizes."""
    sizes = analysis.square(analysis.ok_rows(df)).n.nunique()
    fig = plots.fig_curves(df, meta, f"Figure 2: SGEMM performance over {sizes} sizes")
    # Log GFLOP/s: multicore BLAS (hundreds) and CUDA-1u would lie flat under cuBLAS's 50000 on a
    # linear axis, and their crossing is one of the paper's findings.
    fig.axes[0].set_yscale("log")
    fig.axes[0].set_ylabel("GFLOP/s (mean of samples), log scale")
    return fig


def fig_speedup(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Figure 5: CUDA-Best over multicore BLAS, and cuBLAS over CUDA-Best, by size."""
    ok = analysis.ok_rows(df)
    best = best_series(ok)
    blas, cublas = analysis.find(ok, "blas"), analysis.find(ok, "cublas")
    panels = [(best, blas, f"{best.label} / BLAS (multicore)"), (cublas, best, f"cuBLAS / {best.label}")]
    panels = [p for p in panels if p[0] is not None and p[1] is not None]
    if not panels:
        raise ResultsError("Figure 5 needs CUDA-Best with BLAS or cuBLAS rows")
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 3.4 * len(panels) + 0.6), layout="constrained", squeeze=False)
    for ax, (top, bottom, label) in zip(axes[:, 0], panels):
        r = analysis.ratio(ok, top, bottom)
        ax.plot(r.index, r.values, marker=".", markersize=3, color=plots.style(top)["color"], label=label)
        ax.axhline(1.0, color="black", linewidth=0.8)
        plots._log2_sizes(ax)
        ax.set_ylabel("speed-up (ratio of GFLOP/s)")
        ax.legend(loc="upper left")
    plots._title(axes[0, 0], "Figure 5: speed-up ratios", meta)
    return fig


# The paper's own read-off (section 3, Figures 3 and 4): its peak over each K80 bandwidth, "an estimated
# 2 flops/byte" at the datasheet's 240 GB/s and "3 flops/byte" at the measured 154 GB/s (the config's
# [reference] holds the same bandwidths; a test keeps them equal)
PAPER_READ_OFF = ((3, 240, 2, "datasheet", "--"), (4, 154, 3, "measured", "-"))  # figure, GB/s, FLOP/B, roof, dash
K80_ROOF_COLOUR = "tab:cyan"  # no version of the paper takes it (plots.COLOURS)
KERNEL_GID = "kernel"  # the versions' points (tests find them by it), beside the paper's marks
X_RANGE = (0.3, 2000)  # FLOP per DRAM byte: the paper's 2 to cuBLAS's 347


def fig_roofline(df: pd.DataFrame, meta: dict, profile: pd.DataFrame | None, size: int | None,
                 results_path=None) -> plt.Figure:
    """Figures 3 and 4 in one: the datasheet and measured roofs, every GPU version at its measured
    DRAM intensity at n = size (default: the largest profiled size past the L2, where the versions'
    DRAM intensities differ; inside the L2 they all measure about the algorithmic minimum), and the
    paper's own read-off points (2 and 3 FLOP/B at its 480 GFLOP/s, on the K80's 240 and 154 GB/s
    roofs) beside the fewest DRAM bytes its tiling can move (global memory's sectors): the paper's
    intensities are not the kernels'. A run of another precision or with operations without FLOPs
    gets the generic roofline (plots.fig_roofline)."""
    roofs = plots._roofs(meta)  # first: a run without a GPU's metadata is refused as such
    size = size or _past_l2_size(df, meta, profile) or analysis.roofline_size(df, profile)
    timed = _timed_at(df, size)
    if timed and plots.roofline_precision(df, size) != DEFAULT:
        return plots.fig_roofline(df, meta, profile, size, title="Figures 3-4: roofline")
    points = plots.roofline_points(df, profile, size) if timed else _profiled_points(df, profile, size)
    if (points.intensity <= 0).any() or not all(r[1] for r in roofs):  # copies or transposes (the generic
        # figure's strip holds them), or no FP32 peak known for this GPU (its roof the bandwidth's alone)
        return plots.fig_roofline(df, meta, profile, size, title="Figures 3-4: roofline")
    fig, ax = plt.subplots(figsize=(11, 8.2), layout="constrained")
    x = np.logspace(np.log10(X_RANGE[0]), np.log10(X_RANGE[1]), 400)
    for name, tflops, gbs, ls, colour in roofs:
        ax.plot(x, np.minimum(tflops * 1e3, gbs * x), linestyle=ls, color=colour, linewidth=1.5,
                label=f"{_gpu(meta)} {name} roof: {tflops:.1f} TFLOP/s FP32, {gbs:.0f} GB/s")
    for p in points.itertuples():
        colour = plots.style(p.series)["color"]
        ax.scatter(p.intensity, p.gflops, s=60, zorder=3, color=colour, gid=KERNEL_GID,
                   facecolors=colour if p.measured else "none", edgecolors=colour, linewidths=1.5)
    _paper_read_off(ax, df, profile, points, roofs)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*X_RANGE)
    ax.set_ylim(40, max(r[1] for r in roofs) * 1e3 * 1.8)
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte), log scale")
    ax.set_ylabel("GFLOP/s, log scale: " + ("the run's (mean of samples)" if timed else
                                            f"Nsight Compute's kernel time (n = {size} profiled, not timed)"))
    ax.grid(True, which="both", alpha=0.25)
    _in_l2_note(ax, df, meta, profile, size)
    fig.legend(*ax.get_legend_handles_labels(), fontsize=8.5, loc="outside lower center", ncol=2)
    plots._title(ax, f"Figures 3-4: roofline at n = {size}\n{_where(meta, size)}intensity: "
                     f"{plots._intensity_basis(points)}", meta)
    _label_points(fig, ax, points)
    return fig


def _label_points(fig, ax, points: pd.DataFrame) -> None:
    """Each version's name beside its point (the legend would need a marker per block size, CUDA-Best's
    three sharing a colour), highest point first: right of it, else half a line down or up at a time
    (left of it once a line on the right is taken), until clear of the points, the names placed and
    the axes' edges; a thin line back to the point where moved off its height."""
    fig.canvas.draw()  # the layout settled: where the points and the names are, in pixels
    renderer = fig.canvas.get_renderer()
    labels = plots._distinct_labels(points)
    marks = [ax.transData.transform((p.intensity, p.gflops)) for p in points.itertuples()]
    placed = [Bbox.from_extents(x - 5, y - 5, x + 5, y + 5) for x, y in marks]  # the points themselves
    for p in sorted(points.itertuples(), key=lambda p: (-p.gflops, p.intensity)):
        colour = plots.style(p.series)["color"]
        style = {"fontsize": 8, "va": "center", "zorder": 5, "textcoords": "offset points",  # framed in its colour
                 "bbox": {"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": colour, "linewidth": 0.9}}
        tries = sorted(((side, step * sign) for step in range(2 * len(points) + 1)
                        for sign in ((1,) if not step else (-1, 1)) for side in (1, -1)),
                       key=lambda t: abs(t[1]) + (2.5 if t[0] < 0 else 0))  # stable: right before left, down before up
        for side, step in tries:
            offset = (8 * side, step * 5.5)  # half a line of 8-point text a step
            text = ax.annotate(labels[p.Index], (p.intensity, p.gflops), xytext=offset, ha="left" if side > 0 else "right",
                               **style)
            box = text.get_window_extent(renderer)
            if not any(box.overlaps(other) for other in placed) and ax.bbox.contains(box.x0, box.y0) \
                    and ax.bbox.contains(box.x1, box.y1):
                break
            text.remove()
        else:  # nowhere clear: right of it, over what is there
            offset = (8, 0)
            text = ax.annotate(labels[p.Index], (p.intensity, p.gflops), xytext=offset, ha="left", **style)
            box = text.get_window_extent(renderer)
        if offset[1]:  # moved off its height: a line from the name back to its point
            text.remove()
            text = ax.annotate(labels[p.Index], (p.intensity, p.gflops), xytext=offset, ha=text.get_ha(), **style,
                               arrowprops={"arrowstyle": "-", "color": colour, "linewidth": 0.7, "shrinkA": 0, "shrinkB": 4})
        placed.append(box)


def _gpu(meta: dict) -> str:
    return (meta.get("gpu") or {}).get("name", "GPU").removeprefix("NVIDIA ")


def _where(meta: dict, n: int) -> str:
    """'201 MB of operands, past the 63 MB L2; ' (or 'in the'), where the run's metadata gives its L2."""
    l2 = (meta.get("gpu") or {}).get("l2_bytes")
    if not l2:
        return ""
    ws = hierarchy.working_set_mb("gemm", n, n, n)
    return f"{ws:.0f} MB of operands, {'past' if ws * 1e6 > l2 else 'in'} the {l2 / 1e6:.0f} MB L2; "


def _timed_at(df: pd.DataFrame, size: int) -> bool:
    ok = analysis.square_shapes(analysis.ok_rows(df))
    return bool((analysis.on_gpu(ok) & (ok.n == size)).any())


def _measured(df: pd.DataFrame, profile: pd.DataFrame | None) -> pd.DataFrame:
    """The profile's square kernels with FLOPs and a DRAM intensity, of the run's GPU series alone
    (a profile may hold more), each with its series and its GFLOP/s by Nsight Compute's kernel time."""
    if profile is None or not {"dram_intensity", "fp32_flops", "gpu_time_ns"} <= set(profile):
        return pd.DataFrame(columns=["variant", "params", "n", "series", "gflops", "dram_intensity"])
    ok = analysis.ok_rows(df)
    series = {(s.variant, s.params): s for s in analysis.series_list(ok[analysis.on_gpu(ok)])}
    p = profile[(profile.m == profile.n) & (profile.k == profile.n) & (profile.fp32_flops > 0)
                & (profile.dram_intensity > 0) & (profile.gpu_time_ns > 0)].copy()
    p["params"] = p.params.fillna("")
    p = p[[(v, q) in series for v, q in zip(p.variant, p.params)]]
    p["series"] = [series[v, q] for v, q in zip(p.variant, p.params)]
    p["gflops"] = p.fp32_flops / p.gpu_time_ns
    return p


def _past_l2_size(df: pd.DataFrame, meta: dict, profile: pd.DataFrame | None) -> int | None:
    """The profiled size past the L2 where the most of the run's versions were profiled (the largest
    of those): there each version's DRAM bytes are its own. None without one, or without the L2's size."""
    l2 = (meta.get("gpu") or {}).get("l2_bytes")
    p = _measured(df, profile)
    if not l2 or p.empty:
        return None
    past = p[[hierarchy.working_set_mb("gemm", n, n, n) * 1e6 > l2 for n in p.n]]
    if past.empty:
        return None
    count = past.groupby("n").size()
    return int(count[count == count.max()].index.max())


def _profiled_points(df: pd.DataFrame, profile: pd.DataFrame | None, size: int) -> pd.DataFrame:
    """plots.roofline_points' rows at a size the profile holds and the run did not time: each version
    at its measured DRAM intensity and Nsight Compute's GFLOP/s, in the run's order of series."""
    p = _measured(df, profile)
    p = p[p.n == size]
    if p.empty:
        raise ResultsError(f"no verified GPU rows and no profiled kernel at n = {size} for the roofline")
    rows = [{"series": r.series, "op": "gemm", "gflops": float(r.gflops), "gbytes_per_s": np.nan,
             "intensity": float(r.dram_intensity), "measured": True} for r in p.itertuples()]
    return pd.DataFrame(sorted(rows, key=lambda r: (r["series"].order, -(r["series"].block or 0))))


def _floor(df: pd.DataFrame, profile: pd.DataFrame | None) -> tuple[str, float] | None:
    """CUDA-Best's fewest DRAM bytes: FLOP per byte of the 32-byte sectors its loads and stores ask of
    global memory, the least over the profiled sizes (as the Figures 3-4 verdicts take it); its tiles
    use every sector they touch, so no GPU's DRAM, the K80's included, moves more for it."""
    if profile is None or not {"global_ld_sectors", "global_st_sectors"} <= set(profile):
        return None
    try:
        best = best_series(analysis.ok_rows(df))
    except ResultsError:
        return None
    mine = profile[(profile.variant == best.variant) & (profile.params.fillna("") == best.params)]
    asked = mine.fp32_flops / ((mine.global_ld_sectors + mine.global_st_sectors) * 32)
    asked = asked[np.isfinite(asked) & (asked > 0)]
    return (best.label, float(asked.min())) if len(asked) else None


def _paper_read_off(ax, df, profile, points: pd.DataFrame, roofs: list[tuple]) -> None:
    """The paper's Figures 3 and 4 on these axes: its K80 bandwidth roofs up to past its read-off
    points (its GFLOP/s at the intensity it reads off each roof), the points as stars, and where its
    kernel's DRAM intensity must lie at that rate (at least the floor of _floor); and CUDA-Best read
    off our measured roof the paper's way, joined to where Nsight Compute measures it."""
    peak = PAPER["peak_gflops"]
    xs = np.logspace(np.log10(X_RANGE[0]), np.log10(6), 50)
    for fig_no, gbs, said, name, dash in PAPER_READ_OFF:
        ax.plot(xs, gbs * xs, color=K80_ROOF_COLOUR, linestyle=dash, linewidth=1.4,
                label=f"the paper's K80 {name} roof: {gbs} GB/s (its Fig. {fig_no})")
        left = fig_no == PAPER_READ_OFF[0][0]  # the first name left of its star, the second right
        ax.annotate(f"Fig. {fig_no}: {said} FLOP/B", (said, peak), xytext=(-9 if left else 9, 9 if left else -9),
                    textcoords="offset points", ha="right" if left else "left", va="bottom" if left else "top",
                    fontsize=8.5, fontweight="bold")
    ax.scatter([r[2] for r in PAPER_READ_OFF], [peak] * len(PAPER_READ_OFF), marker="*", s=280, zorder=4, color="black",
               gid="paper read-off",
               edgecolors="white", linewidths=0.6, label="the paper's read-off: \"an estimated "
               + " and ".join(str(r[2]) for r in PAPER_READ_OFF) + f" flops/byte\" at {peak} GFLOP/s")
    floor = _floor(df, profile)
    if floor:
        label, at_least = floor
        colour = plots.colour_of("best")
        ax.annotate("", xy=(at_least * 5, peak), xytext=(at_least, peak),
                    arrowprops={"arrowstyle": "-|>", "color": colour, "linewidth": 1.5, "linestyle": ":"})
        ax.scatter(at_least, peak, marker="|", s=320, linewidths=2.5, color=colour, zorder=4, gid="floor",
                   label=f"{label} on any GPU: at least {at_least:.1f} FLOP/B (its global-memory sectors)")
        ax.annotate(f"the paper's kernel, on any GPU: at least {at_least:.0f} FLOP/B,\nnot its {PAPER_READ_OFF[0][2]} or "
                    f"{PAPER_READ_OFF[1][2]}", (at_least, peak), xytext=(0, -14), textcoords="offset points",
                    fontsize=8.5, ha="left", va="top", color=colour)
    measured = [r for r in roofs if r[0] == "measured"]
    best = [p for p in points.itertuples() if p.series.variant == "best" and p.series.block == 32 and p.measured]
    if measured and best:
        (name, _, gbs, _, _), p = measured[0], best[0]
        read, colour = p.gflops / gbs, plots.colour_of("best")
        ax.plot([read, p.intensity], [p.gflops, p.gflops], color=colour, linestyle=":", linewidth=1.2, zorder=2)
        ax.annotate(f"{p.series.label} read off\nthe roof as the paper did: {read:.1f}", (read, p.gflops), xytext=(-8, 6),
                    textcoords="offset points", ha="right", va="bottom", fontsize=8, color=colour)
        ax.scatter(read, p.gflops, s=60, zorder=3, marker="o", facecolors="white", edgecolors=colour, linewidths=1.5,
                   gid="read off the roof",
                   label=f"{p.series.label} read off the roof as the paper did: {p.gflops:.0f} / {gbs:.0f} = "
                         f"{read:.1f} FLOP/B")


def in_l2(df: pd.DataFrame, meta: dict, profile: pd.DataFrame | None) -> tuple[int, pd.Series, pd.Series] | None:
    """The largest profiled size whose operands fit in the L2, and there the DRAM intensities of the
    run's own versions and of cuBLAS; None without one (or without the L2's size)."""
    l2 = (meta.get("gpu") or {}).get("l2_bytes")
    p = _measured(df, profile)
    if not l2 or p.empty:
        return None
    inside = p[[hierarchy.working_set_mb("gemm", n, n, n) * 1e6 <= l2 for n in p.n]]
    if inside.empty:
        return None
    n = int(inside.n.max())
    at = inside[inside.n == n]
    return n, at[at.variant != "cublas"].dram_intensity, at[at.variant == "cublas"].dram_intensity


def _in_l2_note(ax, df, meta, profile, size: int) -> None:
    """Where the figure's size is past the L2: what the largest profiled size inside it measured,
    every version at about one DRAM intensity (why the figure is drawn past it)."""
    l2 = (meta.get("gpu") or {}).get("l2_bytes")
    found = in_l2(df, meta, profile)
    if not l2 or not found or hierarchy.working_set_mb("gemm", size, size, size) * 1e6 <= l2:
        return
    n, ours, lib = found
    ax.text(0.02, 0.98, f"At n = {n} ({_where(meta, n).removesuffix('; ')}), every version\nmeasures {ours.min():.0f} to "
            f"{ours.max():.0f} FLOP per DRAM byte" + (f" (cuBLAS {lib.iloc[0]:.0f})" if len(lib) else "")
            + ":\nthere they stack on one intensity", transform=ax.transAxes, va="top", ha="left", fontsize=8.5,
            bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "0.7"})


def fig_hierarchy(meta: dict, profile: pd.DataFrame | None) -> plt.Figure:
    """Every version at its intensity against each memory level, at the two largest profiled sizes:
    the run's largest, whose operands fit in the L2, and one past the L2."""
    return hierarchy.fig_hierarchical_roofline(profile, meta, "Zosa 2017's versions on the memory hierarchy "
                                               "(Nsight Compute, caches flushed before each kernel)", most=2)


FIGURES = {  # `mmbench plot NAME`; the report embeds them all
    "gflops": FigureFamily("Zosa Figs. 1-2: GFLOP/s by block size, by size", "Figures 1 and 2: GFLOP/s by block size and over all sizes",
                           (Figure("fig1-block-sizes", lambda df, meta, *_: fig_block_sizes(df, meta)),
                            Figure("fig2-gflops", lambda df, meta, *_: fig_gflops(df, meta)))),
    "roofline": FigureFamily("Zosa Figs. 3-4: roofline, datasheet and measured", "Figures 3 and 4: roofline with datasheet and "
                             "measured ceilings, each version at its DRAM intensity past the L2, the paper's read-off points",
                             (Figure("fig3-4-roofline", fig_roofline),), options=("size",)),
    "zosa-hierarchy": FigureFamily("Zosa: hierarchical roofline, in and past the L2", "Hierarchical roofline from Nsight "
                                   "Compute's byte counts: every version at shared memory, L1, L2 and DRAM, at n = 2048 "
                                   "(operands in the L2) and 4096 (past it)",
                                   (Figure("fig-hierarchical-roofline", lambda df, meta, profile, *_: fig_hierarchy(meta, profile)),)),
    "speedup": FigureFamily("Zosa Fig. 5: CUDA-Best over BLAS, cuBLAS over it", "Figure 5: CUDA-Best over BLAS, and cuBLAS over CUDA-Best",
                            (Figure("fig5-speedup", lambda df, meta, *_: fig_speedup(df, meta)),)),
}
