"""The AMD tiling tutorial (../shared/papers/amd-lds-register-tiling.txt) on NVIDIA: naive -> LDS
(shared-memory) tiling -> register tiling, on rectangular shapes.

The tutorial's naive and LDS kernels are mmbench's `naive` and `shared` at BLOCK = 16 (the same
code: a thread an output; 16 x 16 tiles zero-filled past the edges, stores guarded), so they run
under the tutorial's names here; its register tiling is `register_tiling`. Shapes come in
families, each varying one dimension with the other two at BASE: along m (tall), along n (wide),
along k (shallow to deep), and square; aligned shapes have every dimension a multiple of ALIGN.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from .. import plots
from ..analysis import along, by_shape, ok_rows, series_of, shape_ratio
from ..hierarchy import (LEVEL_COLUMNS, NAMES, checked, fig_hierarchical_roofline, level_rows, levels, panel_title,
                         working_set_mb)
from ..results import ResultsError, sibling
from ..variants import REGISTRY, format_params, param_points
from .common import Verdict, companion, markdown_table, provenance, report_text, text_table, verdict_table
from .contract import Figure, FigureFamily
from ..kernel_text import kernel_additions

plt = plots.plt

BASE = 1024  # the fixed dimensions of the m, n and k families
ALIGN = 64  # the register tile's rows (64 x 32 at WARP = 32): a shape aligned to every kernel's tiles
REGISTER_DEFAULT = format_params(param_points(REGISTRY["register_tiling"])[0])
# The tutorial's own layout: its 4 x 4 thread tiles on AMD's 64-wide wavefront (128 x 32, 256 threads)
REGISTER_WAVEFRONT = format_params(param_points(REGISTRY["register_tiling"], {"WARP": (64,)})[0])
SIGNIFICANT = 1.5  # our reading of "significant speedups": LDS tiling at least 1.5 x naive
MATTERS = 0.10  # a dependence counts when a ratio moves by more than this
SEVERAL = 3.0  # our reading of "several times": naive's DRAM reads at least 3 x the inputs' bytes
HELD = 50  # a roof holds a kernel when the kernel reaches at least this % of it (our line, for the hierarchy)
REDUCES = 2.0  # our reading of "dramatically reduce" / "eliminates many": a count falls at least 2 x
# The companion run at the tutorial's wavefront (register tiling at WARP = 64 with its own LDS and
# cuBLAS rows, every shape of the study), kept beside the reference run
WAVEFRONT_RUN = ("warp64", "amd-tiling-warp64")
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


def percent_of_cublas_at(df: pd.DataFrame, kernels) -> dict[str, pd.Series]:
    """Each (variant, params, name) kernel's GFLOP/s as % of cuBLAS's, by shape (those measured)."""
    plain = _plain(ok_rows(df))
    cublas = by_shape(plain, "gflops_median", variant=CUBLAS[0], params=CUBLAS[1])
    out = {name: by_shape(plain, "gflops_median", variant=v, params=p) for v, p, name in kernels}
    return {name: 100 * shape_ratio(s, cublas) for name, s in out.items() if len(s) and len(cublas)}


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


# The kernels under the tutorial's names in the memory-hierarchy figure and tables (both widths there)
KERNEL_NAMES = {(STEPS[0][0], STEPS[0][1]): "naive (16 x 16)", (STEPS[1][0], STEPS[1][1]): STEPS[1][2],
                ("register_tiling", REGISTER_DEFAULT): "register tiling (4 x 4 a thread), WARP = 32",
                ("register_tiling", REGISTER_WAVEFRONT): "register tiling (4 x 4 a thread), WARP = 64",
                CUBLAS[:2]: CUBLAS[2]}


def fig_hierarchy(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    fig = fig_hierarchical_roofline(profile, meta, "AMD tiling tutorial: naive, LDS tiling, register tiling "
                                    "(WARP = 32) and cuBLAS at every memory level (Nsight Compute)", most=2)
    # the shared figure names kernels by mmbench's series labels; a reader of this study knows the tutorial's
    # (those drawn: two kernels of one label are told apart by their parameters and keep them)
    drawn = set(zip(profile.variant, profile.params.fillna("")))
    names = {series_of(v, p).label: name for (v, p), name in KERNEL_NAMES.items() if (v, p) in drawn}
    for text in fig.legends[0].get_texts():
        text.set_text(names.get(text.get_text(), text.get_text()))
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
    "amd-hierarchy": FigureFamily("AMD tiling: hierarchical roofline from a profile", "AMD tiling: each kernel's "
                                  "intensity at shared memory, L1, L2 and DRAM under each level's roof, from the "
                                  "Nsight Compute profile beside the run",
                                  (Figure("fig-amd-hierarchy", fig_hierarchy),)),
}
ALT_TEXT = {"fig-amd-speedup": "speedup over naive", "fig-amd-percent-cublas": "percent of cuBLAS",
            "fig-amd-tiles": "tile sizes", "fig-amd-hierarchy": "hierarchical roofline"}


def _span(r: pd.Series) -> str:
    return f"{r.min():.2f} to {r.max():.2f}" if len(r) else "-"


def _family_means(series: dict[str, pd.Series]) -> pd.DataFrame:
    """Per family and alignment: the geometric mean of each by-shape Series over the family's sizes."""
    rows = []
    for name, dim, label in FAMILIES:
        for is_aligned in (True, False):
            row = {"family": label, "aligned": "yes" if is_aligned else "no"}
            for column, values in series.items():
                cut = family(values, name)
                cut = cut[[aligned(int(x)) == is_aligned for x in cut.index]]
                row[column] = float(np.exp(np.log(cut).mean())) if len(cut) else np.nan
            rows.append(row)
    return pd.DataFrame(rows).set_index("family")


