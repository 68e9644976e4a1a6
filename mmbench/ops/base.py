"""What every operation shares: the outcome of a check, the float32 rule for sums of products,
device buffers, and the interface an operation implements so that sweeps, results, tuning and
tests never name one.

An operation owns what differs between GEMM, GEMV and transpose: its dimensions, host inputs
and their float64 reference, the verification rule, its work (flops, minimum bytes), its device
buffers and how a variant's kernels are launched on them, and the size class tuning keys its
entries by. What only some operations can do (timing scopes, padding, CPU and library baselines,
the batched tuner's check) is declared from ops/capabilities.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import math
import re

import numpy as np

from .. import precisions
from ..precisions import DEFAULT, DEFAULT_LAYOUT, PRECISIONS, Precision
from ..sizes import Shape, parse_sizes
from ..variants.model import Params, Variant

# Makes the float64 products A.B and |A|.|B| of a product's reference and bound from float32 A, B.
Products = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Check:
    """Outcome of comparing one output with its reference."""

    ok: bool
    rel_err: float  # relative Frobenius error
    err_bound_ratio: float  # max over elements of |out - ref| / bound; <= 1 passes
    reason: str


UNIT_ROUNDOFF_F32 = 2.0**-24
FROBENIUS_FACTOR = precisions.FROBENIUS_FACTOR  # rule 3 of check_sums: tolerance = FROBENIUS_FACTOR * u * sqrt(terms)
FP32 = PRECISIONS["fp32"]  # the rule every check used before precisions, and GEMV's and the tuner's still


def gamma(k: int) -> float:
    """Higham's gamma_k for float32: the worst-case relative error of a length-k dot product."""
    return precisions.gamma(k, UNIT_ROUNDOFF_F32)


def frobenius_tolerance(k: int) -> float:
    """Largest relative Frobenius error a float32 sum of k products may show (rule 3)."""
    return precisions.frobenius_tolerance(FP32.rounding, k)


def frobenius_scale(reference: np.ndarray, bound: np.ndarray, terms: int) -> float:
    """The denominator of rule 3 of check_sums for float32 sums: max(||ref||, || |A||B| || / sqrt(k)),
    with |A||B| = bound / gamma_k."""
    return _scale(float(np.linalg.norm(reference)), float(np.linalg.norm(bound)) / gamma(terms) if terms else 0.0,
                  terms)


def _scale(reference_norm: float, magnitude_norm: float, terms: int) -> float:
    magnitude = magnitude_norm / math.sqrt(terms) if terms else 0.0
    return max(reference_norm, magnitude)


CHUNK = 1 << 16  # elements check_sums takes at a time: its float64 temporaries (512 KiB each) stay in cache


def check_sums(out: np.ndarray, reference: np.ndarray, bound: np.ndarray, terms: int, precision: Precision = FP32,
               magnitude_norm: float | None = None) -> Check:
    """The verification rule for outputs that are sums of `terms` products (GEMM, GEMV), here for
    float32 (other precisions: the same rules with their rounding, precisions.py; `bound` is then
    precisions.bound_terms' elementwise bound and magnitude_norm || |A||B| ||).
    The float64 result of the float32 inputs is the reference; a point passes when all three hold:

    1. every output is finite (outputs are poisoned with NaN first, so unwritten ones show);
    2. elementwise |out - ref| <= gamma_k (|A||B|), gamma_k = k u / (1 - k u), u = 2^-24: the
       rigorous bound for any float32 sum of k products in any order, with or without FMA
       (Higham, Accuracy and Stability of Numerical Algorithms, eq. 3.13). No correct kernel
       fails it, and one wrong element anywhere does;
    3. relative Frobenius error ||out - ref|| / s <= 8 u sqrt(k). On zero-mean random
       inputs a float32 dot product errs by about 0.4 u sqrt(k) (random rounding over growing
       partial sums), so this leaves a 20x margin, while reduced-precision paths (TF32, fp16
       inputs) err by ~1e-4 and fail, which the worst-case bound alone, loose at large k, would
       let pass. The scale s is ||ref||, or where the outputs cancel to less, the size a sum of
       k random terms has, || |A||B| || / sqrt(k) (frobenius_scale): a GEMV of one row and 8
       columns whose sum happens to be small is not a reduced-precision path.
    """
    if out.shape != reference.shape:
        return Check(False, float("nan"), float("nan"), f"output shape {out.shape} != {reference.shape}")
    # One pass in chunks, not a dozen whole-array temporaries: a 4096 x 4096 check took 0.23 s that way,
    # most of a tuning point's time on the host.
    flat = [np.ascontiguousarray(x).reshape(-1) for x in (out, reference, bound)]
    diff, ratio = np.empty(min(CHUNK, out.size)), np.empty(min(CHUNK, out.size))
    not_finite, first_bad, over, worst, worst_at = 0, -1, 0, -math.inf, 0
    squares = np.zeros(3)  # of the differences, the reference, the bound
    for start in range(0, out.size, CHUNK):
        o, ref, bnd = (x[start:start + CHUNK] for x in flat)
        d, r = diff[:o.size], ratio[:o.size]
        d[:] = o
        np.subtract(d, ref, out=d)
        np.abs(d, out=d)
        square = float(d @ d)
        if not_finite or not math.isfinite(square):  # rule 1: counted, the first one found; 2 and 3 no longer matter
            bad = np.flatnonzero(~np.isfinite(o))
            not_finite += bad.size
            first_bad = first_bad if first_bad >= 0 or not bad.size else start + int(bad[0])
            continue
        squares += (square, ref @ ref, bnd @ bnd)
        np.maximum(bnd, np.finfo(np.float64).tiny, out=r)
        np.divide(d, r, out=r)
        at = int(r.argmax())
        if r[at] > worst:  # the first of equal maxima, as argmax over the whole output
            worst, worst_at = float(r[at]), start + at
        if r[at] > 1.0:
            over += int(np.count_nonzero(r > 1.0))
    return measured_verdict(out.shape, not_finite, first_bad, over, worst, worst_at, squares, terms, precision,
                            magnitude_norm)


