"""Every claim of Sørensen 2012, in the paper's order (the abstract, sections 1 to 5 with their
figures), each a Verdict; the paper's numbers (PAPER), quoted once. The tuning rows race the designs
cell by cell (the rule of thumb, 2e against the designs that idle threads, several rows a thread, and
the tuner's wall time); the rows companion (rows/gemv-rows, gemv_rows at WORKSIZE_M 1 and 4 with its
profile) answers 3.3's mechanism. Every verdict follows rule.py: the paper's kernels and scope; claims
about 2011's libraries or the C2050 are not testable here, today's cuBLAS beside them extra evidence."""

from __future__ import annotations

import math
import re
from typing import Iterable

import numpy as np
import pandas as pd

from ...hierarchy import levels
from ...ops.gemv import FAMILIES, MESH_CELLS, MESH_MAX, cell_name, cell_points, parse_cell
from ...variants import get_variant, parse_params
from ...variants.gemv import GEMV_SPACE
from ..common import Verdict
from ..rule import BY_CONSTRUCTION, NOT_CHECKED, NOT_TESTABLE, by_about, by_order, by_share, other_scopes, weakest
from .measures import (BIG, CLASSES, LIBRARY, LIBRARY_CELL_BYTES, PARAMS, TUNED, big_matrix, cell_designs,
                       copy_bandwidth, cublas_version, families, family_of, mesh_params, mesh_values, occupancy_rows,
                       run_cells, shape_design, variant_rows)


# -- every claim of the paper, section by section ---------------------------------------------------------
# The paper's numbers, quoted once (Sørensen 2012, sections named in each claim)
PAPER = {"occupancy_rows": 21504, "sms": 14, "threads_per_sm": 1536, "blocks_per_sm": 8, "skinny_n": 100,
         "columns_rows": 50, "kernels": 1536, "mesh": 24, "tuning_hours": 1.8, "bandwidth_gbs": 144,
         "fujimoto": (36, 86), "magma": (66, 141), "magma_t": 43, "first_n": 10}


NAMES = {"a": "2a", "b": "2b", "c": "2c", "d": "2d", "e": "2e", "w": "ours"}  # a design as the verdicts name it
FOUR = ("a", "b", "c", "e")  # Fig. 1's four kernels: its verdict; 2d and ours are extra evidence
ATOMIC_GRID, ONE_COLUMN = ("b", "d"), ("a", "c")  # several columns of blocks adding into y by atomicAdd; one column
WIDE = 8  # a wide cell lies 8 cells right of its mirror: n >= 2^6.7 m, the paper's wide A (N x 100N)
NEAR = 1.25  # 'the same' performance: within 25 % (a cell and its anti-diagonal, a cell and its mirror, the families)
FIXED_LOSS = 0.9  # a single configuration loses a cell where it runs under 90 % of the cell's best
SPAN = max(GEMV_SPACE["BLOCKSIZE"]) * max(GEMV_SPACE["WORKSIZE_N"])  # the most columns one column of blocks covers


LIBRARIES_2011 = ("testing needs the libraries of the paper's time on its GPU, CUBLAS 4.0 (CUDA 4.0) and MAGMA 1.0.0 "
                  "on a Fermi C2050, over the same mesh and families")


def _anti_diagonal_r2(values: np.ndarray) -> float:
    """Share of the variance of log performance over the cells explained by the number of elements
    alone (cells grouped by i + j, the mesh's anti-diagonals): near 1 when only m n matters."""
    logs = pd.DataFrame([(i + j, math.log(v)) for (i, j), v in np.ndenumerate(values) if v > 0 and not np.isnan(v)],
                        columns=["diag", "log"])
    total = ((logs["log"] - logs["log"].mean()) ** 2).sum()
    within = ((logs["log"] - logs.groupby("diag")["log"].transform("mean")) ** 2).sum()
    return float(1 - within / total) if total else float("nan")


def centre(k: int) -> float:
    """The geometric centre of mesh row or column k (rows or columns)."""
    return MESH_MAX ** ((k + 0.5) / MESH_CELLS)


def _cells(designs: np.ndarray, keep) -> list[tuple[int, int]]:
    """The measured cells whose centre (m, n) passes keep(m, n)."""
    return [(i, j) for (i, j), d in np.ndenumerate(designs) if d and keep(centre(i), centre(j))]


def target_design(m: float, n: float, line: int) -> str:
    """The kernel of Fig. 1 left meant for a shape, from the paper's text: 2e under ~50 rows (3.4), 2c
    above the occupancy line (3.3), 2a for skinny A (n < 100, 3.1), 2b elsewhere (3.2)."""
    if m < PAPER["columns_rows"]:
        return "e"
    if m >= line:
        return "c"
    return "a" if n < PAPER["skinny_n"] else "b"


def _share(flags: Iterable) -> tuple[int, int]:
    """How many flags hold, of how many: rule.by_share's arguments."""
    flags = [bool(f) for f in flags]
    return sum(flags), len(flags)


def _of(held: int, total: int) -> str:
    """A share as the verdicts write it: "66 of 72 (92 %)"."""
    return f"{held} of {total} ({100 * held / total:.0f} %)" if total else "none of none"


def _designs_in(designs: np.ndarray, cells: list[tuple[int, int]]) -> str:
    """The designs that win these cells, most first ("2c 77, 2d 8")."""
    counts = pd.Series([NAMES[designs[c]] for c in cells], dtype=object).value_counts()
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))) or "none"


def tuning_best(tuning: pd.DataFrame | None) -> pd.DataFrame:
    """The best tuning GFLOP/s per cell (rows) and design (columns, CLASSES' keys; NaN where the space has
    none), over ok and pruned rows (a pruned configuration's speed is the cell's pivot shape's); a
    configuration is the design it runs at most of the cell's shapes, as cell_designs classes the run's."""
    if tuning is None:
        return pd.DataFrame(columns=list(CLASSES), dtype=float)
    rows = tuning[tuning.status.isin(["ok", "pruned"])]
    configs = pd.DataFrame([dict(parse_params(p)) for p in rows.params.unique()], index=rows.params.unique())
    span = (configs.BLOCKSIZE * configs.WORKSIZE_N).to_numpy()
    one = np.where(configs.WORKSIZE_M == 1, "a", "c")
    many = np.where(configs.KERNEL == 2, "w", np.where(configs.WORKSIZE_M == 1, "b", "d"))
    out = {}
    for cell, group in rows.groupby("size_class"):
        ns = np.array([p.n for p in cell_points(*parse_cell(cell))])
        ones = (ns[None, :] <= span[:, None]).sum(axis=1)  # shapes one column of blocks covers; a tie is one column
        design = pd.Series(np.where(configs.KERNEL == 1, "e", np.where(2 * ones >= len(ns), one, many)), index=configs.index)
        out[cell] = group.gflops.groupby(group.params.map(design)).max()
    return pd.DataFrame(out).T.reindex(columns=list(CLASSES)).rename_axis(index="size_class", columns="design")


