"""What the studies' reports share: a checked finding, the report's opening, tables as Markdown,
the memory-hierarchy section's mechanics, and the runs kept beside a reference run (its companions)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Collection, Iterable, Sequence

import pandas as pd

from .. import hierarchy
from ..results import ResultsError
from .rule import OUTCOMES


@dataclass(frozen=True)
class Verdict:
    finding: str  # the paper's claim
    paper: str  # where and what the paper saw
    holds: str  # one of rule.OUTCOMES: yes, partly, no; by construction, not testable here, not checked
    evidence: str  # our numbers
    test: str = ""  # the paper's test as applied (scope, setting, rule.py's threshold), where it needs saying

    def __post_init__(self):
        if self.holds not in OUTCOMES:
            raise ValueError(f"verdict '{self.finding}': holds {self.holds!r}; choose from: {', '.join(OUTCOMES)}")


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
    """The verdicts as a table, the paper's test as applied beside each where one is given (a report
    counts its claims once, under its last table: rule.claims_line)."""
    tests = any(v.test for v in verdicts)
    head = ["| finding | paper | holds here? |" + (" judged by |" if tests else "") + " our numbers |",
            "|---|---|---|" + ("---|" if tests else "") + "---|"]
    return [*head, *[f"| {v.finding} | {v.paper} | **{v.holds}** |" + (f" {v.test} |" if tests else "")
                     + f" {v.evidence} |" for v in verdicts]]


def text_table(columns: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table of cells already formatted."""
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns), *["| " + " | ".join(r) + " |" for r in rows]]


def report_text(lines: list[str], figures: dict[str, Path], alt: dict[str, str] | None = None) -> str:
    """REPORT.md's text: the lines, then a Figures section linking each figure drawn (alt text by stem)."""
    lines = [*lines, "## Figures", "", *[f"![{(alt or {}).get(stem, stem)}]({path.name})\n" for stem, path in figures.items()]]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class LevelTable:
    """A table of a report's memory-hierarchy section (hierarchy.level_rows), under the line `head`:
    the kernels (every one profiled, where None) at each of the shapes in turn. `name(row, label)`
    names a kernel in the study's words from its row of hierarchy.levels and mmbench's label for
    it (that label, where None); `column` heads the names."""

    head: str
    shapes: Sequence[tuple]
    kernels: Collection[str] | None = None
    name: Callable | None = None
    column: str = "kernel"


HIERARCHY_HEADING = "## Memory hierarchy (Nsight Compute)"


def hierarchy_section(profile: pd.DataFrame | None, parts: Callable[[pd.DataFrame], Iterable],
                      command: str) -> list[str]:
    """A report's memory-hierarchy section: its heading, then what the study says of the profile,
    parts(its level table, hierarchy.levels): a string is a paragraph, a LevelTable its head line
    and table, a list of strings lines as they stand (another table); a blank line after each.
    Where the profile cannot give that table, or the parts find it lacks what they need
    (ResultsError), the one line "No hierarchy: WHY. It takes COMMAND." (the profile that would)."""
    lines = [HIERARCHY_HEADING, ""]
    try:
        said = list(parts(hierarchy.levels(profile)))
    except ResultsError as exc:
        return [*lines, f"No hierarchy: {exc}. It takes {command}.", ""]
    for part in said:
        if isinstance(part, LevelTable):
            rows = [r for shape in part.shapes for r in hierarchy.level_rows(profile, shape, part.kernels, part.name)]
            lines += [part.head, "", *text_table([part.column, *hierarchy.LEVEL_COLUMNS[1:]], rows)]
        else:
            lines += [part] if isinstance(part, str) else part
        lines.append("")
    return lines


@dataclass(frozen=True)
class Companion:
    """A run kept beside a study's reference run (results/STUDY-GPU/FOLDER/NAME.csv[.gz]: a hot-cache
    sweep, a tile sweep, another layout) with its metadata and, when taken, its profile."""

    path: Path
    df: pd.DataFrame
    meta: dict
    profile: pd.DataFrame | None


def companion(results_path: Path | None, folder: str, name: str) -> Companion | None:
    """The companion run FOLDER/NAME beside the reference run at results_path, or None when that
    folder holds no such run (a user's own run of the study has none) or no path is given."""
    from ..profile import profile_path, read_profile
    from ..results import read_metadata, read_results

    if results_path is None:
        return None
    base = Path(results_path).parent / folder
    path = next((p for p in (base / f"{name}.csv", base / f"{name}.csv.gz") if p.exists()), None)
    if path is None:
        return None
    prof = profile_path(path)
    return Companion(path, read_results(path), read_metadata(path), read_profile(prof) if prof.exists() else None)
