"""The text of Lab 3's REPORT.md: both of the lab's tables beside ours (computation time in ms,
median of the samples), the transposes' bandwidth against memcpy, the claims checked, what we ran
differently, the tile sweep and the memory hierarchy; `report` puts them together."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ... import hierarchy
from ...analysis import ok_rows
from ...results import ResultsError
from ...sizes import row_shape
from ..common import (LevelTable, Verdict, companion, hierarchy_section, markdown_table, provenance, report_text,
                      text_table, verdict_table)
from ..rule import claims_line
from .claims import PROFILE_COMMAND, UNTESTED, verdicts
from .measures import (LAB_MATMUL, LAB_OWN, LAB_TRANSPOSE, LAB_TRANSPOSE_KERNELS, MATMUL_KERNELS, _by_size, _label,
                       _span, _square, matmul_times, tile_sweep, transpose_bandwidth, transpose_times)

def side_by_side(ours: pd.DataFrame, lab: dict, names: dict, sizes: list[int]) -> pd.DataFrame:
    """The lab's columns and ours for the same kernels, at the lab's sizes."""
    out = pd.DataFrame(index=pd.Index(sizes, name="n"))
    for lab_name, times in lab.items():
        out[f"lab {lab_name}"] = times
        ours_name = _label(*names[lab_name]) if lab_name in names else None
        if ours_name in ours:
            out[f"ours {lab_name}"] = ours[ours_name].reindex(sizes)
    return out


TILES_COMPANION = ("tiles", "lab3-tiles")  # the tile sweep beside the reference run: folder, name


def _matmul_parts(table: pd.DataFrame, meta: dict) -> list:
    """The hierarchy section's matmul table at the largest profiled size and what it says."""
    shape = hierarchy.shapes_in(table, set(table.op), 1)[-1]
    at = hierarchy.at_shape(table, shape).set_index(["variant", "params"])
    lab = at.loc[[i for i in at.index if i[0] in LAB_OWN]]
    worst = lab.bound_pct.idxmax()
    text = (f"The lab's own kernels reach at most {lab.bound_pct.max():.0f} % of a roof ({_label(*worst)}, "
            f"{hierarchy.roof_name(lab.loc[worst, 'bound'])}).")
    if {("matmul_shared", "PAD=0"), ("matmul_shared", "PAD=1"), ("matmul_cache", "")} <= set(at.index):
        pad0, pad1, cache = at.loc[("matmul_shared", "PAD=0")], at.loc[("matmul_shared", "PAD=1")], at.loc[("matmul_cache", "")]
        text += (f" The shared one with A's tile [32][32] reaches {pad0.shared_pct:.0f} % of shared memory's peak and "
                 f"{pad0.fp32_pct:.1f} % of FP32's, with [32][33] {pad1.shared_pct:.0f} % and {pad1.fp32_pct:.1f} %, "
                 f"at the same {pad0.shared_intensity:.2f} and {pad1.shared_intensity:.2f} FLOP per shared byte: "
                 "the padding changes how fast shared memory serves the kernel, not how much it asks of it. The "
                 f"cache versions move {2 / cache.l2_intensity:.0f} bytes through L2 a multiply-add "
                 f"({cache.l2_intensity:.3f} FLOP per L2 byte, {cache.l2_pct:.0f} % of L2's peak): each "
                 "multiply-add is an atomicAdd into C, which global memory performs in L2.")
    if ("cublas", "") in at.index:
        text += f" cuBLAS reaches {at.loc[('cublas', '')].fp32_pct:.0f} % of FP32's peak."
    return [LevelTable(f"Matrix multiplications at {hierarchy.panel_title(at.reset_index().iloc[0], meta)}:",
                       [shape], MATMUL_KERNELS), text]


