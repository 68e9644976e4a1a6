"""The registry: every kernel variant and baseline, one entry each.

A CUDA variant's registry key is also its ``extern "C" __global__`` name in
``kernels/<family>.cu``; nothing else in Python repeats it.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from .sizes import Shape

BACKENDS = ("cuda", "cublas", "blas")

Params = tuple[tuple[str, int], ...]  # sorted (name, value) pairs; hashable


class VariantError(ValueError):
    """An unknown variant or a bad parameter; the message names the choices."""


@dataclass(frozen=True)
class Variant:
    """One kernel variant or baseline and how to build and launch it."""

    name: str
    backend: str  # "cuda" (a kernel of ours), "cublas" or "blas"
    label: str  # legend text, as the paper wrote it
    description: str
    paper: str = "zosa2017"
    op: str = "gemm"
    family: str | None = None  # kernels/<family>.cu, CUDA variants only
    # name -> default values; left out of hashing (a mapping is unhashable, the name is unique)
    axes: Mapping[str, tuple[int, ...]] = field(default_factory=dict, hash=False)
    outputs_per_thread: int = 1  # per dimension: a block covers (BLOCK * this)^2 outputs of C
    source_dir: Path | None = None  # only for kernels outside kernels/ (tests)

    @property
    def on_gpu(self) -> bool:
        return self.backend in ("cuda", "cublas")

    def block_threads(self, params: Params) -> int:
        block = dict(params).get("BLOCK", 1)
        return block * block

    def launch_geometry(self, params: Params, shape: Shape) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(block, grid) for a BLOCK x BLOCK thread block; grid x runs along n, y along m."""
        block = dict(params)["BLOCK"]
        span = block * self.outputs_per_thread
        return (block, block, 1), (math.ceil(shape.n / span), math.ceil(shape.m / span), 1)


def _cuda(name: str, family: str, label: str, description: str, outputs_per_thread: int = 1) -> Variant:
    return Variant(name=name, backend="cuda", label=label, description=description, family=family,
                   axes=MappingProxyType({"BLOCK": (32,)}), outputs_per_thread=outputs_per_thread)


_ALL = (
    _cuda("best_const", "best", "CUDA-Best const",
          "four outputs per thread, block size fixed at compile time, no min() bounds", 2),
    _cuda("best", "best", "CUDA-Best",
          "four outputs per thread a block apart (Algorithm 3), robust min() tile bounds", 2),
    _cuda("interleaved", "interleaved", "CUDA-1IL",
          "double-buffered tiles, next loads overlap current compute (Algorithm 2)"),
    _cuda("unroll_k2", "unroll_k2", "CUDA-C_Unroll", "two k-tiles per barrier, two accumulators"),
    _cuda("shared", "shared", "CUDA-1", "coalesced shared-memory tiles, one output per thread (Algorithm 1)"),
    _cuda("naive", "naive", "CUDA-Naive", "one thread per output, operands from global memory"),
    _cuda("shared_uncoalesced", "shared", "CUDA-1u", "shared-memory tiles loaded with uncoalesced reads"),
    Variant(name="blas", backend="blas", label="BLAS (multicore)",
            description="CPU BLAS sgemm through numpy (float32), threads recorded"),
    Variant(name="cublas", backend="cublas", label="cuBLAS",
            description="cuBLAS sgemm through CuPy on the same device buffers, pedantic pure FP32"),
)

REGISTRY: Mapping[str, Variant] = MappingProxyType({v.name: v for v in _ALL})


def get_variant(name: str) -> Variant:
    try:
        return REGISTRY[name]
    except KeyError:
        raise VariantError(f"unknown variant '{name}'; choose from: {', '.join(REGISTRY)}") from None


def series_label(variant: Variant, params: Params) -> str:
    """Legend text as the paper writes it: "CUDA-Best (16x16)"."""
    block = dict(params).get("BLOCK")
    return f"{variant.label} ({block}x{block})" if block else variant.label


def format_params(params: Params) -> str:
    return ",".join(f"{k}={v}" for k, v in params)


def parse_params(text: str) -> Params:
    """Inverse of format_params ("BLOCK=32" -> (("BLOCK", 32),)); "" means no parameters."""
    if not isinstance(text, str) or not text:
        return ()
    pairs = (item.split("=", 1) for item in text.split(","))
    return tuple(sorted((k, int(v)) for k, v in pairs))


def param_points(variant: Variant, overrides: Mapping[str, tuple[int, ...]] | None = None) -> list[Params]:
    """Every parameter combination of a variant: its axes' defaults, overridden where given.

    Overrides naming an axis the variant lacks are ignored (``--block`` means nothing to BLAS);
    values must be positive integers.
    """
    axes = dict(variant.axes)
    for name, values in (overrides or {}).items():
        if name not in axes:
            continue
        bad = [v for v in values if not isinstance(v, int) or v < 1]
        if bad or not values:
            raise VariantError(f"parameter {name}={bad or values!r} for '{variant.name}': values must be positive integers")
        axes[name] = tuple(values)
    names = sorted(axes)
    return [tuple(zip(names, combo)) for combo in itertools.product(*(axes[n] for n in names))]
