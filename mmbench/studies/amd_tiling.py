"""The AMD tiling tutorial (../shared/papers/amd-lds-register-tiling.txt) on NVIDIA: naive -> LDS
(shared-memory) tiling -> register tiling, on rectangular shapes.

The tutorial's naive and LDS kernels are mmbench's `naive` and `shared` at BLOCK = 16 (the same
code: a thread an output; 16 x 16 tiles zero-filled past the edges, stores guarded), so they run
under the tutorial's names here; its register tiling is `register_tiling`. Shapes come in
families, each varying one dimension with the other two at BASE: along m (tall), along n (wide),
along k (shallow to deep), and square; aligned shapes have every dimension a multiple of ALIGN.
"""

from __future__ import annotations

import itertools
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
from . import rule
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
SEVERAL = 3.0  # our reading of "several times" (a factor, rule.by_factor) and of "inordinate" cache traffic (a line)
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


# The widths a register-tiling claim is judged at: the tutorial's wavefront, and NVIDIA's warp (our
# default) given beside it as other evidence, never the verdict (rule.py, 1 and 2)
TUTORIAL, OURS = "WARP = 64", "WARP = 32"


def widths(df: pd.DataFrame, wave: pd.DataFrame | None) -> dict[str, pd.Series]:
    """Register over LDS tiling by shape at each width: the tutorial's from the companion `wave`
    (every shape, its own LDS rows) when there is one, else from the run's own WARP = 64 rows."""
    return {TUTORIAL: register_over_lds(df if wave is None else wave, REGISTER_WAVEFRONT),
            OURS: register_over_lds(df, REGISTER_DEFAULT)}


def _tutorial_scope(over: pd.Series, wave) -> str:
    """Where the tutorial's width was timed: the companion's shapes or the run's own few."""
    shapes = f"{len(over)} shape{'s' if len(over) != 1 else ''}"
    return (f"{TUTORIAL} (the tutorial's), {shapes} of the companion run" if wave is not None else
            f"{TUTORIAL} (the tutorial's), the {shapes} this run timed it at")


def _faster(over: pd.Series) -> str:
    return f"LDS time / register time {_span(over)}, register faster at {int((over > 1).sum())} of {len(over)} shapes"


def register_verdicts(df: pd.DataFrame, wave: pd.DataFrame | None = None) -> list[Verdict]:
    """Register against LDS tiling by time, at the tutorial's WARP = 64 (ours beside it): its
    additional improvement, its speedup varying with the shape, and LDS tiling alone the better at
    some shapes while register tiling pays at others."""
    over = widths(df, wave)
    at64, at32 = over[TUTORIAL], over[OURS]
    scope = _tutorial_scope(at64, wave)
    runs = "" if wave is None else f" (both kernels timed in the companion run {'/'.join(WAVEFRONT_RUN)})"
    more = "" if wave is not None else f"; the run that would judge every shape: {wavefront_command(df)}"
    share = lambda o: rule.by_share(int((o > 1).sum()), len(o))  # noqa: E731 - the claim's test, named once
    adds = Verdict("Register tiling adds to LDS tiling", "\"typically provides additional performance improvements "
                   "beyond LDS tiling\"", share(at64), f"{TUTORIAL}: {_faster(at64)}{runs}" + rule.other_scopes(
                       {TUTORIAL: "", OURS: f"{_faster(at32)}: {share(at32)} by the same rule"}, TUTORIAL) + more,
                   test=f"{scope}; share rule")
    spread = lambda o: o.max() / o.min() > 1 + MATTERS  # noqa: E731
    varies = Verdict("Register tiling's speedup varies with the matrix dimensions", "\"the actual speedup will vary "
                     "based on ... matrix dimensions\"", rule.by_order(spread(at64)) if len(at64) > 1 else
                     rule.NOT_CHECKED, f"{TUTORIAL}: LDS time / register time {_span(at64)} across {len(at64)} shapes"
                     + rule.other_scopes({TUTORIAL: "", OURS: f"{_span(at32)} across {len(at32)} shapes"}, TUTORIAL),
                     test=f"{scope}; order rule: varies when the ratio spans more than {100 * MATTERS:.0f} %")
    sides = lambda o: (int((o < 1 - MATTERS).sum()), int((o > 1 + MATTERS).sum()))  # noqa: E731 - (LDS, register)

    def both(o: pd.Series) -> str:
        lds, reg = sides(o)
        return (f"LDS tiling alone faster by more than {100 * MATTERS:.0f} % at {lds} of {len(o)} shapes, "
                f"register tiling at {reg}")

    alone = Verdict("Some workloads do better with LDS tiling alone, others with register tiling", "\"some "
                    "applications may benefit more from LDS tiling alone, while others justify the added complexity "
                    "of register tiling\"", rule.by_order(min(sides(at64)) > 0) if len(at64) else rule.NOT_CHECKED,
                    f"{TUTORIAL}: {both(at64)}" + rule.other_scopes({TUTORIAL: "", OURS: both(at32)}, TUTORIAL),
                    test=f"{scope}; an existence, order rule: yes where each side is faster by more than "
                         f"{100 * MATTERS:.0f} % at one shape or more, else no")
    return [adds, varies, alone]


