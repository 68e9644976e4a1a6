"""Lameski 2013's claims and their verdicts (rule.py): those the run and its profile can judge, in
the paper's order of argument (`verdicts`), and those no run of this study can test (`untested`)."""

from __future__ import annotations

import pandas as pd

from ...analysis import by_shape, ok_rows
from ...ops.base import SCOPES
from .. import rule
from ..common import Verdict
from .measures import (BORDERS, DEPTHS, GAIN, PADDING, PAPER_KERNEL_RUN, PAPER_PERCENT, PROFILE_COMMAND, _span,
                       mechanism, normalized_speed, summary)

# The paper timed the kernels (section IV: "measuring the speed performance of the CUDA matrix
# multiplication kernels"): every timed claim is judged there; device and end_to_end are extra evidence.
PAPER_SCOPE = "kernel"
# rule.py's thresholds as each verdict's "judged by" cell quotes them
SHARE = f"share rule ({rule.SHARE_RULE})"
SIZE = f"size rule ({rule.SIZE_RULE})"
ORDER = f"order rule ({rule.ORDER_RULE})"


def _ratios(df: pd.DataFrame, k: int) -> dict[str, pd.Series]:
    """Per scope: the normalized speeds (approach 2 over approach 1) at k, by shape."""
    out = {}
    for scope in SCOPES:
        r = normalized_speed(df, scope)
        cut = r[r.index.get_level_values("k") == k] if len(r) else r
        if len(cut):
            out[scope] = cut
    return out


def _scoped(values: dict[str, str]) -> str:
    """The evidence of the paper's scope, then the other scopes' named as extra (rule.other_scopes)."""
    head = f"{PAPER_SCOPE}: {values[PAPER_SCOPE]}" if PAPER_SCOPE in values else f"no {PAPER_SCOPE}-scope rows"
    return head + rule.other_scopes(values, PAPER_SCOPE)


def _shapes_per_k(counts: list) -> str:
    """How many shapes each k has ("100 shapes per k"), from counts or the Series counted."""
    counts = [0 if c is None else c if isinstance(c, int) else len(c) for c in counts]
    return (f"{counts[0]} shapes per k" if len(set(counts)) == 1
            else " and ".join(f"{c} shapes at k = {k}" for c, k in zip(counts, DEPTHS)))


def ahead_beyond_spread(df: pd.DataFrame, scope: str, k: int, faster: dict, slower: dict) -> list[tuple]:
    """The shapes at k where approach `faster`'s median time is under approach `slower`'s fastest sample:
    ahead by more than the samples' spread (a 5-µs kernel's samples spread over 10 % and more, so a
    median 1 % ahead there is no lead)."""
    ok = ok_rows(df)
    median = by_shape(ok, scope=scope, **faster)
    fastest = by_shape(ok, "time_ms_min", scope=scope, **slower)
    shapes = [s for s in median.index.intersection(fastest.index) if s[2] == k]
    return [s for s in shapes if median[s] < fastest[s]]


