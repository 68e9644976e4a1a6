"""What the claims, the figures and the report all compute from the results: the paper's headline
series (CUDA-Best), its Table 1, the size both timed and profiled, and a ratio's span."""

from __future__ import annotations

import pandas as pd

from ... import analysis
from ...analysis import Series
from ...results import ResultsError


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
    const = analysis.find(df, "best_const")  # the paper's final version (section 2.5), beside the robust one
    cols = {"BLAS (multicore)": analysis.find(df, "blas"), best.label if best else "": best,
            const.label if const else " ": const, "cuBLAS": analysis.find(df, "cublas")}
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
    if const and "BLAS (multicore)" in out:
        out[f"{const.label} / BLAS"] = out[const.label] / out["BLAS (multicore)"]
    if best and "cuBLAS" in out:
        out[f"{best.label} / cuBLAS"] = out[best.label] / out["cuBLAS"]
    return out


def _timed_and_profiled(curve: pd.Series, mine: pd.DataFrame) -> int:
    """The largest size both timed in the run and profiled (the profile may go past the run's sizes)."""
    both = sorted(set(curve.index) & set(mine.n))
    if not both:
        raise ResultsError("the profile holds no size the run timed")
    return int(both[-1])


def _span(r: pd.Series) -> str:
    return f"{r.min():.2f} to {r.max():.2f}" if len(r) else "-"
