"""What a run measures: selections of variants and sizes expanded into points (`plan`), and the
settings every point is measured with."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Mapping

from .. import source
from ..kernel_clock import MODES as KERNEL_CLOCK_MODES
from ..ops import Operation, get_op
from ..ops.capabilities import must_pad
from ..precisions import DEFAULT, DEFAULT_LAYOUT, PrecisionError, check_layout, form_suffix, get_precision
from ..sizes import Shape
from ..timing import CACHE_MODES
from ..ops.declared import dimensions
from ..variants import Params, Variant, format_params, param_points
from ..variants.model import compile_params
from ..vocabulary import Tuned


@dataclass(frozen=True)


class Point:
    variant: Variant
    params: Params
    shape: Shape
    cache: str  # what the sample saw: GPU points "cold" or "hot"; CPU BLAS always "hot"
    scope: str = "kernel"  # what a sample covers (ops.base.SCOPES)
    pad: bool = False  # whether the kernel ran on inputs padded to its tile multiple
    dtype: str = DEFAULT  # the precision (precisions.PRECISIONS): element types, accumulation, scales
    layout: str = DEFAULT_LAYOUT  # how A and B are stored (precisions.LAYOUTS)

    @property
    def op(self) -> Operation:
        return get_op(self.variant.op)

    @property
    def compiled_params(self) -> Params:
        """The #defines its kernel is compiled with: the parameters, a variant file's shape-bound ones,
        a typed kernel's precision and layout."""
        return compile_params(self.variant, self.params, dimensions(self.op, self.shape), self.dtype, self.layout)

    @property
    def key(self) -> tuple:
        s = self.shape
        return (self.variant.op, self.variant.name, format_params(self.params), s.m, s.n, s.k, self.cache, self.scope,
                int(self.pad), self.dtype, self.layout)

    def __str__(self) -> str:
        p = format_params(self.params)
        return (scoped_name(f"{self.variant.name}{'[' + p + ']' if p else ''}", self.scope, self.pad)
                + form_suffix(self.dtype, self.layout) + f" @ {self.shape}")


def scoped_name(name: str, scope: str, pad) -> str:
    """A variant's name, with its scope and padding when it is not the kernel alone on its inputs as given."""
    extra = [x for x in (scope if scope != "kernel" else "", "padded" if int(pad) else "") if x]
    return f"{name} ({', '.join(extra)})" if extra else name


@dataclass(frozen=True)


class Selection:
    """Variants, their parameter overrides and the size spec to run them at (each variant's
    operation reads the spec as its shapes)."""

    variants: tuple[Variant, ...]
    spec: str
    overrides: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    # from the tuning caches (vocabulary.Tuned), keyed (variant, shape, dtype, layout)
    tuned: Mapping[tuple[str, Shape, str, str], Tuned] = field(default_factory=dict)
    scopes: tuple[str, ...] = ("kernel",)  # what the samples cover (ops.base.SCOPES), each its own points
    pads: tuple[bool, ...] = (False,)  # run on the inputs as given, padded to each kernel's tile multiple, or both
    # Precisions and layouts, each its own points; a variant runs those of them it takes (sweep.py
    # refuses a variant that takes none, and says which pairs are left out).
    dtypes: tuple[str, ...] = (DEFAULT,)
    layouts: tuple[str, ...] = (DEFAULT_LAYOUT,)

    def shapes(self, variant: Variant) -> tuple[Shape, ...]:
        return _shapes(variant.op, self.spec)


@lru_cache(maxsize=256)


def _shapes(op: str, spec: str) -> tuple[Shape, ...]:
    return tuple(get_op(op).parse_sizes(spec))


@dataclass(frozen=True)


