"""Results shaped for figures, tables and reports: series, curves, ratios. No plotting here."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .results import ResultsError
from .variants import REGISTRY, parse_params, series_label


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
    """Verified, timed rows only; a clear error when there are none."""
    ok = df[df.status == "ok"]
    if ok.empty:
        raise ResultsError("the results hold no verified (status ok) rows to plot")
    return ok


def square(df: pd.DataFrame) -> pd.DataFrame:
    return df[(df.m == df.n) & (df.n == df.k)]


def series_list(df: pd.DataFrame) -> list[Series]:
    seen = {}
    for r in df[["variant", "params", "label"]].drop_duplicates().itertuples():
        s = series_of(r.variant, r.params, r.label)
        seen[(s.variant, s.params)] = s
    return sorted(seen.values(), key=lambda s: (s.order, -(s.block or 0)))


def curve(df: pd.DataFrame, s: Series, column: str = "gflops_mean") -> pd.Series:
    """column by square size n for one series (verified points only), sorted by n."""
    sq = square(df)
    rows = sq[(sq.variant == s.variant) & (sq.params == s.params) & (sq.status == "ok")]
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


def algorithmic_intensity(m: int, n: int, k: int) -> float:
    """FLOPs per byte if every operand moved through DRAM exactly once: 2mnk / 4(mk + kn + mn)."""
    return 2.0 * m * n * k / (4.0 * (m * k + k * n + m * n))


def percent_of(df: pd.DataFrame, reference: str = "cublas") -> pd.DataFrame:
    """Each series' GFLOP/s as a percentage of the reference's at the same square shape:
    columns series, variant, n, params, percent. A variant is one series when it ran one
    configuration per size (tuned parameters may differ by size), else one per configuration
    (``best`` at three block sizes)."""
    sq = square(ok_rows(df))
    ref = sq[sq.variant == reference].groupby("n").gflops_mean.mean()
    if ref.empty:
        raise ResultsError(f"the results have no '{reference}' rows to compare with")
    out = sq[(sq.variant != reference) & (sq.backend != "blas")][["variant", "n", "params", "gflops_mean"]].copy()
    out = out[out.n.isin(ref.index)]
    if out.empty:
        raise ResultsError(f"the results have no GPU variant at the sizes of its '{reference}' rows")
    several = out.groupby(["variant", "n"]).params.transform("nunique") > 1
    split = out.variant.isin(out[several].variant)
    out["series"] = out.variant.where(~split, out.variant + " " + out.params)
    out["percent"] = 100.0 * out.gflops_mean / ref.reindex(out.n).values
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