def claims_one_thread(designs: np.ndarray, line: int) -> list[Verdict]:
    """3.1: x in shared memory, and where one thread per row (2a) wins the run's Fig. 1."""
    a = [c for c in _cells(designs, lambda m, n: True) if designs[c] == "a"]
    skinny = _share(centre(j) < PAPER["skinny_n"] for _, j in a)
    region = _cells(designs, lambda m, n: PAPER["columns_rows"] <= m < line and n < PAPER["skinny_n"])
    won = _share(designs[c] == "a" for c in region)
    return [
        Verdict("Reading x into shared memory once a block is best (3.1)", "maximum reuse of x", NOT_TESTABLE,
                "every kernel of ours stages x in shared memory, as the paper's do, so the run compares nothing; "
                "testing needs a build of `gemv_part` (kernels/common/gemv.cuh) that reads x from global memory "
                "(through L1) instead, tuned over the mesh beside it", "no variant without shared x was run"),
        Verdict("One thread per row (2a) is for tall and skinny A only (3.1)", "its cells have n < 100",
                by_share(*skinny), f"{len(a)} cells won by 2a, {_of(*skinny)} with n < 100",
                "the run's Fig. 1, the cells 2a wins; share rule"),
        Verdict("Skinny A (n < 100) below the line: one thread per row is best despite low occupancy (3.1)",
                "2a best there", by_share(*won), f"2a wins {_of(*won)} cells with 50 <= m < {line} and n < 100 "
                f"(their winners: {_designs_in(designs, region)})", f"the run's Fig. 1, {len(region)} cells; share rule"),
    ]


def claims_threads(designs: np.ndarray, line: int, best: pd.DataFrame) -> list[Verdict]:
    """3.2: 2b's region in the run's Fig. 1, its atomics, and the rule of thumb from the tuning rows (the
    paper's designs with and without grid-level parallelism, where the space has both)."""
    region = _cells(designs, lambda m, n: PAPER["columns_rows"] <= m < line and n > PAPER["skinny_n"])
    rows = best.reindex([cell_name(i, j) for i, j in region])
    where = f"cells with 50 <= m < {line} and n > 100"
    won = _share(designs[c] == "b" for c in region)
    four = rows[list(FOUR)].dropna(how="all")
    extra = {}
    if len(four):
        b_best = (rows.b / rows.max(axis=1)).dropna()
        extra = {"the paper's four alone in the race (tuning rows)": f"2b best in {_of(*_share(four.idxmax(axis=1) == 'b'))}",
                 "2b's best configuration": f"a median {100 * b_best.median():.0f} % of the cell's best"}
    out = [Verdict("Several threads per row (2b) performs well for most shapes of A, those close to square or wide "
                   "(3.2, Fig. 1)", "2b's region the largest of Fig. 1", by_share(*won),
                   f"2b wins {_of(*won)} {where}, its region in Fig. 1 left (their winners: {_designs_in(designs, region)})"
                   + other_scopes(extra, ""), f"the run's Fig. 1, {len(region)} cells; share rule")]

    wide = best.reindex([cell_name(i, j) for i, j in _cells(designs, lambda m, n: True) if j >= i + WIDE])

    def ours(frame: pd.DataFrame) -> tuple[str, float]:  # ours against the best of 2b and 2d in the same cells
        r = (frame.w / frame[list(ATOMIC_GRID)].max(axis=1)).dropna()
        return _of(*_share(r > 1)), r.median()

    would = ("testing needs 2b and 2d with their atomicAdd into y replaced by a plain store (a timing-only build) "
             "tuned beside them, or Nsight Compute's warp-stall samples of 2b at those shapes")
    out.append(Verdict("2b's most significant limitation is atomicAdd, stalling the other threads of a row (3.2)",
                       "atomicAdd stalls threads of one row", NOT_TESTABLE,
                       ("ours (KERNEL 2) is 2b and 2d's code with the atomicAdd into y replaced by a workspace that "
                        "each row of blocks' last block adds up: its best beats the best 2b or 2d in {} cells of 2b's "
                        "region (median {:.2f} x) and in {} wide cells (n >= 2^6.7 m; median {:.2f} x); but it adds a "
                        "pass over the partial sums (one thread a row, in series), so it does not isolate the atomics' "
                        "cost; ".format(*ours(rows), *ours(wide)) if len(four) else "no tuning file; ") + would,
                       "ours against 2b and 2d does not isolate the atomics"))

    ratio = (rows[list(ATOMIC_GRID)].max(axis=1) / rows[list(ONE_COLUMN)].max(axis=1)).dropna()
    held, run = _share(ratio > 1), _share(designs[c] in ATOMIC_GRID for c in region)
    out.append(Verdict(
        "Rule of thumb: below the line and n > 100, grid-level parallelism outweighs the atomics' stalls (3.2)",
        "several threads per row (a 2D grid) best there", by_share(*held) if len(ratio) else NOT_CHECKED,
        (f"in the {len(ratio)} of the {len(region)} {where} where the space holds both (n <= {SPAN}: wider A always "
         f"runs several columns of blocks), the best 2b or 2d (several columns of blocks, atomicAdd into y) beats the "
         f"best 2a or 2c (one column) in {_of(*held)} (median {ratio.median():.2f} x)" if len(ratio) else
         "no tuning file: the designs' best per cell are its rows")
        + other_scopes({f"the run's Fig. 1 over all {len(region)} cells": f"2b or 2d win {_of(*run)}, ours "
                        f"{sum(designs[c] == 'w' for c in region)}"}, ""),
        f"tuning rows, the paper's designs, {len(ratio)} cells where both ran; share rule"))
    return out


def _best_by(tuning: pd.DataFrame, cells: set[str], key) -> pd.DataFrame:
    """The best tuning GFLOP/s per cell (rows) and value of key(params) (columns), over ok and pruned rows."""
    rows = tuning[tuning.status.isin(["ok", "pruned"]) & tuning.size_class.isin(cells)]
    rows = rows.assign(key=[key(dict(parse_params(p))) for p in rows.params])
    return rows.groupby(["size_class", "key"]).gflops.max().unstack()


