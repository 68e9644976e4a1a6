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


ORDER_OF_10 = (10 ** 0.5, 10 ** 1.5)  # "on the order of 10 times": within half a decade of 10
STEADY_CV = 0.05  # "the computation times don't change much from run to run": spread under 5 % of the mean


def _lab_ratio(reference: dict | None, slow: str, fast: str) -> pd.Series:
    """The lab's own time ratio slow / fast at its sizes, from its table."""
    table, sizes = (reference or {}).get("matmul_ms", {}), (reference or {}).get("sizes", [])
    if slow not in table or fast not in table:
        return pd.Series(dtype=float)
    return pd.Series(table[slow], index=sizes) / pd.Series(table[fast], index=sizes)


def shared_ten_times(m: pd.DataFrame, reference: dict | None) -> list[Verdict]:
    """The lab's headline: its shared matmul about 10x faster than the naive GPU and the cache versions."""
    out, shared = [], m.get(_label("matmul_shared", "PAD=0"), pd.Series(dtype=float))
    for lab_name, variant in (("Naive GPU", "naive"), ("Cache GPU", "matmul_cache"),
                              ("Shared-Cache-Optimized GPU", "matmul_shared_cache")):
        r = _ratio(m.get(_label(variant), pd.Series(dtype=float)), shared)
        theirs = _lab_ratio(reference, lab_name, "Shared GPU")
        near = (r >= ORDER_OF_10[0]) & (r <= ORDER_OF_10[1])
        out.append(Verdict(f"Shared GPU on the order of 10x faster than {lab_name}",
                           "\"on the order of 10 times faster than both the naive GPU version and our attempts at a cache GPU version\"",
                           "not checked" if r.empty else "yes" if near.all() else "no" if not near.any() else "partly",
                           f"{lab_name} time / Shared GPU time {_span(r, '{:.2f}')} (3.2 to 32 counts as about 10)"
                           + (f"; the lab's own table: {_span(theirs, '{:.1f}')}" if len(theirs) else "")
                           + ("; our Naive GPU is Zosa's CUDA-Naive, not the lab's (see below)" if variant == "naive" else "")))
    return out


def steady_times(ok: pd.DataFrame) -> Verdict:
    """The lab: times "don't change much from run to run" (both tables)."""
    gpu = ok[ok.backend.isin(("cuda", "driver"))] if "backend" in ok else ok
    cv = gpu.cv.dropna()
    steady = cv < STEADY_CV
    return Verdict("Times barely change from run to run", "\"The computation times don't change much from run to run\"",
                   "not checked" if cv.empty else "yes" if steady.all() else "no" if not steady.any() else "partly",
                   f"standard deviation / mean of the 10 samples, GPU points: median {cv.median():.1%}, largest "
                   f"{cv.max():.1%}; under {STEADY_CV:.0%} at {int(steady.sum())} of {len(cv)}")


def matmul_conflict(profile: pd.DataFrame | None) -> Verdict:
    """The lab: a 32-way bank conflict in the shared matmul's products, after A's tile is loaded."""
    c0 = conflicts(profile, "matmul_shared", "PAD=0")
    return Verdict("A 32-way bank conflict in the shared matmul's products", "\"there is a 32 way bank conflict\" reading shared A",
                   "not checked" if c0.empty else "yes" if (c0 >= 31 - CLEAN).all() else "partly" if (c0 >= CLEAN).all() else "no",
                   ("Nsight Compute, extra wavefronts per shared-memory instruction (loads of A's and B's tiles and the "
                    "stores together; 31 would be every instruction 32-way): " + "; ".join(f"n={n}: {v:.2f}" for n, v in c0.items())
                    + ": A's reads conflict, B's broadcast reads and the stores do not, so the average is below 31")
                   if len(c0) else _unprofiled(profile, "matmul_shared"))


