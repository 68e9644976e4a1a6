"""Figures any study can use, from a results DataFrame: curves over size, the roofline, percent
of a reference. Never needs a GPU. A study's own figures (and their titles) live in its module.

Each function returns a matplotlib Figure; ``save`` writes it as PNG and SVG. A series keeps
its colour in every figure (registry order), and its block size sets the line style.
"""

from __future__ import annotations

import io
import re
import textwrap
import zlib
from pathlib import Path
from typing import Callable

import matplotlib

matplotlib.use("Agg")  # files only; no display needed
# Redrawing a committed figure from the same data must give the same bytes: fixed SVG ids (and
# no date, see save), so a redraw never dirties the tree.
matplotlib.rcParams["svg.hashsalt"] = "mmbench"
matplotlib.rcParams["svg.fonttype"] = "none"  # text as text, not glyph paths: a third smaller, searchable
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from . import analysis  # noqa: E402
from .analysis import Series  # noqa: E402
from .ceilings import datasheet  # noqa: E402
from .precisions import DEFAULT, DEFAULT_LAYOUT  # noqa: E402
from .ops import get_op  # noqa: E402
from .results import ResultsError  # noqa: E402
from .sizes import row_shape  # noqa: E402

# One colour per variant, the same in every figure; other variants take one of tab20's by their name.
COLOURS = {"best_const": "tab:blue", "best": "tab:orange", "interleaved": "tab:green", "unroll_k2": "tab:red",
           "shared": "tab:purple", "naive": "tab:brown", "shared_uncoalesced": "tab:pink", "blas": "tab:gray",
           "cublas": "tab:olive", "tile2d": "tab:cyan", "vec4": "navy", "warptile": "darkgreen", "pipelined": "black",
           "dbuf": "crimson", "multistage": "darkgoldenrod", "gemv_tuned": "teal", "cublas_gemv": "darkorange",
           # the tensor-core ladder: a sequential map, one shade a step, its FP8 form apart
           **dict(zip(("tc_mma", "tc_tma", "tc_ws", "tc_persistent", "tc_overlap", "tc_cluster", "tc_tiles"),
                      map(tuple, plt.get_cmap("viridis")(np.linspace(0.0, 0.92, 7))))), "tc_fp8": "deeppink"}
FALLBACK = plt.get_cmap("tab20").colors
LINESTYLE = {32: "-", 16: "--", 8: ":"}
# A library's line at each precision, where a run has several (layouts other than nn dotted)
PRECISION_COLOURS = {"fp64": "#4d4d4d", "fp32": "#1f77b4", "tf32": "#17becf", "fp16": "#2ca02c", "bf16": "#d62728",
                     "fp8e4m3": "#9467bd", "fp8e5m2": "#e377c2"}


def colour_of(variant: str):
    """A variant's colour in every figure. Keyed by its name, never by its place in the registry:
    a variant added to the registry must not repaint the others (and the committed figures)."""
    return COLOURS.get(variant) or FALLBACK[zlib.crc32(variant.encode()) % len(FALLBACK)]


def style(s: Series) -> dict:
    return {"color": colour_of(s.variant), "linestyle": LINESTYLE.get(s.block, "-"), "label": s.label}


def _title(ax, what: str, meta: dict) -> None:
    """The figure's subject, then the GPU and the day of the run where its metadata says them (a run
    without metadata says so, rather than claiming no GPU)."""
    if not meta.get("started_at") and not meta.get("gpu"):
        where = "(no metadata beside the results)"
    else:
        gpu = (meta.get("gpu") or {}).get("name") or "CPU only"
        where = ", ".join(x for x in (gpu, str(meta.get("started_at", ""))[:10]) if x)
    ax.set_title(f"{what}\n{where}", fontsize=11)


def _log2_sizes(ax) -> None:
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("matrix size n (n x n x n), log2 scale")
    ax.grid(True, which="major", alpha=0.3)