class Settings:
    runs: int = 10  # timed samples per point (the paper's count)
    warmup: int = 3
    cache: str = "cold"
    threads: int | None = None  # CPU BLAS threads; None leaves the library's default
    seed: int = 2017
    # How a cold sample's L2 is emptied (Gpu.flush_l2): "read" a buffer of twice its size, leaving
    # clean lines; "write" was the method before (dirty lines the sample wrote back), kept so a
    # resumed file goes on as it was measured.
    l2_flush: str = "read"
    clock_sag: float = 0.9  # flag a point whose SM clock fell below this share of the maximum
    # The tuner's rule: a configuration whose registers spill to local memory is not a candidate.
    skip_spills: bool = False
    # Seconds a compiled naive CPU point may take (all its calls); one estimated to take longer is
    # a skipped row with the estimate, never a run of hours.
    cpu_budget_s: float = 120.0
    # The second clock: CUPTI's per-kernel timestamps beside the events, where cupti-python is
    # installed: "concurrent" (kernels run as they would, back to back), "serial" (CUPTI serializes
    # them), "isolated" (every sample's call launched on an idle GPU, as Nsight Compute replays a
    # kernel: its event times then include the launch from the host), "off".
    kernel_clock: str = "concurrent"
    # Sampling that stops when the answer is known (as nvbench's): with max_noise set, `runs` is the
    # least number of samples, and batches go on until the relative noise of those not taken while
    # the clock sagged is under max_noise, or budget_s seconds of sampling, or max_runs samples.
    # None: exactly `runs` samples (the papers' configs).
    max_noise: float | None = None
    # Or until the 95 % interval of the median is narrower than +- max_interval of it (timing.py's
    # median_interval): what `mmbench compare` needs to tell a change from noise. New runs of `mmbench
    # run` on the GPU take INTERVAL (sweep.py) unless told otherwise; None: neither target.
    max_interval: float | None = None
    budget_s: float = 15.0  # with max_noise; with max_interval, INTERVAL_BUDGET_S unless given
    max_runs: int = 1000
    # Which time `plot` and `report` use unless told (--clock): the events' or the kernel clock's.
    figure_clock: str = "events"
    # Whose samples the target (noise or interval) judges: the events' or (where it runs) the kernel clock's.
    noise_clock: str = "events"

    @property
    def target(self) -> tuple[str, float] | None:
        """The sampling target as (rule, value): ("noise", max_noise), ("interval", max_interval), or
        None (exactly `runs` samples)."""
        if self.max_noise is not None:
            return "noise", self.max_noise
        return ("interval", self.max_interval) if self.max_interval is not None else None

    def __post_init__(self):
        if self.cache not in CACHE_MODES:
            raise ValueError(f"cache mode '{self.cache}'; choose from: {', '.join(CACHE_MODES)}")
        if self.l2_flush not in ("read", "write"):
            raise ValueError(f"L2 flush '{self.l2_flush}'; choose from: read, write")
        if self.max_noise is not None and self.max_interval is not None:
            raise ValueError("a noise target and an interval target: choose one")
        if self.noise_clock not in ("events", "kernel"):
            raise ValueError(f"noise clock '{self.noise_clock}'; choose from: events, kernel")
        if self.kernel_clock not in (*KERNEL_CLOCK_MODES, "off"):
            raise ValueError(f"kernel clock '{self.kernel_clock}'; choose from: {', '.join(KERNEL_CLOCK_MODES)}, off")


