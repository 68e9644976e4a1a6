"""The limits study (configs/limits.toml): how far each SGEMM technique stands from cuBLAS on
today's GPU, measured as GFLOP/s in % of cuBLAS (pure FP32) in the same run.

Its targets: n = 4096 (large and aligned), n = 2049 (just past a power of two: edge tiles), and the
geometric mean over the Zosa paper's sizes from 512 (the 146 sizes of 512:2049).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import analysis, plots
from ..sizes import parse_sizes
from .common import provenance, report_text, text_table
from .contract import Figure, FigureFamily

TARGET_SIZES = (4096, 2049)
PAPER_SIZES = "512:2049"  # the paper's sizes from 512


def targets(df: pd.DataFrame) -> pd.DataFrame:
    """Per series: % of cuBLAS at the target sizes and the geometric mean over the paper sizes."""
    return analysis.target_summary(analysis.percent_of(df, "cublas"), TARGET_SIZES,
                                   [s.n for s in parse_sizes(PAPER_SIZES)])


def _percent(v) -> str:
    return "-" if v is None or v != v else f"{v:.1f} %"


def summary(df: pd.DataFrame) -> tuple[str, list[str], list[list[str]]]:
    """The targets as a table: (title, columns, rows)."""
    columns = ["series", *(f"n = {n}" for n in TARGET_SIZES), "geomean, paper sizes >= 512"]
    rows = [[r["series"], *(_percent(r[f"at_{n}"]) for n in TARGET_SIZES), f"{_percent(r['geomean'])} ({r['sizes']})"]
            for r in targets(df).to_dict("records")]
    return "GFLOP/s as % of cuBLAS", columns, rows


# Its reference run in the repository: what a command suggests when no run of the user's will do.
REFERENCE_RUN = "results/limits-h200/limits-h200.csv.gz"

FIGURES = {
    "vs-cublas": FigureFamily("Limits: % of cuBLAS per size per variant", "Percent of cuBLAS per size per variant, with the targets' ratios printed",
                              (Figure("vs-cublas", lambda df, meta, profile, size: plots.fig_vs_cublas(df, meta)),),
                              summary),
}


def report(df: pd.DataFrame, meta: dict, reference: dict, figures: dict[str, Path],
           profile: pd.DataFrame | None, results_path: Path) -> str:
    """REPORT.md: the targets per series, where the fastest stands over every size, the figure."""
    ok = analysis.ok_rows(df)
    title, columns, rows = summary(ok)
    pct = analysis.percent_of(ok, "cublas")
    paper = [s.n for s in parse_sizes(PAPER_SIZES)]
    per_series = []
    for series, g in pct.groupby("series", sort=False):
        on = g.groupby("n").percent.mean().reindex(paper).dropna()
        if len(on):
            per_series.append([series, str(len(on)), str(int((on >= 100).sum())),
                               f"{on.min():.1f} % at {on.idxmin()}", f"{on.max():.1f} % at {on.idxmax()}"])
    lines = [
        "# The SGEMM ladder against cuBLAS",
        "",
        provenance(results_path, df, meta) + ". GFLOP/s (mean "
        "of the samples) as % of cuBLAS SGEMM in pure FP32 mode at the same size in the same run.",
        "",
        f"## {title}",
        "",
        *text_table(columns, rows),
        "",
        f"## Over the paper sizes ({PAPER_SIZES})",
        "",
        *text_table(["series", "sizes", "at or above cuBLAS", "lowest", "highest"], per_series),
        "",
    ]
    return report_text(lines, figures)
