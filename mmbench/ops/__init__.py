"""Operations: what a kernel computes, one module each (ops/gemm.py, ...), behind one contract
(ops/base.py) and the capabilities an operation declares (ops/capabilities.py). Sweeps, results,
tuning and the GPU tests ask the operation of a variant (``get_op(variant.op)``) and never name
one; this package finds them in its modules, so adding one adds a module and nothing here."""

from __future__ import annotations

import importlib
import pkgutil
from types import MappingProxyType

from .base import Check, DeviceBuffers, Operation
from .capabilities import scope_problem, tune_engine

SHARED = ("base", "capabilities", "declared", "on_gpu")  # the modules of the package that hold no operation


def _found() -> dict[str, Operation]:
    """Every operation the package's modules define, in the modules' order (by name), each
    module's in the order it defines them."""
    found = {}
    for module in sorted(info.name for info in pkgutil.iter_modules(__path__) if info.name not in SHARED):
        defined = vars(importlib.import_module(f"{__name__}.{module}")).values()
        found.update((op.name, op) for op in defined if isinstance(op, Operation))
    return found


OPERATIONS = MappingProxyType(_found())


def get_op(name: str) -> Operation:
    try:
        return OPERATIONS[name]
    except KeyError:
        raise ValueError(f"unknown operation '{name}'; choose from: {', '.join(OPERATIONS)}") from None


def timing_problem(variants, scopes, pads) -> tuple[str, str] | None:
    """(the scope, or "pad", and why) for the first variant that cannot be timed in one of these
    scopes or padded (when pads holds True); None when every variant can."""
    for v in variants:
        op = get_op(v.op)
        for scope in scopes:
            problem = scope_problem(op, v, scope, False)
            if problem:
                return scope, problem
        problem = scope_problem(op, v, "kernel", True) if any(pads) else None
        if problem:
            return "pad", problem
    return None


def size_forms_help() -> str:
    """The size spec forms operations read beyond the common ones, for help texts ("GEMV also: ...")."""
    return " ".join(f"{op.name.upper()} also: {op.size_forms}." for op in OPERATIONS.values() if op.size_forms)


def batched_by_default() -> str:
    """The operations `mmbench tune --engine auto` tunes batched, for help texts ("GEMV")."""
    return ", ".join(op.name.upper() for op in OPERATIONS.values() if tune_engine(op) == "batched")


__all__ = ["OPERATIONS", "Check", "DeviceBuffers", "Operation", "batched_by_default", "get_op", "size_forms_help",
           "timing_problem"]
