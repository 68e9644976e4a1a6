"""The variant model: what a registry entry says (Variant), its parameter points (Params, their
text form, the defaults and the tuning space), its constraints and the one restricted evaluator of
the expressions in them and in its launch geometry.
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache, partial
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from . import expressions

Params = tuple[tuple[str, int], ...]  # sorted (name, value) pairs; hashable


class VariantError(ValueError):
    """An unknown variant or a bad parameter; the message names the choices."""


@dataclass(frozen=True)
class TensorMapSpec:
    """A TMA tensor map a kernel takes by value (mmbench/launch_ex.py makes it): of which of its
    operation's buffers, the box (rows, columns of the buffer as stored) one copy moves, expressions
    over the parameters, and the box's swizzle in shared memory (bytes: 0, 32, 64 or 128)."""

    buffer: str
    box: tuple[str, str]
    swizzle: int = 128


@dataclass(frozen=True)
class Variant:
    """One kernel variant or baseline and how to build and launch it."""

    name: str
    backend: str  # "cuda" (a kernel of ours), a GPU library ("cublas", "driver"), or CPU ("blas", "numpy", "cpu")
    label: str  # legend text, as the paper wrote it
    description: str
    paper: str = "zosa2017"
    op: str = "gemm"
    family: str | None = None  # kernels/<family>.cu, CUDA variants only
    # name -> default values; left out of hashing (a mapping is unhashable, the name is unique)
    axes: Mapping[str, tuple[int, ...]] = field(default_factory=dict, hash=False)
    # Thread-block dimensions as expressions over the parameters.
    threads: tuple[str, ...] = ("BLOCK", "BLOCK")
    # Bytes of dynamic shared memory a block asks for at launch (above 48 KiB the harness opts in).
    shared: str = "0"
    # The operation's launch model for this kernel, as expressions over the parameters (for GEMM:
    # tile, k_tile, layers, strips, persistent; ops/gemm.py reads them). Left out of hashing.
    geometry: Mapping[str, Any] = field(default_factory=dict, hash=False)
    constraints: tuple[str, ...] = ()  # expressions that must hold for a parameter point to build
    space: Mapping[str, tuple[int, ...]] = field(default_factory=dict, hash=False)  # what `tune` explores
    source_dir: Path | None = None  # for kernels outside kernels/: a variant file's folder (tests' too)
    # -- what a variant file (variants/files.py) declares beyond a built-in entry --------------------
    entry: str | None = None  # the kernel's entry function, when it is not named as the variant
    # The kernel's arguments in its own order: the operation's buffer names (ops: `buffers`) and
    # integer expressions over the parameters and the shape's dimensions; empty: the operation's own
    # argument order and launch model (a built-in entry's geometry).
    arguments: tuple[str, ...] = ()
    grid: tuple[str, ...] = ()  # the grid, expressions over the parameters and the shape (with arguments)
    # #defines bound to the shape (name -> expression over the parameters and the shape): the kernel is
    # compiled per shape, for kernels that bake a width into the source. Left out of hashing.
    defines: Mapping[str, str] = field(default_factory=dict, hash=False)
    zero_output: bool = False  # the kernel adds into its output, which is zeroed before every launch
    # The precisions (precisions.PRECISIONS) and layouts of A and B (precisions.LAYOUTS) its kernels take.
    dtypes: tuple[str, ...] = ("fp32",)
    layouts: tuple[str, ...] = ("nn",)
    # Expressions over the parameters and the shape that a shape must meet for the kernel to take it
    # ("m % 128 == 0"): a point that does not is skipped, naming the requirement, never run.
    requires: tuple[str, ...] = ()
    # The architecture its kernel is built for ("sm_90a"), where not the GPU's own; nvcc options added
    # to mmbench's (source.SAFE_NVCC_OPTIONS). A variant file's.
    target: str | None = None
    nvcc_options: tuple[str, ...] = ()
    # A thread-block cluster (x, y, z blocks; expressions over the parameters) the kernel is launched
    # in, and the tensor maps it takes before its other arguments: both launch through cuda-python
    # (mmbench/launch_ex.py), which a kernel needing neither never does.
    cluster: tuple[str, ...] = ()
    tensor_maps: tuple[TensorMapSpec, ...] = ()
    origin: Path | None = None  # the variant file that declared it; None for a built-in entry
    # What the file said of it (its [[variant]] table, the source's path made absolute): plain data
    # that another process builds the same variant from (variants.files.use_declared). Not hashed.
    declaration: Mapping[str, Any] | None = field(default=None, hash=False, compare=False)

    @property
    def entry_name(self) -> str:
        """The entry function the variant's own kernel is, as its source names it."""
        return self.entry or self.name

    @property
    def on_gpu(self) -> bool:
        return self.backend not in CPU_BACKENDS

    def block_dims(self, params: Params) -> tuple[int, int, int]:
        dims = [evaluate(e, params) for e in self.threads]
        return tuple(dims + [1] * (3 - len(dims)))  # type: ignore[return-value]

    def cluster_dims(self, params: Params) -> tuple[int, int, int]:
        dims = [evaluate(e, params) for e in self.cluster]
        return tuple(dims + [1] * (3 - len(dims)))  # type: ignore[return-value]

    @property
    def launches_ex(self) -> bool:
        """Whether its kernel launches through cuda-python (a cluster shape or tensor maps)."""
        return bool(self.cluster or self.tensor_maps)

    def block_threads(self, params: Params) -> int:
        return math.prod(self.block_dims(params))

    def dynamic_shared(self, params: Params) -> int:
        """Bytes of dynamic shared memory the variant's own kernel asks for at launch."""
        return evaluate(self.shared, params)

    def violated(self, params: Params) -> list[str]:
        """The constraints a parameter point breaks (empty when it may be built)."""
        bound = dict(params)
        return [c for c in self.constraints if not _holds(c, bound)]

    def allows(self, params: Params) -> bool:
        """Whether a parameter point satisfies every constraint (violated's answer, stopping at the
        first broken one: a search tests tens of thousands of drawn points)."""
        bound = dict(params)
        return all(_holds(c, bound) for c in self.constraints)

    def unmet(self, params: Params, dims: Mapping[str, int]) -> str | None:
        """The first requirement a shape (its dimensions by name) does not meet, said with the
        shape's values ("requires m % 128 == 0; m = 33"); None when it meets them all."""
        bound = {**dims, **dict(params)}
        for requirement in self.requires:
            if not _holds(requirement, bound):
                named = sorted(expressions.names(requirement) & set(dims))
                return f"{self.name} requires {requirement}; " + ", ".join(f"{d} = {dims[d]}" for d in named)
        return None

    def problem(self, params: Params) -> str | None:
        """Why a parameter point cannot run on any GPU, known without one: a broken constraint or
        more threads per block than CUDA allows; None when it may run."""
        broken = self.violated(params)
        if broken:
            return f"constraint '{broken[0]}' does not hold"
        if self.backend == "cuda" and self.block_threads(params) > MAX_THREADS_PER_BLOCK:
            return f"{self.block_threads(params)} threads per block exceed CUDA's limit of {MAX_THREADS_PER_BLOCK}"
        return None


