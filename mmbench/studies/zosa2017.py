"""The Zosa 2017 study: REPORT.md with its figures, Table 1 beside the paper's, findings checked.

Each finding of the paper is a function that reads our results and says whether the finding
still holds on this GPU, with the numbers that decide it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from .. import analysis, plots
from ..analysis import Series
from ..results import ResultsError
from .common import Verdict, markdown_table, provenance
from .contract import Figure, FigureFamily

plt = plots.plt  # pyplot as plots loaded it, after choosing the Agg backend

TABLE1_SIZES = [256, 512, 768, 1023, 1024, 1025, 2047, 2048, 2049]
ONE_OUTPUT = ("interleaved", "unroll_k2", "shared", "naive", "shared_uncoalesced")  # one output per thread
FIG1_SIZES = (256, 512, 1024, 2048)  # the paper's block-size comparison (section 2.10)


# -- the paper's series and Table 1 ------------------------------------------------------------------
def best_series(df: pd.DataFrame) -> Series:
    """CUDA-Best at its largest block (the paper's headline version)."""
    candidates = [s for s in analysis.series_list(df) if s.variant == "best"]
    if not candidates:
        raise ResultsError("the results have no CUDA-Best ('best') rows")
    return max(candidates, key=lambda s: s.block or 0)


def table1(df: pd.DataFrame, sizes: list[int]) -> pd.DataFrame:
    """Table 1 of the paper (BLAS vs CUDA-Best GFLOP/s at chosen sizes) with cuBLAS added; the
    columns the results hold (a CPU-only run gives the BLAS column alone)."""
    best = next((s for s in sorted(analysis.series_list(df), key=lambda s: -(s.block or 0)) if s.variant == "best"), None)
    cols = {"BLAS (multicore)": analysis.find(df, "blas"), best.label if best else "": best, "cuBLAS": analysis.find(df, "cublas")}
    out = pd.DataFrame(index=pd.Index(sizes, name="n"))
    for name, s in cols.items():
        if s is not None:
            out[name] = analysis.curve(df, s).reindex(sizes)
    if out.columns.empty:
        raise ResultsError("Table 1 needs BLAS, CUDA-Best ('best') or cuBLAS rows")
    if out.isna().all().all():  # a table of '-' says nothing
        shown = ", ".join(map(str, sizes[:12])) + (f", ... ({len(sizes)} sizes)" if len(sizes) > 12 else "")
        raise ResultsError(f"Table 1 needs {', '.join(out.columns)} rows at its sizes (n = {shown}); "
                           "the results have none there")
    if best and "BLAS (multicore)" in out:
        out[f"{best.label} / BLAS"] = out[best.label] / out["BLAS (multicore)"]
    if best and "cuBLAS" in out:
        out[f"{best.label} / cuBLAS"] = out[best.label] / out["cuBLAS"]
    return out



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
    return plots.fig_curves(df, meta, f"Figure 2: SGEMM performance over {sizes} sizes")


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


def fig_roofline(df: pd.DataFrame, meta: dict, profile: pd.DataFrame | None, size: int | None) -> plt.Figure:
    """Figures 3 and 4 in one, at n = size (default: analysis.roofline_size, the largest profiled
    size where the most series ran), with every operation of the run."""
    return plots.fig_roofline(df, meta, profile, size, title="Figures 3-4: roofline")


# Its reference run in the repository: what a command suggests when no run of the user's will do.
REFERENCE_RUN = "results/zosa2017-h200/zosa2017-h200.csv.gz"

FIGURES = {  # `mmbench plot NAME`; the report embeds them all
    "gflops": FigureFamily("Zosa Figs. 1-2: GFLOP/s by block size, by size", "Figures 1 and 2: GFLOP/s by block size and over all sizes",
                           (Figure("fig1-block-sizes", lambda df, meta, profile, size: fig_block_sizes(df, meta)),
                            Figure("fig2-gflops", lambda df, meta, profile, size: fig_gflops(df, meta)))),
    "roofline": FigureFamily("Zosa Figs. 3-4: roofline, datasheet and measured", "Figures 3 and 4: roofline with datasheet and measured ceilings",
                             (Figure("fig3-4-roofline", fig_roofline),), options=("size",)),
    "speedup": FigureFamily("Zosa Fig. 5: CUDA-Best over BLAS, cuBLAS over it", "Figure 5: CUDA-Best over BLAS, and cuBLAS over CUDA-Best",
                            (Figure("fig5-speedup", lambda df, meta, profile, size: fig_speedup(df, meta)),)),
}


# -- its findings ------------------------------------------------------------------------------------


def needs(*variants: str):
    """Mark a finding with the variants whose rows it compares."""
    def mark(fn):
        fn.needs = variants
        return fn
    return mark


def _share(mask: pd.Series) -> str:
    return f"{int(mask.sum())} of {len(mask)} sizes"


def _gf(df, variant, block=None) -> pd.Series:
    s = analysis.find(df, variant, block)
    return analysis.curve(df, s) if s else pd.Series(dtype=float)


@needs("best")
def larger_blocks_faster(df) -> Verdict:
    curves = {b: _gf(df, "best", b).reindex(list(FIG1_SIZES)) for b in (8, 16, 32)}
    ordered = (curves[8] < curves[16]) & (curves[16] < curves[32])
    detail = "; ".join(f"n={n}: {curves[8][n]:.0f} / {curves[16][n]:.0f} / {curves[32][n]:.0f}" for n in curves[8].index)
    holds = "yes" if ordered.all() else "no" if not ordered.any() else "partly"
    return Verdict("Larger blocks are faster (8x8 < 16x16 < 32x32)", "Figure 1: 32x32 fastest at 256-2048", holds,
                   f"order 8 < 16 < 32 at {_share(ordered)} of Figure 1; GFLOP/s 8 / 16 / 32: {detail}")


@needs("best", *ONE_OUTPUT)
def best_beats_one_output(df) -> Verdict:
    best = pd.concat({b: _gf(df, "best", b) for b in (8, 16, 32)}, axis=1).min(axis=1)
    single = pd.concat({v: _gf(df, v, 32) for v in ONE_OUTPUT}, axis=1).max(axis=1)
    both = best.index.intersection(single.index)
    wins = best[both] > single[both]
    from_n = next((n for n in both if wins[wins.index >= n].all()), None)
    holds = "yes" if wins.all() else "no" if not wins.any() else "partly"
    return Verdict("CUDA-Best at every block size beats every one-output version", "Figure 2, all sizes", holds,
                   f"slowest Best above fastest one-output version at {_share(wins)}"
                   + (f"; at every size from n = {from_n}" if from_n else ""))


@needs(*ONE_OUTPUT)
def interleaved_best_single(df) -> Verdict:
    curves = pd.concat({v: _gf(df, v, 32) for v in ONE_OUTPUT}, axis=1).dropna()
    top = curves.idxmax(axis=1)
    wins = top == "interleaved"
    big = wins[wins.index >= 1024]
    holds = "yes" if wins.all() else "no" if not wins.any() else "partly"
    runner = top[~wins].value_counts()
    return Verdict("CUDA-1IL is the best one-output version", "Figure 2", holds,
                   f"1IL fastest one-output version at {_share(wins)} ({_share(big)} from n = 1024)"
                   + (f"; otherwise {', '.join(f'{v} ({c})' for v, c in runner.items())}" if len(runner) else ""))


@needs("unroll_k2", "shared")
def unroll_adds_little(df) -> Verdict:
    gain = (_gf(df, "unroll_k2", 32) / _gf(df, "shared", 32)).dropna()
    big = gain[gain.index >= 512]
    med = big.median() - 1
    holds = "yes" if 0 <= med <= 0.10 else "no"
    return Verdict("CUDA-C_Unroll adds little over CUDA-1", "about +20 GFLOP/s (~5 %), Figure 2", holds,
                   f"median gain {med:+.1%} for n >= 512 (range {big.min() - 1:+.1%} to {big.max() - 1:+.1%})")


@needs("shared_uncoalesced", "naive")
def uncoalesced_below_naive(df) -> Verdict:
    slower = (_gf(df, "shared_uncoalesced", 32) < _gf(df, "naive", 32)).dropna()
    holds = "yes" if slower.all() else "no" if not slower.any() else "partly"
    ratio = (_gf(df, "shared_uncoalesced", 32) / _gf(df, "naive", 32)).dropna()
    return Verdict("CUDA-1u is slower than CUDA-Naive", "Figure 2, section 3.1.1", holds,
                   f"1u slower at {_share(slower)}; 1u/Naive median {ratio.median():.2f}")


@needs("best", "blas")
def plateau_while_blas_rises(df) -> Verdict:
    best, blas = _gf(df, "best", 32), _gf(df, "blas")
    grow = {}
    for name, c in (("CUDA-Best", best), ("BLAS", blas)):
        # Medians of each +-1 triple: a single wave-quantization dip (e.g. n = 1025) is not a trend.
        mid, top = c[(c.index >= 1023) & (c.index <= 1025)].median(), c[c.index >= 2047].median()
        grow[name] = top / mid - 1
    plateau, rises = grow["CUDA-Best"] < 0.15, grow["BLAS"] > grow["CUDA-Best"] + 0.10
    holds = "yes" if plateau and rises else "partly" if plateau or rises else "no"
    return Verdict("CUDA-Best plateaus past 1024 while multicore BLAS keeps rising", "Figure 2 and Table 1", holds,
                   f"median GFLOP/s from n = 1023-1025 to 2047-2049: CUDA-Best {grow['CUDA-Best']:+.0%}, BLAS {grow['BLAS']:+.0%}")


@needs("best", "blas")
def speedup_falls_with_size(df) -> Verdict:
    r = analysis.ratio(df, best_series(df), analysis.find(df, "blas"))
    at = {n: r.get(n) for n in (256, 512, 768, 2048)}
    late = r[r.index >= 1024].median()
    holds = "yes" if at[256] > at[512] > late else "no"
    return Verdict("The CUDA-Best / BLAS speed-up falls with size", "Figure 5: 50x at 256, 30x at 512, drops past 768",
                   holds, f"ours: {at[256]:.1f}x at 256, {at[512]:.1f}x at 512, {at[768]:.1f}x at 768, "
                          f"median {late:.1f}x for n >= 1024")


FINDINGS: tuple[Callable, ...] = (larger_blocks_faster, best_beats_one_output, interleaved_best_single,
                                  unroll_adds_little, uncoalesced_below_naive, plateau_while_blas_rises,
                                  speedup_falls_with_size)


def verdicts(df: pd.DataFrame) -> list[Verdict]:
    """Every finding checked; one whose series the results lack says which, unchecked."""
    ok = analysis.ok_rows(df)
    out = []
    for f in FINDINGS:
        missing = [v for v in dict.fromkeys(f.needs) if v not in set(ok.variant)]
        if missing:
            out.append(Verdict(f.__name__.replace("_", " "), "", "not checked", f"the results have no rows of {', '.join(missing)}"))
        else:
            out.append(f(ok))
    return out


def table1_side_by_side(df: pd.DataFrame, reference: dict) -> pd.DataFrame:
    """Our Table 1 (with cuBLAS) next to the paper's K80 numbers."""
    sizes = list(reference.get("table_sizes") or TABLE1_SIZES)
    ours = table1(analysis.ok_rows(df), sizes)
    out = pd.DataFrame(index=ours.index)
    if "blas_gflops" in reference:
        out["paper BLAS"] = reference["blas_gflops"]
        out["paper CUDA-Best"] = reference["best_gflops"]
        out["paper Best/BLAS"] = out["paper CUDA-Best"] / out["paper BLAS"]
    for col in ours.columns:
        out[f"ours {col}"] = ours[col]
    return out


def report(df: pd.DataFrame, meta: dict, reference: dict, figures: dict[str, Path],
           profile: pd.DataFrame | None, results_path: Path) -> str:
    gpu = meta.get("gpu") or {}
    ceilings = meta.get("ceilings") or {}
    vs = verdicts(df)
    table = table1_side_by_side(df, reference)
    best = analysis.find(analysis.ok_rows(df), "best") and best_series(analysis.ok_rows(df))
    lines = [
        "# Zosa 2017 on today's GPU: paper vs ours",
        "",
        provenance(results_path, df, meta, device=f" ({gpu.get('sm_count', '?')} SMs, driver "
                                                  f"{gpu.get('driver_version', '?')})")
        + f". The paper ran on a {reference.get('device', 'Tesla K80')}.",
        "",
        "## The paper's findings, checked",
        "",
        "| finding | paper | holds here? | our numbers |",
        "|---|---|---|---|",
        *[f"| {v.finding} | {v.paper} | **{v.holds}** | {v.evidence} |" for v in vs],
        "",
        "## Table 1: multicore BLAS vs CUDA-Best (GFLOP/s), with cuBLAS",
        "",
        markdown_table(table),
        "",
        f"Our CUDA-Best is {best.label if best else 'not in these results'}; BLAS is {_blas_name(meta)}; cuBLAS runs in pedantic pure-FP32 mode.",
        "",
        "## Figures",
        "",
        *[f"![{name}]({path.name})\n" for name, path in figures.items()],
        "## Roofline",
        "",
        _roofline_text(df, meta, ceilings, reference, profile),
        "",
    ]
    return "\n".join(lines)


def _blas_name(meta: dict) -> str:
    blas = ((meta.get("software") or {}).get("blas") or [{}])[0]
    return f"{blas.get('internal_api', 'unknown')} {blas.get('version', '')} with {blas.get('num_threads')} threads"


def _roofline_text(df, meta, ceilings, reference, profile) -> str:
    if not ceilings:
        return "Ceilings were not measured for this run (`mmbench ceilings`)."
    if analysis.find(analysis.ok_rows(df), "best") is None:
        return "The results have no CUDA-Best rows to place under the roofs."
    best = best_series(analysis.ok_rows(df))
    top = analysis.curve(analysis.ok_rows(df), best)
    mine = None if profile is None else profile[(profile.variant == best.variant) & (profile.params == best.params)]
    # The largest size Nsight Compute profiled, else the largest size run.
    n = int(mine.n.max()) if mine is not None and len(mine) else int(top.index.max())
    perf = float(top[n])
    bw = ceilings["dram_copy_gbytes_per_s"]
    measured = float(mine[mine.n == n].dram_intensity.iloc[0]) if mine is not None and len(mine) else None
    text = (f"Measured ceilings: FP32 {ceilings['fp32_fma_tflops']:.1f} TFLOP/s, DRAM {bw:.0f} GB/s "
            f"(datasheet {ceilings['datasheet']['fp32_tflops']:.1f} TFLOP/s, {ceilings['datasheet']['dram_gbytes_per_s']:.0f} GB/s). "
            f"The paper read its kernel's intensity off the bandwidth roof (performance / bandwidth: 2 FLOP/B at "
            f"{reference.get('dram_datasheet_gbytes_per_s', 240)} GB/s, 3 at {reference.get('dram_measured_gbytes_per_s', 154)}). "
            f"Done that way here, {best.label} at n = {n} ({perf:.0f} GFLOP/s) would sit at {perf / bw:.1f} FLOP/B. ")
    if measured:
        text += (f"Nsight Compute measures {measured:.0f} FLOP per DRAM byte for the same launch: the kernel sits far "
                 f"right of the ridge point ({ceilings['fp32_fma_tflops'] * 1e3 / bw:.0f} FLOP/B), so it is bound by "
                 f"on-chip work (shared-memory traffic and instruction issue), not by DRAM, and reaches "
                 f"{perf / (ceilings['fp32_fma_tflops'] * 1e3):.0%} of the FP32 peak.")
    else:
        text += "Run `mmbench profile` to place the kernels at their measured DRAM intensity."
    return text