def _transpose_parts(profile: pd.DataFrame, table: pd.DataFrame, meta: dict) -> list:
    """The hierarchy section's transpose table at the largest profiled size and what it says."""
    shape, *smaller = hierarchy.shapes_in(table, set(table.op), 2)[::-1]
    rows = hierarchy.at_shape(table, shape).set_index("variant")
    parts = [LevelTable(f"The lab's transposes at {hierarchy.panel_title(rows.reset_index().iloc[0], meta)}"
                        + "".join(f" (the figure has {row_shape(*s)} too)" for s in smaller) + ":",
                        [shape], LAB_TRANSPOSE_KERNELS)]
    if {"transpose_naive", "transpose_shmem", "transpose_shmem_unpadded"} <= set(rows.index):
        naive, pad, unpad = rows.loc["transpose_naive"], rows.loc["transpose_shmem"], rows.loc["transpose_shmem_unpadded"]
        sectors = {v: _square(profile, v).global_st_sectors.get(shape[1], float("nan"))
                   for v in ("transpose_naive", "transpose_shmem")}
        parts.append(f"shmem GPU moves DRAM at {pad.dram_pct:.0f} % of its peak, the unpadded one at {unpad.dram_pct:.0f} % "
                     f"and naive at {naive.dram_pct:.0f} %, whose closest roof is {hierarchy.roof_name(naive.bound)} "
                     f"({naive.bound_pct:.0f} %): its L2 moves {naive.l2_bytes / naive.dram_bytes:.1f}x the "
                     f"bytes DRAM does (shmem GPU's {pad.l2_bytes / pad.dram_bytes:.1f}x), and its stores take "
                     f"{sectors['transpose_naive'] / sectors['transpose_shmem']:.0f}x the sectors of shmem GPU's.")
    return parts


def hierarchy_lines(profile: pd.DataFrame | None, meta: dict) -> list[str]:
    """The report's memory-hierarchy section: a level table at the largest profiled size of the
    matmuls and of the lab's transposes, and what the tables say, from the numbers."""
    def parts(table: pd.DataFrame) -> list:
        mm = table[table.variant.isin(MATMUL_KERNELS)]
        tr = table[table.variant.isin(LAB_TRANSPOSE_KERNELS)]
        return ["Nsight Compute's byte counts at each level over its kernel time, against the level's peak (one "
                "launch each, caches flushed, clocks not locked); the figures below draw them.",
                *([] if mm.empty else _matmul_parts(mm, meta)),
                *([] if tr.empty else _transpose_parts(profile, tr, meta))]

    return hierarchy_section(profile, parts, PROFILE_COMMAND)


