"""Every study keeps the written contract (mmbench/studies/contract.py) and has one name everywhere:
its config's `paper` and file, its module, its reference run's folder; found by that name alone."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest

from mmbench.config import load_config
from mmbench.studies import RENAMED, papers, study
from mmbench.studies.contract import FigureFamily, Study

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent


def test_the_studies_are_found_from_the_modules_and_match_the_configs():
    configs = {tomllib.loads(p.read_text()).get("paper") for p in (REPO / "configs").glob("*.toml")}
    assert papers() == sorted(configs) == ["amd-tiling", "lab3", "lameski2013", "limits", "sorensen2012", "tensor-cores", "zosa2017"]


@pytest.mark.parametrize("paper", papers())
def test_each_study_keeps_the_contract(paper):
    module = study(paper)
    assert module.__name__ == f"mmbench.studies.{paper.replace('-', '_')}"
    assert module.FIGURES and all(isinstance(name, str) and isinstance(family, FigureFamily)
                                  for name, family in module.FIGURES.items())
    contract = list(inspect.signature(Study.report).parameters)[1:]  # less self
    assert list(inspect.signature(module.report).parameters) == contract
    for family in module.FIGURES.values():  # each figure takes the results path after df, meta, profile, size
        for figure in family.figures:
            inspect.signature(figure.draw).bind("df", "meta", None, None, Path("results.csv"))
    assert isinstance(module.REFERENCE_RUN, str) and (REPO / module.REFERENCE_RUN).is_file()


@pytest.mark.parametrize("paper", papers())
def test_a_paper_has_one_name_config_module_and_reference_run(paper):
    cfg = load_config(REPO / "configs" / f"{paper}.toml")
    assert (cfg.name, cfg.paper) == (paper, paper)
    folder, file = Path(study(paper).REFERENCE_RUN).parts[1:]
    assert folder.startswith(f"{paper}-") and file.split(".")[0] == folder  # results/NAME-GPU/NAME-GPU.csv[.gz]


def test_an_unknown_or_renamed_paper_is_refused_naming_the_choices():
    with pytest.raises(ValueError, match="no study for paper 'zosa'; known: amd-tiling, lab3, lameski2013, limits, "
                                         "sorensen2012, tensor-cores, zosa2017$"):
        study("zosa")
    for old, new in RENAMED.items():
        with pytest.raises(ValueError, match=f"paper '{old}' is now '{new}'"):
            study(old)
