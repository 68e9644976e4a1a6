"""The AMD tiling tutorial (../shared/papers/amd-lds-register-tiling.txt) on NVIDIA: naive -> LDS
(shared-memory) tiling -> register tiling, on rectangular shapes.

The tutorial's naive and LDS kernels are mmbench's `naive` and `shared` at BLOCK = 16 (the same
code: a thread an output; 16 x 16 tiles zero-filled past the edges, stores guarded), so they run
under the tutorial's names here; its register tiling is `register_tiling`. Shapes come in
families, each varying one dimension with the other two at BASE: along m (tall), along n (wide),
along k (shallow to deep), and square; aligned shapes have every dimension a multiple of ALIGN.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .. import plots
from ..analysis import along, by_shape, ok_rows, shape_ratio
from ..results import ResultsError
from ..variants import REGISTRY, format_params, param_points
from .common import Verdict, markdown_table, provenance, report_text, text_table, verdict_table
from .contract import Figure, FigureFamily

plt = plots.plt

BASE = 1024  # the fixed dimensions of the m, n and k families
ALIGN = 64  # the register tile's rows (64 x 32 at WARP = 32): a shape aligned to every kernel's tiles
REGISTER_DEFAULT = format_params(param_points(REGISTRY["register_tiling"])[0])
# The tutorial's steps: (our variant, parameters, the tutorial's name)
STEPS = (("naive", "BLOCK=16", "naive"), ("shared", "BLOCK=16", "LDS tiling (16 x 16)"),
         ("register_tiling", REGISTER_DEFAULT, "register tiling (4 x 4 a thread)"))
CUBLAS = ("cublas", "", "cuBLAS")
FAMILIES = (("square", "n", "square n x n x n"), ("m", "m", f"along m (tall): m x {BASE} x {BASE}"),
            ("n", "n", f"along n (wide): {BASE} x n x {BASE}"), ("k", "k", f"along k: {BASE} x {BASE} x k"))
COLOURS = {"naive": "tab:brown", "LDS tiling (16 x 16)": "tab:purple", "register tiling (4 x 4 a thread)": "tab:red",
           "cuBLAS": "tab:olive"}


def _plain(df: pd.DataFrame) -> pd.DataFrame:
    return df[(df.scope == "kernel") & (df.pad == 0)]


def step_values(df: pd.DataFrame, column: str = "time_ms_median") -> dict[str, pd.Series]:
    """Per step of the tutorial (and cuBLAS): column by shape (m, n, k)."""
    plain = _plain(df)
    out = {name: by_shape(plain, column, variant=v, params=p) for v, p, name in (*STEPS, CUBLAS)}
    return {k: v for k, v in out.items() if len(v)}


def family(values: pd.Series, name: str) -> pd.Series:
    """A by-shape Series cut to one family, by its varying dimension."""
    fixed = {} if name == "square" else {d: BASE for d in "mnk" if d != name}
    return along(values, "n" if name == "square" else name, **fixed)


def aligned(size: int) -> bool:
    """Whether a family's shape of this varying size is aligned (its fixed dimensions are)."""
    return size % ALIGN == 0


def _steps_past(first: int) -> str:
    """The tutorial's steps from index first + 1, as 'naive (BLOCK=16) or shared (BLOCK=16)'."""
    return " or ".join(f"{v} ({p})" for v, p, _ in STEPS[first + 1:])


def speedups(df: pd.DataFrame) -> dict[str, pd.Series]:
    """Each step's (and cuBLAS's) speedup over naive, by shape: naive time / its time."""
    t = step_values(df)
    if "naive" not in t:
        raise ResultsError("the speedups need the naive kernel's rows (naive, BLOCK=16)")
    if len(t) == 1:
        raise ResultsError(f"the speedups need a step past naive: {_steps_past(0)} rows at naive's shapes")
    return {name: shape_ratio(t["naive"], s) for name, s in t.items() if name != "naive"}