MAX_THREADS_PER_BLOCK = 1024  # every CUDA GPU since compute capability 2.0
CPU_BACKENDS = ("blas", "numpy", "cpu")  # cpu: compiled C loops (kernels/cpu/), single-threaded


def _holds(constraint: str, bound: Mapping[str, int]) -> bool:
    """Whether a constraint holds for these parameter values (tuning_space tests it on a partial
    point, once its names are bound)."""
    try:
        return bool(expressions.evaluate(constraint, bound))
    except expressions.EvaluationError:  # a derived size of zero: the point cannot be built
        return False


@lru_cache(maxsize=1 << 16)  # a batched tuning asks the same few millions of times
def evaluate(expression: str, params: Params) -> int:
    """An integer expression over parameter names, e.g. "(BM // TM) * (BN // TN)"."""
    return expressions.evaluate(expression, dict(params))



def compile_params(variant: Variant, params: Params, dims: Mapping[str, int], dtype: str = "fp32",
                   layout: str = "nn") -> Params:
    """The #defines a point's kernel is compiled with: its parameters; for a variant whose
    definitions are bound to the shape, their values at these dimensions; for a built-in kernel
    that takes several precisions or layouts, which one (typed_defines). In name order."""
    typed = typed_defines(variant, dtype, layout)
    if not variant.defines and not typed:
        return params
    bound = {**dims, **dict(params)}
    return tuple(sorted((*params, *typed,
                         *((name, int(expressions.evaluate(e, bound))) for name, e in variant.defines.items()))))