def measured_verdict(shape: tuple[int, ...], not_finite: int, first_bad: int, over: int, worst: float, worst_at: int,
                     squares, terms: int, precision: Precision = FP32, magnitude_norm: float | None = None) -> Check:
    """Rules 1 to 3 of check_sums from what a pass over an output measured, on the host (check_sums) or
    on the GPU (ops/on_gpu.py): outputs not finite and the first of them (its flat index), outputs over
    the bound, the worst ratio to it and where, and the sums of squares of the differences, the
    reference and the bound."""
    size = math.prod(shape)
    if not_finite:
        first = tuple(int(i) for i in np.unravel_index(first_bad, shape))
        return sums_verdict(not_finite, size, float("nan"), float("nan"), terms, f"first at {first}", precision)
    if magnitude_norm is None:  # float32's bound is gamma_k |A||B|
        magnitude_norm = math.sqrt(squares[2]) / gamma(terms) if terms else 0.0
    norm = _scale(math.sqrt(squares[1]), magnitude_norm, terms)
    rel_err = math.sqrt(squares[0]) / norm if norm else float("nan")
    where = ""
    if worst > 1.0:
        at = tuple(int(i) for i in np.unravel_index(worst_at, shape))
        where = f"{over} of {size}|at {at}"
    return sums_verdict(0, size, worst, rel_err, terms, where, precision)


def error_bound(p: Precision, k: int, reference: np.ndarray, magnitude: np.ndarray) -> tuple[np.ndarray, float | None]:
    """The elementwise bound c_products |A||B| + c_reference |ref| + absolute (precisions.bound_terms;
    a GEMV's with k = n), made in place of |A||B|, and || |A||B|| || (None at fp32, whose check finds it from its bound
    gamma_k |A||B|, as before precisions)."""
    products, of_reference, absolute = precisions.bound_terms(p.rounding, k)
    norm = None if p.name == DEFAULT else float(np.linalg.norm(magnitude))
    magnitude *= products
    if of_reference:
        magnitude += of_reference * np.abs(reference)
    if absolute:
        magnitude += absolute
    return magnitude, norm


def sums_verdict(not_finite: int, count: int, worst: float, rel_err: float, terms: int, detail: str = "",
                 precision: Precision = FP32) -> Check:
    """Rules 1 to 3 of check_sums from their measures: outputs not finite, the worst ratio to the
    bound, the relative error (measured by the host, or by harness.cu's check_sums on the GPU for the
    batched tuner). detail says where, when known: "first at (i,)" for rule 1, "N of M|at (i,)" for 2."""
    if not_finite:
        return Check(False, float("nan"), float("nan"), f"{not_finite} of {count} outputs not finite (unwritten?)"
                     + (f", {detail}" if detail else ""))
    if worst > 1.0:
        over, _, at = detail.partition("|")
        return Check(False, rel_err, worst, (f"{over} " if over else "") + f"outputs exceed the {precision.word} error "
                     f"bound, worst {worst:.3g}x" + (f" {at}" if at else ""))
    tol = precisions.frobenius_tolerance(precision.rounding, terms)
    if rel_err > tol:
        formula = "8 u sqrt(k)" if precision is FP32 else "8 u_acc sqrt(k) + 4 u_in + 2 u_out"
        return Check(False, rel_err, worst, f"relative error {rel_err:.3g} exceeds the {precision.word} tolerance "
                                            f"{tol:.3g} ({formula}): reduced precision?")
    return Check(True, rel_err, worst, "")