def fig_curves(df: pd.DataFrame, meta: dict, title: str) -> plt.Figure:
    """GFLOP/s of every series over all square sizes."""
    ok = analysis.ok_rows(df)
    curves = [(s, analysis.curve(ok, s)) for s in analysis.series_list(ok)]
    curves = [(s, c) for s, c in curves if c.notna().any()]
    if not curves:
        raise ResultsError("the curves need verified GFLOP/s rows at square sizes (n x n x n)")
    fig, ax = plt.subplots(figsize=(10, 6), layout="constrained")
    for s, c in curves:
        ax.plot(c.index, c.values, marker=".", markersize=3, linewidth=1.2, **style(s))
    _log2_sizes(ax)
    ax.set_ylabel("GFLOP/s (mean of samples)")
    ax.legend(fontsize=8, ncol=2, loc="upper left")
    _title(ax, title, meta)
    return fig


def square_count(df: pd.DataFrame) -> int:
    return analysis.square(df).n.nunique()


def roofline_points(df: pd.DataFrame, profile: pd.DataFrame | None, size: int, dtype: str = DEFAULT) -> pd.DataFrame:
    """Each GPU series at the square size n of its operation (n x n x n, or n x n): its op, GFLOP/s,
    GB/s and intensity, measured (Nsight Compute) where profiled, else its operation's algorithmic
    one; 0 for an operation without FLOPs (a copy, a transpose). The rows of one precision (fp32:
    the papers' rows, at layout nn)."""
    ok = analysis.square_shapes(analysis.ok_rows(df))
    ok = ok[analysis.on_gpu(ok) & (ok.n == size)]  # a CPU baseline has no place under the GPU's roof
    if dtype != DEFAULT:
        return _precision_points(ok, size, dtype)
    ok = analysis.default_form(ok)  # a series' row of fp32 at layout nn, not another precision's
    rows = []
    for s in analysis.series_list(ok):
        at = ok[(ok.variant == s.variant) & (ok.params == s.params)].iloc[0]
        measured = None
        if profile is not None:
            p = profile[(profile.variant == s.variant) & (profile.params.fillna("") == s.params) & (profile.n == size)]
            if "dtype" in p:  # a profile of a typed run holds other precisions' rows too
                p = p[(p.dtype == DEFAULT) & (p.layout == DEFAULT_LAYOUT)]
            measured = float(p.dram_intensity.iloc[0]) if len(p) else None
        rows.append({"series": s, "op": at.op, "gflops": float(at.gflops_mean), "gbytes_per_s": float(at.gbytes_per_s),
                     "intensity": measured if measured else analysis.algorithmic_intensity(at.op, at.m, at.n, at.k),
                     "measured": bool(measured)})
    if not rows:
        raise ResultsError(f"no verified GPU rows at n = {size} for the roofline")
    return pd.DataFrame(rows)


def _sheet(meta: dict, what: str) -> dict:
    """The datasheet of the run's GPU; ResultsError naming the figure where the metadata has none."""
    gpu = meta.get("gpu")
    if not gpu:
        raise ResultsError(f"the {what} needs a GPU run's metadata (no 'gpu' in the .meta.json)")
    return datasheet(gpu)


def _precision_points(ok: pd.DataFrame, size: int, dtype: str) -> pd.DataFrame:
    """roofline_points of the rows of a precision other than fp32: each variant (and layout) a point,
    at its algorithmic intensity in that precision's element sizes."""
    ok = analysis.with_forms(ok)
    ok = ok[ok.dtype == dtype]
    rows = []
    for (variant, params, layout), g in ok.groupby(["variant", "params", "layout"], sort=False):
        at, s = g.iloc[0], analysis.series_of(variant, params, str(g.iloc[0].label))
        s = analysis.Series(s.variant, s.params, s.label + (f" {layout}" if layout != DEFAULT_LAYOUT else ""), s.order)
        rows.append({"series": s, "op": at.op, "gflops": float(at.gflops_mean), "gbytes_per_s": float(at.gbytes_per_s),
                     "intensity": analysis.algorithmic_intensity(at.op, at.m, at.n, at.k, dtype), "measured": False})
    if not rows:
        raise ResultsError(f"no verified GPU rows at n = {size} in {dtype} for the roofline")
    return pd.DataFrame(rows)