def typed_defines(variant: Variant, dtype: str, layout: str) -> tuple[tuple[str, int], ...]:
    """For a built-in kernel, or a variant file's that takes several precisions, ("DTYPE", code) at a
    precision other than fp32 (kernels/common/types.cuh); for one that takes several layouts, ("TRANS_A", 1) and ("TRANS_B", 1) where
    the layout stores A or B transposed. None at fp32, nn (the kernel's defaults), nor for a kernel
    of one precision and layout (a variant file's: written for them)."""
    from ..precisions import DEFAULT, DTYPE_CODES

    typed = len(variant.dtypes) > 1 or variant.origin is None  # a built-in kernel of one other precision too
    out = [("DTYPE", DTYPE_CODES[dtype])] if dtype != DEFAULT and typed else []
    if len(variant.layouts) > 1:
        out += [(name, 1) for name, letter in (("TRANS_A", layout[0]), ("TRANS_B", layout[1])) if letter == "t"]
    return tuple(out)


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
    values must be positive integers (or 0, for a switch whose tuning space has 0).
    """
    axes = dict(variant.axes)
    for name, values in (overrides or {}).items():
        if name not in axes:
            continue
        least = 0 if 0 in variant.space.get(name, ()) else 1  # 0 only for on/off switches such as VEC4
        bad = [v for v in values if not isinstance(v, int) or v < least]
        if bad or not values:
            kind = "non-negative" if least == 0 else "positive"
            raise VariantError(f"parameter {name}={bad or values!r} for '{variant.name}': values must be {kind} integers")
        axes[name] = tuple(values)
    names = sorted(axes)
    return [tuple(zip(names, combo)) for combo in itertools.product(*(axes[n] for n in names))]


@lru_cache(maxsize=None)
def tuning_space(variant: Variant) -> list[Params]:
    """Every point of the variant's tuning space that satisfies its constraints, in the order of
    the raw product over the sorted names (a seeded random choice depends on it; cached: callers
    must not modify the list). Built one parameter at a time, each constraint tested as soon as
    its names are bound, so that a failing prefix is not multiplied out: dbuf's 995,328 raw points
    took 5 s as one eval of the constraints' conjunction each, 45 s as one eval per constraint.
    A point is kept when Variant.violated passes it: each constraint on its own, a zero divisor
    failing it, any other error raised (as there)."""
    if not variant.space:
        return []
    names = sorted(variant.space)
    prefixes: list[tuple[dict[str, int], dict[str, int]]] = [({}, {})]  # (values, their positions) bound so far
    for name, tests in _binding_order(variant.space, tuple(variant.constraints)):
        longer = (({**values, name: value}, {**where, name: i})
                  for values, where in prefixes for i, value in enumerate(variant.space[name]))
        prefixes = [(values, where) for values, where in longer if all(holds(values) for holds in tests)]
    prefixes.sort(key=lambda bound: [bound[1][name] for name in names])
    return [tuple((name, values[name]) for name in names) for values, _ in prefixes]


def raw_size(variant: Variant) -> int:
    """Points of the raw product of the variant's tuning space, before its constraints."""
    return math.prod(len(v) for v in variant.space.values()) if variant.space else 0