def family_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per family and alignment: the geometric-mean speedup of each step over naive, and of
    register over LDS tiling (the tutorial's practical considerations, measured)."""
    table = _family_means({f"{step} / naive": values for step, values in speedups(df).items()})
    lds, reg = f"{STEPS[1][2]} / naive", f"{STEPS[2][2]} / naive"
    table["register / LDS"] = table[reg] / table[lds] if lds in table and reg in table else np.nan
    return table


def wavefront_summary(df: pd.DataFrame, wave: pd.DataFrame) -> pd.DataFrame:
    """Per family and alignment: register tiling's speedup over LDS tiling at WARP = 32 (the
    reference run) and at the tutorial's 64 (the companion, against its own LDS rows), and the
    companion's kernels as % of its cuBLAS (geometric means)."""
    pct = percent_of_cublas_at(wave, ((STEPS[1][0], STEPS[1][1], "LDS"), ("register_tiling", REGISTER_WAVEFRONT,
                                                                          "register WARP = 64")))
    return _family_means({"register / LDS, WARP = 32": register_over_lds(df, REGISTER_DEFAULT),
                          "register / LDS, WARP = 64": register_over_lds(wave, REGISTER_WAVEFRONT),
                          **{f"{name}, % of cuBLAS": v for name, v in pct.items()}})


def register_over_lds(df: pd.DataFrame, params: str) -> pd.Series:
    """By shape: LDS tiling's (shared, BLOCK=16) time over register tiling's at these parameters,
    at every shape both were measured; above 1, register tiling is faster."""
    plain = _plain(ok_rows(df))
    return shape_ratio(by_shape(plain, variant=STEPS[1][0], params=STEPS[1][1]),
                       by_shape(plain, variant="register_tiling", params=params))


def _register_verdict(over: pd.Series, layout: str, where: str = "") -> Verdict:
    holds = "not checked" if over.empty else "yes" if (over > 1).all() else "partly" if (over > 1).any() else "no"
    return Verdict(f"Register tiling adds to LDS tiling, {layout}", "\"typically provides additional performance "
                   "improvements beyond LDS tiling\"", holds,
                   f"LDS time / register time {_span(over)}; faster than LDS at {int((over > 1).sum())} of {len(over)} "
                   "shapes" + (" (" + ", ".join(f"{m}x{n}x{k}" for m, n, k in over.index) + ")" if 0 < len(over) < 6 else "")
                   + where)


def speed_verdicts(df: pd.DataFrame, wave: pd.DataFrame | None = None) -> list[Verdict]:
    """The tutorial's steps: naive not ideal, LDS tiling's significant and shape-dependent speedup,
    register tiling beyond it at NVIDIA's warp of 32 and the tutorial's wavefront of 64 (from the
    companion run `wave` when there is one: every shape, against its own LDS rows), and LDS tiling
    alone sometimes the better."""
    sp = speedups(df)
    lds = sp.get(STEPS[1][2], pd.Series(dtype=float))
    try:
        pct = percent_of_cublas(df).get("naive", pd.Series(dtype=float))
    except ResultsError:
        pct = pd.Series(dtype=float)
    out = [Verdict("The naive kernel's performance is not ideal", "\"the resulting performance is not ideal\"",
                   "not checked" if pct.empty else "yes" if (pct < 50).all() else "partly" if (pct < 50).any() else "no",
                   f"naive GFLOP/s {_span(pct)} % of cuBLAS's over {len(pct)} shapes (not ideal: under 50 %)"),
           Verdict("LDS tiling gives a significant speedup over naive", "\"significant speedups over the naive "
                   "implementation are commonly observed on AMD GPUs\"",
                   "not checked" if lds.empty else "yes" if (lds >= SIGNIFICANT).all() else "partly" if (lds > 1).any()
                   else "no", f"naive time / LDS time {_span(lds)} over {len(lds)} shapes (significant: >= {SIGNIFICANT}); "
                   f">= {SIGNIFICANT} at {int((lds >= SIGNIFICANT).sum())}"),
           Verdict("Tiling's speedup depends on the matrix dimensions", "\"depend on the specific GPU architecture and "
                   "matrix dimensions\"", "not checked" if lds.empty else "yes" if lds.max() / lds.min() > 1 + MATTERS
                   else "no", f"LDS tiling's speedup over naive {_span(lds)} across {len(lds)} shapes")]
    at32 = register_over_lds(df, REGISTER_DEFAULT)
    at64 = register_over_lds(df if wave is None else wave, REGISTER_WAVEFRONT)
    out.append(_register_verdict(at32, "NVIDIA's warp of 32 (64 x 32 block tile, 128 threads)"))
    out.append(_register_verdict(at64, "the tutorial's wavefront of 64 (128 x 32 block tile, 256 threads)",
                                 "" if wave is None else f" (the companion run {'/'.join(WAVEFRONT_RUN)}: both "
                                 "kernels timed in one run)"))
    lds_alone = {name: int((over < 1).sum()) for name, over in (("WARP = 32", at32), ("WARP = 64", at64)) if len(over)}
    out.append(Verdict("Some workloads do better with LDS tiling alone", "practical considerations",
                       "not checked" if not lds_alone else "yes" if any(lds_alone.values()) else "no",
                       "; ".join(f"{w}: LDS faster at {n} shapes" for w, n in lds_alone.items())))
    return out


def naive_scaling(df: pd.DataFrame) -> Verdict:
    """"As you increase the matrix size, the caches will become incapable ... causing significant
    delays": naive's GFLOP/s at each family's largest size over at its smallest; the claim holds
    where it falls by more than MATTERS."""
    rates = step_values(df, "gflops_median").get("naive", pd.Series(dtype=float))
    change = {}
    for name, dim, _ in FAMILIES:
        cut = family(rates, name)
        cut = cut[[aligned(int(x)) for x in cut.index]]  # one past a tile multiple differs for other reasons
        if len(cut) > 1:
            change[name] = float(cut[cut.index.max()] / cut[cut.index.min()])
    falls = {name: r < 1 - MATTERS for name, r in change.items()}
    holds = "not checked" if not falls else "yes" if all(falls.values()) else "no" if not any(falls.values()) else "partly"
    return Verdict("Naive slows down as the matrices outgrow the caches", "\"as you increase the matrix size, the "
                   "caches will become incapable ... causing significant delays\"", holds,
                   "naive GFLOP/s at the largest aligned size / at the smallest: " +
                   "; ".join(f"{name} {r:.2f}" for name, r in change.items()))


def flop_count(df: pd.DataFrame) -> Verdict:
    """"A total of 2 x m x n x k operations": each row's GFLOP/s against 2mnk over its median time."""
    plain = _plain(ok_rows(df))
    implied = 2 * plain.m * plain.n * plain.k / (plain.time_ms_median * 1e6)
    worst = float((plain.gflops_median / implied - 1).abs().max()) if len(plain) else np.nan
    return Verdict("A product is 2 x m x n x k operations (the rates here count that)", "\"a total of 2 x m x n x k "
                   "operations\"", "not checked" if np.isnan(worst) else "yes" if worst < 0.01 else "no",
                   f"GFLOP/s against 2mnk / median time: at most {100 * worst:.2f} % apart over {len(plain)} rows")


def verdicts(df: pd.DataFrame, wave: pd.DataFrame | None = None) -> list[Verdict]:
    """Every claim of the tutorial the run (and its WARP = 64 companion, `wave`) can judge by time,
    in the tutorial's order."""
    out = [flop_count(df), naive_scaling(df), *speed_verdicts(df, wave)]
    pairs = []
    for name, dim, _ in FAMILIES:
        for step, values in speedups(df).items():
            cut = family(values, name)
            for size in cut.index:
                if size % ALIGN == 0 and size + 1 in cut.index:
                    pairs.append((step, name, size, cut[size + 1] / cut[size]))
    if pairs:
        losses = pd.DataFrame(pairs, columns=["step", "family", "size", "ratio"]).groupby("step").ratio
        text = "; ".join(f"{step}: speedup at size + 1 / at the aligned size {g.min():.2f} to {g.max():.2f}"
                         for step, g in losses)
    out.append(Verdict("Effectiveness depends on alignment with the tile sizes", "practical considerations",
                       "not checked" if not pairs else "yes" if any(abs(r - 1) > MATTERS for *_, r in pairs) else "no",
                       text if pairs else "no aligned / unaligned pairs (size, size + 1) in these results"))
    out.append(tuning_verdict(df))
    return out


def tuning_verdict(df: pd.DataFrame) -> Verdict:
    try:
        tiles = tile_table(df)
        best = tiles.idxmax()
        default = _config("register_tiling", REGISTER_DEFAULT)
        text = "; ".join(f"{shape}: best {best[shape]} ({tiles[shape].max():.0f} GFLOP/s), tutorial's "
                         f"{tiles[shape].get(default, np.nan):.0f}" for shape in tiles.columns)
        holds = "yes" if any(best[s] != default for s in tiles.columns) else "no"
    except ResultsError:
        text, holds = "no tile-size sweep in these results", "not checked"
    return Verdict("Tile sizes need tuning", "\"requiring careful tuning of tile dimensions\"", holds, text)


# The tutorial's profile claims, judged from Nsight Compute's counts (`mmbench profile`)
PROFILE = "`mmbench profile --config configs/amd-tiling.toml --points 1024,4096 -v naive,shared,register_tiling,cublas " \
          "--results results/amd-tiling-h100/amd-tiling-h100.csv`"


def _kernel(profile: pd.DataFrame | None, variant: str, params: str) -> pd.DataFrame:
    """One kernel's profile rows by shape (m, n, k), DRAM bytes (read + written) added."""
    try:
        rows = checked(profile)
    except ResultsError:  # none, or one taken before the hierarchical counts: its claims stay not checked
        return pd.DataFrame()
    rows = rows[(rows.variant == variant) & (rows.params.fillna("") == params)]
    return rows.set_index(["m", "n", "k"]).sort_index()


def _shape(shape: tuple) -> str:
    return "x".join(str(int(d)) for d in shape)


def past_l2(shape: tuple, meta: dict) -> bool:
    """Whether a GEMM's operands outgrow the GPU's L2 (then DRAM traffic can exceed each byte once)."""
    l2 = (meta.get("gpu") or {}).get("l2_bytes")
    return bool(l2) and working_set_mb("gemm", *shape) * 1e6 > l2


def _where(shape: tuple, meta: dict) -> str:
    return "past the L2" if past_l2(shape, meta) else "fits in the L2"


def _holds(flags) -> str:
    flags = list(flags)
    return "not checked" if not flags else "yes" if all(flags) else "partly" if any(flags) else "no"


def register_pairs(profile: pd.DataFrame | None, wave_profile: pd.DataFrame | None) -> list[tuple]:
    """(width, LDS tiling's rows, register tiling's rows) at the shapes both were profiled: WARP = 32
    against LDS in the reference run's profile, WARP = 64 against the LDS rows of its companion's."""
    out = []
    for width, prof, params in (("WARP = 32", profile, REGISTER_DEFAULT), ("WARP = 64", wave_profile, REGISTER_WAVEFRONT)):
        lds, reg = _kernel(prof, STEPS[1][0], STEPS[1][1]), _kernel(prof, "register_tiling", params)
        both = lds.index.intersection(reg.index) if len(lds) and len(reg) else []
        if len(both):
            out.append((width, lds.loc[both], reg.loc[both]))
    return out


def _unprofiled(finding: str, paper: str) -> Verdict:
    return Verdict(finding, paper, "not checked", "needs Nsight Compute's counts beside the run: " + PROFILE)


def naive_dram(profile: pd.DataFrame | None, meta: dict) -> Verdict:
    """Naive's DRAM bytes read over the inputs' bytes, 4(mk + kn): several times where >= SEVERAL."""
    finding, paper = ("Profiling shows naive reading DRAM several times the inputs' size", "\"reads from the GPU's "
                      "DRAM several times more often than the combined size of the input matrices\"")
    naive = _kernel(profile, STEPS[0][0], STEPS[0][1])
    if naive.empty:
        return _unprofiled(finding, paper)
    times = {s: r.dram_bytes_read / (4 * (s[0] * s[2] + s[2] * s[1])) for s, r in naive.iterrows()}
    return Verdict(finding, paper, _holds(v >= SEVERAL for v in times.values()),
                   "naive's DRAM bytes read / the inputs' 4(mk + kn): " + "; ".join(
                       f"{_shape(s)} {v:.1f} x ({_where(s, meta)})" for s, v in times.items())
                   + f" (several: >= {SEVERAL:g} x; caches flushed before the kernel)")


def lds_traffic(profile: pd.DataFrame | None, meta: dict) -> list[Verdict]:
    """LDS tiling against naive: global memory access (L1 and L2 bytes) falling at least REDUCES
    times ("dramatically"), and DRAM bytes falling by more than MATTERS where the operands outgrow
    the L2 (below it both kernels read each byte once, whatever their reuse)."""
    g = ("LDS tiling dramatically reduces global memory access (L1 and L2 traffic)", "\"uses LDS memory to "
         "dramatically reduce global memory access\"")
    d = ("LDS tiling reduces DRAM access", "\"LDS tiling is an effective way to reduce DRAM access\"")
    naive, lds = _kernel(profile, STEPS[0][0], STEPS[0][1]), _kernel(profile, STEPS[1][0], STEPS[1][1])
    both = naive.index.intersection(lds.index) if len(naive) and len(lds) else []
    if not len(both):
        return [_unprofiled(*g), _unprofiled(*d)]
    fall = {(s, lv): naive.at[s, f"{lv}_bytes"] / lds.at[s, f"{lv}_bytes"] for s in both for lv in ("l1", "l2", "dram")}
    glob = [(s, lv, v) for (s, lv), v in fall.items() if lv != "dram"]
    dram = [(s, v) for (s, lv), v in fall.items() if lv == "dram"]
    return [Verdict(*g, _holds(v >= REDUCES for *_, v in glob),
                    "naive's bytes / LDS tiling's: " + "; ".join(
                        f"{_shape(s)} {NAMES[lv].split(' (')[0]} {v:.2f} x" for s, lv, v in glob)
                    + f" (dramatic: >= {REDUCES:g} x)"),
            Verdict(*d, _holds(v > 1 + MATTERS for s, v in dram if past_l2(s, meta)),
                    "naive's DRAM bytes / LDS tiling's: " + "; ".join(f"{_shape(s)} {v:.2f} x ({_where(s, meta)})"
                                                                     for s, v in dram)
                    + f" (judged past the L2 only, where reuse can show; reduced: by more than {100 * MATTERS:.0f} %)")]


def _per_width(pairs: list[tuple], value, fmt: str = "{:.2f}") -> str:
    """'WARP = 32: 1024x1024x1024 a, 4096x4096x4096 b; WARP = 64: ...' of value(lds row, register row)."""
    return "; ".join(f"{width}: " + ", ".join(f"{_shape(s)} {fmt.format(value(lds.loc[s], reg.loc[s]))}"
                                              for s in lds.index) for width, lds, reg in pairs)


def register_profile_verdicts(pairs: list[tuple], meta: dict) -> list[Verdict]:
    """Register tiling against LDS tiling, at each width profiled: memory traffic, shared-memory
    reads, bank conflicts, barrier stalls and instructions issued a cycle."""
    claims = (("Register tiling further reduces memory traffic (L1, L2, DRAM)", "\"register tiling further reduces "
               "memory traffic by keeping frequently accessed data in thread-local registers\""),
              ("Register tiling eliminates many shared-memory reads", "\"eliminates the need for many shared memory "
               "reads within the inner computation loop\""),
              ("Register tiling avoids bank conflicts", "\"each thread has private registers eliminating bank "
               "conflicts\""),
              ("Register tiling reduces synchronization overhead", "\"synchronization overhead between threads is "
               "reduced\""),
              ("Register tiling achieves better instruction-level parallelism", "\"better instruction-level "
               "parallelism can be achieved\""))
    if not pairs:
        return [_unprofiled(*c) for c in claims]
    cells = [(s, lv, lds.at[s, f"{lv}_bytes"] / reg.at[s, f"{lv}_bytes"]) for _, lds, reg in pairs
             for s in lds.index for lv in ("l1", "l2", "dram")]
    traffic = Verdict(*claims[0], _holds(v > 1 + MATTERS for s, lv, v in cells if lv != "dram" or past_l2(s, meta)),
                      "LDS tiling's bytes / register tiling's, L1, L2, DRAM: " + _per_width(
                          pairs, lambda a, b: " / ".join(f"{a[f'{lv}_bytes'] / b[f'{lv}_bytes']:.2f}"
                                                         for lv in ("l1", "l2", "dram")), "{}")
                      + f" (reduced: by more than {100 * MATTERS:.0f} %; DRAM judged past the L2 only)")
    reads = Verdict(*claims[1], _holds(lds.at[s, "shared_ld_inst"] / reg.at[s, "shared_ld_inst"] >= REDUCES
                                       for _, lds, reg in pairs for s in lds.index),
                    "LDS tiling's shared-load instructions / register tiling's (same FLOPs): " + _per_width(
                        pairs, lambda a, b: a.shared_ld_inst / b.shared_ld_inst, "{:.1f} x")
                    + "; shared-memory bytes (loads and stores) " + _per_width(
                        pairs, lambda a, b: a.shared_bytes / b.shared_bytes, "{:.1f} x") + f" (many: >= {REDUCES:g} x)")
    conflicts = lambda r: r.shared_ld_conflicts + r.shared_st_conflicts  # noqa: E731 - a column sum, named
    banks = Verdict(*claims[2], _holds(conflicts(reg.loc[s]) < conflicts(lds.loc[s]) for _, lds, reg in pairs
                                       for s in lds.index),
                    "bank conflicts per shared load, LDS tiling / register tiling: " + _per_width(
                        pairs, lambda a, b: f"{a.conflicts_per_shared_ld:.4f} / {b.conflicts_per_shared_ld:.2f}", "{}")
                    + "; all shared-memory conflicts (loads and stores), register / LDS: " + _per_width(
                        pairs, lambda a, b: conflicts(b) / conflicts(a), "{:.1f} x")
                    + " (avoided: register tiling's fewer; the registers' own banks are not counted)")
    sync = Verdict(*claims[3], _holds(reg.at[s, "barrier_stall_per_issue"] < (1 - MATTERS) *
                                      lds.at[s, "barrier_stall_per_issue"] for _, lds, reg in pairs for s in lds.index),
                   "warps waiting at a barrier per issued instruction, LDS tiling / register tiling: " + _per_width(
                       pairs, lambda a, b: f"{a.barrier_stall_per_issue:.2f} / {b.barrier_stall_per_issue:.2f}", "{}")
                   + f" (reduced: by more than {100 * MATTERS:.0f} %)")
    ilp = Verdict(*claims[4], _holds(reg.at[s, "ipc_per_smsp"] > (1 + MATTERS) * lds.at[s, "ipc_per_smsp"]
                                     for _, lds, reg in pairs for s in lds.index),
                  "instructions issued a cycle per scheduler (the ILP Nsight Compute shows), LDS tiling / register "
                  "tiling: " + _per_width(pairs, lambda a, b: f"{a.ipc_per_smsp:.2f} / {b.ipc_per_smsp:.2f}", "{}")
                  + "; warp instructions for the same FLOPs, LDS / register: " + _per_width(
                      pairs, lambda a, b: a.warp_inst / b.warp_inst, "{:.1f} x")
                  + f" (better: issue rate up by more than {100 * MATTERS:.0f} %)")
    return [traffic, reads, banks, sync, ilp]


def profile_verdicts(profile: pd.DataFrame | None, wave_profile: pd.DataFrame | None, meta: dict) -> list[Verdict]:
    """Every profile claim of the tutorial, in its order, from the reference run's profile and the
    WARP = 64 companion's."""
    return [naive_dram(profile, meta), *lds_traffic(profile, meta),
            *register_profile_verdicts(register_pairs(profile, wave_profile), meta)]


# The tutorial's claims a run of this study cannot judge: (claim, why not, what would test it)
UNTESTED = (
    ("Register access is significantly faster than shared-memory access", "a property of the hardware, not of "
     "these kernels: their times mix both", "a microbenchmark of dependent register and shared-memory reads (not in "
     "mmbench)"),
    ("The speedups are those commonly seen on AMD GPUs; AMD architectures' LDS and registers change the best tiles",
     "this is an NVIDIA GPU", "the same config on an AMD GPU (mmbench runs CUDA only); on another NVIDIA GPU: "
     "`mmbench run --config configs/amd-tiling.toml` there"),
    ("Matrix multiplication dominates DNN layers; recasting a problem as one can beat an iterative version",
     "the introduction's context, not a measurement", "none"),
    ("m x n threads, each looping k times; the workgroup matches the LDS tile", "a design statement, true of "
     "kernels/gemm/naive.cu and shared.cu by construction", "none needed"),
    ("The matrix multiplication diagram", "a diagram, no data", "none"),
)


def wavefront_command(df: pd.DataFrame) -> str:
    """The run that would judge register tiling at WARP = 64 at every shape LDS tiling was timed at."""
    plain = _plain(ok_rows(df))
    lds = plain[(plain.variant == STEPS[1][0]) & (plain.params == STEPS[1][1])]
    shapes = ",".join(f"{m}x{n}x{k}" for m, n, k in sorted(set(zip(lds.m, lds.n, lds.k))))
    return f"`mmbench run -v register_tiling --params WARP=64 --sizes {shapes}`"


def _widths(df: pd.DataFrame, wave) -> str:
    """Where register against LDS tiling is judged at WARP = 64: the companion run (its settings), or
    the reference run's few shapes and the command that would judge every shape."""
    if wave is None:
        at64 = register_over_lds(df, REGISTER_WAVEFRONT)
        return (f"at the tutorial's WARP = 64 over the {len(at64)} shapes the committed run measured it at (the "
                "tile sweep's). The run that would judge WARP = 64 at every shape, its rows added to this run's CSV: "
                + wavefront_command(df) + ".")
    at64 = register_over_lds(wave.df, REGISTER_WAVEFRONT)
    lds = shape_ratio(by_shape(_plain(ok_rows(wave.df)), variant=STEPS[1][0], params=STEPS[1][1]),
                      by_shape(_plain(df), variant=STEPS[1][0], params=STEPS[1][1]))
    ws = wave.meta.get("settings") or {}
    return (f"at the tutorial's WARP = 64 over the {len(at64)} shapes of the companion run "
            f"`{wave.path.parent.name}/{wave.path.name}` (run {str(wave.meta.get('started_at', ''))[:10]}, "
            f"commit `{str((wave.meta.get('git') or {}).get('commit'))[:12]}`, "
            f"{(wave.meta.get('gpu') or {}).get('name', 'no GPU')}, {ws.get('runs', '?')} timed samples after "
            f"{ws.get('warmup', '?')} untimed, L2 {'flushed' if ws.get('cache', 'cold') == 'cold' else 'warm'}), "
            "against LDS tiling and cuBLAS timed in that same run; its LDS times are "
            f"{_span(lds)} x the reference run's at the same shapes.")


def _profiles_departure(profile_meta: dict) -> str:
    """The departure the profiles are: Nsight Compute's version and settings, and how the tutorial's words are read
    from its counters."""
    ncu = profile_meta.get("ncu") or {}
    return (
        f"- **Profiles** (the tutorial names no profiler and shows no counts): Nsight Compute "
        f"{str(ncu.get('version', '?')).removeprefix('Version ').split(' ')[0]}, caches "
        f"{'flushed before each kernel' if ncu.get('cache_control') == 'all' else 'as left'} "
        f"(`--cache-control {ncu.get('cache_control', '?')}`), clocks "
        f"{'not locked' if ncu.get('clock_control') == 'none' else 'locked'}, one launch of each kernel, at "
        "1024 x 1024 x 1024 (operands fit in the L2) and 4096 x 4096 x 4096 (past it) only; the register tiling at "
        "WARP = 64 and its LDS comparison from the companion's own profile (same settings). \"Bank conflicts\" are "
        "Nsight Compute's shared-memory data-bank conflicts (extra wavefronts a shared load or store needed); "
        "\"instruction-level parallelism\" is read as instructions issued a cycle per scheduler, \"synchronization "
        "overhead\" as warps waiting at a barrier per issued instruction. DRAM reductions are judged only past the "
        "L2: below it, with caches flushed, every kernel reads its inputs from DRAM once.")


def departures(df: pd.DataFrame, meta: dict, wave=None, profile_meta: dict | None = None) -> list[str]:
    """Every choice of ours a verdict rests on, where the tutorial says otherwise or nothing; `wave`
    is the WARP = 64 companion (studies.common.Companion) and `profile_meta` the profile's
    metadata, when there are."""
    settings = meta.get("settings") or {}
    widths = _widths(df, wave)
    out = [
        f"- **GPU**: {(meta.get('gpu') or {}).get('name', 'no GPU')} (CUDA), not an AMD GPU (HIP); LDS is shared "
        "memory here.",
        "- **Naive** (`naive`, BLOCK = 16: the tutorial gives no block size) adds to the tutorial's text: "
        + "; ".join(kernel_additions("gemm/naive.cu")) + ".",
        "- **LDS tiling** (`shared`, BLOCK = 16) adds: " + "; ".join(kernel_additions("gemm/shared.cu")) +
        "; its tile loop runs over k0 = 0, 16, ... rather than a tile count (the same trips), and zero-fills past the "
        "edges with a select rather than if / else.",
        "- **Register tiling** (`register_tiling`) is the tutorial's text with its constants as compile-time "
        "parameters and adds: " + ("; ".join(kernel_additions("gemm/register_tiling.cu")) or "nothing") + ". The "
        "tutorial's `warp_size` is left implicit and assumes AMD's wavefront of 64; the study's default is WARP = 32 "
        "(NVIDIA's warp: a 64 x 32 block tile with 128 threads).",
        "- **Register against LDS tiling is judged at both widths**: at WARP = 32 over every shape LDS tiling was "
        "timed at in the reference run, and " + widths,
        "- **The shapes** (families along m, n and k around 1024, aligned to 64 and one past) are ours: the tutorial "
        "gives no sizes.",
        f"- **Thresholds** are ours: \"significant\" is at least {SIGNIFICANT} x naive; a dependence (on shape or "
        f"alignment) or a reduction counts above {100 * MATTERS:.0f} %; \"not ideal\" is under 50 % of cuBLAS; "
        f"\"several times\" is at least {SEVERAL:g} x; \"dramatically\" and \"many\" are at least {REDUCES:g} x fewer.",
        "- **cuBLAS** as the yardstick and the **tile sweep** (LDS 8 to 32, register tiles 2 to 8 a side, KT 8 to "
        "32) are beyond the tutorial.",
        f"- **Timing**: L2 {'flushed before every sample' if settings.get('cache', 'cold') == 'cold' else 'warm'}, "
        f"{settings.get('warmup', '?')} untimed launches, then {settings.get('runs', '?')} timed samples, the median "
        "kept; the tutorial shows no timings.",
    ]
    if profile_meta is not None:
        out.append(_profiles_departure(profile_meta))
    return out


def hierarchy_profile(profile: pd.DataFrame | None, wave_profile: pd.DataFrame | None) -> pd.DataFrame | None:
    """The reference run's profile with the companion's register tiling at WARP = 64 added (its LDS
    rows are the reference's kernel again)."""
    if profile is None:
        return None
    extra = [] if wave_profile is None else [wave_profile[wave_profile.variant == "register_tiling"]]
    return pd.concat([profile, *extra], ignore_index=True)


def hierarchy_section(profile: pd.DataFrame | None, meta: dict) -> list[str]:
    """The report's memory-hierarchy section: a level table at the largest profiled shape and at
    the smallest, each kernel's closest roof there, and how its DRAM intensity moved between them."""
    try:
        table = levels(profile)
    except ResultsError as exc:
        return [f"{exc}; this study's: {PROFILE}.", ""]
    shapes = sorted({(m, n, k) for m, n, k in zip(table.m, table.n, table.k)}, key=lambda s: s[0] * s[1] * s[2])
    small, large = shapes[0], shapes[-1]
    out = ["Each kernel's FLOP per byte moved at shared memory, L1, L2 and DRAM, and the share of each level's peak "
           "it reached (Nsight Compute's byte counts and ceilings; the figure `fig-amd-hierarchy.png` draws the "
           "reference run's kernels; register tiling at WARP = 64 comes from the companion's profile).", ""]
    at = lambda s: table[(table.m == s[0]) & (table.n == s[1]) & (table.k == s[2])].reset_index(drop=True)  # noqa: E731
    name = lambda r: KERNEL_NAMES.get((r.variant, r.params), f"{r.variant} {r.params}".strip())  # noqa: E731
    for shape in ([large, small] if large != small else [large]):
        rows = [[name(r), *cells[1:]] for r, cells in zip(at(shape).itertuples(), level_rows(profile, shape))]
        out += [f"**{panel_title(at(shape).iloc[0], meta)}**", "", *text_table(LEVEL_COLUMNS, rows), ""]
        out.append(f"At {_shape(shape)}, the roof each kernel comes closest to: " + "; ".join(
            f"{name(r)}: FP32, {r.fp32_pct:.0f} % of its peak" if r.bound == "fp32" else
            f"{name(r)}: {NAMES[r.bound]}, {getattr(r, f'{r.bound}_pct'):.0f} % of its peak"
            for r in at(shape).itertuples()) + ".")
        out.append("")
    lo, hi = at(small), at(large)
    tutorial = hi[hi.variant != CUBLAS[0]]
    closest = tutorial[["fp32_pct", *(f"{level}_pct" for level in NAMES)]].max(axis=1)
    held = closest >= HELD
    out.append(f"At {_shape(large)} the tutorial's kernels reach at most {closest.max():.0f} % of any roof (cuBLAS "
               f"{hi[hi.variant == CUBLAS[0]].fp32_pct.max():.0f} % of the FP32 peak): " +
               ("none is held by a level's bandwidth or by the FP32 units (held: at least "
                f"{HELD} % of a roof, our line); Nsight Compute's stall reasons, not collected, would say what holds them."
                if not held.any() else f"held by a roof (at least {HELD} % of it, our line): " +
                ", ".join(name(r) for r in tutorial[held].itertuples()) + "."))
    out.append("")
    if large != small:
        moved = []
        for r in hi.itertuples():
            before = lo[(lo.variant == r.variant) & (lo.params == r.params)].dram_intensity
            if len(before):
                moved.append(f"{name(r)} {before.iloc[0]:.0f} to {r.dram_intensity:.0f}")
        out += [f"DRAM intensity (FLOP per DRAM byte) from {_shape(small)} to {_shape(large)}: " + "; ".join(moved)
                + ". Where it falls, the kernel's reuse no longer stays in the L2.", ""]
    return out


def timing_sections(ok: pd.DataFrame, wave) -> list[str]:
    """The report's timing tables: speedups by shape family, register over LDS tiling at both widths
    (with the WARP = 64 companion), % of cuBLAS, and the tile sweep."""
    pct = percent_of_cublas(ok)
    pct_rows = [[step, f"{v.min():.1f}", f"{v.median():.1f}", f"{v.max():.1f}"] for step, v in pct.items()]
    try:
        tiles_md = markdown_table(tile_table(ok))
    except ResultsError as exc:
        tiles_md = str(exc)
    return [
        "## Speedup over naive by shape family and alignment (geometric mean over the family's sizes)",
        "",
        f"Each family varies one dimension with the other two at {BASE}. Aligned: the varying size is a multiple of "
        f"{ALIGN}; the unaligned sizes are one more (a last tile row or column nearly empty).",
        "",
        markdown_table(family_summary(ok)),
        "",
        *([] if wave is None else [
            "## Register over LDS tiling at both widths, by shape family (geometric mean)",
            "",
            "Register tiling's speedup over LDS tiling (LDS time / register time) at WARP = 32 (the reference run) and "
            f"at the tutorial's 64 (the companion `{wave.path.name}`, against its own LDS rows), and the companion's "
            "kernels as % of its cuBLAS.",
            "",
            markdown_table(wavefront_summary(ok, ok_rows(wave.df))),
            ""]),
        "## GFLOP/s as % of cuBLAS, over all shapes",
        "",
        *text_table(["step", "min", "median", "max"], pct_rows),
        "",
        "## Which tile sizes pay off (GFLOP/s, median)",
        "",
        tiles_md,
        "",
    ]


def report(df: pd.DataFrame, meta: dict, reference: dict, figures: dict[str, Path],
           profile: pd.DataFrame | None, results_path: Path) -> str:
    ok = ok_rows(df)
    wave = companion(results_path, *WAVEFRONT_RUN)
    wave_profile = None if wave is None else wave.profile
    meta_path = sibling(results_path, ".profile.meta.json")
    profile_meta = json.loads(meta_path.read_text()) if profile is not None and meta_path.exists() else None
    judged = [*verdicts(ok, None if wave is None else ok_rows(wave.df)), *profile_verdicts(profile, wave_profile, meta)]
    unchecked = sum(v.holds == "not checked" for v in judged)
    lines = [
        "# The AMD tiling tutorial on NVIDIA: naive, LDS tiling, register tiling",
        "",
        provenance(results_path, df, meta) + ". Times are medians of the samples, cold L2; every point was "
        "verified against float64.",
        "",
        "The tutorial's naive and LDS kernels are mmbench's `naive` and `shared` at BLOCK = 16 (its code, with the "
        "additions listed under the departures below). Its "
        "register tiling is `register_tiling`. The tutorial's layout assumes AMD's 64-wide wavefront without naming it; "
        "here the width is the parameter WARP. At NVIDIA's 32 a warp covers 8 x 4 thread tiles (32 x 16 outputs), and "
        "the block tile is 64 x 32 with 128 threads. At 64 it is the tutorial's original 128 x 32 with 256 threads.",
        "",
        "## The tutorial's claims, checked",
        "",
        *verdict_table(judged),
        "",
        f"Claims judged: {len(judged) - unchecked}; claims this run cannot judge: {len(UNTESTED)} (below)"
        + (f"; not checked for want of a profile or a run: {unchecked}" if unchecked else "") + ".",
        "",
        "## Where this study departs from the tutorial",
        "",
        *departures(ok, meta, wave, profile_meta),
        "",
        "## Claims this run cannot test",
        "",
        *text_table(["claim", "why not here", "what would test it"], [list(row) for row in UNTESTED]),
        "",
        *timing_sections(ok, wave),
        "## Memory hierarchy (Nsight Compute)",
        "",
        *hierarchy_section(hierarchy_profile(profile, wave_profile), meta),
    ]
    return report_text(lines, figures, ALT_TEXT)