def roofline_precision(df: pd.DataFrame, size: int) -> str:
    """The precision a roofline draws: fp32 where the run has it at that size (the papers'), else the
    run's first."""
    ok = analysis.with_forms(analysis.square_shapes(analysis.ok_rows(df)))
    found = list(dict.fromkeys(ok[analysis.on_gpu(ok) & (ok.n == size)].dtype))
    return DEFAULT if DEFAULT in found or not found else found[0]


def _roofs(meta: dict, dtype: str = DEFAULT) -> list[tuple]:
    """(name, the precision's peak TFLOP/s or None, DRAM GB/s, line style, colour) of the datasheet
    and, where measured (`mmbench ceilings`), of the GPU itself: the FMA loop's for fp32, the
    library's best for the others."""
    sheet = _sheet(meta, "roofline")
    peak = sheet["fp32_tflops"] if dtype == DEFAULT else sheet["precision_tflops"].get(dtype)
    roofs = [("datasheet", peak, sheet["dram_gbytes_per_s"], "--", "grey")]
    measured = meta.get("ceilings")
    if measured:
        best = measured["fp32_fma_tflops"] if dtype == DEFAULT else \
            measured.get("library_tflops", {}).get(dtype, {}).get("tflops")
        if best:
            roofs.append(("measured" if dtype == DEFAULT else "measured (library)", best,
                          measured["dram_copy_gbytes_per_s"], "-", "black"))
    return roofs


def fig_roofline(df: pd.DataFrame, meta: dict, profile: pd.DataFrame | None, size: int | None,
                 title: str = "Roofline") -> plt.Figure:
    """Datasheet and measured ceilings, every GPU series at size n (None: analysis.roofline_size).
    Those doing FLOPs (GEMM, GEMV) sit at their intensity (measured where profiled); those without
    (copies, transposes) have no place on a FLOP axis, so a strip at the left shows their GB/s
    against the DRAM roofs."""
    roofs = _roofs(meta)  # first: a run without a GPU's metadata is refused as such
    size = size or analysis.roofline_size(df, profile)
    dtype = roofline_precision(df, size)
    roofs = roofs if dtype == DEFAULT else _roofs(meta, dtype)
    points = roofline_points(df, profile, size, dtype)
    word = "FP32" if dtype == DEFAULT else dtype.upper()
    placed, moving = points[points.intensity > 0], points[points.intensity == 0]
    if moving.empty:
        fig, ax = plt.subplots(figsize=(9, 6), layout="constrained")
    else:
        fig, (strip, ax) = plt.subplots(1, 2, figsize=(12, 6), layout="constrained", gridspec_kw={"width_ratios": [1, 3]})
    x = np.logspace(-1, 3.3, 400)
    for name, tflops, gbs, ls, colour in roofs:
        if tflops:
            ax.plot(x, np.minimum(tflops * 1e3, gbs * x), linestyle=ls, color=colour, linewidth=1.5,
                    label=f"{name}: {tflops:.1f} TFLOP/s {word}, {gbs:.0f} GB/s DRAM")
        else:  # no peak known for this architecture and precision: the bandwidth roof alone
            ax.plot(x, gbs * x, linestyle=ls, color=colour, linewidth=1.5,
                    label=f"{name}: {word} peak unknown, {gbs:.0f} GB/s DRAM")
    labels = _distinct_labels(points)
    for p in placed.itertuples():
        st = style(p.series)
        ax.scatter(p.intensity, p.gflops, s=55, zorder=3, color=st["color"], label=labels[p.Index],
                   facecolors=st["color"] if p.measured else "none", edgecolors=st["color"], linewidths=1.5)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte), log scale")
    ax.set_ylabel("GFLOP/s, log scale")
    ax.grid(True, which="both", alpha=0.25)
    if moving.empty:
        ax.legend(fontsize=7.5, loc="lower right", ncol=2)
    else:  # more series than the corner holds: the legend goes under both panels
        _bandwidth_strip(strip, moving, roofs, labels)
        handles, names = ax.get_legend_handles_labels()
        more, more_names = strip.get_legend_handles_labels()
        fig.legend(handles + more, names + more_names, fontsize=7.5, loc="outside lower center", ncol=4)
    _title(ax, f"{title} at n = {size}{'' if dtype == DEFAULT else f', {dtype}'}\nintensity: "
               f"{_intensity_basis(placed, dtype)}", meta)
    return fig


