"""Results shaped for figures, tables and reports: series, curves, ratios. No plotting here."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .ops import get_op
from .precisions import DEFAULT, DEFAULT_LAYOUT
from .results import ResultsError
from .sizes import Shape
from .variants import CPU_BACKENDS, REGISTRY, parse_params, series_label


@dataclass(frozen=True)
class Series:
    """One line of a figure: a variant at one parameter point."""

    variant: str
    params: str
    label: str
    order: int  # registry order, then block size: stable across figures

    @property
    def block(self) -> int | None:
        return dict(parse_params(self.params)).get("BLOCK")


def series_of(variant: str, params: str, csv_label: str = "") -> Series:
    v = REGISTRY.get(variant)
    order = list(REGISTRY).index(variant) if v else len(REGISTRY)
    label = series_label(v, parse_params(params)) if v else (csv_label or variant)
    return Series(variant, params, label, order)


def ok_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Verified, timed rows only (a row without a time of the figures' clock, see with_clock, is
    not drawn); a clear error when there are none."""
    ok = df[(df.status == "ok") & (df.time_ms_median.notna() if "time_ms_median" in df else True)]
    if ok.empty:
        raise ResultsError("the results hold no verified (status ok) rows to plot")
    return ok


CLOCKS = ("events", "kernel")  # what the figures' times are: CUDA event pairs, or the kernel clock (CUPTI)


def with_clock(df: pd.DataFrame, clock: str) -> pd.DataFrame:
    """The results with their time and rate columns from one clock. "events": as written. "kernel":
    time_ms_mean, _median and _min from the kernel clock's columns and the rates scaled to them
    (a rate is work over time, so rate x event time / kernel time); rows without kernel times
    keep their status but lose their times and rates, so no figure mixes the two clocks."""
    if clock not in CLOCKS:
        raise ResultsError(f"clock '{clock}'; choose from: {', '.join(CLOCKS)}")
    if clock == "events":
        return df
    out = df.copy()
    if "kernel_ms_median" not in out:
        out["kernel_ms_median"] = out["kernel_ms_mean"] = out["kernel_ms_min"] = np.nan
    kernel = {"mean": pd.to_numeric(out.kernel_ms_mean), "median": pd.to_numeric(out.kernel_ms_median),
              "min": pd.to_numeric(out.kernel_ms_min)}
    for name, column in (("mean", "gflops_mean"), ("median", "gflops_median"), ("median", "gbytes_per_s")):
        out[column] = out[column] * out[f"time_ms_{name}"] / kernel[name]
    for name, values in kernel.items():
        out[f"time_ms_{name}"] = values
    verified = out.status == "ok"
    if verified.any() and out.time_ms_median[verified].isna().all():  # every figure would be empty
        raise ResultsError("the results have no kernel-clock times (their kernel_ms_* columns are empty: measured "
                           "without the kernel clock); draw them with --clock events")
    return out