def naive_scaling(df: pd.DataFrame) -> Verdict:
    """"As you increase the matrix size, the caches will become incapable ... causing significant
    delays": naive's GFLOP/s at each family's largest size over at its smallest; the claim holds
    in a family where it falls by more than MATTERS."""
    rates = step_values(df, "gflops_median").get("naive", pd.Series(dtype=float))
    change = {}
    for name, dim, _ in FAMILIES:
        cut = family(rates, name)
        cut = cut[[aligned(int(x)) for x in cut.index]]  # one past a tile multiple differs for other reasons
        if len(cut) > 1:
            change[name] = float(cut[cut.index.max()] / cut[cut.index.min()])
    return Verdict("Naive slows down as the matrices outgrow the caches", "\"as you increase the matrix size, the "
                   "caches will become incapable ... causing significant delays\"",
                   rule.by_share(sum(r < 1 - MATTERS for r in change.values()), len(change)),
                   "naive GFLOP/s at the largest aligned size / at the smallest: " +
                   "; ".join(f"{name} {r:.2f}" for name, r in change.items()) + " (the data does leave the caches: "
                   "naive's DRAM reads above)",
                   test=f"kernel scope, {len(change)} shape families; share rule; a delay: GFLOP/s down more than "
                        f"{100 * MATTERS:.0f} %")


def naive_verdicts(df: pd.DataFrame) -> list[Verdict]:
    """The naive kernel's result correct (every point verified against float64) and its
    performance not ideal (under half of cuBLAS's GFLOP/s)."""
    rows = _plain(df[df.variant == STEPS[0][0]])
    rows = rows[rows.params == STEPS[0][1]]
    good = rows[(rows.status == "ok") & (rows.err_bound_ratio <= 1)] if "err_bound_ratio" in rows else rows[:0]
    everything = _plain(df)
    try:
        pct = percent_of_cublas(ok_rows(df)).get("naive", pd.Series(dtype=float))
    except ResultsError:
        pct = pd.Series(dtype=float)
    return [Verdict("The naive kernel's result is correct", "\"the naive implementation produces the correct result\"",
                    rule.by_share(len(good), len(rows)),
                    f"{len(good)} of {len(rows)} naive points verified against float64 (error at most "
                    f"{rows.err_bound_ratio.max() if len(rows) else np.nan:.2f} of the bound); of every kernel: "
                    f"{int((everything.status == 'ok').sum())} of {len(everything)}",
                    test=f"kernel scope, {len(rows)} shapes; share rule"),
            Verdict("The naive kernel's performance is not ideal", "\"the resulting performance is not ideal\"",
                    rule.by_share(int((pct < 50).sum()), len(pct)),
                    f"naive GFLOP/s {_span(pct)} % of cuBLAS's over {len(pct)} shapes",
                    test=f"kernel scope, {len(pct)} shapes; share rule; not ideal: under 50 % of cuBLAS (ours)")]


def lds_speed_verdicts(df: pd.DataFrame) -> list[Verdict]:
    """LDS tiling against naive: faster, by a speedup that depends on the shape; the tutorial's
    "significant" speedups are AMD's (not testable on this GPU: the H100's are other evidence)."""
    lds = speedups(df).get(STEPS[1][2], pd.Series(dtype=float))
    scope = f"kernel scope, {len(lds)} shapes"
    return [Verdict("LDS tiling improves on naive", "\"LDS tiling is an effective way to ... improve performance\"",
                    rule.by_share(int((lds > 1).sum()), len(lds)),
                    f"naive time / LDS time {_span(lds)}; faster at {int((lds > 1).sum())} of {len(lds)} shapes",
                    test=f"{scope}; share rule"),
            Verdict("Tiling's speedup depends on the matrix dimensions", "\"performance improvements with tiling "
                    "depend on the specific GPU architecture and matrix dimensions\"",
                    rule.by_order(lds.max() / lds.min() > 1 + MATTERS) if len(lds) > 1 else rule.NOT_CHECKED,
                    f"LDS tiling's speedup over naive {_span(lds)} across {len(lds)} shapes",
                    test=f"{scope}; order rule: depends when the speedup spans more than {100 * MATTERS:.0f} %"),
            Verdict("The gains of tiling depend on the GPU architecture", "\"depend on the specific GPU "
                    "architecture\"; register tiling's \"actual speedup will vary based on GPU architecture\"",
                    rule.NOT_TESTABLE,
                    "one GPU here; what would test it: `mmbench run --config configs/amd-tiling.toml` (and the "
                    "WARP = 64 companion) on another GPU, the speedups compared shape by shape; an AMD GPU needs "
                    "the three kernels in HIP (mmbench runs CUDA only)", test="one GPU"),
            Verdict("LDS tiling's speedups over naive are significant on AMD GPUs", "\"significant speedups over the "
                    "naive implementation are commonly observed on AMD GPUs\"", rule.NOT_TESTABLE,
                    "a claim about AMD's GPUs; what would test it: the three kernels in HIP on an AMD GPU" +
                    rule.other_scopes({"AMD": "", "this H100": f"naive time / LDS time {_span(lds)}, at least "
                                       f"{SIGNIFICANT} x (our 'significant') at {int((lds >= SIGNIFICANT).sum())} of "
                                       f"{len(lds)} shapes"}, "AMD"), test="AMD's GPUs, not this one")]


