"""Operations: what a kernel computes, one module each (ops/gemm.py, ...), behind one interface
(ops/base.py). Sweeps, results, tuning and the GPU tests ask the operation of a variant
(``get_op(variant.op)``) and never name one."""

from __future__ import annotations

from types import MappingProxyType

from .base import Check, DeviceBuffers, Operation
from .gemm import GEMM
from .gemv import GEMV
from .transpose import COPY, TRANSPOSE

OPERATIONS = MappingProxyType({op.name: op for op in (GEMM, GEMV, TRANSPOSE, COPY)})


def get_op(name: str) -> Operation:
    try:
        return OPERATIONS[name]
    except KeyError:
        raise ValueError(f"unknown operation '{name}'; choose from: {', '.join(OPERATIONS)}") from None


__all__ = ["OPERATIONS", "Check", "DeviceBuffers", "Operation", "get_op"]