# Claims this run cannot decide, and what would.
UNTESTED = (
    ("Block size 32 is the best choice for the transposes", "\"Parameter choices\"",
     "a sweep of the tile size: our lab transposes fix it at 32; a TILE parameter in kernels/transpose/lab3.cu and "
     "`mmbench run --config configs/lab3.toml` over it"),
    ("The naive transpose uses the warps well but does not coalesce", "\"Naive GPU\"",
     "sectors per global store request of transpose_naive: `mmbench profile --config configs/lab3.toml --points 4096 -v transpose_naive` "
     "(not counted yet)"),
    ("Shared-memory conflicts cost less than global ones would", "\"Other notes about Shared Matrix Multiply\"",
     "a general statement with no measure in the lab; the padding verdicts above give the cost of the conflict itself"),
)


def verdicts(ok: pd.DataFrame, profile: pd.DataFrame | None = None, reference: dict | None = None) -> list[Verdict]:
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
    out += matmul_verdicts(m, profile, reference)
    out.append(steady_times(ok))
    out += [Verdict(claim, where, "not checked", f"what would check it: {what}") for claim, where, what in UNTESTED]
    return out


def matmul_verdicts(m: pd.DataFrame, profile: pd.DataFrame | None, reference: dict | None) -> list[Verdict]:
    """The lab's claims about its matrix multiplications."""
    out = []

    def col(df, name):
        return df[name] if name in df else pd.Series(dtype=float)

    pad0, pad1 = col(m, _label("matmul_shared", "PAD=0")), col(m, _label("matmul_shared", "PAD=1"))
    r = _ratio(pad1, pad0)
    c0, c1 = conflicts(profile, "matmul_shared", "PAD=0"), conflicts(profile, "matmul_shared", "PAD=1")
    at = c0.index.intersection(c1.index)
    out.append(Verdict("Padding A's tile slows the shared matmul", "\"the efficiency actually significantly decreases\"",
                       "not checked" if r.empty else "yes" if (r > 1).all() else "no" if (r < 1).all() else "partly",
                       f"padded time / unpadded time {_span(r)}"
                       + ("; bank conflicts per shared-memory instruction, unpadded / padded: "
                          + "; ".join(f"n={n}: {c0[n]:.2f} / {c1[n]:.2f}" for n in at) if len(at) else "")))
    out.append(matmul_conflict(profile))
    mnaive = col(m, _label("naive"))
    for name in ("matmul_cache", "matmul_shared_cache"):
        r = _ratio(col(m, _label(name)), mnaive)
        at = r.get(4096)
        theirs = _lab_ratio(reference, _label(name), "Naive GPU")
        out.append(Verdict(f"{_label(name)} about 85 % faster than naive at 4096", "Results notes",
                           "not checked" if at is None else "yes" if at < 0.6 else "no",
                           f"{_label(name)} time / naive time {_span(r)}" + (f" ({at:.1f} at 4096)" if at else "")
                           + (f"; the lab's own table gives {theirs.get(4096, float('nan')):.2f} at 4096 (its table says "
                              f"{1 / theirs.get(4096, float('nan')) - 1:.0%} faster, not 85 %)" if len(theirs) else "") + "; our naive is Zosa's CUDA-Naive"))
    r = _ratio(col(m, _label("matmul_shared_cache")), col(m, _label("matmul_cache")))
    out.append(Verdict("Staging B in shared memory improves the cache version", "\"an improvement in ... shared memory cache coherent version\"",
                       "not checked" if r.empty else "yes" if (r < 1).all() else "no" if (r >= 1).all() else "partly",
                       f"Shared-Cache time / Cache time {_span(r, '{:.3f}')}; faster at {int((r < 1).sum())} of {len(r)} sizes"))
    out += shared_ten_times(m, reference)
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
    fig = _figure(bw, meta, "Lab 3: transpose bandwidth against the device copy", "GB/s (2 x 4 x n^2 bytes, median), log scale",
                  dashed=_label("memcpy"))
    fig.axes[0].set_yscale("log")  # the CPU transposes (0.4 to 5 GB/s) would lie on the axis under 4000 GB/s
    return fig


def fig_matmul_time(df: pd.DataFrame, meta: dict, profile=None, size=None) -> plt.Figure:
    m = matmul_times(ok_rows(df))
    if not set(m.columns) & {_label(v, p) for v, p in MATMULS if v in LAB_OWN}:  # naive and cuBLAS alone: not the lab's
        raise ResultsError(f"the time figure needs the lab's matmul rows ({', '.join(sorted(LAB_OWN))})")
    fig = _figure(m, meta, "Lab 3: matrix multiplication time", "ms (median of samples), log scale")
    fig.axes[0].set_yscale("log")
    return fig