def _pairs(df: pd.DataFrame, kernels) -> list[tuple]:
    """(kernel, family, aligned size, GFLOP/s one past it / at it) for each (variant, params, name)
    kernel at every aligned size of a family whose size + 1 was timed too."""
    plain = _plain(ok_rows(df))
    out = []
    for v, p, name in kernels:
        rates = by_shape(plain, "gflops_median", variant=v, params=p)
        for fam, _, _ in FAMILIES:
            cut = family(rates, fam)
            out += [(name, fam, int(s), float(cut[s + 1] / cut[s])) for s in cut.index
                    if aligned(int(s)) and s + 1 in cut.index]
    return out


def alignment_verdict(df: pd.DataFrame, wave: pd.DataFrame | None = None) -> Verdict:
    """"The effectiveness of tiling depends on how well the matrix dimensions align with tile sizes":
    the tutorial's two tiled kernels' GFLOP/s one past an aligned size over at it (a nearly empty last
    tile), at WARP = 64 (the companion, both kernels in one run); the claim holds at a pair where the
    rate moves by more than MATTERS."""
    tiled = ((STEPS[1][0], STEPS[1][1], "LDS tiling"), ("register_tiling", REGISTER_WAVEFRONT, f"register {TUTORIAL}"))
    pairs = _pairs(df if wave is None else wave, tiled)
    ours = _pairs(df, (("register_tiling", REGISTER_DEFAULT, "register"),))
    naive = _pairs(df, (STEPS[0],))
    moved = lambda ps: sum(abs(r - 1) > MATTERS for *_, r in ps)  # noqa: E731
    text = lambda ps, name: (f"{name}: {_span(pd.Series([r for n, *_, r in ps if n == name]))}, "  # noqa: E731
                             f"{moved([q for q in ps if q[0] == name])} of {sum(q[0] == name for q in ps)} pairs moved")
    worst = min(pairs, key=lambda q: q[3], default=None)
    most = f" (the most: {worst[0]}, {worst[1]} {worst[2]} to {worst[2] + 1}, {worst[3]:.2f})" if worst else ""
    return Verdict("Effectiveness depends on alignment with the tile sizes", "\"the effectiveness of tiling depends "
                   "on how well the matrix dimensions align with tile sizes\"", rule.by_share(moved(pairs), len(pairs)),
                   "GFLOP/s one past an aligned size / at it: " + "; ".join(text(pairs, n) for _, _, n in tiled) + most
                   + rule.other_scopes({TUTORIAL: "", OURS: text(ours, "register") if ours else "-"}, TUTORIAL)
                   + (f"; naive (no tiles) moves too, {text(naive, 'naive').removeprefix('naive: ')}, so a speedup "
                      "over naive is no reading of the tiles' alignment" if naive else ""),
                   test=f"the tutorial's tiled kernels (register at {TUTORIAL}), {len(pairs)} aligned / one-past "
                        f"pairs; share rule; depends: GFLOP/s moves more than {100 * MATTERS:.0f} %")


