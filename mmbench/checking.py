"""`mmbench check`: what a user runs before trusting a variant file's kernels. Each variant is
compiled at its default parameters as the GPU will build it (nvcc, the same text and options as
PyCUDA's SourceModule) and ptxas's report read: registers, spills, shared memory, the entry
symbol; then, where a GPU is, each runs at its operation's awkward shapes (every one verified
against float64, outputs poisoned with NaN first) through the same engine as `mmbench run`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from . import source
from .ops import get_op
from .ops.declared import dimensions
from .variants import Variant, format_params, param_points
from .variants.model import compile_params


@dataclass(frozen=True)
class Built:
    """One variant's default point compiled: ptxas's report, or why it did not build."""

    variant: Variant
    params: str  # its default parameters, as a row's params column says them
    shape: str  # the shape it was compiled for (a variant with shape-bound #defines is compiled per shape)
    symbol: str = ""
    report: source.PtxasReport | None = None
    problem: str = ""  # nvcc's first error line, an entry point not found, a constraint broken


def compile_all(variants: Sequence[Variant], arch: str = source.DEFAULT_ARCH) -> list[Built]:
    """Every default point of each variant compiled (at the operation's first awkward shape when
    #defines are bound to the shape)."""
    out = []
    for variant in variants:
        op = get_op(variant.op)
        shape = op.parse_sizes(op.tested_sizes)[0]
        for params in param_points(variant):
            text, at = format_params(params), str(shape) if variant.defines else "any"
            problem = variant.problem(params)
            if problem:
                out.append(Built(variant, text, at, problem=problem))
                continue
            built = compile_params(variant, params, dimensions(op, shape))
            try:
                reports = source.compile_reports(variant, built, arch)
                symbol = source.entry_symbol(variant, reports)
                out.append(Built(variant, text, at, symbol, reports[symbol]))
            except source.CompileError as exc:
                out.append(Built(variant, text, at, problem=str(exc)))
    return out


# Shapes a check adds for kernels that take only multiples of their tiles (a variant's `requires`),
# where none of the awkward shapes would run: every dimension a multiple of 128, one shape not square.
TILED_SIZES = "128,256,512x256x384,1024x512x2048"


def awkward_sizes(variant: Variant) -> str:
    """The size spec of the shapes every variant of the operation is tested at."""
    return get_op(variant.op).tested_sizes


def check_shapes(variant: Variant) -> tuple[str, list[str]]:
    """The shapes `mmbench check` runs a variant at, as a size spec: its operation's awkward shapes
    that the variant takes at its defaults (its `requires`), and for a variant with requirements the
    tiled shapes it takes; and the awkward shapes left out, each with the requirement it misses."""
    op = get_op(variant.op)
    spec = awkward_sizes(variant) + (f",{TILED_SIZES}" if variant.requires and op.name == "gemm" else "")
    params = param_points(variant)[0]
    awkward = {str(s) for s in op.parse_sizes(awkward_sizes(variant))}
    kept, left_out = [], []
    for shape in op.parse_sizes(spec):
        unmet = variant.unmet(compile_params(variant, params, dimensions(op, shape)), dimensions(op, shape))
        if unmet is None:
            kept.append(shape)
        elif str(shape) in awkward:
            left_out.append(f"{shape} ({unmet.split(' requires ', 1)[1]})")
    return ",".join(str(s) for s in kept), left_out