# What a sample of a point covers (the `scope` column). Every operation times its kernels alone; GEMM
# also times the padding of issue 15's border study around them (ops/gemm.py says how).
SCOPES = {
    "kernel": "the kernel's launches alone, on device buffers already in place (padded ones padded before timing)",
    "device": "the kernel plus, with padding, the device work around it: zeroing the padded buffers, 2D copies of "
              "A and B into them and of C out of the padded result",
    "end_to_end": "host to host: with padding the host zero-fills padded copies of A and B, then the copies to the "
                  "device, the kernel, the copy back and the extraction of C; host buffers page-locked (pinned), "
                  "allocated before timing; CUDA events from an idle stream around the whole sequence",
}


class Unsupported(ValueError):
    """A precision, layout or shape a variant or its library cannot take at a point: the point is a
    skipped row naming why, never a wrong one."""


def only_default(op: "Operation", precision: str, layout: str = DEFAULT_LAYOUT) -> None:
    """Refuse what an operation of float32 alone is asked for (its kernels are not typed yet)."""
    if precision not in op.precisions or layout not in op.layouts:
        raise Unsupported(f"{op.name} takes {', '.join(op.precisions)} at layout {', '.join(op.layouts)}; "
                          f"not {precision}, layout {layout}")


class ScopeError(Unsupported):
    """A scope or padding an operation or variant cannot time; the message says why."""


@dataclass
class Timed:
    """What one point's samples time, and how its result is poisoned first and read back after."""

    launch: Callable[[], None]  # the timed sequence
    poison: Callable[[], None]
    result: Callable[[], np.ndarray]  # the output on the host, after launch() and a synchronize
    # The sequence waits for the GPU and works on the host (end to end): its samples start from an
    # idle stream rather than behind a hold, which would never be released.
    host_work: bool = False
    release: Callable[[], None] = lambda: None  # frees what the sequence allocated
    padded: Shape | None = None  # the shape the kernel ran at, when padded
    # Where the result is on the device after launch(), as (buffer, row pitch in elements), for a check
    # made there (ops/on_gpu.py); None: the result is on the host (result() only).
    on_device: tuple[Any, int] | None = None


def kernel_alone(gpu, op: "Operation", shape: Shape, bufs: "DeviceBuffers", launch: Callable[[], None]) -> Timed:
    """The kernel scope on the operation's own buffers (what every point timed before scopes)."""
    out_shape = op.output_shape(shape)
    return Timed(launch, lambda: gpu.poison(bufs.output, bufs.output_count, bufs.output_type),
                 lambda: gpu.download(bufs.output, out_shape, bufs.output_type), on_device=(bufs.output, out_shape[-1]))


def prepared(fn, arg_format: str):
    """A PyCUDA function prepared once for prepared_async_call: a launch costs a struct.pack, not a
    plain call's argument handling (tens of microseconds, thousands of launches a run)."""
    if getattr(fn, "arg_format", None) != arg_format:
        fn.prepare(arg_format)
    return fn


@dataclass
class DeviceBuffers:
    """One shape's device buffers: the inputs, in the order kernels take them, then the output."""

    inputs: tuple[Any, ...]
    output: Any
    output_count: int  # elements of the output (what poisoning fills with NaN)
    scratch: tuple[Any, ...] = ()  # workspaces some kernels need, FP8's scales: allocated with the shape's buffers
    precision: str = DEFAULT  # the inputs' (precisions.py): the output's type follows
    layout: str = DEFAULT_LAYOUT
    scales: tuple[float, float] = (1.0, 1.0)  # FP8's of A and B (in scratch[0] too, for kernels that read them there)
    moves: bool = False  # the output holds the inputs' elements (a transpose, a copy): their type, not C's

    @property
    def output_type(self) -> np.dtype:
        p = PRECISIONS[self.precision]
        return p.a_type if self.moves else p.c_type

    @property
    def all(self) -> tuple[Any, ...]:
        return (*self.inputs, self.output, *self.scratch)

    @property
    def scale_pointers(self) -> tuple[np.uintp, np.uintp]:
        """FP8's scale_a and scale_b as device pointers into scratch[0] (precisions.SCALE_OFFSETS)."""
        return tuple(np.uintp(int(self.scratch[0]) + at) for at in precisions.SCALE_OFFSETS)  # type: ignore

    def free(self) -> None:
        for buf in self.all:
            buf.free()