def percent_of_cublas(df: pd.DataFrame) -> dict[str, pd.Series]:
    g = step_values(df, "gflops_median")
    if "cuBLAS" not in g:
        raise ResultsError("the % of cuBLAS needs cuBLAS rows")
    if len(g) == 1:
        raise ResultsError(f"the % of cuBLAS needs a step of the tutorial: {_steps_past(-1)} rows")
    return {name: 100 * shape_ratio(s, g["cuBLAS"]) for name, s in g.items() if name != "cuBLAS"}


def _family_panels(series: dict[str, pd.Series], meta: dict, title: str, ylabel: str, hline: float,
                   log_y: bool = False) -> plt.Figure:
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.5), layout="constrained")
    for ax, (name, dim, label) in zip(axes.flat, FAMILIES):
        drawn = False
        for step, values in series.items():
            cut = family(values, name)
            if cut.empty:
                continue
            drawn = True
            colour = COLOURS.get(step, "black")
            ax.plot(cut.index, cut.values, color=colour, linewidth=1.2, label=step)
            on = np.array([aligned(int(x)) for x in cut.index])
            ax.scatter(cut.index[on], cut.values[on], color=colour, s=22, zorder=3)
            ax.scatter(cut.index[~on], cut.values[~on], facecolors="white", edgecolors=colour, s=22, zorder=3)
        ax.axhline(hline, color="gray", linewidth=0.8, linestyle="--")
        ax.set_xscale("log", base=2)
        if log_y:
            ax.set_yscale("log", base=2)
            ax.yaxis.set_major_formatter(plots.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel(f"{dim} (filled: aligned to {ALIGN}; hollow: not)")
        ax.set_ylabel(ylabel)
        ax.set_title(label, fontsize=10)
        ax.grid(True, alpha=0.3)
        if drawn:
            ax.legend(fontsize=7)
    fig.suptitle(f"{title}\n{(meta.get('gpu') or {}).get('name', 'no GPU')}, {str(meta.get('started_at', ''))[:10]}",
                 fontsize=11)
    return fig


def fig_speedup(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    return _family_panels(speedups(ok_rows(df)), meta, "AMD tiling tutorial: speedup of each step over naive",
                          "speedup over naive (naive time / time), log2 scale", 1.0, log_y=True)


def fig_percent_cublas(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    return _family_panels(percent_of_cublas(ok_rows(df)), meta, "AMD tiling tutorial: GFLOP/s as % of cuBLAS",
                          "% of cuBLAS GFLOP/s (same shape)", 100.0)


def tile_table(df: pd.DataFrame) -> pd.DataFrame:
    """register_tiling's GFLOP/s (median) by configuration (TM x TN, KT, WARP) and shape, and
    shared's by BLOCK: every configuration the run measured at a shape measured more than once."""
    ok = _plain(ok_rows(df))
    rows = ok[ok.variant.isin(["shared", "register_tiling"])]
    counts = rows.groupby(["m", "n", "k"]).params.nunique()
    shapes = counts[counts > 2].index
    if not len(shapes):
        raise ResultsError("the tile-size figure needs shapes measured at several tile configurations")
    rows = rows.set_index(["m", "n", "k"]).loc[shapes].reset_index()
    rows["shape"] = [f"{m}x{n}x{k}" for m, n, k in zip(rows.m, rows.n, rows.k)]
    rows["config"] = [_config(v, p) for v, p in zip(rows.variant, rows.params)]
    table = rows.pivot_table(index="config", columns="shape", values="gflops_median", aggfunc="mean")
    order = {c: (v != "shared", *_numbers(p)) for c, v, p in zip(rows.config, rows.variant, rows.params)}
    return table.loc[sorted(table.index, key=order.get)]


def _numbers(params: str) -> tuple[int, ...]:
    """A configuration's sort key: BLOCK, then TM, TN, KT, then the rest, as numbers."""
    p = dict(item.split("=") for item in params.split(",") if item)
    return tuple(int(p.get(k, 0)) for k in ("BLOCK", "TM", "TN", "KT", "WARP", "WTN", "BWM", "BWN", "APAD"))


def _config(variant: str, params: str) -> str:
    p = dict(item.split("=") for item in params.split(",") if item)
    if variant == "shared":
        return f"LDS {p.get('BLOCK')} x {p.get('BLOCK')}"
    default = dict(item.split("=") for item in REGISTER_DEFAULT.split(","))
    other = {k: v for k, v in p.items() if k not in ("TM", "TN", "KT") and default.get(k) != v}
    return f"reg {p.get('TM')}x{p.get('TN')} KT={p.get('KT')}" + "".join(f" {k}={v}" for k, v in other.items())


def fig_tiles(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    table = tile_table(df)
    fig, ax = plt.subplots(figsize=(8, max(5, 0.32 * len(table) + 2)), layout="constrained")
    plots.heatmap(ax, table, "GFLOP/s (median)", fmt="{:.0f}")
    ax.set_xlabel("shape (m x n x k)")
    ax.set_ylabel("tile configuration")
    plots._title(ax, "AMD tiling tutorial: which tile sizes pay off", meta)
    return fig


# Its reference run in the repository: what a command suggests when no run of the user's will do.
REFERENCE_RUN = "results/amd-tiling-h100/amd-tiling-h100.csv"

FIGURES = {
    "amd-speedup": FigureFamily("AMD tiling: LDS and register tiling over naive", "AMD tiling: speedup of LDS and register tiling over naive, per shape family",
                                (Figure("fig-amd-speedup", fig_speedup),)),
    "amd-cublas": FigureFamily("AMD tiling: each step as % of cuBLAS", "AMD tiling: each step's GFLOP/s as % of cuBLAS, per shape family",
                               (Figure("fig-amd-percent-cublas", fig_percent_cublas),)),
    "amd-tiles": FigureFamily("AMD tiling: GFLOP/s of each tile configuration", "AMD tiling: GFLOP/s of each tile configuration at the tuning shapes",
                              (Figure("fig-amd-tiles", fig_tiles),)),
}
ALT_TEXT = {"fig-amd-speedup": "speedup over naive", "fig-amd-percent-cublas": "percent of cuBLAS",
            "fig-amd-tiles": "tile sizes"}


def _span(r: pd.Series) -> str:
    return f"{r.min():.2f} to {r.max():.2f}" if len(r) else "-"


def family_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per family and alignment: the geometric-mean speedup of each step over naive, and of
    register over LDS tiling (the tutorial's practical considerations, measured)."""
    sp = speedups(df)
    rows = []
    for name, dim, label in FAMILIES:
        for is_aligned in (True, False):
            row = {"family": label, "aligned": "yes" if is_aligned else "no"}
            for step, values in sp.items():
                cut = family(values, name)
                cut = cut[[aligned(int(x)) == is_aligned for x in cut.index]]
                row[f"{step} / naive"] = float(np.exp(np.log(cut).mean())) if len(cut) else np.nan
            lds, reg = row.get(f"{STEPS[1][2]} / naive"), row.get(f"{STEPS[2][2]} / naive")
            row["register / LDS"] = reg / lds if lds and reg else np.nan
            rows.append(row)
    return pd.DataFrame(rows).set_index("family")


def verdicts(df: pd.DataFrame) -> list[Verdict]:
    sp = speedups(df)
    lds, reg = sp.get(STEPS[1][2], pd.Series(dtype=float)), sp.get(STEPS[2][2], pd.Series(dtype=float))
    out = [Verdict("LDS tiling gives a significant speedup over naive", "\"significant speedups over the naive "
                   "implementation are commonly observed on AMD GPUs\"",
                   "not checked" if lds.empty else "yes" if (lds >= 1.5).all() else "partly" if (lds > 1).any() else "no",
                   f"naive time / LDS time {_span(lds)} over {len(lds)} shapes (significant: >= 1.5)")]
    over = shape_ratio(reg, lds) if len(reg) and len(lds) else pd.Series(dtype=float)
    out.append(Verdict("Register tiling adds to LDS tiling", "\"typically provides additional performance "
                       "improvements beyond LDS tiling\"",
                       "not checked" if over.empty else "yes" if (over > 1).all() else "partly" if (over > 1).any() else "no",
                       f"LDS time / register time {_span(over)}; slower than LDS at "
                       f"{int((over < 1).sum())} of {len(over)} shapes"))
    pairs = []
    for name, dim, _ in FAMILIES:
        for step, values in sp.items():
            cut = family(values, name)
            for size in cut.index:
                if size % ALIGN == 0 and size + 1 in cut.index:
                    pairs.append((step, name, size, cut[size + 1] / cut[size]))
    if pairs:
        losses = pd.DataFrame(pairs, columns=["step", "family", "size", "ratio"]).groupby("step").ratio
        text = "; ".join(f"{step}: speedup at size + 1 / at the aligned size {g.min():.2f} to {g.max():.2f}"
                         for step, g in losses)
    out.append(Verdict("Effectiveness depends on alignment with the tile sizes", "practical considerations",
                       "not checked" if not pairs else "yes" if any(abs(r - 1) > 0.1 for *_, r in pairs) else "no",
                       text if pairs else "no aligned / unaligned pairs (size, size + 1) in these results"))
    try:
        tiles = tile_table(df)
        best = tiles.idxmax()
        default = _config("register_tiling", REGISTER_DEFAULT)
        text = "; ".join(f"{shape}: best {best[shape]} ({tiles[shape].max():.0f} GFLOP/s), tutorial's "
                         f"{tiles[shape].get(default, np.nan):.0f}" for shape in tiles.columns)
        holds = "yes" if any(best[s] != default for s in tiles.columns) else "no"
    except ResultsError:
        text, holds = "no tile-size sweep in these results", "not checked"
    out.append(Verdict("Tile sizes need tuning", "\"requiring careful tuning of tile dimensions\"", holds, text))
    return out


def report(df: pd.DataFrame, meta: dict, reference: dict, figures: dict[str, Path],
           profile: pd.DataFrame | None, results_path: Path) -> str:
    ok = ok_rows(df)
    summary = family_summary(ok)
    pct = percent_of_cublas(ok)
    pct_rows = [[step, f"{v.min():.1f}", f"{v.median():.1f}", f"{v.max():.1f}"] for step, v in pct.items()]
    try:
        tiles = tile_table(ok)
        tiles_md = markdown_table(tiles)
    except ResultsError as exc:
        tiles_md = str(exc)
    lines = [
        "# The AMD tiling tutorial on NVIDIA: naive, LDS tiling, register tiling",
        "",
        provenance(results_path, df, meta) + ". Times are medians of the samples, cold L2; every point was "
        "verified against float64.",
        "",
        "The tutorial's naive and LDS kernels are mmbench's `naive` and `shared` at BLOCK = 16 (the same code). Its "
        "register tiling is `register_tiling`. The tutorial's layout assumes AMD's 64-wide wavefront without naming it; "
        "here the width is the parameter WARP. At NVIDIA's 32 a warp covers 8 x 4 thread tiles (32 x 16 outputs), and "
        "the block tile is 64 x 32 with 128 threads. At 64 it is the tutorial's original 128 x 32 with 256 threads.",
        "",
        "## The tutorial's claims, checked",
        "",
        *verdict_table(verdicts(ok)),
        "",
        "## Speedup over naive by shape family and alignment (geometric mean over the family's sizes)",
        "",
        f"Each family varies one dimension with the other two at {BASE}. Aligned: the varying size is a multiple of "
        f"{ALIGN}; the unaligned sizes are one more (a last tile row or column nearly empty).",
        "",
        markdown_table(summary),
        "",
        "## GFLOP/s as % of cuBLAS, over all shapes",
        "",
        *text_table(["step", "min", "median", "max"], pct_rows),
        "",
        "## Which tile sizes pay off (GFLOP/s, median)",
        "",
        tiles_md,
        "",
    ]
    return report_text(lines, figures, ALT_TEXT)