def claims_rows(designs: np.ndarray, line: int, tuning: pd.DataFrame | None, rows) -> list[Verdict]:
    """3.3: one column of blocks above the line (the run's Fig. 1), several rows a thread for very tall A
    (the tuning rows) and why (the rows companion)."""
    above = _cells(designs, lambda m, n: m >= line)
    one = _share(designs[c] in ONE_COLUMN for c in above)
    out = [Verdict("Above the occupancy line more threads per row stop paying (3.3)", "one column of blocks above "
                   "21504 rows", by_share(*one), f"{_of(*one)} cells above {line} rows run one column of blocks (2a or 2c)",
                   f"the run's Fig. 1, {len(above)} cells above this GPU's line; share rule")]
    finding, paper = "Very tall A (hundreds of thousands of rows): several rows a thread is a major advantage (3.3)", "2c well ahead of 2a"
    if tuning is None:
        out.append(Verdict(finding, paper, NOT_CHECKED, "no tuning file"))
    else:
        tall = {cell_name(i, j) for i, j in _cells(designs, lambda m, n: m >= 1e5)}
        wm = _best_by(tuning[tuning.params.str.contains("KERNEL=0")], tall, lambda p: p["WORKSIZE_M"] > 1)
        gain = (wm[True] / wm[False]).dropna() if {True, False} <= set(wm) else pd.Series(dtype=float)
        held = _share(gain > 1)
        out.append(Verdict(finding, paper, by_share(*held) if len(gain) else NOT_CHECKED,
                           f"in the {len(gain)} tuned cells with m >= 1e5 the best versatile configuration with "
                           f"WORKSIZE_M > 1 beats the best with WORKSIZE_M = 1 in {_of(*held)} (median {gain.median():.2f} x)",
                           f"tuning rows, KERNEL 0, {len(gain)} cells; share rule"))
    out.append(claim_rows(rows_numbers(rows.df, rows.profile) if rows else None))
    return out


def columns_reach(designs: np.ndarray) -> tuple[float, list[float]]:
    """Up to how many rows 2e is best on wide A: in each mesh column with n > 100 where 2e wins a cell, the
    top edge (rows) of the highest cell it wins; their median, and the list (the paper's "~ 50 rows")."""
    reach = [MESH_MAX ** ((max(i for i in range(MESH_CELLS) if designs[i, j] == "e") + 1) / MESH_CELLS)
             for j in range(MESH_CELLS) if centre(j) > PAPER["skinny_n"] and (designs[:, j] == "e").any()]
    return (float(np.median(reach)) if reach else float("nan")), reach


def claim_columns_region(designs: np.ndarray) -> Verdict:
    """3.4, Fig. 1: 2e best for wide A under ~50 rows, a region (share rule over its cells) and an estimate of
    its edge (the estimate rule on the rows up to which 2e is best), the weaker of the two."""
    region = _cells(designs, lambda m, n: m < PAPER["columns_rows"] and n > PAPER["skinny_n"])
    won = _share(designs[c] == "e" for c in region)
    reach, columns = columns_reach(designs)
    share, edge = by_share(*won), by_about(reach, PAPER["columns_rows"]) if columns else NOT_CHECKED
    return Verdict("Several threads, several columns (2e) performs well for wide A under ~50 rows (3.4, Fig. 1)",
                   "2e best below ~50 rows", weakest(share, edge),
                   f"2e wins {_of(*won)} cells with m < 50 and n > 100 (their winners: {_designs_in(designs, region)}; "
                   f"{share} by the share rule); in each of the {len(columns)} columns with n > 100 where it wins, it is "
                   f"best up to the top edge of its highest cell, {min(columns, default=float('nan')):.0f} to "
                   f"{max(columns, default=float('nan')):.0f} rows, a median of {reach:.0f}: "
                   f"{max(reach / PAPER['columns_rows'], PAPER['columns_rows'] / reach):.1f} x "
                   f"{'under' if reach < PAPER['columns_rows'] else 'over'} the paper's ~50 ({edge} by the estimate rule)",
                   f"the run's Fig. 1, {len(region)} cells; the region by the share rule, its edge against ~50 rows by "
                   "the estimate rule; the weaker")


def claims_columns(designs: np.ndarray, best: pd.DataFrame) -> list[Verdict]:
    """3.4: threads along the columns (2e) against the designs that idle threads on short A (the tuning
    rows), what its reductions cost, and its region in the run's Fig. 1."""
    short = best.reindex([cell_name(i, j) for i, j in _cells(designs, lambda m, n: m < 32 and n > PAPER["skinny_n"])])
    rows_kernels = ["a", "b", "c", "d"]  # the paper's designs with a thread a row: idle threads where m < BLOCKSIZE
    r = (short.e / short[rows_kernels].max(axis=1)).dropna()
    r_ours = (short.e / short[[*rows_kernels, "w"]].max(axis=1)).dropna()
    held = _share(r > 1)
    reduction = ("testing needs a 2e with the paper's atomicAdd reduction and a timing-only 2e that stores its "
                 "partial sums rather than adding them, tuned beside ours at the wide cells")
    return [
        Verdict("A shorter than BLOCKSIZE leaves threads idle; threads along the columns (2e) avoid it (3.4)",
                "2e best for very wide, fat A", by_share(*held) if len(r) else NOT_CHECKED,
                (f"in the {len(r)} tuned cells with m < 32 (under every BLOCKSIZE) and n > 100 the best 2e configuration "
                 f"beats the best of the paper's designs with a thread a row (2a to 2d) in {_of(*held)} (median "
                 f"{r.median():.2f} x)" + other_scopes({"with ours in the race": _of(*_share(r_ours > 1))}, "")
                 if len(r) else "no tuning file"), f"tuning rows, the paper's designs, {len(r)} cells; share rule"),
        Verdict("2e's reductions have a considerable cost on performance (3.4)", "seen in the results of 4.1",
                NOT_TESTABLE, "our 2e adds a row's partial sums in shared memory, then once a block into y by atomicAdd "
                "(the paper's adds by atomicAdd), and no 2e without the reduction was run; " + reduction,
                "our 2e's reduction is not the paper's"),
        Verdict("A shared-memory reduction gains nothing significant over atomicAdd on the C2050 (3.4)", "C2050 only",
                NOT_TESTABLE, "our 2e already adds a row's partial sums in shared memory (atomicAdd on shared) and once "
                "a block into y; testing needs the C2050, with a 2e of one global atomicAdd a thread beside ours",
                "the C2050: another GPU"),
        claim_columns_region(designs),
    ]


def claim_versatile() -> Verdict:
    return Verdict("The four designs combine into one versatile kernel (Fig. 2d), 2a to 2c its special cases (3, 3.5)",
                   "BLOCKSIZE, WORKSIZE_m, WORKSIZE_n", BY_CONSTRUCTION,
                   "our KERNEL 0 (`versatile` in kernels/common/gemv.cuh) is 2a, 2b, 2c or 2d by its parameters at a "
                   "shape (the run's Fig. 1 is classed so); 2e is KERNEL 1", "how we built the kernel")


