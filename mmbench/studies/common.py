"""What every study's report shares: a checked finding, and tables as Markdown."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Verdict:
    finding: str  # the paper's claim
    paper: str  # where and what the paper saw
    holds: str  # "yes", "no", "partly" or "not checked"
    evidence: str  # our numbers


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
