"""What only some operations can do, each a small base class the operation declares by inheriting
it: timing more than the kernel alone (Scoped), padding (Padded), CPU and GPU library baselines
(CpuBaseline, LibraryBaseline), the batched tuner's check on the GPU (BatchedCheck) and inputs,
references and checks made on the run's GPU (InputsOnGpu). Callers ask
with isinstance, through the functions below, never by probing for a method.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, TypeVar

import numpy as np

from ..sizes import Shape
from ..variants.model import Params, Variant
from .base import DeviceBuffers, Operation, ScopeError, Timed, kernel_alone


class Scoped(ABC):
    """An operation that times more than its kernels alone: the scopes of base.SCOPES it names."""

    scopes: tuple[str, ...]

    @abstractmethod
    def timed(self, gpu, variant: Variant, params: Params, shape: Shape, scope: str, pad: bool, bufs: DeviceBuffers,
              inputs: Any, compute: Callable[[Shape, DeviceBuffers], Callable[[], None]]) -> Timed:
        """What a point's samples time in a scope, padded or not: compute(shape, buffers) is a launch
        of the variant on buffers of a shape."""


class Padded(Scoped):
    """An operation that can run a kernel on inputs padded to the kernel's tile multiple (its timed
    sequence makes the padded buffers, so padding is a kind of scope)."""

    @abstractmethod
    def padded_shape(self, variant: Variant, params: Params, shape: Shape) -> Shape:
        """The shape a padded point runs its kernel at."""

    @abstractmethod
    def must_pad(self, variant: Variant) -> bool:
        """Whether the variant's kernel only runs on padded inputs (it has no border checks)."""

    def pad_problem(self, variant: Variant) -> str | None:
        """Why this variant cannot be padded, or None."""
        return None


class CpuBaseline(ABC):
    """An operation with CPU baselines (BLAS, numpy, compiled loops)."""

    @abstractmethod
    def cpu(self, variant: Variant, inputs: Any) -> tuple[Callable[[], None], np.ndarray]:
        """A CPU baseline as (a call that computes into out, out)."""


class LibraryBaseline(ABC):
    """An operation with a GPU library baseline (cuBLAS, the driver's copy)."""

    @abstractmethod
    def library(self, variant: Variant, gpu) -> Any:
        """An open handle of the library (closed with .close(), described by .meta())."""

    @abstractmethod
    def library_call(self, handle: Any, shape: Shape, bufs: DeviceBuffers) -> Callable[[], None]:
        """A no-argument call of the library on a shape's buffers."""


class BatchedCheck(ABC):
    """An operation whose outputs are sums of products checked by check_sums, which the batched
    tuner runs on the GPU (millions of points); `mmbench tune --engine auto` batches it."""

    @abstractmethod
    def sum_check(self, inputs: Any) -> tuple[np.ndarray, np.ndarray, int]:
        """(float64 reference, error bound, terms) of one shape's inputs."""

    def tuning_skip(self, variant: Variant, params: Params, shape: Shape) -> str | None:
        """Why the tuner leaves a configuration untimed at a shape (its design is not meant for
        it), or None; every configuration is timed everywhere by default."""
        return None


class InputsOnGpu(ABC):
    """An operation whose inputs are drawn, referenced and checked on the run's GPU (ops/on_gpu.py):
    only the check's measures cross to the host. What it makes has the host inputs' fields too,
    brought over on first use (a CPU baseline's inputs and check, the end-to-end scope's copies)."""

    @abstractmethod
    def gpu_bytes(self, shape: Shape, precision: str) -> int:
        """Device memory a shape's buffers, reference and bound take at the peak of making them."""

    @abstractmethod
    def inputs_on_gpu(self, gpu, shape: Shape, key: int, precision: str, layout: str) -> Any:
        """A shape's inputs drawn from the key into device buffers (.buffers), their reference and
        bound there (.sums: ops/on_gpu.SumsOnGpu); .free() frees the reference, not the buffers."""


Capability = TypeVar("Capability")
# What an operation without the capability lacks, as an error names it.
LACKS = {Scoped: "timing scopes beyond the kernel", Padded: "padding", CpuBaseline: "CPU baseline",
         LibraryBaseline: "GPU library baseline", BatchedCheck: "sums check the batched tuner can run on the GPU",
         InputsOnGpu: "inputs and check made on the GPU"}


def needs(op: Operation, capability: type[Capability]) -> Capability:
    """The operation as one with this capability; a ValueError naming what it lacks otherwise."""
    if not isinstance(op, capability):
        raise ValueError(f"{op.name} has no {LACKS[capability]}")
    return op


def scopes(op: Operation) -> tuple[str, ...]:
    """The scopes (base.SCOPES) an operation can time."""
    return op.scopes if isinstance(op, Scoped) else ("kernel",)


def must_pad(op: Operation, variant: Variant) -> bool:
    """Whether the variant's kernel only runs padded."""
    return isinstance(op, Padded) and op.must_pad(variant)


def scope_problem(op: Operation, variant: Variant, scope: str, pad: bool) -> str | None:
    """Why a variant cannot be timed in this scope (base.SCOPES), or padded when pad is true; None
    when it can. Runs and configs ask before anything is planned, so a scope or padding that
    cannot apply is refused, never dropped."""
    if not variant.on_gpu and (scope != "kernel" or pad):
        return f"{variant.name} runs on the CPU: it is timed as its own call (kernel), never padded"
    if scope not in scopes(op):
        return f"{variant.name} is a {op.name}, timed only as {', '.join(scopes(op))}"
    if pad and not isinstance(op, Padded):
        return f"{variant.name} is a {op.name}, which has no padding"
    return op.pad_problem(variant) if pad else None


def timed_sequence(op: Operation, gpu, variant: Variant, params: Params, shape: Shape, scope: str, pad: bool,
          bufs: DeviceBuffers, inputs: Any, compute: Callable[[Shape, DeviceBuffers], Callable[[], None]]) -> Timed:
    """What a point's samples time: the operation's own sequence for its scopes, else the kernel
    alone on its inputs as given."""
    if isinstance(op, Scoped):
        return op.timed(gpu, variant, params, shape, scope, pad, bufs, inputs, compute)
    if scope != "kernel" or pad:
        raise ScopeError(f"{op.name} is timed as the kernel alone on its inputs as given")
    return kernel_alone(gpu, op, shape, bufs, compute(shape, bufs))


def tune_engine(op: Operation) -> str:
    """What `mmbench tune --engine auto` uses for an operation."""
    return "batched" if isinstance(op, BatchedCheck) else "points"
