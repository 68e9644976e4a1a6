"""Studies: one module per paper, holding what is the paper's (its figures' sizes, its numbers,
its findings and how to check them) and writing its REPORT.md. A config's `paper` names its study."""

from __future__ import annotations

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
    """Every study's figure families by name (`mmbench plot NAME`); names are unique across studies."""
    families = {}
    for module in dict.fromkeys(STUDIES.values()):
        for name, family in import_module(f".{module}", __name__).FIGURES.items():
            assert name not in families, f"figure family '{name}' is defined by two studies"
            families[name] = family
    return families
