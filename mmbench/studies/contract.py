"""The study contract: what a module under mmbench/studies/ provides, and the figure families it
declares. A study module satisfies `Study` as it stands (a Protocol: modules are checked by their
attributes, tests/test_studies_contract.py checks each)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Protocol

import pandas as pd


@dataclass(frozen=True)
class Figure:
    """One file a study draws: draw(df, meta, profile or None, size or None, results_path) ->
    matplotlib Figure, raising ResultsError (with what it lacks) when the results cannot make it.
    results_path is the results file drawn (None where the rows come from no file): a figure finds
    the runs kept beside it there (common.companion), drawing without them where there are none."""

    stem: str
    draw: Callable


@dataclass(frozen=True)
class FigureFamily:
    """`mmbench plot NAME`: its short help (its line in `mmbench plot --help`, whole in 80 columns:
    Click would cut a long help at its first period, "Fig."), its help, its figures, and optionally
    a summary table printed after them (summary(df, meta) -> (title, columns, rows of strings));
    reference: its study's reference run (set by studies.figure_families)."""

    short: str
    help: str
    figures: tuple[Figure, ...]
    summary: Callable | None = None
    options: tuple[str, ...] = ()  # options of `mmbench plot` beyond every family's that it takes ("size")
    reference: str = ""


class Study(Protocol):
    """A study: one paper (or mmbench's own question) checked on today's GPU. Its module is
    mmbench/studies/<paper>.py, or for a paper its package mmbench/studies/<paper>/ (claims, figures,
    report: one job a module), hyphens as underscores, where <paper> is the one name of the paper
    (its config's `paper`, its config file and its reference run's folder, `results/<paper>-<gpu>/`).

    FIGURES: its figure families by name (`mmbench plot NAME`; names unique across studies).
    REFERENCE_RUN: the path of its committed run from the repository root, suggested when the
    user's runs hold none a command can use.
    report(): the text of REPORT.md from a run (nothing written: the command writes it once every
    figure was made); `reference` is the config's [reference] table (the paper's own numbers),
    `figures` the files drawn by stem, `profile` the run's Nsight Compute table or None."""

    FIGURES: Mapping[str, FigureFamily]
    REFERENCE_RUN: str

    def report(self, df: pd.DataFrame, meta: dict, reference: dict, figures: dict[str, Path],
               profile: pd.DataFrame | None, results_path: Path) -> str: ...