def _distinct_labels(points: pd.DataFrame) -> dict:
    """Each point's legend text: its series' label, with its parameters where two series share one
    (Lab 3's shared matmul with and without its padding)."""
    labels = pd.Series([s.label for s in points.series], index=points.index)
    shared = labels.duplicated(keep=False)
    return {i: f"{label} {s.params}" if shared[i] and s.params else label
            for i, label, s in zip(points.index, labels, points.series)}


def _intensity_basis(placed: pd.DataFrame, dtype: str = DEFAULT) -> str:
    """How the placed points' intensities were found, for the title."""
    minimum = ("algorithmic minimum 2mnk / 4(mk+kn+mn)" if set(placed.op) <= {"gemm"} and dtype == DEFAULT else
               f"algorithmic minimum 2mnk over the bytes of A, B and C in {dtype}" if set(placed.op) <= {"gemm"} else
               "algorithmic minimum, each operation's FLOPs over its fewest DRAM bytes")
    return ("no operation with FLOPs" if placed.empty else
            "measured DRAM traffic (Nsight Compute), filled markers" if placed.measured.all() else
            f"{minimum}, hollow markers" if not placed.measured.any() else
            "measured DRAM traffic (filled) or algorithmic minimum (hollow)")


def _bandwidth_strip(ax, moving: pd.DataFrame, roofs: list[tuple], labels: dict) -> None:
    """Operations without FLOPs at the roofline's left: each series' GB/s (bytes read and written,
    as the DRAM roofs count them) against the DRAM roofs, a column a series."""
    for name, _, gbs, ls, colour in roofs:
        ax.axhline(gbs, linestyle=ls, color=colour, linewidth=1.5)
    for i, p in enumerate(moving.itertuples()):
        st = style(p.series)
        ax.scatter(i, p.gbytes_per_s, s=55, zorder=3, marker="D", color=st["color"], label=labels[p.Index])
    ax.set_xlim(-0.75, len(moving) - 0.25)
    ax.set_xticks([])
    ax.set_yscale("log")
    values = [*moving.gbytes_per_s, *(gbs for _, _, gbs, _, _ in roofs)]
    ax.set_ylim(min(values) / 2, max(values) * 1.5)  # room below: a lone point is not zoomed onto its roof
    ax.set_xlabel("no FLOPs (copies, transposes):\nGB/s against the DRAM roofs")
    ax.set_ylabel("GB/s (bytes read and written), log scale")
    ax.grid(True, which="both", axis="y", alpha=0.25)


