"""Reading TOML files (experiment configs, tuning plans): a file's text and tables, and the checks
of their keys and values that both make, each a ConfigError naming the file and the key. It sits
below config.py and tuning/plan.py, which both read TOML, so neither imports the other for it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .timing import CACHE_MODES


class ConfigError(ValueError):
    """A config or plan file that cannot be used; the message names the file and the key."""


def refuse_unknown(where: str, table: Mapping, allowed: set[str]) -> None:
    """ConfigError naming the first key of a table that is not among those allowed."""
    extra = sorted(set(table) - allowed)
    if extra:
        raise ConfigError(f"{where}: unknown key '{extra[0]}'; allowed: {', '.join(sorted(allowed))}")


def integer(where: str, value: Any, minimum: int, maximum: int | None = None) -> int:
    """A value that must be an integer from minimum (to maximum); ConfigError naming where it is otherwise."""
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{where}: {value!r} is not an integer >= {minimum}")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{where}: {value!r} is more than {maximum}")
    return value


def read_toml(path: Path, missing: str | None = None) -> tuple[str, dict]:
    """A TOML file's text and tables; ConfigError naming the file where it cannot be (missing: the
    message for a file that is not there)."""
    try:
        text = path.read_text(encoding="utf-8")
        return text, tomllib.loads(text)
    except FileNotFoundError:
        raise ConfigError(missing or f"{path}: no such config file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}), so not a TOML config") from None
    except OSError as exc:  # a folder, no permission
        raise ConfigError(f"{path}: cannot be read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def run_table(path: Path, data: Mapping, allowed: set[str]) -> tuple[dict, str]:
    """A config's [run] table, checked (its keys among allowed), and its cache mode."""
    run = data.get("run", {})
    if not isinstance(run, dict):
        raise ConfigError(f"{path}: run: expected a table such as [run] runs = 10")
    refuse_unknown(f"{path}: run", run, allowed)
    cache = run.get("cache", "cold")
    if cache not in CACHE_MODES:
        raise ConfigError(f"{path}: run.cache: '{cache}'; choose from: {', '.join(CACHE_MODES)}")
    return run, cache