def average_verdicts(df: pd.DataFrame) -> list[Verdict]:
    """Section V's averages (15.51 % at k = 32, 10.24 % at 64), each a direction over the shapes and a
    size, the weaker of the two; then the conclusion (padding wins at both k) and the order the two
    averages imply (k = 32 gains more). Judged in the kernel scope."""
    table = summary(df)
    out, gains, faster = [], {}, {}
    for k in DEPTHS:
        if k not in table.index:
            continue
        at_k = table.loc[[k]]
        values = {r.scope: f"{r[GAIN]:+.1f} % (padding faster at {r['padding faster at']} of {r.shapes})"
                  for _, r in at_k.iterrows()}
        holds, shapes = rule.NOT_CHECKED, 0
        mine = at_k[at_k.scope == PAPER_SCOPE]
        if len(mine):
            row = mine.iloc[0]
            gains[k], shapes = float(row[GAIN]), int(row.shapes)
            faster[k] = (int(row["padding faster at"]), shapes)
            holds = rule.weakest(rule.by_share(*faster[k]), rule.by_size(gains[k], PAPER_PERCENT[k]))
            values[PAPER_SCOPE] += f", {gains[k] / PAPER_PERCENT[k]:.2f} of the paper's size"
        out.append(Verdict(f"Padding beats border checks on average, k = {k}",
                           f"{PAPER_PERCENT[k]} % average improvement (GTX 680)", holds, _scoped(values),
                           f"kernel scope, {shapes} shapes; the direction by the {SHARE}; the size against "
                           f"{PAPER_PERCENT[k]} % (a percentage, not a factor) by the {SIZE}; the weaker"))
    if not all(k in table.index for k in DEPTHS):
        return out
    rows = {scope: table[table.scope == scope] for scope in table.scope.unique()}
    both = {scope: " and ".join(f"{int(t.loc[k, 'padding faster at'])} of {int(t.loc[k, 'shapes'])} (k = {k})"
                                for k in DEPTHS) for scope, t in rows.items() if all(k in t.index for k in DEPTHS)}
    holds = (rule.weakest(*(rule.by_share(*faster[k]) for k in DEPTHS)) if len(faster) == len(DEPTHS)
             else rule.NOT_CHECKED)
    out.append(Verdict("Padding outperforms border checks for both k (the conclusion)", "\"for both cases the "
                       "approach with few more memory transfers outperforms\"", holds,
                       _scoped({s: f"padding faster at {text}" for s, text in both.items()}),
                       f"kernel scope, {_shapes_per_k([faster.get(k, (0, 0))[1] for k in DEPTHS])}; the {SHARE} at "
                       "each k, the weaker"))
    order = {scope: f"{t.loc[32, GAIN]:+.1f} % against {t.loc[64, GAIN]:+.1f} %" for scope, t in rows.items()
             if all(k in t.index for k in DEPTHS)}
    if len(gains) == len(DEPTHS):
        order[PAPER_SCOPE] += " (k = 32 gains more)" if gains[32] > gains[64] else " (k = 64 gains more)"
    out.append(Verdict("Padding gains more at k = 32 than at k = 64", f"{PAPER_PERCENT[32]} % against "
                       f"{PAPER_PERCENT[64]} %", rule.by_order(gains[32] > gains[64]) if len(gains) == len(DEPTHS)
                       else rule.NOT_CHECKED, _scoped(order), "kernel scope, mean improvement at k = 32 against "
                       f"k = 64; {ORDER}"))
    return out


def figure_verdicts(df: pd.DataFrame) -> list[Verdict]:
    """Fig. 3 and 4: approach 2 below 1 at most shapes (its values are not in the text; "every value
    ... below 1 confirms" padding's gain), judged in the kernel scope by the share rule."""
    out = []
    for figure, k in zip((3, 4), DEPTHS):
        ratios = _ratios(df, k)
        if not ratios:
            continue
        values = {s: f"below 1 at {int((r < 1).sum())} of {len(r)}, {r.min():.2f} to {r.max():.2f}"
                  for s, r in ratios.items()}
        r = ratios.get(PAPER_SCOPE)
        holds = rule.NOT_CHECKED if r is None else rule.by_share(int((r < 1).sum()), len(r))
        if r is not None:
            clear = len(ahead_beyond_spread(df, PAPER_SCOPE, k, PADDING, BORDERS))
            values[PAPER_SCOPE] += f" (padding's median under border checks' fastest sample at {clear} of them)"
        out.append(Verdict(f"Fig. {figure}: border checks' normalized speed below 1 (padding faster) at most shapes, "
                           f"k = {k}", "approach 2's curve under approach 1's line at 1; its points are not in the "
                           "text", holds, _scoped(values),
                           f"kernel scope, {0 if r is None else len(r)} shapes; {SHARE}"))
    return out


def other_way_verdict(df: pd.DataFrame) -> list[Verdict]:
    """Section V's "performance increases for some data requirements", read as shapes where border
    checks come out ahead (the paper does not say which shapes it means): "some" at each k, and
    ahead by more than the samples' spread, as a median 0.1 % ahead of a 5-µs kernel is noise."""
    if not all(_ratios(df, k) for k in DEPTHS):
        return []
    values, counts, shapes = {}, {}, _shapes_per_k([_ratios(df, k).get(PAPER_SCOPE) for k in DEPTHS])
    for scope in SCOPES:
        ratios = [_ratios(df, k).get(scope) for k in DEPTHS]
        if any(r is None for r in ratios):
            continue
        ahead = [ahead_beyond_spread(df, scope, k, BORDERS, PADDING) for k in DEPTHS]
        counts[scope] = [len(a) for a in ahead]
        values[scope] = "ahead beyond the samples' spread at " + " and ".join(
            f"{len(a)} (k = {k}{': ' + ', '.join(f'{m} x {n}' for m, n, _ in a) if 0 < len(a) <= 4 else ''})"
            for a, k in zip(ahead, DEPTHS))
        if scope == PAPER_SCOPE:
            values[scope] += "; medians above 1 at " + " and ".join(
                f"{int((r > 1).sum())} (k = {k}, by at most {100 * (r.max() - 1):.1f} %)" for r, k in zip(ratios, DEPTHS))
    holds = (rule.NOT_CHECKED if PAPER_SCOPE not in counts
             else rule.by_order(all(n > 0 for n in counts[PAPER_SCOPE])))
    return [Verdict("At both k, some shapes go the other way (border checks ahead)", "\"for both cases the "
                    "results present performance increases for some data requirements\" (our reading)", holds,
                    _scoped(values), f"kernel scope, {shapes}; an existence, \"some\" read as at least one shape "
                    f"at each k where border checks' median is under padding's fastest sample; {ORDER}")]