def fig_vs_cublas(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Percent of cuBLAS (pure FP32) per size for every GPU variant, lines at 100, 95 and 90 %."""
    pct = analysis.percent_of(df, "cublas")
    fig, ax = plt.subplots(figsize=(10, 6), layout="constrained")
    for name, g in pct.groupby("series", sort=False):  # percent_of's order: the registry's, larger blocks first
        split = name != g.variant.iloc[0]  # one line per configuration of this variant
        s = analysis.series_of(g.variant.iloc[0], g.params.iloc[0] if split else "")
        configs = g.params.nunique()  # more than one: tuned parameters (per size class or shape)
        ax.plot(g.n, g.percent, marker=".", markersize=3, linewidth=1.2, **{**style(s), "label":
                s.label + (f" {g.params.iloc[0]}" if split and not s.block else "")
                + (f" (tuned: {configs} configurations)" if configs > 1 else "")})
    _log2_sizes(ax)
    for level, text in ((100, "cuBLAS"), (95, "95 %"), (90, "90 %")):
        ax.axhline(level, color="black", linewidth=0.8 if level == 100 else 0.5, linestyle="-" if level == 100 else ":")
        ax.text(1.005, level, text, transform=ax.get_yaxis_transform(), fontsize=7, va="center")
    ax.set_ylabel("GFLOP/s (medians of samples) as % of cuBLAS SGEMM's (pure FP32)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.06, 1.0), borderaxespad=0)  # beside the data, not on it
    _title(ax, "Distance to cuBLAS", meta)
    return fig


# -- any run's figures: its rate by size, and % of its operation's library ----------------------------
# What each rate column is, and of which statistic of the samples (every figure says which it draws)
RATE_AXIS = {"gflops_mean": "GFLOP/s (mean of samples)", "gflops_median": "GFLOP/s (median of samples)",
             "gbytes_per_s": "GB/s (median time; bytes read and written)"}


def _size_axis(ax, rows: pd.DataFrame) -> None:
    """A log2 axis of rows' figure_size, labelled with what it is."""
    _log2_sizes(ax)
    square = bool((rows["size"] == rows.n).all())
    ax.set_xlabel("matrix size n, log2 scale" if square else
                  "size: n of a square shape, else the geometric mean of its dimensions; log2 scale")


def _panels(count: int):
    fig, axes = plt.subplots(1, count, figsize=(7 * count + 2, 6), layout="constrained", squeeze=False)
    return fig, list(axes[0])


KERNEL_LINES = ("-", "-.", ":")  # a variant's configurations drawn as lines of their own; "--" is a baseline's


def _series_style(rows: pd.DataFrame, name: str, nth: int) -> dict:
    """A series' line: its variant's colour, its label (the registry's, else the variant's name),
    dashed for a baseline (a library or the CPU: its rows' backend is not cuda); nth: which of its
    variant's configurations it is, where each is a line of its own."""
    first, split = rows.iloc[0], name != rows.iloc[0].variant  # split: one line per configuration
    tuned = rows.params.nunique()  # more than one: tuned parameters (per size class or shape)
    s = analysis.series_of(first.variant, first.params if tuned == 1 else "")
    form = first.get("form", "")  # " bf16 nt" where the run has several precisions or layouts
    return {"color": PRECISION_COLOURS[first["dtype"]] if form and first.backend != "cuda" else colour_of(first.variant),
            "linestyle": ("--" if not form or first["layout"] == "nn" else ":") if first.backend != "cuda" else
            KERNEL_LINES[nth % len(KERNEL_LINES)],
            "label": s.label + (f" {first.params}" if split and not s.block else "") + form
            + (f" (tuned: {tuned} configurations)" if tuned > 1 else "")}


def _lines(ax, rows: pd.DataFrame, column: str) -> None:
    """Each series of rows (rate_rows) as a line of column over its size, in the rows' order."""
    seen: dict[str, int] = {}
    for name, g in rows.sort_values(["size", "m", "n", "k"], kind="stable").groupby("series", sort=False):
        nth = seen[g.variant.iloc[0]] = seen.get(g.variant.iloc[0], -1) + 1
        ax.plot(g["size"], g[column], marker=".", markersize=4, linewidth=1.2, **_series_style(g, name, nth))


def fig_rate(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Every series' rate (its operation's: GFLOP/s, GB/s) by size, a panel per operation, the
    baselines dashed."""
    panels = analysis.by_operation(analysis.rate_rows(df))
    fig, axes = _panels(len(panels))
    for ax, (op, rows) in zip(axes, panels.items()):
        _lines(ax, rows, "rate")
        _size_axis(ax, rows)
        ax.set_ylabel(RATE_AXIS.get(get_op(op).rate, get_op(op).rate))
        ax.legend(fontsize=8, loc="best")
        _title(ax, f"{op}: rate by size", meta)
    return fig


def fig_vs_library(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Every GPU series' rate as % of its operation's library baseline at the same shape, a panel
    per operation, lines at 100, 95 and 90 %."""
    pct = analysis.percent_of_library(df)
    fig, axes = _panels(pct.op.nunique())
    for ax, (op, rows) in zip(axes, pct.groupby("op", sort=False)):
        _lines(ax, rows, "percent")
        _size_axis(ax, rows)
        yardstick = analysis.series_of(get_op(op).yardstick, "").label
        for level, text in ((100, yardstick), (95, "95 %"), (90, "90 %")):
            ax.axhline(level, color="black", linewidth=0.8 if level == 100 else 0.5,
                       linestyle="-" if level == 100 else ":")
            ax.text(1.005, level, text, transform=ax.get_yaxis_transform(), fontsize=7, va="center")
        forms = " and precision" if set(rows.dtype) != {"fp32"} or set(rows.layout) != {"nn"} else ""
        ax.set_ylabel(f"{RATE_AXIS.get(get_op(op).rate, get_op(op).rate)} as % of {yardstick}'s at "
                      f"the same shape{forms}")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.08, 1.0), borderaxespad=0)
        _title(ax, f"{op}: % of {yardstick}", meta)
    return fig


