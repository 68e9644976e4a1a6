"""The Lab 3 study: transposes against the device copy, and the lab's matrix multiplications.

REPORT.md holds both of the lab's tables beside ours (computation time in ms, median of the
samples), the transposes' bandwidth against memcpy, two figures, and each of the lab's claims
checked against our numbers.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import plots
from ..analysis import ok_rows
from ..results import ResultsError
from ..variants import REGISTRY
from .common import Verdict, markdown_table, provenance, report_text, verdict_table
from .contract import Figure, FigureFamily

plt = plots.plt  # pyplot as plots loaded it, after choosing the Agg backend

TRANSPOSES = ("memcpy", "transpose_naive", "transpose_shmem", "transpose_shmem_unpadded", "transpose_optimized",
              "transpose_tiled", "transpose_vec", "transpose_swizzle", "transpose_pipe", "numpy_transpose",
              "cpu_naive_transpose")
MATMULS = (("cpu_naive_matmul", ""), ("naive", ""), ("matmul_cache", ""), ("matmul_shared_cache", ""), ("matmul_shared", "PAD=0"),
           ("matmul_shared", "PAD=1"), ("cublas", ""))
LAB_OWN = {v for v, _ in MATMULS if REGISTRY.get(v) and REGISTRY[v].paper == "lab3"}  # not the shared naive, cuBLAS
# Our series that stand for the lab's columns
LAB_TRANSPOSE = {"Naive CPU": ("cpu_naive_transpose", ""), "GPU memcpy": ("memcpy", ""),
                 "Naive GPU": ("transpose_naive", ""), "shmem GPU": ("transpose_shmem", ""),
                 "Optimized GPU": ("transpose_optimized", "")}
LAB_MATMUL = {"Naive CPU": ("cpu_naive_matmul", ""), "Naive GPU": ("naive", ""), "Cache GPU": ("matmul_cache", ""),
              "Shared-Cache-Optimized GPU": ("matmul_shared_cache", ""), "Shared GPU": ("matmul_shared", "PAD=0")}


def _label(variant: str, params: str = "") -> str:
    label = REGISTRY[variant].label if variant in REGISTRY else variant
    if variant == "matmul_shared":
        return f"{label}, A's tile [32][{32 + int(params.split('=')[1])}]"
    return label


def _by_size(ok: pd.DataFrame, op: str, variant: str, column: str, params: str | None = None) -> pd.Series:
    rows = ok[(ok.op == op) & (ok.variant == variant)]
    if params:
        rows = rows[rows.params.str.contains(params, regex=False)]
    return rows.groupby("n")[column].median()


def transpose_times(ok: pd.DataFrame) -> pd.DataFrame:
    """ms (median of samples) by square size, one column per transpose and memcpy."""
    cols = {_label(v): _by_size(ok, "copy" if v == "memcpy" else "transpose", v, "time_ms_median") for v in TRANSPOSES}
    out = pd.DataFrame({k: v for k, v in cols.items() if len(v)})
    out.index.name = "n"
    return out


def transpose_bandwidth(ok: pd.DataFrame) -> pd.DataFrame:
    """GB/s by size, and each transpose as % of memcpy in the same run."""
    bw = {_label(v): _by_size(ok, "copy" if v == "memcpy" else "transpose", v, "gbytes_per_s") for v in TRANSPOSES}
    bw = pd.DataFrame({k: v for k, v in bw.items() if len(v)})
    bw.index.name = "n"
    return bw


def matmul_times(ok: pd.DataFrame) -> pd.DataFrame:
    cols = {_label(v, p): _by_size(ok, "gemm", v, "time_ms_median", p or None) for v, p in MATMULS}
    out = pd.DataFrame({k: v for k, v in cols.items() if len(v)})
    out.index.name = "n"
    return out


def side_by_side(ours: pd.DataFrame, lab: dict, names: dict, sizes: list[int]) -> pd.DataFrame:
    """The lab's columns and ours for the same kernels, at the lab's sizes."""
    out = pd.DataFrame(index=pd.Index(sizes, name="n"))
    for lab_name, times in lab.items():
        out[f"lab {lab_name}"] = times
        ours_name = _label(*names[lab_name]) if lab_name in names else None
        if ours_name in ours:
            out[f"ours {lab_name}"] = ours[ours_name].reindex(sizes)
    return out


def _ratio(a: pd.Series, b: pd.Series) -> pd.Series:
    both = a.index.intersection(b.index)
    return (a[both] / b[both]).dropna()


def _span(r: pd.Series, fmt: str = "{:.2f}") -> str:
    return f"{fmt.format(r.min())} to {fmt.format(r.max())}" if len(r) else "-"


CONFLICTED, CLEAN = 8.0, 0.5  # conflicts per shared instruction: a many-way conflict, and none to speak of


def conflicts(profile: pd.DataFrame | None, variant: str, params: str = "") -> pd.Series:
    """Bank conflicts per shared-memory instruction by size n, from a Nsight Compute profile
    (`mmbench profile`): of loads or of stores, whichever conflicts more (a transpose conflicts
    on one side only)."""
    if profile is None or "conflicts_per_shared_ld" not in profile:
        return pd.Series(dtype=float)
    rows = profile[(profile.variant == variant) & (profile.params.fillna("") == params)]
    # square sizes only (the lab's tables); one value per n, the worst if a shape was profiled twice
    rows = rows[rows.m == rows.n] if "m" in rows else rows
    return rows.groupby("n")[["conflicts_per_shared_ld", "conflicts_per_shared_st"]].max().max(axis=1).sort_index()


def _unprofiled(profile: pd.DataFrame | None, *variants: str) -> str:
    """Why a padding verdict has no conflict counts to go on."""
    if profile is None:
        return "no Nsight Compute profile beside these results (`mmbench profile`), so the conflicts themselves are not counted"
    if "conflicts_per_shared_ld" not in profile:
        return "the profile beside these results predates the bank-conflict counts (`mmbench profile` again)"
    return f"the profile beside these results has no rows of {' and '.join(variants)} at a common size"


def verdicts(ok: pd.DataFrame, profile: pd.DataFrame | None = None) -> list[Verdict]:
    """Each claim of the lab, checked on our numbers (times: median of samples)."""
    t = transpose_times(ok)
    m = matmul_times(ok)
    out = []

    def col(df, name):
        return df[name] if name in df else pd.Series(dtype=float)

    memcpy, shmem, naive = col(t, _label("memcpy")), col(t, _label("transpose_shmem")), col(t, _label("transpose_naive"))
    r = _ratio(shmem, memcpy)
    big = r[r.index >= 2048]
    out.append(Verdict("shmem about equal to GPU memcpy", "\"about the same or better than GPU memcpy\"",
                       "yes" if len(r) and (r <= 1.10).all() else "partly" if len(r) and (r <= 1.10).any() else
                       "no" if len(r) else "not checked",
                       f"shmem time / memcpy time {_span(r)} ({_span(big)} from 2048)"))
    r = _ratio(naive, shmem)
    out.append(Verdict("shmem about 3x faster than naive", "\"about 3 times as fast as the naive GPU version\"",
                       "not checked" if r.empty else "yes" if ((r > 2) & (r < 4)).all() else "no",
                       f"naive time / shmem time {_span(r)}"))
    r = _ratio(col(t, _label("transpose_optimized")), shmem)
    out.append(Verdict("Unrolling adds little", "\"the effect on efficiency is minimal\"",
                       "not checked" if r.empty else "yes" if ((r > 0.95) & (r < 1.05)).all() else "no",
                       f"optimized time / shmem time {_span(r, '{:.3f}')}"))
    r = _ratio(col(t, _label("transpose_shmem_unpadded")), shmem)
    unpadded, padded = conflicts(profile, "transpose_shmem_unpadded"), conflicts(profile, "transpose_shmem")
    both = unpadded.index.intersection(padded.index)
    removed = (unpadded[both] >= CONFLICTED) & (padded[both] <= CLEAN)
    out.append(Verdict("Padding the tile to [32][33] removes a 32-way bank conflict", "section \"Parameter choices\"",
                       ("yes" if removed.all() else "no" if not removed.any() else "partly") if len(both) else
                       "not checked",
                       f"unpadded time / padded time {_span(r)}; "
                       + ("Nsight Compute, bank conflicts per shared-memory instruction, unpadded / padded: "
                          + "; ".join(f"n={n}: {unpadded[n]:.1f} / {padded[n]:.1f}" for n in both) if len(both) else
                          _unprofiled(profile, "transpose_shmem_unpadded", "transpose_shmem"))))
    pad0, pad1 = col(m, _label("matmul_shared", "PAD=0")), col(m, _label("matmul_shared", "PAD=1"))
    r = _ratio(pad1, pad0)
    c0, c1 = conflicts(profile, "matmul_shared", "PAD=0"), conflicts(profile, "matmul_shared", "PAD=1")
    at = c0.index.intersection(c1.index)
    out.append(Verdict("Padding A's tile slows the shared matmul", "\"the efficiency actually significantly decreases\"",
                       "not checked" if r.empty else "yes" if (r > 1).all() else "no" if (r < 1).all() else "partly",
                       f"padded time / unpadded time {_span(r)}"
                       + ("; bank conflicts per shared-memory instruction, unpadded / padded: "
                          + "; ".join(f"n={n}: {c0[n]:.2f} / {c1[n]:.2f}" for n in at) if len(at) else "")))
    mnaive = col(m, _label("naive"))
    for name in ("matmul_cache", "matmul_shared_cache"):
        r = _ratio(col(m, _label(name)), mnaive)
        at = r.get(4096)
        out.append(Verdict(f"{_label(name)} about 85 % faster than naive at 4096", "Results notes",
                           "not checked" if at is None else "yes" if at < 0.6 else "no",
                           f"{_label(name)} time / naive time {_span(r)}" + (f" ({at:.1f} at 4096)" if at else "")))
    return out


def _figure(df: pd.DataFrame, meta: dict, title: str, ylabel: str, dashed: str | None = None) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(9, 5.5), layout="constrained")
    for i, name in enumerate(df.columns):
        series = df[name].dropna()
        ax.plot(series.index, series.values, marker="o", markersize=3, linewidth=1.3, label=name,
                color="black" if name == dashed else plt.get_cmap("tab10").colors[i % 10],
                linestyle="--" if name == dashed else "-")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("matrix size n (n x n), log2 scale")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    plots._title(ax, title, meta)
    return fig


def fig_transpose_bandwidth(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    bw = transpose_bandwidth(ok_rows(df))
    if bw.drop(columns=[_label("memcpy")], errors="ignore").empty:  # the copy alone is the yardstick of nothing
        raise ResultsError("the bandwidth figure needs transpose rows")
    return _figure(bw, meta, "Lab 3: transpose bandwidth against the device copy", "GB/s (2 x 4 x n^2 bytes, median)",
                   dashed=_label("memcpy"))


def fig_matmul_time(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    m = matmul_times(ok_rows(df))
    if not set(m.columns) & {_label(v, p) for v, p in MATMULS if v in LAB_OWN}:  # naive and cuBLAS alone: not the lab's
        raise ResultsError(f"the time figure needs the lab's matmul rows ({', '.join(sorted(LAB_OWN))})")
    fig = _figure(m, meta, "Lab 3: matrix multiplication time", "ms (median of samples), log scale")
    fig.axes[0].set_yscale("log")
    return fig


# Its reference run in the repository: what a command suggests when no run of the user's will do.
REFERENCE_RUN = "results/lab3-h200/lab3-h200.csv"

FIGURES = {  # `mmbench plot NAME`; the report embeds them
    "transpose-bandwidth": FigureFamily("Lab 3: transpose GB/s by size, copy dashed", "Lab 3: transpose GB/s by size, the device copy dashed",
                                        (Figure("fig-transpose-bandwidth", fig_transpose_bandwidth),)),
    "matmul-time": FigureFamily("Lab 3: matrix multiplication time by size", "Lab 3: matrix multiplication time by size, log scale",
                                (Figure("fig-matmul-time", fig_matmul_time),)),
}
ALT_TEXT = {"fig-transpose-bandwidth": "transpose bandwidth", "fig-matmul-time": "matmul time"}


def report(df: pd.DataFrame, meta: dict, reference: dict, figures: dict[str, Path],
           profile: pd.DataFrame | None, results_path: Path) -> str:
    ok = ok_rows(df)
    t, bw, m = transpose_times(ok), transpose_bandwidth(ok), matmul_times(ok)
    if t.empty and m.empty:
        raise ResultsError("the Lab 3 report needs transpose or matmul rows")
    sizes = list(reference.get("sizes") or [])
    pct = (100 * bw.div(bw[_label("memcpy")], axis=0)).drop(columns=[_label("memcpy")]) if _label("memcpy") in bw else bw
    lines = [
        "# Lab 3 on today's GPU: transpose and matrix multiplication",
        "",
        provenance(results_path, df, meta) + f". The lab ran on {reference.get('device', 'its GPU')}. Times are "
        "medians of the samples, cold L2; every point was verified (transposes exactly, products against float64).",
        "",
        "## The lab's claims, checked",
        "",
        *verdict_table(verdicts(ok, profile)),
        "",
        "## Transpose: computation time (ms), the lab's and ours",
        "",
        markdown_table(side_by_side(t, reference.get("transpose_ms", {}), LAB_TRANSPOSE, sizes)) if sizes else "",
        "",
        "All of ours, every size:",
        "",
        markdown_table(t),
        "",
        "## Transpose bandwidth (GB/s of 2 x 4 x n^2 bytes) and % of memcpy in the same run",
        "",
        markdown_table(bw),
        "",
        markdown_table(pct),
        "",
        "## Matrix multiplication: computation time (ms), the lab's and ours",
        "",
        markdown_table(side_by_side(m, reference.get("matmul_ms", {}), LAB_MATMUL, sizes)) if sizes else "",
        "",
        ("Naive CPU is a single-threaded compiled C loop (kernels/cpu/naive.c); a size it would not finish within "
         "the run's CPU time budget is a skipped row with its estimate (see the CSV's reason column)."
         if _label("cpu_naive_matmul") in m or _label("cpu_naive_transpose") in t else
         "The lab's Naive CPU column was not run in these results."),
        "",
    ]
    return report_text(lines, figures, ALT_TEXT)

