"""Studies: one module per paper, holding what is the paper's (its figures' sizes, its numbers,
its findings and how to check them) and the text of its REPORT.md, behind the contract in
contract.py. A paper has one name everywhere: its config's `paper` (and file, configs/NAME.toml),
its module here (hyphens as underscores) and its reference run's folder, results/NAME-GPU/.

Every module or package of this package is a study (a paper's is a package: claims, figures,
report) but the three modules the studies share: `contract` (what a study provides), `common`
(what their reports share) and `rule` (the rule every verdict follows). Adding a study adds its
module; nothing lists it (papers.py reads the names from the files, for config.py as for here)."""

from __future__ import annotations

from dataclasses import replace
from importlib import import_module

from ..papers import RENAMED, papers, renamed
from .contract import Study


def study(paper: str) -> Study:
    """The study of a config's `paper`; a clear error (ValueError) names the known ones."""
    if paper in RENAMED:
        raise ValueError(renamed("paper", paper))
    if paper not in papers():
        raise ValueError(f"no study for paper '{paper}'; known: {', '.join(papers())}")
    return import_module(f".{paper.replace('-', '_')}", __name__)


def figure_families() -> dict:
    """Every study's figure families by name (`mmbench plot NAME`), each with its study's reference
    run; names are unique across studies."""
    families = {}
    for paper in papers():
        module = study(paper)
        for family_name, family in module.FIGURES.items():
            assert family_name not in families, f"figure family '{family_name}' is defined by two studies"
            families[family_name] = replace(family, reference=module.REFERENCE_RUN)
    return families