def _peaks(meta: dict) -> dict[str, float]:
    return _sheet(meta, "peaks")["precision_tflops"]


def fig_peaks(df: pd.DataFrame, meta: dict) -> plt.Figure:
    """Every GPU series' GFLOP/s as % of its precision's dense peak (ceilings.datasheet), by size."""
    pct = analysis.percent_of_peak(df, _peaks(meta))
    fig, axes = _panels(1)
    ax = axes[0]
    _lines(ax, pct, "percent")
    _size_axis(ax, pct)
    ax.axhline(100, color="black", linewidth=0.8)
    ax.set_ylim(0, 105)
    ax.set_ylabel("GFLOP/s (median of samples) as % of the precision's dense peak")
    ax.legend(fontsize=8, loc="best")
    _title(ax, "% of each precision's peak (SMs x dense FLOP/clock x boost clock)", meta)
    return fig


def peaks_summary(df: pd.DataFrame, meta: dict) -> tuple[str, list[str], list[list[str]]]:
    """Per series: its precision's peak, and its best rate and % of that peak (with where)."""
    pct = analysis.percent_of_peak(df, _peaks(meta))
    rows = []
    for name, g in pct.groupby("series", sort=False):
        best = g.loc[g.percent.idxmax()]
        rows.append([name, f"{best.peak_tflops:.0f}", f"{best.gflops_median / 1e3:.1f} at {_shape(best)}",
                     f"{best.percent:.1f} %"])
    return "rate as % of the precision's dense peak", ["series", "peak TFLOP/s", "best TFLOP/s", "% of peak"], rows


def library_summary(df: pd.DataFrame, meta: dict | None = None) -> tuple[str, list[str], list[list[str]]]:
    """Per series: its operation, the shapes compared, and its % of the library: the geometric mean,
    the lowest and the highest (with where)."""
    pct = analysis.percent_of_library(df)
    rows = []
    for (op, name), g in pct.groupby(["op", "series"], sort=False):
        low, high = g.loc[g.percent.idxmin()], g.loc[g.percent.idxmax()]
        rows.append([name, op, str(len(g)), f"{np.exp(np.log(g.percent).mean()):.1f} %",
                     f"{low.percent:.1f} % at {_shape(low)}", f"{high.percent:.1f} % at {_shape(high)}"])
    return "rate as % of the operation's library baseline", ["series", "op", "shapes", "geomean", "lowest",
                                                              "highest"], rows


def _shape(row) -> str:
    return str(row_shape(row.m, row.n, row.k))