DEPARTURES = (
    "- **Naive GPU matmul.** The lab's naive kernel is not given; ours is Zosa 2017's CUDA-Naive (`naive`, one "
    "thread per element of C in 32 x 32 blocks, `__restrict__`, `__launch_bounds__`, an early return past the edge). "
    "It takes 0.049 ms at 512 where the lab's took 26.6 ms (about 10 GFLOP/s), so every verdict that measures against "
    "naive (the cache versions' gain on it and their cache hits against its, the atomics' cost, the shared one 10x "
    "faster than naive) judges our naive, not the lab's, and rests on that choice. Can the "
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
    "tiles of A and B are loaded and that A's reads conflict; this mapping is ours, so the rows on where its conflicts "
    "lie, how many ways and that padding removes them are by construction (the counts confirm the build), and the "
    "padding verdicts (padding speeds ours up 3 to 4x where the lab's slowed) are about it.",
    "- **Cache GPU and Shared-Cache-Optimized GPU** follow the lab's description (a thread per element of A, rows of "
    "B and C walked left to right, atomicAdd into C; B staged in shared memory in the second); the 32 x 8 blocks, the "
    "[32][33] staging tile and `__restrict__` are ours.",
    "- **Transposes.** The naive one moves 64 x 64 submatrices with 64 x 16 threads, each a 1 x 4 strip (the lab's "
    "\"32 one by four blocks\" per submatrix is read as 32-thread rows); the shared ones use 32 x 8 threads over a 32 "
    "x 32 tile, four rows each; all take `__restrict__` pointers and guard the edges. Optimized GPU adds only "
    "`#pragma unroll`, as the lab's did.",
    "- **Nsight Compute profile** (`lab3-h200.profile.csv`, its `.profile.meta.json` gives the command and ncu's "
    "version): every GPU series at n = 1024 and 4096, one launch each, caches flushed before each kernel "
    "(`--cache-control all`), clocks not locked; its times are Nsight Compute's kernel durations, not the run's "
    "medians. The tuned transposes (tiled, vectors, swizzled, pipelined) were profiled at their default parameters, "
    "not those the run timed (its `params` column), so the hierarchy figures and tables keep to the lab's four; the "
    "profile's tiled row is TILE=32, ROWS=8, PAD=1, the tile sweep's lab design.",
    "- **Tile sweep** (`tiles/lab3-tiles.csv`, configs/companions/lab3-tiles.toml, a companion run with the "
    "reference run's settings: 10 samples after 3 warm-ups, cold L2, its own memcpy): \"block size\" is read as "
    "the tile's side. The lab's kernel cannot take another tile, so the sweep runs `transpose_tiled` "
    "(kernels/transpose/tiled.cu), which at TILE=32, ROWS=8, PAD=1 is the lab's design: the same [32][33] tile, "
    "32 x 8 threads each moving rows y, y + 8, y + 16 and y + 24, the same indices and edge guards. It differs in "
    "`#pragma unroll` over a loop whose trip count depends on threadIdx.y (transpose_shmem has a fixed four) and "
    "`__launch_bounds__`, and it is slower: see the tile-sweep section.",
    "- **Timing.** The lab gives \"example\" times; ours are medians of 10 samples after 3 warm-ups with a cold L2, "
    "and Naive CPU is a single-threaded compiled C loop whose sizes past the CPU time budget are skipped rows.",
)


# Its reference run in the repository: what a command suggests when no run of the user's will do.
REFERENCE_RUN = "results/lab3-h200/lab3-h200.csv"

ALT_TEXT = {"fig-transpose-bandwidth": "each GPU transpose's bandwidth as % of memcpy's by size, and every "
                                       "transpose's GB/s on a log axis", "fig-matmul-time": "matmul time",
            "fig-matmul-hierarchy": "hierarchical roofline of the matrix multiplications",
            "fig-transpose-levels": "the transposes' share of each memory level's peak"}