def _adjacent_agreement(values: np.ndarray, designs: np.ndarray) -> tuple[float, float]:
    """Of neighbouring cells with the same design, the share with the same parameter value, and the share
    chance gives (the sum over the design's values of their squared frequencies, weighted by pairs)."""
    same, pairs, chance = 0, 0, 0.0
    for (i, j), d in np.ndenumerate(designs):
        for a, b in ((i + 1, j), (i, j + 1)):
            if a < MESH_CELLS and b < MESH_CELLS and d and designs[a, b] == d:
                pairs += 1
                same += values[i, j] == values[a, b]
                freq = pd.Series(values[designs == d]).value_counts(normalize=True)
                chance += float((freq ** 2).sum())
    return (same / pairs, chance / pairs) if pairs else (float("nan"), float("nan"))


def claims_parameters(ok: pd.DataFrame, designs: np.ndarray) -> list[Verdict]:
    """Fig. 3 (4.1) over the cells the paper's designs win (ours left out): the values used, how they differ
    between the designs, and how little pattern they have otherwise."""
    params = mesh_params(ok)
    paper = np.where(designs == "w", "", designs)
    held = paper != ""
    labels = paper[held]
    used, between, pattern = {}, [], []
    for name in PARAMS:
        values = params[name].to_numpy()
        used[name] = sorted(int(v) for v in np.unique(values[held]))
        v = pd.Series(values[held])
        total = ((v - v.mean()) ** 2).sum()
        within = ((v - v.groupby(labels).transform("mean")) ** 2).sum()
        between.append(1 - within / total if total else float("nan"))
        pattern.append(_adjacent_agreement(values, paper))
    full = _share(v in used[k] for k in PARAMS for v in GEMV_SPACE[k])
    differ = _share(b >= 0.25 for b in between)
    plain = _share(s - c < 0.2 for s, c in pattern)
    scope = f"the run's Fig. 3, {int(held.sum())} cells of the paper's designs"
    return [
        Verdict("Fig. 3: every tuning parameter's full range gets used (4.1)", "all values of BLOCKSIZE, WORKSIZE_m "
                "and WORKSIZE_n appear", by_share(*full), "; ".join(
                    f"{k}: {len(used[k])} of {len(GEMV_SPACE[k])} values ({', '.join(map(str, used[k]))})" for k in PARAMS),
                f"{scope}; share rule over the {full[1]} allowed values"),
        Verdict("Fig. 3: the best parameters differ distinctively between kernels (4.1)", "each kernel its own values",
                by_share(*differ), "the cell's design explains " + ", ".join(
                    f"{100 * b:.0f} % of {n}'s variance" for n, b in zip(PARAMS, between)),
                f"{scope}; share rule over the 3 parameters, one differing where the design explains >= 25 % of it"),
        Verdict("Fig. 3: no clear pattern otherwise (4.1)", "no pattern within a kernel's cells", by_share(*plain),
                "neighbouring cells of one design share the value in " + ", ".join(
                    f"{100 * s:.0f} % ({n}; chance {100 * c:.0f} %)" for n, (s, c) in zip(PARAMS, pattern)),
                f"{scope}; share rule over the 3 parameters, one without pattern where neighbours agree within 20 "
                "points of chance"),
    ]


def claim_fig1(designs: np.ndarray, line: int, best: pd.DataFrame) -> Verdict:
    """Fig. 1 right against Fig. 1 left: the cells the paper's four kernels win in their own regions; 2d and
    ours win others (credited, they are extra evidence, as is the race of the four alone in the tuning rows)."""
    cells = _cells(designs, lambda m, n: True)
    target = {c: target_design(centre(c[0]), centre(c[1]), line) for c in cells}
    credit = {"a": {"a"}, "b": {"b", "d", "w"}, "c": {"c", "d"}, "e": {"e"}}  # d has both 2b and 2c in it
    exact = _share(designs[c] == target[c] for c in cells)
    extra = {"2d counted for 2b and 2c, ours for 2b": _of(*_share(designs[c] in credit[target[c]] for c in cells))}
    four = best.reindex([cell_name(i, j) for i, j in cells])[list(FOUR)].dropna(how="all")
    if len(four):
        won = four.idxmax(axis=1)
        extra["the paper's four alone in the race (tuning rows)"] = _of(*_share(won[k] == target[parse_cell(k)]
                                                                                 for k in won.index))
    counts = ", ".join(f"{NAMES[k]} {int((designs == k).sum())}" for k in CLASSES)
    return Verdict("Fig. 1 right: each of the four kernels is best about its target region (Fig. 1 left) (4.1)",
                   "\"corresponds reasonably well\"", by_share(*exact),
                   f"{_of(*exact)} cells won by their region's kernel (regions from the text: 2e under "
                   f"{PAPER['columns_rows']} rows, 2c above the line, 2a at n < {PAPER['skinny_n']}, 2b elsewhere); "
                   f"cells per design: {counts}" + other_scopes(extra, ""),
                   f"the run's Fig. 1, the paper's four kernels, {len(cells)} cells; share rule")


def claims_tuning(tuning: pd.DataFrame | None, tuning_meta: dict, ok: pd.DataFrame, designs: np.ndarray, line: int,
                  best: pd.DataFrame) -> list[Verdict]:
    """4.1: the tuning space and mesh (ours by construction), the tuner's time, Fig. 1, Fig. 3, and how much
    a single configuration loses."""
    cells = run_cells(ok)
    space = math.prod(len(v) for v in get_variant(TUNED).space.values())
    tuned = len(set(tuning.size_class)) if tuning is not None else 0
    wall = sum(float(r.get("wall_s") or 0) for r in tuning_meta.get("invocations") or [])
    out = [
        Verdict("The space: 3 implementations x 8 BLOCKSIZE x 8 WORKSIZE_m x 8 WORKSIZE_n = 1536 kernels, searched "
                "exhaustively (4.1, 5)", "1536", BY_CONSTRUCTION,
                f"{space} configurations (gemv_tuned's space); the third implementation is ours (KERNEL 2, wide without "
                "atomics): the paper does not say what its third is beside 2d and 2e; brute force, pruned (the tuner's "
                "departure)", "how we built the tuning space"),
        Verdict("A 24 x 24 logarithmic mesh, each cell the mean of a 3 x 3 grid (4.1, Fig. 1 middle)", "576 cells",
                BY_CONSTRUCTION, f"{tuned} of {MESH_CELLS ** 2} cells tuned and {len(cells)} run: the mesh is capped at "
                "1 GiB matrices (the paper's cap is its 3 GB card)", "how we built the mesh"),
        Verdict("The tuner runs in 1.8 hours (4.1)", f"{PAPER['tuning_hours']} h on a C2050", NOT_TESTABLE,
                f"ours (not the verdict): {wall:.0f} s ({wall / 3600:.2f} h) for {tuned} cells on this GPU, pruned "
                "(configurations under half the best's speed at a cell's pivot shape are not timed at its other "
                "shapes); testing needs the paper's tuner, every configuration at every shape of the mesh, on a C2050",
                "the C2050: another GPU"),
        claim_fig1(designs, line, best),
        *claims_parameters(ok, designs),
    ]
    finding, paper = "The results are a strong advocacy for auto-tuning (4.1)", "no one configuration serves all cells"
    if tuning is None:
        return out + [Verdict(finding, paper, NOT_CHECKED, "no tuning file")]
    rows = tuning[tuning.status.isin(["ok", "pruned"])]
    speed = rows.pivot_table(index="params", columns="size_class", values="gflops", aggfunc="max")
    rel = speed / speed.max()
    loss = np.log(rel).mean(axis=1, skipna=False).dropna()
    if not len(loss):
        return out + [Verdict(finding, paper, NOT_CHECKED, "no configuration measured in every tuned cell")]
    fixed = rel.loc[loss.idxmax()].dropna()
    lost = _share(fixed < FIXED_LOSS)
    return out + [Verdict(finding, paper, by_share(*lost),
                          f"the best single configuration over the {len(loss)} measured in every tuned cell "
                          f"({loss.idxmax()}: a geometric mean of {100 * float(np.exp(loss.max())):.0f} % of each cell's "
                          f"best) runs under {100 * FIXED_LOSS:.0f} % of the cell's best in {_of(*lost)} cells",
                          f"tuning rows, {lost[1]} cells; share rule, a cell lost under {100 * FIXED_LOSS:.0f} % of its best "
                          "('strong' read as a share of the cells, not as an existence)")]