def text_colour(rgba) -> str:
    """Black or white, whichever reads on a cell of this colour: white where the cell's relative
    luminance (WCAG's, from its linearised sRGB channels) is under 0.18, the luminance at which
    black and white text have the same contrast against it."""
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgba[:3])
    return "white" if 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.18 else "black"


def heatmap(ax, table: pd.DataFrame, label: str, center: float | None = None, fmt: str = "{:.2f}") -> None:
    """A table (index down, columns across) as a grid of coloured cells, each value written in its
    cell; center: a value drawn white, above it red and below it blue (a ratio's 1.0)."""
    values = table.to_numpy(dtype=float)
    if center is None:
        image = ax.imshow(values, cmap="viridis", aspect="auto", origin="lower")
    else:
        from matplotlib.colors import TwoSlopeNorm

        finite = values[np.isfinite(values)]
        low, high = (min(finite.min(), center * 0.999), max(finite.max(), center * 1.001)) if finite.size else (0, 2)
        image = ax.imshow(values, cmap="RdBu_r", aspect="auto", origin="lower",
                          norm=TwoSlopeNorm(vcenter=center, vmin=low, vmax=high))
    ax.set_xticks(range(len(table.columns)), [str(c) for c in table.columns], fontsize=7, rotation=45)
    ax.set_yticks(range(len(table.index)), [str(i) for i in table.index], fontsize=7)
    ax.set_xlabel(str(table.columns.name or ""))
    ax.set_ylabel(str(table.index.name or ""))
    for (i, j), v in np.ndenumerate(values):
        if np.isfinite(v):
            ax.text(j, i, fmt.format(v), ha="center", va="center", fontsize=6,
                    color=text_colour(image.cmap(image.norm(v))))
    ax.figure.colorbar(image, ax=ax, label=label, shrink=0.8)


def made(draw: Callable[[], plt.Figure]) -> plt.Figure:
    """draw()'s figure; when draw raises (the data cannot make the figure), the figures it opened
    are closed first, so that a refused figure leaves nothing behind, not even in memory."""
    before = set(plt.get_fignums())
    try:
        return draw()
    except Exception:
        for number in set(plt.get_fignums()) - before:
            plt.close(number)
        raise


def _save_png(fig: plt.Figure, path: Path, source: str) -> None:
    """The PNG in a 256-colour palette: a plot's few colours and their anti-aliased edges survive,
    at a third of the bytes of matplotlib's RGBA; its text chunks (the matplotlib version) kept, and
    mmbench's mark of what it was drawn from."""
    from PIL import Image  # matplotlib's own dependency
    from PIL.PngImagePlugin import PngInfo

    drawn = io.BytesIO()
    fig.savefig(drawn, format="png", dpi=150)
    image, info = Image.open(drawn), PngInfo()
    for key, value in image.text.items():
        info.add_text(key, value)
    info.add_text(FIGURE_MARK, source)
    image.convert("RGB").quantize(256).save(path, pnginfo=info, optimize=True)


# A figure's mark: what mmbench drew it from (a PNG text chunk; the SVG's Dublin Core source), so a
# later command knows the file at that path is one it may replace (figure_target's rule).
FIGURE_MARK = "mmbench-figure"


def figure_paths(out_dir: Path, stem: str) -> list[Path]:
    return [out_dir / f"{stem}.png", out_dir / f"{stem}.svg"]


