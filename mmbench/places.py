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
