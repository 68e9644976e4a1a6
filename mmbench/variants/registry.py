"""The registry: every built-in kernel variant and baseline, one entry each, assembled from the
modules of this package named after their operation (``gemm.py``, ...): found by that rule, listed
nowhere, so adding an operation adds a module here and edits none.

Each such module defines ``BUILT_IN``, ``{place: entries}``: a place orders groups of entries as
they came to the project, the order that ``mmbench list``, errors and the figures' series keep
(groups of one place keep the modules' order, by name); a new operation's entries take the next
free place.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from .model import Variant, VariantError

SHARED = ("model", "registry", "expressions", "files")  # the modules of the package that hold no operation's entries


def _assembled() -> dict[str, Variant]:
    """Every entry of the package's operation modules, by place, then module, then as defined."""
    places = []
    modules = sorted(info.name for info in pkgutil.iter_modules([str(Path(__file__).parent)])
                     if info.name not in SHARED)
    for module in modules:
        places += importlib.import_module(f"{__package__}.{module}").BUILT_IN.items()
    entries = [v for _, group in sorted(places, key=lambda place: place[0]) for v in group]
    registry = {v.name: v for v in entries}
    if len(registry) != len(entries):  # a second entry of one name would silently replace the first
        twice = sorted({v.name for v in entries if sum(w.name == v.name for w in entries) > 1})
        raise VariantError(f"variants registered twice: {', '.join(twice)}")
    return registry


BUILT_IN: Mapping[str, Variant] = MappingProxyType(_assembled())
_ENTRIES: dict[str, Variant] = dict(BUILT_IN)
# Every variant a command may name: the built-in ones, then those of the variant files loaded
# (variants/files.py puts them here, through replace_from).
REGISTRY: Mapping[str, Variant] = MappingProxyType(_ENTRIES)


def replace_from(origin: Path, variants: list[Variant]) -> None:
    """The variants of one variant file into the registry, in place of those it gave before."""
    for name in [n for n, v in _ENTRIES.items() if v.origin == origin]:
        del _ENTRIES[name]
    _ENTRIES.update((v.name, v) for v in variants)


def get_variant(name: str) -> Variant:
    try:
        return REGISTRY[name]
    except KeyError:
        raise VariantError(f"unknown variant '{name}'; choose from: {', '.join(REGISTRY)}") from None