def padded_bytes(m: int, n: int, k: int, padded: str) -> float:
    """The floats approach 1 moves over approach 2's: (A + B + C padded) / (A + B + C as given)."""
    dims = [int(x) for x in str(padded).split("x")] if isinstance(padded, str) or not pd.isna(padded) else [m, n, k]
    big_m, big_n, big_k = dims if len(dims) == 3 else dims * 3
    return (big_m * big_k + big_k * big_n + big_m * big_n) / (m * k + k * n + m * n)


def transfer_verdict(df: pd.DataFrame) -> list[Verdict]:
    """Section III: approach 2 "save[s] on the memory transfer bandwidth" (it copies A, B and C as
    they are, approach 1 their padded copies): true of padding by its arithmetic, so by construction;
    the byte ratio at every shape."""
    ok = ok_rows(df)
    rows = ok[(ok.variant == PADDING["variant"]) & (ok.pad == 1) & ok.k.isin(DEPTHS)]
    rows = rows[["m", "n", "k", "padded_shape"]].drop_duplicates(["m", "n", "k"])
    if rows.empty:
        return []
    ratio = pd.Series([padded_bytes(int(m), int(n), int(k), p) for m, n, k, p in rows.itertuples(index=False)])
    return [Verdict("Border checks save transfer bytes (approach 2 copies the matrices as they are)",
                    "section III, no number: \"we save on the memory transfer bandwidth\"; \"the first approach moves "
                    "bigger matrices\"", rule.BY_CONSTRUCTION,
                    f"padding moves {100 * (ratio.mean() - 1):.1f} % more bytes on average over {len(ratio)} shapes "
                    f"(at most {100 * (ratio.max() - 1):.0f} %, none at the {int((ratio == 1).sum())} aligned ones)",
                    "the padded shapes' arithmetic (Listing 1), not a measurement")]


def construction_verdicts(df: pd.DataFrame, table: pd.DataFrame) -> list[Verdict]:
    """Section III's claims that hold by how both approaches are built: a thread per element of C
    over 32 x 32 shared tiles, no border test in approach 1, and the same C from both (every point
    is verified against float64 before it is timed)."""
    ok = ok_rows(df)
    grid = ok[ok.k.isin(DEPTHS) & (ok.params == "BLOCK=32")]
    errors = [grid[(grid.variant == spec["variant"]) & (grid.pad == spec["pad"])].rel_err for spec in (PADDING, BORDERS)]
    loops = (f"; its branch instructions, the tile loop's, equal approach 2's at "
             f"{int((table['branches padding'] == table['branches checks']).sum())} of {len(table)} profiled shapes"
             if len(table) else "")
    return [
        Verdict("Each element of C is computed by its own thread over 32 x 32 shared-memory tiles", "section III",
                rule.BY_CONSTRUCTION, "kernels/gemm/shared.cu at BLOCK = 32 for both approaches: 32 x 32 threads a "
                "block, one output each (the modern sweep's dbuf computes several a thread)", "the kernel as built"),
        *transfer_verdict(df),
        Verdict("Padding removes the border conditions: its kernel needs no branching for them", "section III: \"the "
                "kernel doesn't have the need of logical branching\"", rule.BY_CONSTRUCTION,
                "approach 1 is shared.cu with its checks compiled out (BORDERS = false)" + loops, "the kernel as built"),
        Verdict("Both approaches give formula (1)'s C: padding's zeros do not interfere, approach 2 zero-fills and "
                "guards its stores", "section III: \"The result will be the same\"", rule.BY_CONSTRUCTION,
                f"{len(errors[0])} padding and {len(errors[1])} border-check points verified against float64, "
                f"relative error at most {errors[0].max():.1e} and {errors[1].max():.1e}",
                "the harness verifies every point before timing it"),
    ]