def _tile_bytes(params: dict) -> int:
    """register_tiling's shared memory: A's tile (padded by APAD) and B's, in floats of 4 bytes."""
    bm = params["BWM"] * (params["WARP"] // params["WTN"]) * params["TM"]
    bn = params["BWN"] * params["WTN"] * params["TN"]
    return 4 * (bm * (params["KT"] + params["APAD"]) + params["KT"] * bn)


def _compiled(meta: dict, variant: str) -> dict[str, dict]:
    """The run's compiled kernels of one variant: parameters text -> their ptxas record (metadata)."""
    return {k[len(variant) + 1:-1]: v for k, v in (meta.get("kernels") or {}).items() if k.startswith(f"{variant}[")}


def tile_fit(meta: dict) -> Verdict:
    """"Larger tiles may not fit in available LDS space": our arithmetic (the registry's rule) against
    the per-block limit in the metadata; the run's own tiles checked against ptxas's count."""
    variant = REGISTRY["register_tiling"]
    limit = (meta.get("gpu") or {}).get("max_shared_per_block")
    names = sorted(variant.space)
    space = [tuple(zip(names, combo)) for combo in itertools.product(*(variant.space[n] for n in names))]
    rule_of = next(c for c in variant.constraints if "48 * 1024" in c)  # the shared-memory rule
    left_out = [dict(p) for p in space if variant.violated(p) == [rule_of]]
    run = {p: r.get("ptxas_shared_bytes", r.get("shared_bytes")) for p, r in _compiled(meta, "register_tiling").items()}
    agrees = all(_tile_bytes({k: int(v) for k, v in (i.split("=") for i in p.split(","))}) == b for p, b in run.items())
    first = min(left_out, key=_tile_bytes, default=None)
    return Verdict("Larger tiles may not fit in LDS", "\"larger tiles may not fit in available LDS space\"",
                   rule.BY_CONSTRUCTION,
                   f"register tiling's shared memory is 4 (BM (KT + APAD) + KT BN) bytes, BM x BN its block tile"
                   + (f" (ptxas's count for all {len(run)} register tiles compiled in this run)" if run and agrees else
                      " (ptxas disagrees for some tile of this run)" if run else "")
                   + f"; the per-block limit of static shared memory is {f'{limit:,} B' if limit else 'unknown'} on "
                   "this GPU (metadata) and "
                   f"the registry leaves out the {len(left_out)} tiles of the parameter space past 48 KiB that break "
                   f"no other rule ({sum(p['WARP'] == 64 for p in left_out)} at WARP = 64)"
                   + (f", the smallest of them {_tile_bytes(first):,} B" if first else "")
                   + (f"; the run's tiles need {min(run.values()):,} to {max(run.values()):,} B, none past it"
                      if run else ""),
                   test="our arithmetic against the GPU's per-block limit")


def tuning_verdict(df: pd.DataFrame) -> Verdict:
    """"Requiring careful tuning of tile dimensions": at each shape of the tile sweep (WARP = 32, ours),
    the best tile beats the tutorial's 4 x 4, KT = 16 by more than MATTERS."""
    default = _config("register_tiling", REGISTER_DEFAULT)
    # the tiles the rules allow at 256 threads (TN = 2 needs KT >= 16 for even loads of B), in two runs
    sweep = " and ".join(f"`mmbench run -v register_tiling --params WARP=64,TM=2/4/8,{p} --sizes "
                         "2048,2049,8192x512x2048`" for p in ("TN=4/8,KT=8/16/32", "TN=2,KT=16/32"))
    try:
        tiles = tile_table(df)
    except ResultsError:
        return Verdict("Tile sizes need tuning", "\"requiring careful tuning of tile dimensions\"", rule.NOT_CHECKED,
                       "no tile-size sweep in these results")
    best = tiles.idxmax()
    gain = {s: tiles[s].max() / tiles[s].get(default, np.nan) for s in tiles.columns}
    wide = _config("register_tiling", REGISTER_WAVEFRONT)
    text = "; ".join(f"{shape}: best {best[shape]} ({tiles[shape].max():.0f} GFLOP/s), the tutorial's tile "
                     f"{tiles[shape].get(default, np.nan):.0f}" for shape in tiles.columns)
    over = pd.Series({s: tiles[s].max() / tiles[s][wide] for s in tiles.columns}) if wide in tiles.index else None
    at64 = "-" if over is None else (f"the tutorial's tile {', '.join(f'{tiles[s][wide]:.0f}' for s in tiles.columns)}"
                                     f" GFLOP/s, the best swept tile {_span(over)} x it")
    return Verdict("Tile sizes need tuning", "\"requiring careful tuning of tile dimensions\"",
                   rule.by_share(sum(g > 1 + MATTERS for g in gain.values()), len(gain)),
                   text + rule.other_scopes({OURS: "", TUTORIAL: at64}, OURS)
                   + f"; the run that would sweep the tiles at {TUTORIAL}: {sweep}",
                   test=f"{OURS} (ours: the tile sweep's), {len(gain)} shapes; share rule; tuning pays: the best tile "
                        f"more than {100 * MATTERS:.0f} % over the tutorial's")


def design_verdicts(meta: dict) -> dict[str, Verdict]:
    """The tutorial's descriptions of its kernels and of the product, true of ours by construction
    (kernels/gemm/*.cu are its code, with the additions under the departures), by the tutorial's step."""
    kernels = meta.get("kernels") or {}
    rec = lambda v, p: kernels.get(f"{v}[{p}]") or {}  # noqa: E731 - a compiled kernel's ptxas record

    def regs(params: str) -> str:
        r = rec("register_tiling", params)
        return f"{r.get('registers', '?')} registers, {r.get('ptxas_spill_store_bytes', '?')} B spilled"

    return {
        "product": Verdict("C is m x n, each element the sum of k products of a row of A and a column of B",
                           "\"each element in C is the sum of the k multiplications\" (and the figure)",
                           rule.BY_CONSTRUCTION, "the float64 reference computes exactly this, and every point is "
                           "checked against it", test="the harness's reference"),
        "naive": Verdict("Naive: a thread an output, m x n threads each looping k times, every input element read "
                         "by many threads of different wavefronts, all reads from the memory system",
                         "\"a total of m × n threads, with each traversing a loop of k iterations\"; \"the same data "
                         "item must be accessed by multiple threads from different wavefronts\"", rule.BY_CONSTRUCTION,
                         "kernels/gemm/naive.cu is the tutorial's kernel: an element of A is read by the n threads of "
                         f"its row, of B by the m of its column; shared memory "
                         f"{rec(*STEPS[0][:2]).get('shared_bytes', '?')} B (ptxas)", test="the kernel's code"),
        "lds": Verdict("LDS tiling: the workgroup loads a tile of A and of B into LDS, multiplies them and moves "
                       "along k, barriers before and after the inner loop; the workgroup matches the tile; naive's "
                       "interface", "\"tiling methods use all threads from a workgroup to collectively process parts "
                       "of the data\"; \"the workgroup size must match the tile size\"", rule.BY_CONSTRUCTION,
                       "kernels/gemm/shared.cu is the tutorial's kernel: 16 x 16 threads, two 16 x 16 float tiles = "
                       f"{rec(*STEPS[1][:2]).get('shared_bytes', '?')} B of shared memory (ptxas)",
                       test="the kernel's code"),
        "register": Verdict("Register tiling: a thread computes a 4 x 4 tile of C, loading cooperatively into LDS, "
                            "then into registers, accumulating in registers", "\"each thread computes a small tile "
                            "of output elements (typically 4 × 4)\"; \"register-based accumulation\"",
                            rule.BY_CONSTRUCTION, "kernels/gemm/register_tiling.cu is the tutorial's kernel: a k-step "
                            "reads 4 + 4 floats from LDS for 16 multiply-adds; "
                            f"{TUTORIAL}: {regs(REGISTER_WAVEFRONT)}; {OURS}: {regs(REGISTER_DEFAULT)} (ptxas)",
                            test="the kernel's code"),
    }


def untested() -> dict[str, Verdict]:
    """The tutorial's claims no run of mmbench can judge, each with what would test it, by the
    tutorial's step."""
    nt = rule.NOT_TESTABLE
    return {
        "dnn": Verdict("Matrix multiplication is among the most important GPU workloads, the costliest layers of "
                       "DNNs", "introduction", nt, "context, not a measurement; what would test it: a profile of DNN "
                       "training or inference by layer (not a GEMM benchmark)", test="context, not a run"),
        "recast": Verdict("Recasting a problem as matrix multiplication can beat its iterative version",
                          "introduction", nt, "what would test it: one problem solved both ways on one GPU (not in "
                          "mmbench)", test="context, not a run"),
        "l1": Verdict("LDS is effectively a programmable L1 cache", "\"GPUs provide Local Data Store (LDS) memory, "
                      "which is effectively a programmable L1 cache\"", nt, "a statement of the architecture, not a "
                      "measurement (on the H100 shared memory and L1 are one on-chip memory split by a carveout, by "
                      "NVIDIA's documents); what would test it: a microbenchmark of LDS against L1 latency and "
                      "bandwidth (not in mmbench)", test="the architecture, not a run"),
        "complexity": Verdict("LDS tiling's complexity lies mainly in its index calculation and boundary checks",
                              "\"the complexity of the implementation mainly comes from the index calculation and "
                              "boundary checking\"", nt, "a judgement of the source, not of its run; what would test "
                              "it: none by timing", test="the source, not a run"),
        "faster": Verdict("Register access is significantly faster than shared-memory access", "\"register access "
                          "is significantly faster than shared memory access\"", nt, "a property of the hardware, not "
                          "of these kernels (their times mix both); what would test it: a microbenchmark of dependent "
                          "register and shared-memory reads (not in mmbench)", test="the hardware, not these kernels"),
        "ilp": Verdict("Register tiling achieves better instruction-level parallelism", "\"better instruction-level "
                       "parallelism can be achieved\"", nt, "no counter here measures ILP (instructions issued a cycle "
                       "do not); what would test it: the stalls on a dependency per issued instruction of both "
                       "kernels (Nsight Compute's smsp__average_warps_issue_stalled_wait_per_issue_active and "
                       "_short_scoreboard_per_issue_active, not among mmbench profile's metrics); the code gives a "
                       "thread 16 independent multiply-adds a k-step against LDS tiling's one chain (by construction)",
                       test="no counter of ILP"),
        "resources": Verdict("Effectiveness depends on alignment with the GPU's compute-unit resources",
                             "\"... and GPU compute unit resources\"", nt, "the shapes here were not chosen to "
                             "fill or miss the SMs; what would test it: m in steps of one block tile, across whole "
                             "and partial waves of blocks over the SMs: `mmbench run -v shared,register_tiling "
                             "--params BLOCK=16,WARP=64 --sizes [1024:8192:+128]x[1024]x[1024]`",
                             test="no sweep across waves of the SMs"),
        "amd": Verdict("AMD architectures' LDS capacity and registers change the best tile sizes", "\"different AMD "
                       "GPU architectures have varying LDS capacities and register availability, affecting optimal "
                       "tile sizes\"", nt, "a claim about AMD's GPUs; what would test it: the tile sweep in HIP on "
                       "AMD GPUs of different LDS sizes; its NVIDIA counterpart: the tile sweep "
                       "(configs/amd-tiling.toml) on GPUs of different shared memory", test="AMD's GPUs, not this one"),
    }


# The tutorial's profile claims, judged from Nsight Compute's counts (`mmbench profile`)
PROFILE = "`mmbench profile --config configs/amd-tiling.toml --points 1024,4096 -v naive,shared,register_tiling,cublas " \
          "--results results/amd-tiling-h100/amd-tiling-h100.csv`"
# ... and register tiling at the tutorial's width beside LDS tiling, from the companion run
WAVE_PROFILE = "`mmbench profile -v register_tiling,shared --points 1024,4096 --results " \
               "results/amd-tiling-h100/warp64/amd-tiling-warp64.csv`"


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


def _share(flags) -> str:
    """rule.by_share over a list of booleans (one a shape, or a shape and level)."""
    flags = list(flags)
    return rule.by_share(sum(flags), len(flags))


def _shapes(rows: pd.DataFrame) -> str:
    return f"{len(rows)} profiled shape{'s' if len(rows) != 1 else ''}"


def register_pairs(profile: pd.DataFrame | None, wave_profile: pd.DataFrame | None) -> dict[str, tuple]:
    """{width: (LDS tiling's rows, register tiling's rows)} at the shapes both were profiled: the
    tutorial's WARP = 64 against the LDS rows of the companion's profile (else of the run's own),
    WARP = 32 against LDS in the reference run's profile."""
    out = {}
    for width, params in ((TUTORIAL, REGISTER_WAVEFRONT), (OURS, REGISTER_DEFAULT)):
        prof = wave_profile if width == TUTORIAL and wave_profile is not None else profile
        lds, reg = _kernel(prof, STEPS[1][0], STEPS[1][1]), _kernel(prof, "register_tiling", params)
        both = lds.index.intersection(reg.index) if len(lds) and len(reg) else []
        if len(both):
            out[width] = (lds.loc[both], reg.loc[both])
    return out


def _unprofiled(finding: str, paper: str, command: str = PROFILE) -> Verdict:
    return Verdict(finding, paper, rule.NOT_CHECKED, "needs Nsight Compute's counts beside the run: " + command)


def flop_count(profile: pd.DataFrame | None, wave_profile: pd.DataFrame | None) -> Verdict:
    """"A total of 2 x m x n x k operations": arithmetic (a multiply and an add for each of the mnk
    products), so by construction; Nsight Compute's FP32 operations (two an FFMA) of the tutorial's
    three kernels (register tiling at WARP = 64) are the check that the kernels do no more."""
    wide = wave_profile if wave_profile is not None else profile
    kernels = [(name, _kernel(prof, v, p)) for prof, v, p, name in (
        (profile, *STEPS[0][:2], "naive"), (profile, *STEPS[1][:2], "LDS"),
        (wide, "register_tiling", REGISTER_WAVEFRONT, f"register {TUTORIAL}"),
        (profile, "register_tiling", REGISTER_DEFAULT, f"register {OURS}"), (profile, *CUBLAS))]
    ratio = lambda r, s: r.fp32_flops / (2 * s[0] * s[1] * s[2])  # noqa: E731
    counted = "; ".join(f"{name} " + ", ".join(f"{_shape(s)} {ratio(r, s):.4f}" for s, r in rows.iterrows())
                        for name, rows in kernels if len(rows))
    return Verdict("A product is 2 x m x n x k operations", "\"theoretically, a total of 2 × m × n × k operations "
                   "are required\"", rule.BY_CONSTRUCTION, "a multiply and an add for each of the mnk products; the "
                   "GFLOP/s here are 2mnk over the time; " + (f"Nsight Compute's FP32 operations / 2mnk: {counted}"
                                                              if counted else f"Nsight Compute's count would check "
                                                              f"it: {PROFILE}"), test="arithmetic; the count a check")


def naive_profile_verdicts(profile: pd.DataFrame | None, meta: dict) -> list[Verdict]:
    """Naive's DRAM bytes read over the inputs' bytes, 4(mk + kn): "several times" is a factor, read as
    SEVERAL and judged at each shape by rule.by_factor, the claim holding at a shape where that says yes
    (past the square root of SEVERAL), the shapes by the share rule; and the caches' (L1, L2) traffic over
    the same bytes, inordinate where >= SEVERAL (a line: "inordinate" names no factor)."""
    dram = ("Profiling shows naive reading DRAM several times the inputs' size", "\"reads from the GPU's DRAM "
            "several times more often than the combined size of the input matrices\"")
    cache = ("Naive's repeated reads put inordinate pressure on the caches", "\"places inordinate memory pressure on "
             "the caches\"")
    naive = _kernel(profile, *STEPS[0][:2])
    if naive.empty:
        return [_unprofiled(*dram), _unprofiled(*cache)]
    inputs = {s: 4 * (s[0] * s[2] + s[2] * s[1]) for s in naive.index}
    times = {s: r.dram_bytes_read / inputs[s] for s, r in naive.iterrows()}
    levels_ = {(s, lv): r[f"{lv}_bytes"] / inputs[s] for s, r in naive.iterrows() for lv in ("l1", "l2")}
    factor = {s: rule.by_factor(v, SEVERAL) for s, v in times.items()}  # the factor rule at each shape
    return [Verdict(*dram, _share(f == rule.YES for f in factor.values()),
                    "naive's DRAM bytes read / the inputs' 4(mk + kn): " + "; ".join(
                        f"{_shape(s)} {v:.4g} x ({_where(s, meta)}; {factor[s]} by the factor rule)"
                        for s, v in times.items()) + "; caches flushed before the kernel",
                    test=f"kernel scope, {_shapes(naive)}; factor rule at each shape (several: a factor of "
                         f"{SEVERAL:g}, ours; yes past {SEVERAL ** 0.5:.2f} x), then share rule over the shapes "
                         "(a shape holds where the factor rule says yes)"),
            Verdict(*cache, _share(v >= SEVERAL for v in levels_.values()),
                    "naive's bytes through each cache / the inputs' bytes: " + "; ".join(
                        f"{_shape(s)} {NAMES[lv].split(' (')[0]} {v:.0f} x" for (s, lv), v in levels_.items())
                    + "; hit rates L1 / L2: " + "; ".join(f"{_shape(s)} {r.l1_hit_pct:.0f} / {r.l2_hit_pct:.0f} %"
                                                           for s, r in naive.iterrows()),
                    test=f"kernel scope, L1 and L2 at {_shapes(naive)}; share rule; inordinate: traffic at least "
                         f"{SEVERAL:g} x the inputs (ours)")]


def lds_traffic(profile: pd.DataFrame | None, meta: dict) -> list[Verdict]:
    """LDS tiling against naive: global memory access (the bytes global loads move through L1)
    falling at least REDUCES times ("dramatically"), L2 beside it; and DRAM bytes falling by more
    than MATTERS where the operands outgrow the L2 (below it both kernels read each byte once)."""
    g = ("LDS tiling dramatically reduces global memory access", "\"uses LDS memory to dramatically reduce global "
         "memory access\"")
    d = ("LDS tiling reduces DRAM access", "\"LDS tiling is an effective way to reduce DRAM access\"")
    naive, lds = _kernel(profile, *STEPS[0][:2]), _kernel(profile, *STEPS[1][:2])
    both = naive.index.intersection(lds.index) if len(naive) and len(lds) else []
    if not len(both):
        return [_unprofiled(*g), _unprofiled(*d)]
    fall = lambda s, col: naive.at[s, col] / lds.at[s, col]  # noqa: E731 - naive's count / LDS tiling's
    past = [s for s in both if past_l2(s, meta)]
    return [Verdict(*g, _share(fall(s, "l1_bytes") >= REDUCES for s in both),
                    "naive's L1 bytes (global loads and stores) / LDS tiling's: " + "; ".join(
                        f"{_shape(s)} {fall(s, 'l1_bytes'):.2f} x" for s in both) + "; global load requests: " +
                    "; ".join(f"{_shape(s)} {fall(s, 'global_ld_requests'):.1f} x" for s in both) + rule.other_scopes(
                        {"L1": "", "L2": "; ".join(f"{_shape(s)} {fall(s, 'l2_bytes'):.2f} x" for s in both)}, "L1"),
                    test=f"kernel scope, global memory (L1) at {len(both)} profiled shapes; share rule; dramatic: at "
                         f"least {REDUCES:g} x fewer bytes"),
            Verdict(*d, _share(fall(s, "dram_bytes") > 1 + MATTERS for s in past),
                    "naive's DRAM bytes / LDS tiling's: " + "; ".join(f"{_shape(s)} {fall(s, 'dram_bytes'):.2f} x "
                                                                     f"({_where(s, meta)})" for s in both),
                    test=f"kernel scope, DRAM at the {len(past)} profiled shape{'s' if len(past) != 1 else ''} past "
                         f"the L2 (below it every kernel reads its inputs once); share rule; reduced: more than "
                         f"{100 * MATTERS:.0f} % fewer bytes")]


def _at_widths(claim: tuple, pairs: dict[str, tuple], held, text, threshold: str) -> Verdict:
    """A register-against-LDS profile claim judged at the tutorial's WARP = 64, ours beside it:
    held(lds row, register row, shape) -> the claim's flags there, text(...) -> its numbers."""
    def at(width):
        lds, reg = pairs[width]
        flags = [f for s in lds.index for f in held(lds.loc[s], reg.loc[s], s)]
        return flags, ", ".join(f"{_shape(s)} {text(lds.loc[s], reg.loc[s])}" for s in lds.index)

    extra = {width: f"{at(width)[1]} ({_share(at(width)[0])} by the same rule)" for width in pairs if width != TUTORIAL}
    if TUTORIAL not in pairs:
        return Verdict(*claim, rule.NOT_CHECKED, f"needs register tiling at {TUTORIAL} profiled beside LDS tiling: "
                       + WAVE_PROFILE + rule.other_scopes({TUTORIAL: "", **extra}, TUTORIAL))
    flags, shown = at(TUTORIAL)
    return Verdict(*claim, _share(flags), f"{TUTORIAL}: {shown}" + rule.other_scopes({TUTORIAL: "", **extra}, TUTORIAL),
                   test=f"{TUTORIAL} (the tutorial's), {_shapes(pairs[TUTORIAL][0])}; share rule; {threshold}")


def register_profile_verdicts(pairs: dict[str, tuple], meta: dict) -> list[Verdict]:
    """Register tiling against LDS tiling in the profiles, at the tutorial's width (ours beside it):
    memory traffic, shared-memory reads, bank conflicts and barrier stalls."""
    levels_ = ("l1", "l2", "dram")
    conflicts = lambda r: r.shared_ld_conflicts + r.shared_st_conflicts  # noqa: E731 - a column sum, named
    return [
        _at_widths(("Register tiling further reduces memory traffic (L1, L2, DRAM)", "\"register tiling further "
                    "reduces memory traffic by keeping frequently accessed data in thread-local registers\""), pairs,
                   lambda a, b, s: [a[f"{lv}_bytes"] / b[f"{lv}_bytes"] > 1 + MATTERS for lv in levels_
                                    if lv != "dram" or past_l2(s, meta)],
                   lambda a, b: "L1 / L2 / DRAM " + " / ".join(f"{a[f'{lv}_bytes'] / b[f'{lv}_bytes']:.2f}"
                                                              for lv in levels_) + " x fewer",
                   f"reduced: more than {100 * MATTERS:.0f} % fewer bytes at L1 and L2, at DRAM past the L2 only"),
        _at_widths(("Register tiling eliminates many shared-memory reads", "\"eliminates the need for many shared "
                    "memory reads within the inner computation loop\""), pairs,
                   lambda a, b, s: [a.shared_ld_inst / b.shared_ld_inst >= REDUCES],
                   lambda a, b: f"{a.shared_ld_inst / b.shared_ld_inst:.1f} x fewer shared loads, shared bytes "
                                f"{a.shared_bytes / b.shared_bytes:.1f} x fewer",
                   f"many: at least {REDUCES:g} x fewer shared-load instructions"),
        _at_widths(("Register tiling avoids bank conflicts", "\"each thread has private registers eliminating bank "
                    "conflicts\""), pairs, lambda a, b, s: [conflicts(b) < conflicts(a)],
                   lambda a, b: f"conflicts per shared load {a.conflicts_per_shared_ld:.4f} (LDS) against "
                                f"{b.conflicts_per_shared_ld:.2f}, all conflicts "
                                f"{conflicts(b) / conflicts(a):.1f} x LDS's",
                   "avoided: fewer shared-memory bank conflicts than LDS tiling (the kernel's; registers have none "
                   "to count)"),
        _at_widths(("Register tiling reduces synchronization overhead", "\"synchronization overhead between threads is "
                    "reduced\""), pairs,
                   lambda a, b, s: [b.barrier_stall_per_issue < (1 - MATTERS) * a.barrier_stall_per_issue],
                   lambda a, b: f"warps at a barrier per issued instruction {a.barrier_stall_per_issue:.2f} (LDS) "
                                f"against {b.barrier_stall_per_issue:.2f}",
                   f"reduced: barrier stalls more than {100 * MATTERS:.0f} % fewer"),
    ]


def claims(df: pd.DataFrame, meta: dict, wave: pd.DataFrame | None = None, profile: pd.DataFrame | None = None,
           wave_profile: pd.DataFrame | None = None) -> list[Verdict]:
    """Every claim of the tutorial, in its order: judged from the run (every row, failed ones too),
    its WARP = 64 companion `wave` and the two profiles where there are, else not checked with the
    run that would judge it; by construction or not testable here where no run can."""
    ok = ok_rows(df)
    design, nt = design_verdicts(meta), untested()
    reads, adds = naive_verdicts(df), register_verdicts(ok, wave)
    lds = lds_speed_verdicts(ok)
    dram, pressure = naive_profile_verdicts(profile, meta)
    glob, lds_dram = lds_traffic(profile, meta)
    traffic, shared, banks, sync = register_profile_verdicts(register_pairs(profile, wave_profile), meta)
    return [nt["dnn"], nt["recast"], design["product"], flop_count(profile, wave_profile), design["naive"],
            *reads, dram, pressure, naive_scaling(ok), nt["l1"], design["lds"], glob, nt["complexity"], lds_dram,
            *lds, traffic, shared, design["register"], nt["faster"], banks, sync, nt["ilp"], adds[0], adds[1],
            alignment_verdict(ok, wave), nt["resources"], tile_fit(meta), tuning_verdict(ok), nt["amd"], adds[2]]


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
        return (f"over the {len(at64)} shapes the committed run measured it at (the tile sweep's). The run that "
                "would judge WARP = 64 at every shape, its rows added to this run's CSV: " + wavefront_command(df)
                + ".")
    at64 = register_over_lds(wave.df, REGISTER_WAVEFRONT)
    lds = shape_ratio(by_shape(_plain(ok_rows(wave.df)), variant=STEPS[1][0], params=STEPS[1][1]),
                      by_shape(_plain(df), variant=STEPS[1][0], params=STEPS[1][1]))
    ws = wave.meta.get("settings") or {}
    return (f"over the {len(at64)} shapes of the companion run "
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
        "WARP = 64 and its LDS comparison from the companion's own profile (same settings). \"Global memory "
        "access\" is read at L1 (the bytes global loads and stores move there), \"bank conflicts\" as Nsight "
        "Compute's shared-memory data-bank conflicts (extra wavefronts a shared load or store needed), "
        "\"synchronization overhead\" as warps waiting at a barrier per issued instruction; no counter here reads "
        "instruction-level parallelism (instructions issued a cycle do not). DRAM reductions are judged only past the "
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
        "- **Register tiling is judged at the tutorial's WARP = 64**, " + widths + " NVIDIA's WARP = 32 (the "
        "study's default, its figures and its tile sweep) is given beside each verdict as other evidence, never the "
        "verdict; the tile sweep ran at WARP = 32 only, so the tuning claim is judged there and says so.",
        "- **The shapes** (families along m, n and k around 1024, aligned to 64 and one past) are ours: the tutorial "
        "gives no sizes.",
        f"- **Thresholds**: the outcomes follow mmbench/studies/rule.py (over shapes: {rule.SHARE_RULE}; a "
        f"factor: {rule.FACTOR_RULE}; a dependence or an existence: {rule.ORDER_RULE}); the lines a shape is held "
        f"to are ours: a dependence (on shape or alignment), a reduction or a tuning gain counts above "
        f"{100 * MATTERS:.0f} %; \"not ideal\" is under 50 % of cuBLAS; \"several times\" is a factor of "
        f"{SEVERAL:g} (the factor rule: yes past {SEVERAL ** 0.5:.2f} x the inputs' bytes) and \"inordinate\" cache "
        f"traffic at least {SEVERAL:g} x them; "
        f"\"dramatically\" and \"many\" at least {REDUCES:g} x fewer; operation counts equal within 0.1 %; "
        f"\"significant\" (AMD's, other evidence here) at least {SIGNIFICANT} x naive.",
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
    judged = claims(df, meta, None if wave is None else ok_rows(wave.df), profile, wave_profile)
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
        "Every claim of the tutorial, in its order. A register-tiling claim is judged at the tutorial's WARP = 64 "
        "(\"judged by\" says where); WARP = 32, NVIDIA's warp, is other evidence beside it. A claim about AMD's GPUs "
        "or the hardware itself is not testable on this GPU and says what would test it.",
        "",
        *verdict_table(judged),
        "",
        rule.claims_line(v.holds for v in judged),
        "",
        "## Where this study departs from the tutorial",
        "",
        *departures(ok, meta, wave, profile_meta),
        "",
        *timing_sections(ok, wave),
        "## Memory hierarchy (Nsight Compute)",
        "",
        *hierarchy_section(hierarchy_profile(profile, wave_profile), meta),
    ]
    return report_text(lines, figures, ALT_TEXT)