def _spread(fam: pd.DataFrame, variant: str) -> float:
    """The median over N (footprints >= 1 MiB) of the fastest family's GFLOP/s over the slowest's."""
    big = fam[fam.footprint >= LIBRARY_CELL_BYTES]
    by_n = big.groupby("N")[f"gflops_{variant}"]
    return float((by_n.max() / by_n.min()).median())


def claims_families(fam: pd.DataFrame, ok: pd.DataFrame, meta: dict) -> list[Verdict]:
    """Fig. 4 (4.2): the curves against the shape at the paper's N, the library's curves, the tall drops and
    their cause."""
    by = fam.pivot_table(index="N", columns="family", values=f"gflops_{TUNED}")
    spread = by.max(axis=1) / by.min(axis=1)
    theirs, small = spread[spread.index >= PAPER["first_n"]], spread[spread.index < PAPER["first_n"]]
    same = _share(theirs <= NEAR)
    rows = variant_rows(ok, TUNED).drop_duplicates(["m", "n"], keep="last").set_index(["m", "n"]).params
    drops = {}
    for family, f in fam.groupby("family"):
        f = f.sort_values("N")
        g = f[f"gflops_{TUNED}"].to_numpy()
        drops[family] = [(int(a), int(b)) for a, b, x, y in zip(f.N, f.N[1:], g[:-1], g[1:]) if y < 0.97 * x]
    fm, fn = FAMILIES["tall"]
    tall = []
    for a, b in drops.get("tall", []):
        before, at = (rows.get((fm * k, fn * k)) for k in (a, b))
        tall.append(f"N = {a} to {b}: {NAMES[shape_design(fm * b, fn * b, at)] if at else '?'}, "
                    + ("the same configuration at both" if at and at == before else "another configuration"))
    said = "; ".join(f"{k} at N = {', '.join(str(b) for _, b in v) or 'none'}" for k, v in drops.items())
    return [
        Verdict("Fig. 4: the tuned kernel's curves behave the same whatever the shape (4.2, 5)", "tall, square and wide "
                "alike", by_share(*same), f"fastest family over slowest within {NEAR:g} x at {_of(*same)} N from "
                f"{PAPER['first_n']} (at most {theirs.max():.2f} x)" + other_scopes(
                    {f"N < {PAPER['first_n']}": f"{small.min():.2f} to {small.max():.2f} x"} if len(small) else {}, ""),
                f"the families at the paper's N >= {PAPER['first_n']}; share rule, 'the same' within 25 %"),
        Verdict("Fig. 4 left: CUBLAS 4.0's curves depend on the shape; the tuned kernel a significant improvement (4.2)",
                "CUBLAS 4.0's tall, square and wide curves apart", NOT_TESTABLE,
                f"today's {cublas_version(meta)} (not the verdict): fastest family over slowest "
                f"{_spread(fam, LIBRARY):.2f}, the tuned kernel's {_spread(fam, TUNED):.2f} (footprints >= 1 MiB, median "
                f"over N); {LIBRARIES_2011}", "CUBLAS 4.0: another library"),
        Verdict("Fig. 4: several drops in the tall curve (4.2)", "drops in the tall curve only", NOT_TESTABLE,
                f"our families take {len(spread)} N a family, mostly powers of two, the paper's N steps by 10: drops of > 3 % from "
                f"one N to the next: {said}; testing needs the families at the paper's N (sizes "
                "`tall:10:1630:+10,square:10:1630:+10,wide:10:1630:+10` in configs/sorensen2012.toml)",
                "the families' N too sparse for drops"),
        Verdict("The drops come from the coarse tuning mesh: the parameters change fast there and 2c, best there, is "
                "sensitive to them; a finer mesh is needed (4.2)", "cause", NOT_TESTABLE,
                ("our tall drops: " + "; ".join(tall) + "; " if tall else "") + "testing needs the drops first (the row "
                "above), then gemv_tuned tuned at the drop shapes themselves (`mmbench tune -v gemv_tuned -s SHAPES "
                "--strategy brute`) against their mesh cell's configuration", "no drops of the paper's to explain"),
    ]


def claim_rises(fam: pd.DataFrame) -> Verdict:
    """The conclusion (5): the families' GFLOP/s rise with N until the GPU is full."""
    rises = []
    for _, f in fam[fam.N >= PAPER["first_n"]].groupby("family"):
        g = f.sort_values("N")[f"gflops_{TUNED}"].to_numpy()
        below = g < 0.9 * g.max()  # steps before the curve reaches 90 % of its top
        rises += [b > a for a, b, low in zip(g[:-1], g[1:], below[:-1]) if low]
    held = _share(rises)
    return Verdict("Performance rises with the size of A until the GPU is full (5)", "a rise, then a plateau",
                   by_share(*held) if rises else NOT_CHECKED,
                   f"{_of(*held)} steps of N (from {PAPER['first_n']}) before a family's curve reaches 90 % of its top rise",
                   f"the families at the paper's N >= {PAPER['first_n']}; share rule")


def _dips(values: np.ndarray) -> int:
    """Cells under half the median of their anti-diagonal (same m n): the map's 'features'."""
    out = 0
    for d in range(2 * MESH_CELLS - 1):
        cells = [values[i, d - i] for i in range(MESH_CELLS) if 0 <= d - i < MESH_CELLS and not np.isnan(values[i, d - i])]
        out += sum(v < 0.5 * np.median(cells) for v in cells)
    return int(out)