def plain(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of the kernel alone on its inputs as given (not padded, not another scope): what the
    curves of every paper before issue 15 plot."""
    scope = df.scope if "scope" in df else "kernel"
    pad = df.pad if "pad" in df else 0
    return df[(scope == "kernel") & (pad == 0)]


def square(df: pd.DataFrame) -> pd.DataFrame:
    """Square shapes (m = n = k) of plain rows."""
    df = plain(df)
    return df[(df.m == df.n) & (df.n == df.k)]


# -- rectangular rows ---------------------------------------------------------------------------------
SHAPE = ["m", "n", "k"]
FORM = ["dtype", "layout"]  # a point's precision and layout: rates are compared only within one


def by_shape(df: pd.DataFrame, column: str = "time_ms_median", **where) -> pd.Series:
    """column of the verified rows whose columns equal `where` (variant="shared", scope="device",
    pad=1, params="BLOCK=32" ...), one value per shape: a Series indexed by (m, n, k), the
    rectangular counterpart of curve(). Several rows of one shape (other parameters) average; rows
    of one precision and layout, fp32 and nn unless `where` names others."""
    rows = with_forms(df[df.status == "ok"])
    where = {"dtype": DEFAULT, "layout": DEFAULT_LAYOUT, **where}
    for column_name, value in where.items():
        rows = rows[rows[column_name] == value]
    return rows.groupby(SHAPE)[column].mean().sort_index()


def shape_ratio(top: pd.Series, bottom: pd.Series) -> pd.Series:
    """top / bottom at the shapes both have (Series from by_shape)."""
    both = top.index.intersection(bottom.index)
    return (top[both] / bottom[both]).dropna().sort_index()


def along(values: pd.Series, dim: str, **fixed: int) -> pd.Series:
    """A by_shape Series cut to the shapes whose other dimensions are `fixed` (dim varies):
    along(s, "m", n=1024, k=1024) -> values by m. With no fixed, the square shapes by n."""
    frame = values.reset_index()
    if fixed:
        for name, value in fixed.items():
            frame = frame[frame[name] == value]
    else:
        frame = frame[(frame.m == frame.n) & (frame.n == frame.k)]
    return frame.set_index(dim)[frame.columns[-1]].sort_index()


def default_form(df: pd.DataFrame) -> pd.DataFrame:
    """The rows at fp32 and layout nn: what the papers' figures and tables draw (their kernels are
    FP32; `plot rate` and `plot vs-library` draw every precision)."""
    df = with_forms(df)
    return df[(df.dtype == DEFAULT) & (df.layout == DEFAULT_LAYOUT)]


def series_list(df: pd.DataFrame) -> list[Series]:
    seen = {}
    for r in default_form(df)[["variant", "params", "label"]].drop_duplicates().itertuples():
        s = series_of(r.variant, r.params, r.label)
        seen[(s.variant, s.params)] = s
    return sorted(seen.values(), key=lambda s: (s.order, -(s.block or 0)))


def curve(df: pd.DataFrame, s: Series, column: str = "gflops_mean") -> pd.Series:
    """column by square size n for one series (verified points only), sorted by n."""
    sq = square(default_form(df))
    rows = sq[(sq.variant == s.variant) & (sq.params == s.params) & (sq.status == "ok")]
    twice = rows.n[rows.n.duplicated()]
    if len(twice):  # a file holds a point once; which of two rows a curve shows would be a guess
        n = int(twice.iloc[0])
        raise ResultsError(f"{s.label} has {int((rows.n == n).sum())} verified rows at n = {n}: a curve takes one a "
                           f"size (rows appended twice?)")
    return rows.set_index("n")[column].sort_index()


def find(df: pd.DataFrame, variant: str, block: int | None = None) -> Series | None:
    for s in series_list(df):
        if s.variant == variant and (block is None or s.block == block):
            return s
    return None


def ratio(df: pd.DataFrame, top: Series, bottom: Series) -> pd.Series:
    """top / bottom GFLOP/s at the square sizes both have."""
    a, b = curve(df, top), curve(df, bottom)
    both = a.index.intersection(b.index)
    return (a[both] / b[both]).dropna()


def algorithmic_intensity(op: str, m: int, n: int, k: int, dtype: str = DEFAULT) -> float:
    """FLOPs per byte if every operand moved through DRAM exactly once, by the operation's work
    model: 2mnk / 4(mk + kn + mn) for GEMM in float32 (the precision's element sizes otherwise),
    2mn / 4(mn + m + n) for GEMV, 0 for copies and transposes (they do no FLOPs)."""
    operation, shape = get_op(op), Shape(int(m), int(n), int(k))
    return operation.flops(shape) / operation.min_bytes(shape, dtype)


def on_gpu(df: pd.DataFrame) -> pd.Series:
    """Which rows ran on the GPU (their backend is not a CPU's): what a GPU's roofs can bound."""
    return ~df.backend.isin(CPU_BACKENDS)


def square_shapes(df: pd.DataFrame) -> pd.DataFrame:
    """Plain rows of square shapes in every operation's own dimensions: n x n x n for GEMM, n x n
    for the operations of two (their k is 0)."""
    df = plain(df)
    return df[(df.m == df.n) & ((df.k == df.n) | (df.k == 0))]


def roofline_size(df: pd.DataFrame, profile: pd.DataFrame | None) -> int:
    """The size n a roofline places its points at by default: the largest at which the most
    operations of the run (all, as a rule) have a verified square GPU row, and of those, where
    Nsight Compute profiled, the largest profiled."""
    ok = square_shapes(ok_rows(df))
    ok = ok[on_gpu(ok)]
    if ok.empty:
        raise ResultsError("the roofline needs verified GPU rows at square sizes (n x n, or n x n x n)")
    ops = ok.groupby("n").op.nunique()
    every = set(ops[ops == ops.max()].index)
    profiled = every & set(profile.n) if profile is not None else set()
    return int(max(profiled or every))


def percent_of(df: pd.DataFrame, reference: str = "cublas") -> pd.DataFrame:
    """Each series' GFLOP/s (median of its samples, as every summary) as a percentage of the
    reference's at the same square shape: columns series, variant, n, params, percent. A variant is one series when it ran one
    configuration per size (tuned parameters may differ by size), else one per configuration
    (``best`` at three block sizes). FP32 at layout nn alone, the papers' and the ladder's
    products (percent_of_library compares every precision with the library at its own)."""
    sq = square(default_form(ok_rows(df)))
    ref = sq[sq.variant == reference].groupby("n").gflops_median.mean()
    if ref.empty:
        raise ResultsError(f"the results have no '{reference}' rows to compare with")
    out = sq[(sq.variant != reference) & (sq.backend != "blas")][["variant", "n", "params", "gflops_median"]].copy()
    out = out[out.n.isin(ref.index)]
    if out.empty:
        raise ResultsError(f"the results have no GPU variant at the sizes of its '{reference}' rows")
    several = out.groupby(["variant", "n"]).params.transform("nunique") > 1
    split = out.variant.isin(out[several].variant)
    out["series"] = out.variant.where(~split, out.variant + " " + out.params)
    out["percent"] = 100.0 * out.gflops_median / ref.reindex(out.n).values
    # Registry order, then the larger block first (as in every figure), then size.
    order = {(r.variant, r.params): (r.order, -(r.block or 0))
             for r in (series_of(v, p) for v, p in out[["variant", "params"]].drop_duplicates().itertuples(index=False))}
    out["_order"] = [order[(v, p)] if v != s else order[(v, p)][:1] for v, p, s in zip(out.variant, out.params, out.series)]
    return out.sort_values(["_order", "n"]).drop(columns="_order").reset_index(drop=True)


def target_summary(pct: pd.DataFrame, at: tuple[int, ...], over: list[int]) -> pd.DataFrame:
    """Per series: % of the reference at each size of `at` (columns at_N), and the geometric mean
    over the sizes `over` (a repeated point counts once, at its mean)."""
    rows = []
    for (variant, series), g in pct.groupby(["variant", "series"], sort=False):
        by_n = g.groupby("n").percent.mean()
        on = by_n.reindex(over).dropna()
        rows.append({"variant": variant, "series": series, **{f"at_{n}": by_n.get(n) for n in at},
                     "geomean": float(np.exp(np.log(on).mean())) if len(on) else None, "sizes": len(on)})
    return pd.DataFrame(rows)


def with_forms(df: pd.DataFrame) -> pd.DataFrame:
    """Rows with their precision and layout, those of a frame made without them (a file's rows always
    have them) taken as every row before precisions was: fp32, nn."""
    missing = {c: v for c, v in (("dtype", DEFAULT), ("layout", DEFAULT_LAYOUT)) if c not in df}
    return df.assign(**missing) if missing else df  # what makes a series of a results CSV


# -- any run, any operation: its rate by size, and % of its operation's library -----------------------
def figure_size(df: pd.DataFrame) -> pd.Series:
    """Each row's place on a size axis: n for a square shape (n x n x n, or n x n), else the
    geometric mean of its operation's dimensions (k is 0 where an operation has two)."""
    dims = np.where(df.k > 0, 3, 2)
    product = df.m.astype(float) * df.n * df.k.where(df.k > 0, 1)
    square = (df.m == df.n) & ((df.k == df.n) | (df.k == 0))
    return pd.Series(np.where(square, df.n, product ** (1.0 / dims)), index=df.index)


def rate_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Verified rows of the kernel alone (plain) with their operation's rate (`rate`: Operation.rate,
    GFLOP/s or GB/s), place on the size axis (`size`) and series (`series`: the variant, and its
    parameters where it ran several configurations at one shape; tuned ones differing by size are
    one series)."""
    ok = plain(ok_rows(df))
    if ok.empty:
        raise ResultsError("the results hold no verified rows of a kernel alone on its inputs (scope kernel, "
                           "not padded)")
    rate = pd.Series(np.nan, index=ok.index)
    for op in ok.op.unique():
        mine = ok.op == op
        rate[mine] = ok.loc[mine, get_op(op).rate]
    ok = with_forms(ok)
    several = ok.groupby(["variant", "dtype", "layout", "m", "n", "k"]).params.transform("nunique") > 1
    split = ok.variant.isin(ok[several].variant)
    series = ok.variant.where(~split, ok.variant + " " + ok.params)
    forms = ok.dtype + " " + ok.layout
    # one series per variant and precision (and layout), said in `form` where the run has several or another
    # than fp32, nn
    form = pd.Series([f" {d}" + (f" {lay}" if lay != DEFAULT_LAYOUT else "") for d, lay in zip(ok.dtype, ok.layout)],
                     index=ok.index) \
        if forms.nunique() > 1 or forms.iloc[0] != f"{DEFAULT} {DEFAULT_LAYOUT}" else pd.Series("", index=ok.index)
    return ok.assign(rate=rate.astype(float), size=figure_size(ok), series=series + form,
                     form=form).dropna(subset=["rate"])


def by_operation(rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """rate_rows split into one panel per operation, each with its yardstick's rows where the
    yardstick is another operation's variant (a transpose's memcpy); an operation whose rows are
    all drawn in another's panel (the copy, there as the transpose's yardstick) gets none."""
    panels = {}
    for op in dict.fromkeys(rows.op):
        yardstick = get_op(op).yardstick
        panels[op] = rows[(rows.op == op) | ((rows.variant == yardstick) & (rows.op != op))]
    shown_elsewhere = {op: set(rows[rows.op == op].variant) <= {v for other, p in panels.items() if other != op
                                                                 for v in p[p.op != other].variant}
                       for op in panels}
    return {op: p for op, p in panels.items() if not shown_elsewhere[op]}


def percent_of_peak(df: pd.DataFrame, peaks: dict[str, float]) -> pd.DataFrame:
    """Each GPU series' GFLOP/s as % of its precision's dense peak (peaks: TFLOP/s by precision,
    ceilings.datasheet's precision_tflops): the rate_rows of operations with FLOPs, with `peak_tflops`
    and `percent` columns. ResultsError when no row has a peak."""
    rows = rate_rows(df)
    rows = rows[on_gpu(rows) & rows.op.map(lambda op: get_op(op).rate.startswith("gflops"))]
    rows = rows.assign(peak_tflops=rows.dtype.map(peaks)).dropna(subset=["peak_tflops"])
    if rows.empty:
        raise ResultsError("nothing to hold to a peak: no verified GPU rows of a product at a precision whose peak "
                           f"this GPU's table has ({', '.join(peaks) or 'none'})")
    return rows.assign(percent=100.0 * rows.gflops_median / (1e3 * rows.peak_tflops))


def percent_of_library(df: pd.DataFrame) -> pd.DataFrame:
    """Each GPU series' rate as % of its operation's yardstick (Operation.yardstick: cuBLAS for
    GEMM, ...) at the same shape (m, n, k): the rate_rows of the series that have one, with a
    `percent` column. ResultsError saying what is missing when no series can be compared."""
    rows = rate_rows(df)
    out, lacking = [], []
    for op in dict.fromkeys(rows.op):
        yardstick = get_op(op).yardstick
        mine = rows[(rows.op == op) & on_gpu(rows) & (rows.variant != yardstick)]
        if yardstick is None or mine.empty:
            continue
        ref = _library_rates(rows, yardstick)
        if ref.empty:
            lacking.append(f"no '{yardstick}' rows ({op}'s library baseline)")
            continue
        compared = _percent_of(mine, ref)
        if compared.empty:
            lacking.append(f"no {op} GPU series at the shapes of its '{yardstick}' rows")
        out.append(compared)
    if not any(len(o) for o in out):
        ops = ", ".join(dict.fromkeys(rows.op))
        raise ResultsError("nothing to compare with a library baseline: " + ("; ".join(lacking) if lacking else
                           f"the results hold no GPU kernel of {ops} beside the baselines"))
    return pd.concat([o for o in out if len(o)])


def padded_percent_of_library(df: pd.DataFrame) -> pd.DataFrame:
    """Each GPU series' verified padded rows (`--pad`: the zeroing and copies timed with the kernel;
    the rate of the shape as given) with a `percent` column: % of its operation's yardstick on the
    shape as given, same precision and layout (percent_of_library's rule), i.e. what a user who pads
    gets against a library that needs no padding. Empty where nothing padded compares."""
    ok = with_forms(ok_rows(df))
    padded = ok[ok.pad.fillna(0).astype(int) == 1] if "pad" in ok else ok[:0]
    rows, out = rate_rows(df), []
    for op in dict.fromkeys(padded.op):
        operation = get_op(op)
        mine = padded[(padded.op == op) & on_gpu(padded) & (padded.variant != operation.yardstick)]
        if operation.yardstick is None or mine.empty:
            continue
        out.append(_percent_of(mine.assign(rate=mine[operation.rate].astype(float)),
                               _library_rates(rows, operation.yardstick)))
    return pd.concat(out) if out else padded.assign(percent=pd.Series(dtype=float))


def _library_rates(rows: pd.DataFrame, yardstick: str) -> pd.Series:
    """The yardstick's mean rate per shape, precision and layout (rate_rows): a BF16 kernel is judged
    against cuBLASLt's BF16."""
    return rows[rows.variant == yardstick].groupby(SHAPE + FORM).rate.mean()


def _percent_of(mine: pd.DataFrame, ref: pd.Series) -> pd.DataFrame:
    """Rows with a `rate`, each with `percent`: its rate as % of ref's at its shape, precision and
    layout; rows at shapes ref lacks are dropped."""
    at = ref.reindex(pd.MultiIndex.from_frame(mine[SHAPE + FORM])).to_numpy()
    return mine.assign(percent=100.0 * mine.rate.to_numpy() / at).dropna(subset=["percent"])