# -- the mechanism, from the Nsight Compute profile beside the run -----------------------------------------------
SAME = 0.01  # ours: two counts within 1 % of each other are the same count
MECHANISM_CLAIMS = (("The approaches differ in global-to-shared transfers (padding more) and in the kernel's "
                     "operations (border checks more)", "section I: \"The approaches differ in the size of memory "
                     "transfer between the global memory and the device shared memory, and in the number of operations\""),
                    ("Border checks put branching in the kernel", "section III: \"we introduce code branching inside "
                     "the kernel function\""),
                    ("The difference comes from branching in the kernel against extra memory transfers",
                     "sections I, V: \"more memory transfers provides increased performance than having conditional "
                     "branching\""))


def mechanism_verdicts(table: pd.DataFrame) -> list[Verdict]:
    """Section I's two differences (transfers, operations), section III's "we introduce code branching
    inside the kernel" (approach 2) and sections I and V's reading of the times as branching against
    memory transfers, from the profile's counts, each part by the share rule over the profiled shapes:
    the checks branch at a shape if approach 2 runs more than 1 % more branch instructions or any
    divergent branch; padding moves more if its kernel requests more than 1 % more global sectors
    (unaligned shapes: at aligned ones the two are one kernel's loads). Judged on our kernel, whose
    checks are predicated in every block; the paper's branch in border blocks only was not measured."""
    if table.empty:
        return [Verdict(claim, where, rule.NOT_CHECKED, "no profile beside this run: " + PROFILE_COMMAND,
                        "needs Nsight Compute's branch, instruction and byte counts, not times")
                for claim, where in MECHANISM_CLAIMS]
    shapes = len(table)
    added = table["branches checks"] > table["branches padding"] * (1 + SAME)
    branching = added | (table["divergent checks"] > 0)
    more_inst = int((table["instructions checks %"] > 100 * SAME).sum())
    unaligned, aligned = table[~table.aligned], table[table.aligned]
    more_bytes = int((unaligned["sectors padding %"] > 100 * SAME).sum())
    faster = table["run time ratio"].dropna()
    ours = "judged on ours (checks predicated in every block), not the paper's border-block branch"
    untried = f"; the paper's kernel, branching in border blocks only, was not measured: {PAPER_KERNEL_RUN} would test it"
    differ = (f"padding's kernel requests more global-memory sectors (the tiles' loads, C's stores) at {more_bytes} of "
              f"the {len(unaligned)} unaligned shapes ({_span(unaligned['sectors padding %'])} %; "
              f"{_span(aligned['sectors padding %'])} % at the {len(aligned)} aligned); border checks run more warp "
              f"instructions at {more_inst} of {shapes} ({_span(table['instructions checks %'])} %) (ours: more than 1 % "
              "counts)")
    branches = (f"branch instructions: approach 2 runs more than approach 1 at {int(added.sum())} of {shapes} profiled "
                f"shapes (the same count at {int((table['branches checks'] == table['branches padding']).sum())}); "
                f"divergent branches: {int(table['divergent checks'].sum())} in approach 2, "
                f"{int(table['divergent padding'].sum())} in approach 1; instead approach 2 runs "
                f"{_span(table['instructions checks %'])} % more warp instructions (ours: more than 1 % counts)")
    times = (f"; approach 1's kernel faster at {int((faster < 1).sum())} of {len(faster)} (the run's kernel medians, "
             f"approach 1's time over approach 2's {_span(faster, '{:.3f}')})" if len(faster) else "")
    if len(aligned) and len(faster):
        times += (", at the aligned " + ", ".join(f"{m} x {n} x {k}: {r:.3f}" for (m, n, k), r in
                                                  aligned["run time ratio"].dropna().items())
                  + " where both request the same sectors")
    trade = (f"padding's kernel requests {_span(unaligned['sectors padding %'])} % more global-memory sectors at the "
             f"{len(unaligned)} unaligned shapes ({_span(aligned['sectors padding %'])} % at the {len(aligned)} "
             f"aligned), DRAM reads {_span(unaligned['dram read padding %'])} %; the checks add "
             f"{'branches at ' + str(int(branching.sum())) + ' shapes and' if branching.any() else 'no branch and no divergence but'} "
             f"{_span(table['instructions checks %'])} % warp instructions{times}; so on ours the trade is instructions "
             "against bytes" + ("" if branching.any() else ", not branching") + " (ours: more than 1 % counts)")
    parts = (rule.by_share(more_bytes, len(unaligned)), rule.by_share(int(branching.sum()), shapes),
             rule.by_share(int((faster < 1).sum()), len(faster)))
    claim = dict(zip(("differ", "branching", "trade"), MECHANISM_CLAIMS))
    return [Verdict(*claim["differ"], rule.weakest(rule.by_share(more_bytes, len(unaligned)),
                                                   rule.by_share(more_inst, shapes)), differ,
                    f"kernel (Nsight counts), {len(unaligned)} unaligned and {shapes} profiled shapes; the {SHARE} "
                    "on both parts, the weaker; judged on ours (checks in every block)"),
            Verdict(*claim["branching"], rule.by_share(int(branching.sum()), shapes), branches + untried,
                    f"kernel (Nsight counts), {shapes} profiled shapes; {SHARE}; {ours}"),
            Verdict(*claim["trade"], rule.weakest(*parts), trade + untried,
                    f"kernel scope (Nsight counts, the run's kernel medians), {shapes} profiled shapes; the {SHARE} "
                    f"on each part (padding's extra bytes, branching, padding faster), the weakest; {ours}")]