def _near_diagonal(values: np.ndarray) -> tuple[int, int]:
    """Cells within NEAR of their anti-diagonal's median (same m n), of the cells on anti-diagonals of two or more."""
    held = []
    for d in range(2 * MESH_CELLS - 1):
        cells = [values[i, d - i] for i in range(MESH_CELLS) if 0 <= d - i < MESH_CELLS and not np.isnan(values[i, d - i])]
        if len(cells) > 1:
            held += [1 / NEAR <= v / np.median(cells) <= NEAR for v in cells]
    return _share(held)


def claims_mesh(ok: pd.DataFrame, meta: dict, profile: pd.DataFrame | None) -> list[Verdict]:
    """Fig. 5 (4.3): the libraries' maps (CUBLAS 4.0 and MAGMA 1.0.0: today's cuBLAS is extra evidence), then
    the tuned kernel's: the number of elements, its symmetry, its wide side and why."""
    line = occupancy_rows(meta) or PAPER["occupancy_rows"]
    lib_bw, tuned_bw = mesh_values(ok, LIBRARY, "gbytes_per_s"), mesh_values(ok, TUNED, "gbytes_per_s")
    copy = copy_bandwidth(ok)

    def median_pct(rows: list[int]) -> float:  # cuBLAS's median % of the copy over these rows' cells >= 1 MiB
        values = lib_bw.iloc[rows].to_numpy()[big_matrix(rows)]
        values = values[~np.isnan(values)]
        return float(np.median(values)) / copy * 100 if values.size else float("nan")

    above = median_pct([i for i in range(MESH_CELLS) if min(p.m for p in cell_points(i, 0)) >= line])
    below = median_pct([i for i in range(MESH_CELLS) if max(p.m for p in cell_points(i, 0)) < line])
    ratio = (lib_bw / tuned_bw).to_numpy()
    wide_lib = np.nanmedian([ratio[i, j] for i in range(MESH_CELLS) for j in range(i + WIDE, MESH_CELLS)])
    tall_lib = np.nanmedian([ratio[j, i] for i in range(MESH_CELLS) for j in range(i + WIDE, MESH_CELLS)])
    tuned, lib = (mesh_values(ok, v, "gflops_mean").to_numpy() for v in (TUNED, LIBRARY))
    today = f"today's {cublas_version(meta)} (not the verdict)"
    near, near_lib = _near_diagonal(tuned), _near_diagonal(lib)
    pairs = [tuned[i, j] / tuned[j, i] for i in range(MESH_CELLS) for j in range(i + 1, MESH_CELLS)]
    pairs = [r for r in pairs if not np.isnan(r)]
    mirrored = _share(1 / NEAR <= r <= NEAR for r in pairs)
    wide = [tuned[i, j] / tuned[j, i] for i in range(MESH_CELLS) for j in range(i + WIDE, MESH_CELLS)
            if not np.isnan(tuned[i, j] / tuned[j, i])]
    slower = _share(r < 1 for r in wide)
    return [
        Verdict("CUBLAS 4.0 and MAGMA 1.0.0 perform well only above the occupancy line, and poorly for wide A (4.3)",
                "good only above 21504 rows; wide A far from the hardware's potential", NOT_TESTABLE,
                f"{today}: median {above:.0f} % of the copy in cells above this GPU's line ({line} rows), {below:.0f} % "
                f"below (cells >= 1 MiB); cuBLAS / tuned median {wide_lib:.2f} in wide cells (n >= 2^6.7 m), "
                f"{tall_lib:.2f} in tall ones; {LIBRARIES_2011}", "CUBLAS 4.0, MAGMA 1.0.0: other libraries"),
        claim_cublas(cublas_launches(profile), meta),
        Verdict("MAGMA 1.0.0 looks like a one-thread-per-row kernel (4.3)", "inferred from Fig. 5", NOT_TESTABLE,
                f"MAGMA is not run; {LIBRARIES_2011}", "MAGMA 1.0.0: not run"),
        Verdict("The libraries are not auto-tuned, hence features (dips) in their maps (4.3)", "features in CUBLAS 4.0's "
                "and MAGMA's maps", NOT_TESTABLE, f"{today}: {_dips(lib)} cells under half their anti-diagonal's median "
                f"GFLOP/s, the tuned kernel {_dips(tuned)}; {LIBRARIES_2011}", "CUBLAS 4.0, MAGMA 1.0.0: other libraries"),
        Verdict("Fig. 5: the tuned kernel performs well for all shapes, depending mainly on the number of elements (4.3)",
                "performance set by m n", by_share(*near),
                f"{_of(*near)} cells within {NEAR:g} x of the median of their anti-diagonal (the same m n)"
                + other_scopes({"the variance of log GFLOP/s that m n explains": f"{100 * _anti_diagonal_r2(tuned):.0f} %",
                                "cuBLAS's cells within it": _of(*near_lib)}, ""),
                f"the run's mesh, {near[1]} cells; share rule, 'set by m n' within 25 %"),
        Verdict("Fig. 5: the tuned kernel's map is almost symmetric in m and n (4.3, 'skew-symmetric')",
                "close to optimal shape dependence", by_share(*mirrored),
                f"{_of(*mirrored)} pairs of a cell and its mirror (m and n swapped) within {NEAR:g} x of each other",
                f"the run's mesh, {mirrored[1]} pairs; share rule, 'symmetric' within 25 %"),
        Verdict("Fig. 5: very wide and fat A are slower than comparable tall and skinny A (4.3)", "wide below tall",
                by_share(*slower), f"a wide cell (n >= 2^6.7 m) slower than its mirrored tall cell in {_of(*slower)} "
                f"pairs (median {float(np.median(wide)) if wide else float('nan'):.2f} x)",
                f"the run's mesh, {slower[1]} pairs; share rule"),
        Verdict("Wide A are slower because 2e adds its partial results into the same address by atomicAdd (4.3)",
                "cause", NOT_TESTABLE, "our 2e adds a row's partial sums in shared memory first and once a block into y, "
                "so its atomics are not the paper's; testing needs a 2e with the paper's atomicAdd reduction and a "
                "timing-only 2e that stores its partial sums rather than adding them, tuned beside ours at the wide "
                "cells: whether the gap to the mirrored tall cells closes without the atomics",
                "our 2e's reduction is not the paper's"),
    ]


PROFILE = ("mmbench run -v gemv_rows --params WORKSIZE_M=1/4 -s 1000003x64 -o rows/gemv-rows.csv beside the run, then "
           "mmbench profile -v gemv_rows --results rows/gemv-rows.csv --points 1000003x64")