def plan(selections: Iterable[Selection], cache: str) -> list[Point]:
    """Points of all selections, duplicates merged, grouped by shape, smallest shape first."""
    by_shape: dict[Shape, dict[tuple, Point]] = {}
    for sel in selections:
        for variant in sel.variants:
            point_cache = cache if variant.on_gpu else "hot"  # CPU caches are not flushed
            for shape in sel.shapes(variant):
                bucket = by_shape.setdefault(shape, {})
                op = get_op(variant.op)
                # A kernel without border checks is always padded; a CPU point has no scope but its own.
                pads = (True,) if must_pad(op, variant) else sel.pads if variant.on_gpu else (False,)
                scopes = sel.scopes if variant.on_gpu else ("kernel",)
                forms = [(d, lay) for d in sel.dtypes for lay in sel.layouts if takes(variant, d, lay)]
                for dtype, layout in forms:
                    tuned = sel.tuned.get((variant.name, shape, dtype, layout))
                    for params in [tuned.params] if tuned else param_points(variant, sel.overrides):
                        for scope in scopes:
                            for pad in dict.fromkeys(pads):
                                point = Point(variant, params, shape, point_cache, scope, pad, dtype, layout)
                                bucket.setdefault(point.key, point)
    shapes = sorted(by_shape, key=lambda s: (s.m * s.n * max(s.k, 1), s.m, s.n, s.k))
    return [p for shape in shapes for p in by_shape[shape].values()]


def takes(variant: Variant, dtype: str, layout: str) -> bool:
    """Whether a variant's kernels take this precision and layout."""
    return dtype in variant.dtypes and layout in variant.layouts


def check_forms(variants: Iterable[Variant], dtypes: Iterable[str], layouts: Iterable[str],
                named: tuple[str, str] = ("--dtype", "--layout")) -> tuple[tuple[str, ...], tuple[str, ...], list[str]]:
    """Precisions and layouts asked for, checked: (dtypes, layouts, notes). A PrecisionError (one line)
    for an unknown name, or a variant that takes none of the pairs (named: how the caller's input
    says them); a note for each variant that takes only some of them (those pairs are not planned)."""
    dtypes = tuple(dict.fromkeys(dtypes)) or (DEFAULT,)
    layouts = tuple(dict.fromkeys(layouts)) or (DEFAULT_LAYOUT,)
    for name in dtypes:
        try:
            get_precision(name)
        except PrecisionError as exc:
            raise PrecisionError(f"{named[0]}: {exc}") from None
    for name in layouts:
        try:
            check_layout(name)
        except PrecisionError as exc:
            raise PrecisionError(f"{named[1]}: {exc}") from None
    notes = []
    for v in dict.fromkeys(variants):
        pairs = [(d, lay) for d in dtypes for lay in layouts]
        taken = [pair for pair in pairs if takes(v, *pair)]
        said = f"{named[0]} {','.join(dtypes)}" + (f" {named[1]} {','.join(layouts)}" if layouts != (DEFAULT_LAYOUT,) else "")
        if not taken:
            raise PrecisionError(f"{said}: {v.name} takes {', '.join(v.dtypes)} at layout {', '.join(v.layouts)}; "
                                 f"none of these")
        if len(taken) < len(pairs):
            missed = [" ".join(x for x in pair if x) for pair in pairs if pair not in taken]
            notes.append(f"{v.name}: not planned at {', '.join(missed)} (it takes {', '.join(v.dtypes)} at layout "
                         f"{', '.join(v.layouts)})")
    return dtypes, layouts, notes


def form_scope_problem(dtypes: Iterable[str], layouts: Iterable[str], scopes: Iterable[str],
                       pads: Iterable[bool]) -> str | None:
    """Why these scopes or padding cannot be timed at these precisions and layouts (the end-to-end
    scope's host padding and copies are float32, nn sequences; the device scope and padding take any
    precision and layout), or None."""
    other = [x for x in (*dtypes, *layouts) if x not in (DEFAULT, DEFAULT_LAYOUT)]
    if other and "end_to_end" in scopes:
        return f"end_to_end is timed at {DEFAULT}, layout {DEFAULT_LAYOUT} only; not at {other[0]}"
    return None


def kernel_key(variant: Variant, params: Params) -> str:
    """How the metadata names a compiled kernel: "name[params]", and the source hash of a kernel
    file from another folder, which is another kernel of the same name."""
    key = f"{variant.name}[{format_params(params)}]"
    return key + f"@{source.source_hash(variant)}" if variant.source_dir else key