# Spaces of more raw points than this are never built whole: counted up to COUNT_CAP, checked for a
# first point, and sampled (tune --strategy random) without listing them.
LARGE_SPACE = 1_000_000
COUNT_CAP = 100_000


def _valid_points(variant: Variant, order=None):
    """The points of the tuning space that satisfy its constraints, one at a time (depth first over
    _binding_order, or the first parameters of it given as order, each constraint tested as soon as
    its names are bound), in no stated order."""
    order = _binding_order(variant.space, tuple(variant.constraints)) if order is None else order

    def walk(depth: int, values: dict):
        if depth == len(order):
            yield values
            return
        name, tests = order[depth]
        for value in variant.space[name]:
            bound = {**values, name: value}
            if all(holds(bound) for holds in tests):
                yield from walk(depth + 1, bound)

    return (tuple(sorted(v.items())) for v in walk(0, {}))


def space_text(variant: Variant) -> str:
    """How many points a space has, as listings say it: "1536", or "more than 100000" for a large one."""
    count, whole = count_space(variant)
    return str(count) if whole else f"more than {count}"


@lru_cache(maxsize=64)  # a tuning's announcement and its metadata both say it
def count_space(variant: Variant, cap: int = COUNT_CAP) -> tuple[int, bool]:
    """(points that satisfy the constraints, whether that is all of them): counted stopping past cap
    (cap, False), so a space of millions is never listed. The parameters the binding order leaves free at its
    end (in no constraint) multiply the count instead of being walked (dbuf's: 6x fewer steps)."""
    if raw_size(variant) <= LARGE_SPACE:
        return len(tuning_space(variant)), True
    order = _binding_order(variant.space, tuple(variant.constraints))
    free = 1
    while order and not order[-1][1]:
        free *= len(variant.space[order.pop()[0]])
    count = 0
    for _ in _valid_points(variant, order):
        count += free
        if count > cap:
            return cap, False
    return count, True


def has_points(variant: Variant) -> bool:
    """Whether any point of the tuning space satisfies the constraints (the first found ends the search)."""
    return next(iter(_valid_points(variant)), None) is not None


def sample_space(variant: Variant, count: int, seed: int, tries_per_point: int = 1000) -> list[Params]:
    """Up to count distinct points of a large space drawn uniformly from its raw product and kept
    when they satisfy the constraints (rejection sampling; at most tries_per_point draws a point),
    never building the space."""
    import random

    rng, names, found = random.Random(seed), sorted(variant.space), {}
    for _ in range(count * tries_per_point):
        if len(found) >= count:
            break
        point = tuple((n, rng.choice(variant.space[n])) for n in names)
        if point not in found and variant.allows(point):
            found[point] = None
    return list(found)


def _binding_order(space: Mapping[str, tuple[int, ...]], constraints: tuple[str, ...]):
    """(name, the tests of the constraints it completes) for every parameter: greedily, the one
    that completes the most constraints next, then the one in the most constraints left, then
    fewer values, so that pruning comes early and free parameters multiply the points last."""
    unbound = {c: expressions.names(c) & set(space) for c in constraints}
    order, left = [], sorted(space)
    while left:
        def gain(name):
            return (-sum(names <= {name} for names in unbound.values()),
                    -sum(name in names for names in unbound.values()), len(space[name]), name)
        name = min(left, key=gain)
        left.remove(name)
        done = [c for c, names in unbound.items() if names <= {name}]
        for c in unbound:
            unbound[c] = unbound[c] - {name}
        for c in done:
            del unbound[c]
        order.append((name, [partial(_holds, c) for c in done]))
    return order
