"""The studies' names (a config's `paper`), read from the files of the studies package without
importing any study: what a config checks its `paper` and `name` against. It sits below config.py
and the studies, which both read it, so the config reader never imports the studies."""

from __future__ import annotations

from pathlib import Path
from pkgutil import iter_modules

STUDIES = Path(__file__).resolve().parent / "studies"
SHARED = frozenset({"contract", "common", "rule"})  # modules of the studies package that are not studies
# Names a paper had before it had one: a config naming one is refused with the name it has now.
RENAMED = {"zosa-gemm-shared-memory-ilp": "zosa2017", "lab3-2018": "lab3"}


def papers() -> list[str]:
    """The studies' names (a config's `paper`), from the modules of the studies package, none imported."""
    return sorted(m.name.replace("_", "-") for m in iter_modules([str(STUDIES)]) if m.name not in SHARED)


def renamed(key: str, value: object) -> str | None:
    """One line naming the new name when a config's `key` (name or paper) gives a paper's old one."""
    if value in RENAMED:
        return f"{key} {value!r} is now {RENAMED[value]!r}: write {key} = \"{RENAMED[value]}\""
    return None


def paper_problem(paper: object) -> str | None:
    """Why a config's `paper` names no study (one line naming its new name, or the known ones), or None."""
    if paper in RENAMED:
        return renamed("paper", paper)
    if paper not in papers():
        return (f"paper {paper!r}: no study knows it; known: {', '.join(papers())} "
                f"(leave paper out for an experiment of your own)")
    return None
