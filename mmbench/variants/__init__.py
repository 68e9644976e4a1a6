"""Kernel variants: the model of an entry (``model.py``), each operation's built-in entries (a
module named after the operation's module in ``ops/``) and the registry assembled from them
(``registry.py``). The package's public API is importable from here."""

from __future__ import annotations

from .model import (CPU_BACKENDS, MAX_THREADS_PER_BLOCK, Params, Variant, VariantError, evaluate, format_params,
                    param_points, parse_params, series_label, space_text, tuning_space)
from .registry import REGISTRY, get_variant

__all__ = ["CPU_BACKENDS", "MAX_THREADS_PER_BLOCK", "Params", "REGISTRY", "Variant", "VariantError", "evaluate",
           "format_params", "get_variant", "param_points", "parse_params", "series_label", "space_text", "tuning_space"]
