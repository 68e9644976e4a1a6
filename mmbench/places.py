"""Where mmbench keeps things outside the package: the user's runs and the user's tuning cache,
and where the package keeps what it ships (the tuning cache measured by the project).

Each place has a default and an environment variable that moves it, so a user can keep their runs
and tunings wherever they like; the commands' options (``--output``, ``--tuning-cache``) override
both for one invocation.
"""

from __future__ import annotations

import os
from pathlib import Path

RUNS_ENV = "MMBENCH_RUNS"  # the folder of the user's runs (default: runs/ in the current folder)
CACHE_ENV = "MMBENCH_TUNING_CACHE"  # the user's tuning cache (default: the user data folder's)

# The tuning cache the project measured, inside the package: found wherever mmbench is installed.
SHIPPED_CACHE = Path(__file__).resolve().parent / "data" / "tuning-cache.json"


def configs_dir() -> Path:
    """The studies' configs: configs/ inside an installed wheel, else the repository's beside the package."""
    here = Path(__file__).resolve().parent
    packaged = here / "configs"
    return packaged if packaged.is_dir() else here.parent / "configs"


def shipped_config(name: str) -> Path | None:
    """A shipped config by its name ("limits", "limits.toml", "lab3-tiles": a study's or a companion's),
    wherever mmbench is installed; None for a name that is a path or no shipped config's."""
    if not name or "/" in name or "\\" in name:
        return None
    stem = name[:-len(".toml")] if name.endswith(".toml") else name
    for folder in (configs_dir(), configs_dir() / "companions"):
        if (folder / f"{stem}.toml").is_file():
            return folder / f"{stem}.toml"
    return None


def shipped_config_names() -> list[str]:
    return sorted(p.stem for p in configs_dir().glob("*.toml"))


def runs_dir() -> Path:
    """The user's runs: where `mmbench run` and `mmbench tune` write by default and where plots,
    tables and reports look when no file is named."""
    return Path(os.environ.get(RUNS_ENV) or "runs")


def tuning_runs_dir() -> Path:
    """Where `mmbench tune` writes its tuning CSVs by default."""
    return runs_dir() / "tuning"


def user_cache() -> Path:
    """The user's own tuning cache: written by `mmbench tune`, read before the shipped one.
    Default: the platform's user data folder (~/.local/share/mmbench/ on Linux)."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    from platformdirs import user_data_path

    return user_data_path("mmbench") / "tuning-cache.json"