def claim_libraries_rectangular(fam: pd.DataFrame, meta: dict) -> Verdict:
    """1 and 5: the libraries of 2011 under-use the GPU for rectangular A; today's cuBLAS is extra evidence."""
    big = fam[fam.footprint >= BIG]
    pct = (100 * big[f"gbytes_per_s_{LIBRARY}"] / big.copy_gbytes_per_s).groupby(big.family).median()
    return Verdict("CUBLAS and MAGMA under-use the GPU for rectangular A: they reach its potential for tall A only (1, 5)",
                   "rectangular (wide) well below tall", NOT_TESTABLE,
                   f"today's {cublas_version(meta)} (not the verdict), median % of the copy at footprints >= 256 MiB: "
                   + ", ".join(f"{k} {v:.0f} %" for k, v in pct.items()) + f"; {LIBRARIES_2011}",
                   "CUBLAS 4.0, MAGMA 1.0.0: other libraries")


def claims_related(ok: pd.DataFrame) -> list[Verdict]:
    """Section 2's cited results, as fractions of their bandwidth bound: other GPUs and libraries."""
    copy = copy_bandwidth(ok)
    peak = float(variant_rows(ok, TUNED).gflops_mean.max())
    ours = (f"ours (not the verdict): the tuned kernel's best {peak:.0f} GFLOP/s, {100 * peak / (copy / 2):.0f} % of the "
            f"copy's bound ({copy:.0f} GB/s / 2)")
    bound = {k: 100 * PAPER[k][0] / (PAPER[k][1] / 2) for k in ("fujimoto", "magma")}
    return [
        Verdict("Fujimoto 2008: 36 GFLOP/s on an 8800GTX of 86 GB/s, well above CUBLAS 1.1 (2)",
                f"{bound['fujimoto']:.0f} % of its bound", NOT_TESTABLE,
                f"testing needs an 8800GTX with Fujimoto's kernel and CUBLAS 1.1; {ours}", "another GPU and library"),
        Verdict("MAGMA 2009: 66 GFLOP/s for square A on a 141 GB/s card, well above CUBLAS 2.3 (2)",
                f"{bound['magma']:.0f} % of its bound", NOT_TESTABLE,
                "testing needs MAGMA of 2009 and CUBLAS 2.3 on that card; MAGMA is not run", "another GPU and library"),
        Verdict("MAGMA's transposed kernel: 43 GFLOP/s, more than twice CUBLAS 2.3 (2)", "43 GFLOP/s", NOT_TESTABLE,
                "y = A^T x is not run: testing needs a transposed GEMV (an op parameter, cuBLAS with CUBLAS_OP_T) and "
                "MAGMA of 2009 with CUBLAS 2.3 on its card", "another GPU and library"),
    ]


# -- what the profiles answer (issue 32) -------------------------------------------------------------------
ROWS_GAIN = 1.1  # WORKSIZE_M = 4 at least 10 % faster than 1: a gain ('no' under it)
ROWS_MAINLY = 0.5  # 'mainly': the shared loads are at least half the warp instructions the rows saved


def rows_numbers(df: pd.DataFrame, profile: pd.DataFrame | None) -> dict | None:
    """gemv_rows at WORKSIZE_M = 1 and 4 (the rows companion): the time gain, each one's shared-load
    instructions and shared bytes per row of A, the warp instructions saved, and shared memory's share
    of its peak at WORKSIZE_M = 1; None where the run or its profile lacks either."""
    ok = df[(df.status == "ok") & (df.variant == "gemv_rows")]
    if profile is None or ok.empty:
        return None
    prof = profile[profile.variant == "gemv_rows"].copy()
    prof["wm"] = [dict(parse_params(p)).get("WORKSIZE_M") for p in prof.params]
    ok = ok.assign(wm=[dict(parse_params(p)).get("WORKSIZE_M") for p in ok.params])
    if not ({1, 4} <= set(prof.wm) and {1, 4} <= set(ok.wm)):
        return None
    one, four = (prof[prof.wm == w].iloc[0] for w in (1, 4))
    shared_pct = levels(prof[prof.wm == 1]).shared_pct.iloc[0]
    return {"m": int(one.m), "n": int(one.n), "params": (one.params, four.params),
            "time_ms": tuple(float(ok[ok.wm == w].time_ms_mean.iloc[0]) for w in (1, 4)),
            "gain": float(ok[ok.wm == 1].time_ms_mean.iloc[0] / ok[ok.wm == 4].time_ms_mean.iloc[0]),
            "ld_per_row": (one.shared_ld_inst / one.m, four.shared_ld_inst / four.m),
            "bytes_per_row": (one.shared_bytes / one.m, four.shared_bytes / four.m),
            "warp_inst": (float(one.warp_inst), float(four.warp_inst)),
            "saved_share": float((one.shared_ld_inst - four.shared_ld_inst) / (one.warp_inst - four.warp_inst)),
            "shared_pct": float(shared_pct), "dram_gbs": tuple(float((r.dram_bytes_read + r.dram_bytes_write) / r.gpu_time_ns)
                                                               for r in (one, four))}


def rows_verdict(gain: float, fewer_loads: bool, saved_share: float) -> str:
    """3.3's mechanism, an order: 'yes' where WORKSIZE_M = 4 gains, reads shared memory less, and the shared
    loads are most of the instructions the extra rows saved; else 'no' (the gain itself is the row above's)."""
    return by_order(gain >= ROWS_GAIN and fewer_loads and saved_share >= ROWS_MAINLY)


def claim_rows(numbers: dict | None) -> Verdict:
    finding = "Several rows a thread gains mainly by fewer shared-memory reads of x (3.3)"
    if numbers is None:
        return Verdict(finding, "mechanism", NOT_TESTABLE, f"needs gemv_rows at WORKSIZE_M = 1 and 4 and its profile: {PROFILE}")
    n = numbers
    ld, by = n["ld_per_row"], n["bytes_per_row"]
    holds = rows_verdict(n["gain"], ld[1] < ld[0], n["saved_share"])
    return Verdict(finding, "mechanism", holds,
                   f"gemv_rows at {n['m']} x {n['n']} (BLOCKSIZE {dict(parse_params(n['params'][0])).get('BLOCKSIZE')}, "
                   f"the rows companion): WORKSIZE_M = 4 takes "
                   f"{n['time_ms'][1] * 1e3:.0f} us against {n['time_ms'][0] * 1e3:.0f} us at 1 ({n['gain']:.2f} x; a gain "
                   f"from {ROWS_GAIN:g} x), with {ld[0] / ld[1]:.0f} x fewer shared-load instructions a row ({ld[0]:.3f} to "
                   f"{ld[1]:.3f}) and {by[0] / by[1]:.0f} x fewer shared bytes ({by[0]:.1f} to {by[1]:.1f} B a row, loads and "
                   f"stores: the loads are wider as well as fewer). But shared memory ran at {n['shared_pct']:.1f} % of its peak "
                   f"at WORKSIZE_M = 1, and the shared loads are {100 * n['saved_share']:.0f} % of the "
                   f"{(n['warp_inst'][0] - n['warp_inst'][1]) / 1e6:.1f} M warp instructions the rows saved (all "
                   f"{n['warp_inst'][0] / n['warp_inst'][1]:.1f} x fewer): the gain comes with fewer shared reads, but "
                   f"shared memory was no limit and its reads are a small part of what was saved, so not mainly by them; "
                   f"DRAM {n['dram_gbs'][0]:.0f} to {n['dram_gbs'][1]:.0f} GB/s for the same bytes",
                   f"the rows companion: 2c (gemv_rows), one very tall shape; order rule, 'mainly' where the shared loads "
                   f"are >= {100 * ROWS_MAINLY:.0f} % of the instructions saved")


