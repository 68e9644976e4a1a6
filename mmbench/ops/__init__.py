"""Operations: what a kernel computes, one module each (ops/gemm.py, ...), behind one contract
(ops/base.py) and the capabilities an operation declares (ops/capabilities.py). Sweeps, results,
tuning and the GPU tests ask the operation of a variant (``get_op(variant.op)``) and never name one."""

from __future__ import annotations

from types import MappingProxyType

from .base import Check, DeviceBuffers, Operation
from .capabilities import scope_problem
from .gemm import GEMM
from .gemv import GEMV
from .transpose import COPY, TRANSPOSE

OPERATIONS = MappingProxyType({op.name: op for op in (GEMM, GEMV, TRANSPOSE, COPY)})


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


__all__ = ["OPERATIONS", "Check", "DeviceBuffers", "Operation", "get_op", "timing_problem"]