def save(fig: plt.Figure, out_dir: Path, stem: str, source: str = "") -> list[Path]:
    """The figure as PNG and SVG, each marked with what it was drawn from (source)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = figure_paths(out_dir, stem)
    _save_png(fig, paths[0], source)
    fig.savefig(paths[1], metadata={"Date": None, "Source": f"{FIGURE_MARK}: {source}"})
    plt.close(fig)
    return paths


def drawn_from(path: Path) -> str | None:
    """The source a figure mmbench drew says it was drawn from; None for any other file (or a figure
    drawn before figures were marked)."""
    try:
        head = path.read_bytes()[:1 << 16] if path.suffix == ".svg" else path.read_bytes()
    except OSError:
        return None
    if path.suffix == ".svg":
        found = re.search(rf"<dc:source>{FIGURE_MARK}: (.*?)</dc:source>".encode(), head)
        return found.group(1).decode("utf-8", "replace") if found else None
    if not head.startswith(PNG_SIGNATURE):
        return None
    from PIL import Image

    try:
        with Image.open(io.BytesIO(head)) as image:
            return image.text.get(FIGURE_MARK)
    except Exception:  # a damaged PNG: not one mmbench may take for its own
        return None


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def is_image(path: Path) -> bool:
    """Whether the file is a PNG or an SVG by its bytes (a CSV named .png is not)."""
    try:
        head = path.read_bytes()[:512]
    except OSError:
        return False
    return head.startswith(PNG_SIGNATURE) if path.suffix == ".png" else b"<svg" in head


def replace_problem(path: Path, source: str, beside_inputs: bool) -> str | None:
    """Why the figure file at path may not be replaced by one drawn from source, or None: a file may
    be replaced when mmbench drew it from the same source, or, beside the results it was drawn from,
    when it is a figure of that name drawn before figures were marked (the reference runs' own)."""
    if not path.exists():
        return None
    if path.is_dir():
        return f"{path} is a folder"
    mark = drawn_from(path)
    if mark == source or (mark is None and beside_inputs and is_image(path)):
        return None
    what = (f"a figure mmbench drew from {mark}, not from {source}" if mark is not None
            else "not a figure mmbench drew")
    return f"{path} exists and is {what}; pass --force to replace it"


VERDICT_COLOURS = {"slower": "tab:red", "faster": "tab:green", "unclear": "tab:orange", "same": "tab:gray"}


def fig_compare(pairs: pd.DataFrame, title: str) -> plt.Figure:
    """Each compared point's time ratio (candidate / baseline) by size with its interval, a line per
    series, the markers coloured by verdict; the threshold's band shaded."""
    compared = pairs[pairs.verdict != "not compared"].copy()
    if compared.empty:
        raise ResultsError("no pair of the two runs was compared")
    compared["size"] = analysis.figure_size(compared)
    fig, ax = plt.subplots(figsize=(10, 6), layout="constrained")
    groups = list(compared.groupby(["variant", "params"], sort=False))
    lines = len(groups) <= COMPARE_SERIES  # a few series: a line each, named; many: the verdicts alone
    for (variant, params), g in groups:
        g = g.sort_values("size")
        if lines:
            ax.plot(g["size"], g.ratio, linewidth=0.8, alpha=0.6, label=f"{variant} {params}".strip())
    for v in ("same", "unclear", "faster", "slower"):  # a marker per point, its interval, by verdict; same beneath
        h = compared[compared.verdict == v]
        if h.empty:
            continue
        ax.errorbar(h["size"], h.ratio, yerr=[h.ratio - h.low, h.high - h.ratio], fmt="o", markersize=3,
                    color=VERDICT_COLOURS[v], elinewidth=0.8, alpha=0.8, label=f"{v} ({len(h)})")
    threshold = float(pairs.attrs.get("threshold", 0.0))
    ax.axhspan(1 / (1 + threshold), 1 + threshold, color="tab:gray", alpha=0.12, label=f"same band (+-{threshold:.0%})")
    ax.axhline(1.0, color="black", linewidth=0.8)
    _log2_sizes(ax)
    ax.set_xlabel("size (n, or the geometric mean of m, n, k), log2 scale")
    ax.set_ylabel("time ratio, candidate / baseline (above 1: slower)")
    ax.legend(fontsize=7, ncol=1, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0,
              title=None if lines else f"{len(groups)} series, by verdict")
    ax.set_title("\n".join(textwrap.wrap(title, 90)), fontsize=10)
    return fig


COMPARE_SERIES = 8  # more series than this: the comparison's figure draws the verdicts alone, no line each