class Operation:
    """What every operation is: its dimensions and size specs, inputs with their float64 reference
    and check, its work (flops, minimum bytes) and memory, its buffers and a variant's launch on
    them, its size classes, and the sizes every variant of it is tested at. What only some can do
    (timing scopes, padding, baselines, the batched check) each declares from ops/capabilities.py."""

    name: str
    rate: str  # the primary rate column of its figures and summaries: "gflops_median" or "gbytes_per_s" (medians)
    score: str  # the column tuning ranks configurations by (a median: robust to one slow sample)
    dims: tuple[str, ...]  # the CSV's shape columns this operation uses
    tested_sizes: str  # size spec of the shapes every variant of it is tested at on the GPU
    # The library variant its kernels are measured against in the generic figures (`mmbench plot
    # vs-library`), at the same shape: a variant of this operation, or of another with the same
    # dimensions (a transpose's is the copy's memcpy). None: no library does it.
    yardstick: str | None = None
    size_forms = ""  # the size spec forms parse_sizes reads beyond the common ones, for help texts
    # What a variant file's kernel may take: the names of the device buffers (inputs, then the
    # output) and how they are laid out; an operation with none takes no variant files.
    buffers: tuple[str, ...] = ()
    layout = ""
    # The precisions (precisions.PRECISIONS) and operand layouts (precisions.LAYOUTS) its points can
    # take; every variant of it says which of these its kernels take.
    precisions: tuple[str, ...] = (DEFAULT,)
    layouts: tuple[str, ...] = (DEFAULT_LAYOUT,)

    def parse_sizes(self, spec: str) -> list[Shape]:
        """A size spec read as this operation's shapes ("1024": n x n x n for GEMM, n x n for transpose)."""
        return parse_sizes(spec, len(self.dims))

    def flops(self, shape: Shape) -> float:
        raise NotImplementedError

    def min_bytes(self, shape: Shape, precision: str = DEFAULT) -> float:
        """Fewest bytes a point moves: each input read once, each output written once, at the
        precision's element sizes."""
        raise NotImplementedError

    def host_bytes(self, shape: Shape, precision: str = DEFAULT) -> int:
        """Host memory one point needs at its peak (inputs, reference, check temporaries)."""
        raise NotImplementedError

    def device_bytes(self, shape: Shape, precision: str = DEFAULT) -> int:
        raise NotImplementedError

    def make_inputs(self, shape: Shape, rng: np.random.Generator, products: Products | None = None,
                    precision: str = DEFAULT, layout: str = DEFAULT_LAYOUT) -> Any:
        """Random host inputs (never zeros) in a precision and layout it takes, with their float64
        reference. `products` makes the float64 products A.B and |A|.|B| of a product's reference and
        bound (a runner with a GPU passes one that makes them there); None: numpy on the host.
        Operations without such products ignore it."""
        raise NotImplementedError

    def output_shape(self, shape: Shape) -> tuple[int, ...]:
        raise NotImplementedError

    def check(self, out: np.ndarray, inputs: Any) -> Check:
        raise NotImplementedError

    def upload(self, gpu, inputs: Any) -> DeviceBuffers:
        raise NotImplementedError

    def entries(self, variant: Variant, precision: str = DEFAULT) -> tuple[str, ...]:
        """The entry functions a CUDA variant's kernel file defines at a precision: its own by default."""
        return (variant.entry_name,)

    def kernel(self, gpu, variant: Variant, params: Params, shape: Shape, bufs: DeviceBuffers) -> Callable[[], None]:
        """A no-argument launch of a variant's kernels on the GPU's stream."""
        raise NotImplementedError

    def size_class(self, shape: Shape) -> str:
        """The key under which tuning keeps one configuration for shapes like this one."""
        raise NotImplementedError

    def class_distance(self, wanted: str, cls: str) -> tuple:
        """How far a tuned class is from the class wanted (a run borrows the nearest when its own
        class was not tuned), for classes that are sizes (GEMM, transpose): the same alignment
        first, then the nearest size, then the larger one."""
        aligned = not wanted.endswith("u")
        return (str(cls).endswith("u") == aligned,
                abs(math.log2(max(class_size(cls), 1)) - math.log2(max(class_size(wanted), 1))), -class_size(cls))


def shape_class(shape: Shape) -> str:
    """The class of one exact shape (``tune --per-shape``): "2049x2049x2049"."""
    return f"{shape.m}x{shape.n}x{shape.k}"


def class_size(cls: str) -> int:
    """The size a class stands for: GEMM's "2048u" -> 2048, an exact shape's geometric-mean
    dimension; 0 for classes that are not sizes (GEMV's mesh cells)."""
    if re.fullmatch(r"\d+x\d+x\d+", cls):  # an exact shape
        m, n, k = (int(d) for d in cls.split("x"))
        return round((m * n * k) ** (1 / 3))
    digits = cls.rstrip("u")
    return int(digits) if digits.isdigit() else 0