SPLIT_K = ("splitkreduce", "reduce")  # a second kernel that adds partial sums: columns split over blocks


def cublas_launches(profile: pd.DataFrame | None) -> pd.DataFrame:
    """The kernels cuBLAS launched at each profiled shape (Nsight Compute's `kernels` column): the
    shape's family (tall, square or wide), its kernels' short names, and whether it splits the columns
    (a reduction kernel after the GEMV's)."""
    if profile is None or "kernels" not in profile:
        return pd.DataFrame(columns=["family", "m", "n", "names", "split"])
    out = []
    for r in profile[profile.variant == LIBRARY].itertuples():
        names = [_short_kernel(k) for k in str(r.kernels).split(";")]
        out.append({"family": family_of(r.m, r.n) or "other", "m": int(r.m), "n": int(r.n), "names": names,
                    "split": any(w in name.lower() for name in names for w in SPLIT_K)})
    return pd.DataFrame(out, columns=["family", "m", "n", "names", "split"])


def _short_kernel(name: str) -> str:
    """A demangled kernel name without its return type, namespaces' template arguments and parameters;
    cuBLAS's GEMV template keeps its integer arguments (which instance ran)."""
    numbers = re.search(r"float, ((?:\d+, )+\d+), cublasGemvParams", name)
    bare = name
    while re.search(r"<[^<>]*>", bare):
        bare = re.sub(r"<[^<>]*>", "", bare)
    bare = bare.split("(")[0].split()[-1]
    return f"{bare}<..., {numbers.group(1)}, cublasGemvParamsEx<...>>" if numbers else bare


def claim_cublas(launches: pd.DataFrame, meta: dict) -> Verdict:
    """4.3: CUBLAS 4.0 as a thread-per-row kernel is another library's claim; today's cuBLAS, split over
    blocks where a shape's kernels add partial sums, is extra evidence (one GEMV kernel alone cannot say:
    the profile has no grid sizes)."""
    finding, paper, test = ("CUBLAS 4.0 looks like a one-thread-per-row kernel (4.3)", "inferred from Fig. 5",
                            "CUBLAS 4.0: another library")
    version = cublas_version(meta)
    if launches.empty:
        return Verdict(finding, paper, NOT_TESTABLE, f"{LIBRARIES_2011}; a profile of today's cublas_gemv (mmbench "
                       "profile -v cublas_gemv --points tall:1448,square:1448,wide:1448) would add its kernels' names", test)
    by = {}
    for r in launches.itertuples():
        by.setdefault((" then ".join(f"`{k}`" for k in r.names), r.split), []).append(f"{r.family} {r.m} x {r.n}")
    said = "; ".join(f"{', '.join(shapes)}: {names}" for (names, _), shapes in by.items())
    split = launches[launches.split]
    whole = launches[~launches.split]
    return Verdict(finding, paper, NOT_TESTABLE,
                   f"today's {version} (not the verdict) launches, by Nsight Compute's names: {said}. "
                   + (f"At the {', '.join(sorted(set(split.family)))} shapes it splits each row's columns over blocks "
                      "and adds the parts in a second kernel (split-K): several threads a row, not one. " if len(split) else "")
                   + (f"At the {', '.join(sorted(set(whole.family)))} shapes one GEMV kernel runs, whose name does not "
                      "say how threads map to rows, and the profile has no grid sizes (Nsight Compute's "
                      "launch__grid_size and launch__block_size would tell). " if len(whole) else "")
                   + f"CUBLAS 4.0 itself is not run: {LIBRARIES_2011}", test)


def claims_abstract(ok: pd.DataFrame, grid: Verdict) -> list[Verdict]:
    """The abstract's two claims: the first is the rule of thumb's (3.2), the second over the mesh's cells."""
    tuned, lib = (mesh_values(ok, v, "gflops_mean").to_numpy() for v in (TUNED, LIBRARY))
    ratio = tuned / lib
    measured = ~np.isnan(ratio)
    held = _share(ratio[measured] >= 1)
    big = _share(ratio[measured & big_matrix(list(range(MESH_CELLS)))] >= 1)
    return [
        Verdict("Abstract, 1: high GEMV performance is a matter of using the GPU's fine-grained parallelism fully; "
                "grid-level parallelism is essential for rectangular A", "grid-level parallelism where rows are few",
                grid.holds, "as the rule of thumb below (3.2)", "the rule of thumb's verdict"),
        Verdict("Abstract: auto-tuning makes the kernel perform well for all shapes and sizes", "good at every shape",
                by_share(*held), f"the tuned kernel at least as fast as today's cuBLAS in {_of(*held)} mesh cells"
                + other_scopes({"the cells with matrices >= 1 MiB": _of(*big)}, ""),
                f"the run's mesh, {held[1]} cells; share rule, 'well' as fast as today's cuBLAS or faster"),
    ]


def claims(ok: pd.DataFrame, meta: dict, tuning: pd.DataFrame | None, tuning_meta: dict,
           shapes: set[tuple[int, int]] | None, profile: pd.DataFrame | None = None, rows=None) -> list[Verdict]:
    """Every claim of the paper, in its order: the abstract, sections 1 to 5 with their figures; `profile` is
    the run's Nsight Compute profile, `rows` its gemv_rows companion (studies.common.Companion)."""
    designs = cell_designs(ok)
    line = occupancy_rows(meta) or PAPER["occupancy_rows"]
    fam = families(ok, shapes)
    best = tuning_best(tuning)
    threads = claims_threads(designs, line, best)  # its last, the rule of thumb, answers the abstract's first
    return [*claims_abstract(ok, threads[-1]), claim_libraries_rectangular(fam, meta), *claims_related(ok),
            *claims_one_thread(designs, line), *threads, *claims_rows(designs, line, tuning, rows),
            *claims_columns(designs, best), claim_versatile(),
            *claims_tuning(tuning, tuning_meta, ok, designs, line, best), *claims_families(fam, ok, meta),
            *claims_mesh(ok, meta, profile), claim_rises(fam)]
