"""Kernels launched as a variant file declares them: the kernel's own argument order (the operation's
buffers by name, integers as expressions), its grid as expressions over the parameters and the shape,
and #defines bound to the shape. A built-in entry has no declared arguments and launches through its
operation's own model (``Operation.kernel``); ``launcher`` picks one or the other."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import re

import numpy as np

from ..precisions import PRECISIONS
from ..sizes import Shape
from ..variants import expressions
from ..variants.model import Params, Variant

if TYPE_CHECKING:
    from .base import DeviceBuffers, Operation

# CUDA's largest grid, x then y and z (every GPU since compute capability 3.0)
MAX_GRID = (2**31 - 1, 65535, 65535)


def dimensions(op: "Operation", shape: Shape) -> dict[str, int]:
    """The shape's dimensions by the names an expression uses for them (the CSV's: m, n, k)."""
    return {d: getattr(shape, d) for d in op.dims}


def declared_grid(op: "Operation", variant: Variant, params: Params, shape: Shape) -> tuple[int, int, int]:
    """The declared grid at this shape; ValueError when CUDA cannot launch it."""
    bound = {**dimensions(op, shape), **dict(params)}
    grid = [int(expressions.evaluate(e, bound)) for e in variant.grid] + [1] * (3 - len(variant.grid))
    if any(g < 1 or g > most for g, most in zip(grid, MAX_GRID)):
        raise ValueError(f"grid {tuple(grid)} at {shape} is outside CUDA's limits (1 to {MAX_GRID} blocks)")
    return tuple(grid)  # type: ignore[return-value]


# A typed scalar as a variant file's arguments hold it: "float32(1.0)", "int64(m * k)".
SCALAR_TYPES = {"int32": np.int32, "int64": np.int64, "float32": np.float32, "float64": np.float64}
_TYPED = re.compile(r"^(" + "|".join(SCALAR_TYPES) + r")\((.+)\)$")
# FP8's per-tensor scales, by value (float32) and by device pointer (precisions.SCALE_OFFSETS)
SCALES = ("scale_a", "scale_b")
SCALE_POINTERS = ("scale_a_ptr", "scale_b_ptr")


def typed_scalar(argument: str) -> tuple[str, str] | None:
    """(type, value text) of a typed scalar argument, or None for a buffer, a scale or an int32 expression."""
    m = _TYPED.match(argument)
    return (m.group(1), m.group(2)) if m else None


def declared_arguments(op: "Operation", variant: Variant, params: Params, shape: Shape,
                       bufs: "DeviceBuffers") -> list:
    """The kernel's arguments in its own order: buffers by name, FP8's scales by value or pointer,
    typed scalars as their type, the rest 32-bit integers."""
    by_name: dict = dict(zip(op.buffers, (*bufs.inputs, bufs.output)))
    by_name.update(tensor_maps(op, variant, params, shape, bufs))
    if bufs.scratch and PRECISIONS[bufs.precision].scaled:
        by_name.update(zip(SCALES, (np.float32(s) for s in bufs.scales)))
        by_name.update(zip(SCALE_POINTERS, bufs.scale_pointers))
    bound = {**dimensions(op, shape), **dict(params)}
    out = []
    for a in variant.arguments:
        typed = typed_scalar(a)
        if a in by_name:
            out.append(by_name[a])
        elif typed and typed[0].startswith("float"):
            out.append(SCALAR_TYPES[typed[0]](float(typed[1])))
        elif typed:
            out.append(SCALAR_TYPES[typed[0]](expressions.evaluate(typed[1], bound)))
        else:
            out.append(np.int32(expressions.evaluate(a, bound)))
    return out


def tensor_maps(op: "Operation", variant: Variant, params: Params, shape: Shape, bufs: "DeviceBuffers") -> dict:
    """The tensor maps a variant file declares, by the argument name that passes each ("map_A"):
    of its GEMM buffer as the layout stores it, the box evaluated at the point's parameters."""
    if not variant.tensor_maps:
        return {}
    from .gemm import gemm_tensor_maps

    return {f"map_{b}": m for b, m in gemm_tensor_maps(variant.tensor_maps, params, shape, bufs).items()}


def declared_launch(gpu, op: "Operation", variant: Variant, params: Params, shape: Shape,
                    bufs: "DeviceBuffers") -> Callable[[], None]:
    """A no-argument launch of a variant file's kernel on the GPU's stream (its output zeroed first
    when the kernel adds into it: the zeroing is timed with it, as split-K GEMM's); through
    cuda-python (launch_ex.py) where it declares a cluster or tensor maps."""
    fn = gpu.function(variant, params)
    block, grid = variant.block_dims(params), declared_grid(op, variant, params, shape)
    args, shared = declared_arguments(op, variant, params, shape, bufs), variant.dynamic_shared(params)
    gpu.allow_dynamic_shared(fn, shared)
    output, count = bufs.output, bufs.output_count
    width = bufs.output_type.itemsize
    if variant.launches_ex:
        run = fn.launcher(args, grid, block, shared, gpu.stream.handle, variant.cluster_dims(params))
    else:
        def run() -> None:
            fn(*args, block=block, grid=grid, shared=shared, stream=gpu.stream)

    def launch() -> None:
        if variant.zero_output:  # the output's bytes, whatever its element type
            gpu.zero_async(output, count) if width == 4 else gpu.zero_bytes_async(output, count * width)
        run()

    return launch


def launcher(gpu, op: "Operation", variant: Variant, params: Params, shape: Shape,
             bufs: "DeviceBuffers") -> Callable[[], None]:
    """The launch of a variant's kernels: as its variant file declares, else the operation's own."""
    if variant.arguments:
        return declared_launch(gpu, op, variant, params, shape, bufs)
    return op.kernel(gpu, variant, params, shape, bufs)