def verdicts(df: pd.DataFrame, profile: pd.DataFrame | None = None) -> list[Verdict]:
    """Every claim of the paper the run (and its profile, where given) can judge, in the paper's
    order of argument."""
    table = mechanism(profile, df)
    differ, branching, trade = mechanism_verdicts(table)
    return [differ, *construction_verdicts(df, table), branching, *figure_verdicts(df), trade,
            *average_verdicts(df), *other_way_verdict(df)]


# The paper's claims a run of this study cannot judge: (claim, where, why not, what would test it)
UNTESTED = (
    ("Strassen O(n^2.807), Coppersmith-Winograd O(n^2.376), Williams O(n^2.373); rectangular O(nmp)",
     "section I", "results from the literature, not measurements", "none (this study times one O(nmp) algorithm)"),
    ("Architecture-specific optimizations (ILP, tiling, avoiding cache conflicts, pre-fetching) speed GEMM up; vendor "
     "libraries (MKL, ACML) carry BLAS, whose performance depends on the architecture; not all algorithms parallelize "
     "efficiently; every GEMM optimization rests on the hardware", "section I [3-5]",
     "the literature's findings, about CPUs and libraries this study does not run", "none here (the cited works)"),
    ("CUBLAS does not document which hardware characteristics give its speed, and has been outperformed on certain "
     "architectures [6]", "section I", "a citation (and [6] is a DGEMV paper on Fermi) and a remark on 2013's "
     "documentation", "[6]'s DGEMV against CUBLAS of 2011 on a Fermi GPU; the modern sweep puts today's cuBLAS beside "
     "our kernels"),
    ("GPUs have entered high-performance computing and are the most powerful processors for their cost",
     "abstract, section II", "a price, not a measurement", "none"),
    ("Kepler gives almost 3 TFLOPS", "section II", "the GTX 680's datasheet; another GPU",
     "a GTX 680; this GPU's own peak: `mmbench ceilings`"),
    ("NVIDIA released CUDA in 2007; OpenCL is a vendor-independent standard on ANSI C99; CUDA is reached from Fortran, "
     "Java, Python, Perl and MATLAB through wrappers", "section II", "history, not a measurement",
     "none (the cited sources [10, 11])"),
    ("The GTX 680 is the latest Kepler GPU", "section II", "2013's product line; another GPU",
     "none (NVIDIA's product list of 2013)"),
    ("GTX 680 memory: L1 16/32/48 KB, L2 512 KB, 2 GB global (Fig. 1)", "section II, Fig. 1",
     "another GPU's hierarchy (a diagram)", "a GTX 680; ours is in the run's metadata (L2, memory)"),
    ("Without border handling the border blocks compute wrong results", "section III, Fig. 2",
     "the harness never runs the unchecked kernel on unpadded matrices (it would read and write past the buffers)",
     "compute-sanitizer on shared_padded launched at an unaligned shape unpadded"),
    ("Table 1: i7-3770, 32 GB, GTX 680, Ubuntu 12.04, CUDA 5.0", "section IV", "their machine",
     "that machine; ours is in the run's metadata"),
)


def untested() -> list[Verdict]:
    """The claims no run of this study can judge, each with what would test it."""
    return [Verdict(claim, where, rule.NOT_TESTABLE, f"what would test it: {what}", why)
            for claim, where, why, what in UNTESTED]