def tile_lines(results_path: Path, pct_ref: pd.DataFrame, profile: pd.DataFrame | None) -> tuple[pd.DataFrame | None, list[str]]:
    """The tile sweep beside the reference run (its ok rows, or None) and the report's section on it:
    GB/s by size at each tile, at the lab's strips and at each tile's fastest ROWS, and the lab's
    design in the sweep (TILE=32, ROWS=8) against transpose_shmem in the reference run, as % of memcpy."""
    comp = companion(results_path, *TILES_COMPANION)
    if comp is None:
        return None, ["No tile sweep beside these results (" + UNTESTED[0][2].split(": ", 1)[1] + ")."]
    ok = ok_rows(comp.df)
    sweep = tile_sweep(ok)
    memcpy = _by_size(ok, "copy", "memcpy", "gbytes_per_s")
    tiles = sorted(set(sweep.tile))
    cells = []
    for n in sorted(set(sweep.n)):
        row = [str(n), f"{memcpy.get(n, float('nan')):,.0f}"]
        for view in ("strips", "best"):
            at = sweep[(sweep.view == view) & (sweep.n == n)].set_index("tile")
            top = at.gbytes_per_s.idxmax()
            for tile in tiles:
                if tile not in at.index:
                    row.append("-")
                    continue
                text = f"{at.gbytes_per_s[tile]:,.0f}" + (f" ({int(at.rows[tile])})" if view == "best" else "")
                row.append(f"**{text}**" if tile == top else text)
        cells.append(row)
    columns = ["n", "memcpy", *(f"tile {t}, ROWS {t // 4}" for t in tiles), *(f"tile {t}, fastest (ROWS)" for t in tiles)]
    lab = sweep[(sweep.view == "strips") & (sweep.tile == 32)].set_index("n").gbytes_per_s
    lab_pct = (100 * lab / memcpy).dropna()
    shmem_pct = pct_ref.get(_label("transpose_shmem"), pd.Series(dtype=float))
    both = lab_pct.index.intersection(shmem_pct.index)
    gap = (lab_pct[both] - shmem_pct[both])
    timed = pd.DataFrame()
    if profile is not None:
        lab_rows = profile[(profile.variant == "transpose_tiled") & (profile.params == "PAD=1,ROWS=8,TILE=32")]
        timed = pd.DataFrame({"tiled": lab_rows[lab_rows.m == lab_rows.n].groupby("n").gpu_time_ns.min(),
                              "shmem": _square(profile, "transpose_shmem").gpu_time_ns}).dropna()
    return ok, [
        provenance(comp.path, comp.df, comp.meta) + ". GB/s of 2 x 4 x n^2 bytes (median); the fastest tile of each "
        "group in bold; ROWS = TILE / 4 is the lab's 1 x 4 strips, \"fastest\" the best of every ROWS the tile allows "
        "(1 to TILE / 2 or TILE).",
        "",
        *text_table(columns, cells),
        "",
        f"The lab's design in the sweep (TILE=32, ROWS=8) reaches {_span(lab_pct[both], '{:.0f}')} % of the sweep's "
        f"memcpy; transpose_shmem reaches {_span(shmem_pct[both], '{:.0f}')} % of the reference run's: "
        f"{_span(-gap, '{:.0f}')} points {'less' if (gap < 0).all() else 'more' if (gap > 0).all() else 'apart'} for the "
        "sweep's kernel"
        + ("; in the profile, " + "; ".join(f"n={n}: {r.tiled / 1e3:.1f} us against transpose_shmem's {r.shmem / 1e3:.1f} us"
                                           for n, r in timed.iterrows()) if len(timed) else "")
        + ". So the ranking of tiles is that of `transpose_tiled`, a close copy of the lab's kernel, not of the kernel itself.",
        "",
    ]


def claims_section(vs: list[Verdict]) -> list[str]:
    """The report's verdicts: one row a claim of the lab, and their count."""
    return ["## The lab's claims, checked", "",
            "One row a claim of the lab, in its order (how it built its kernels is description, not claim), each judged "
            "in the lab's setting (its tables' sizes, the profiled sizes for counts) by the rule of "
            "mmbench/studies/rule.py; rows judged on a kernel of ours where the lab's differs say so.", "",
            *verdict_table(vs), "", claims_line(v.holds for v in vs), ""]


def report(df: pd.DataFrame, meta: dict, reference: dict, figures: dict[str, Path],
           profile: pd.DataFrame | None, results_path: Path) -> str:
    ok = ok_rows(df)
    t, bw, m = transpose_times(ok), transpose_bandwidth(ok), matmul_times(ok)
    if t.empty and m.empty:
        raise ResultsError("the Lab 3 report needs transpose or matmul rows")
    sizes = list(reference.get("sizes") or [])
    pct = (100 * bw.div(bw[_label("memcpy")], axis=0)).drop(columns=[_label("memcpy")]) if _label("memcpy") in bw else bw
    tiles, tile_text = tile_lines(results_path, pct, profile)
    vs = verdicts(ok, profile, reference, tiles)
    lines = [
        "# Lab 3 on today's GPU: transpose and matrix multiplication",
        "",
        provenance(results_path, df, meta) + f". The lab ran on {reference.get('device', 'its GPU')}. Times are "
        "medians of the samples, cold L2; every point was verified (transposes exactly, products against float64).",
        "",
        *claims_section(vs),
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
        "## Tile sweep: the lab's shared transpose at tiles of 8 to 64",
        "",
        *tile_text,
        *hierarchy_lines(profile, meta),
    ]
    return report_text(lines, figures, ALT_TEXT)