DEPARTURES = (
    "- **Naive GPU matmul.** The lab's naive kernel is not given; ours is Zosa 2017's CUDA-Naive (`naive`, one "
    "thread per element of C in 32 x 32 blocks, `__restrict__`, `__launch_bounds__`, an early return past the edge). "
    "It takes 0.049 ms at 512 where the lab's took 26.6 ms (about 10 GFLOP/s), so every verdict that divides by the "
    "naive time (the cache versions 85 % faster, the shared one 10x faster than naive) rests on that choice. Can the "
    "lab's kernel be rebuilt from its text? The text says an ijk loop where \"each node is given to c matrix elements\" "
    "and the inner loop walks a row of A and a column of B: that is a thread per element (ours), unless \"node\" means "
    "something coarser, and it names no launch geometry. The lab's own times go up 7.7 to 8.0x per doubling of n from "
    "512 and stay 34x its shared kernel's at every size, which a thread per element only gives when it is starved of "
    "parallelism or its loads never coalesce; the text does not say which. We conclude it cannot be reconstructed from "
    "the text; candidates (a thread per element with threadIdx.x down the rows, so no load coalesces; a thread per row "
    "of C) would have to be added as variants and run (`mmbench run --config configs/lab3.toml`, a GPU run) and the one "
    "whose naive/shared and cache/naive ratios match the lab's table (34x and 0.6x) kept, which is fitting, not "
    "reconstruction. Not done here.",
    "- **Shared GPU matmul (`matmul_shared`) is a reconstruction** built to show the lab's bank conflict: thread "
    "(x, y) computes C[i0 + x][j0 + y], so a warp reads a column of A's tile (the 32-way conflict with a [32][32] tile), "
    "reads B's tile as one broadcast word, and writes C down a column (uncoalesced). The lab says only that 32 x 32 "
    "tiles of A and B are loaded and that A's reads conflict; this mapping is ours, and the padding verdict (padding "
    "speeds ours up 3 to 4x where the lab's slowed) is about it.",
    "- **Cache GPU and Shared-Cache-Optimized GPU** follow the lab's description (a thread per element of A, rows of "
    "B and C walked left to right, atomicAdd into C; B staged in shared memory in the second); the 32 x 8 blocks, the "
    "[32][33] staging tile and `__restrict__` are ours.",
    "- **Transposes.** The naive one moves 64 x 64 submatrices with 64 x 16 threads, each a 1 x 4 strip (the lab's "
    "\"32 one by four blocks\" per submatrix is read as 32-thread rows); the shared ones use 32 x 8 threads over a 32 "
    "x 32 tile, four rows each; all take `__restrict__` pointers and guard the edges. Optimized GPU adds only "
    "`#pragma unroll`, as the lab's did.",
    "- **Timing.** The lab gives \"example\" times; ours are medians of 10 samples after 3 warm-ups with a cold L2, "
    "and Naive CPU is a single-threaded compiled C loop whose sizes past the CPU time budget are skipped rows.",
)


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
    vs = verdicts(ok, profile, reference)
    pct = (100 * bw.div(bw[_label("memcpy")], axis=0)).drop(columns=[_label("memcpy")]) if _label("memcpy") in bw else bw
    lines = [
        "# Lab 3 on today's GPU: transpose and matrix multiplication",
        "",
        provenance(results_path, df, meta) + f". The lab ran on {reference.get('device', 'its GPU')}. Times are "
        "medians of the samples, cold L2; every point was verified (transposes exactly, products against float64).",
        "",
        "## The lab's claims, checked",
        "",
        *verdict_table(vs),
        "",
        f"{len(vs)} claims: " + ", ".join(f"{sum(v.holds == h for v in vs)} {h}" for h in ("yes", "partly", "no", "not checked")) + ".",
        "",
        "## What we ran differently from the lab",
        "",
        *DEPARTURES,
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

