"""Studies: one module per paper, holding what is the paper's (its figures' sizes, its numbers,
its findings and how to check them) and the text of its REPORT.md. A config's `paper` names its study.

A study module has FIGURES (its figure families: `mmbench plot NAME`), report(df, meta, reference,
figures, profile, results_path) -> the text of REPORT.md (nothing written: the command writes once
everything is made), and REFERENCE_RUN (its committed run, which a command suggests when the user's
runs hold none it can use)."""

from __future__ import annotations

from dataclasses import replace
from importlib import import_module
from types import ModuleType

STUDIES = {"zosa-gemm-shared-memory-ilp": "zosa2017", "limits": "limits", "lab3": "lab3", "sorensen2012": "sorensen2012",
           "amd-tiling": "amd_tiling", "lameski2013": "lameski2013"}  # config `paper` -> module


def study(paper: str) -> ModuleType:
    """The study module of a config's `paper`; a clear error names the known ones."""
    try:
        return import_module(f".{STUDIES[paper]}", __name__)
    except KeyError:
        raise ValueError(f"no study for paper '{paper}'; known: {', '.join(STUDIES)}") from None


def figure_families() -> dict:
    """Every study's figure families by name (`mmbench plot NAME`), each with its study's reference
    run; names are unique across studies."""
    families = {}
    for name in dict.fromkeys(STUDIES.values()):
        module = import_module(f".{name}", __name__)
        for family_name, family in module.FIGURES.items():
            assert family_name not in families, f"figure family '{family_name}' is defined by two studies"
            families[family_name] = replace(family, reference=module.REFERENCE_RUN)
    return families
