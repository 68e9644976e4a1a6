"""What every study shares: its figure families (what `mmbench plot NAME` draws), a checked
finding, and tables as Markdown."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd


@dataclass(frozen=True)
class Figure:
    """One file a study draws: draw(df, meta, profile or None, size or None) -> matplotlib Figure,
    raising ResultsError (with what it lacks) when the results cannot make it."""

    stem: str
    draw: Callable


@dataclass(frozen=True)
class FigureFamily:
    """`mmbench plot NAME`: its short help (its line in `mmbench plot --help`, whole in 80 columns:
    Click would cut a long help at its first period, "Fig."), its help, its figures, and optionally
    a summary table printed after them (summary(df) -> (title, columns, rows of strings));
    reference: its study's reference run (set by studies.figure_families)."""

    short: str
    help: str
    figures: tuple[Figure, ...]
    summary: Callable | None = None
    options: tuple[str, ...] = ()  # options of `mmbench plot` beyond every family's that it takes ("size")
    reference: str = ""


@dataclass(frozen=True)
class Verdict:
    finding: str  # the paper's claim
    paper: str  # where and what the paper saw
    holds: str  # "yes", "no", "partly" or "not checked"
    evidence: str  # our numbers


def provenance(results_path: Path, df: pd.DataFrame, meta: dict, counts: str = "", device: str = "") -> str:
    """A report's opening: its results file, points and how many verified (then `counts`), the
    GPU (then `device`), the day it ran and the commit; the study goes on with its own words."""
    gpu = meta.get("gpu") or {}
    return (f"Results: `{results_path.name}` ({len(df)} points, {int((df.status == 'ok').sum())} verified{counts}) on "
            f"**{gpu.get('name', 'no GPU')}**{device}, run {str(meta.get('started_at', ''))[:10]}, commit "
            f"`{(meta.get('git') or {}).get('commit')}`")


def markdown_table(df: pd.DataFrame) -> str:
    def cell(v):
        if isinstance(v, str):
            return v
        return "-" if pd.isna(v) else f"{v:.3g}" if abs(v) < 0.1 else f"{v:.2f}" if abs(v) < 100 else f"{v:.0f}"

    head = "| " + " | ".join([df.index.name or ""] + [str(c) for c in df.columns]) + " |"
    rule = "|" + "---|" * (len(df.columns) + 1)
    rows = ["| " + " | ".join([str(i)] + [cell(v) for v in r]) + " |" for i, r in zip(df.index, df.values)]
    return "\n".join([head, rule, *rows])


def verdict_table(verdicts: list[Verdict]) -> list[str]:
    return ["| finding | paper | holds here? | our numbers |", "|---|---|---|---|",
            *[f"| {v.finding} | {v.paper} | **{v.holds}** | {v.evidence} |" for v in verdicts]]


def text_table(columns: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table of cells already formatted."""
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns), *["| " + " | ".join(r) + " |" for r in rows]]


def report_text(lines: list[str], figures: dict[str, Path], alt: dict[str, str] | None = None) -> str:
    """REPORT.md's text: the lines, then a Figures section linking each figure drawn (alt text by stem)."""
    lines = [*lines, "## Figures", "", *[f"![{(alt or {}).get(stem, stem)}]({path.name})\n" for stem, path in figures.items()]]
    return "\n".join(lines) + "\n"
