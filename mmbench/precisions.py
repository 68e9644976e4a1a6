"""Precisions and operand layouts: what a point's `dtype` and `layout` columns mean.

A precision names the element types of a product's buffers, how its sums are accumulated and how
its inputs are scaled; it fixes what the reference is (float64 of the inputs as the kernel received
them, scales applied) and the rounding the verification allows (``Rounding``). A layout says how A
and B are stored. One table of each; operations say which of them they take (``ops/``), variants
which their kernels take (``variants/``).

The host reads 16- and 8-bit floats with ml_dtypes (bfloat16 and the FP8 formats as NumPy types).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

import ml_dtypes
import numpy as np

# Storage types by name (what a variant file's buffer types and the docs say), with their NumPy type.
STORAGE = MappingProxyType({
    "float64": np.dtype(np.float64), "float32": np.dtype(np.float32), "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16), "float8_e4m3": np.dtype(ml_dtypes.float8_e4m3fn),
    "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
})


def unit_roundoff(storage: str) -> float:
    """u = 2^-p of a binary format of p significand bits (round to nearest): half its epsilon."""
    return float(ml_dtypes.finfo(STORAGE[storage]).eps) / 2.0


def smallest_subnormal(storage: str) -> float:
    return float(ml_dtypes.finfo(STORAGE[storage]).smallest_subnormal)


# Accumulation on the tensor cores: FP32 adders that truncate (round toward zero) where the FMA
# units round to nearest (Fasi, Higham, Mikaitis, Pranesh, "Numerical behavior of NVIDIA tensor
# cores", PeerJ CS 2021): twice the unit roundoff of FP32.
TENSOR_CORE_FP32 = 2.0**-23
# TF32: FP32 storage whose inputs reach the tensor cores with 10 explicit significand bits: rounded
# to nearest (cvt.rna, u = 2^-11), or truncated where a kernel hands mma.tf32 its float32 bits as
# they are (the low 13 bits ignored: up to 2^-10). The bound takes the larger.
TF32_ROUNDOFF = 2.0**-10
# cuBLASLt multiplies alpha by the scales of A and B in FP32 before using them: one more FP32
# rounding of each output, relative.
SCALE_PRODUCT_ROUNDOFF = 2.0**-23
# FP8 on Hopper's tensor cores: partial sums keep about 14 significand bits (DeepSeek-V3 technical
# report, 2024, section 3.3.2, on the H800), and FP32 accumulation promotes them every 128 products
# (4 WGMMAs of k = 32, as CUTLASS's FP8 kernels without fast accumulation do). Measured here: with
# FP32 accumulation throughout as the model, cuBLASLt's FP8 product at 256 x 256 x 256 on an H100
# exceeded the bound at one element of 65536, by 5 %.
FP8_ACCUMULATION = 2.0**-13
FP8_PROMOTION = 128


@dataclass(frozen=True)
class Rounding:
    """The rounding a correct product of this precision may show, the terms of its error bound:
    inputs rounded inside the product by u_in (TF32's 11 bits; 0 where the products are exact),
    sums accumulated with unit roundoff u_acc, the result rounded to the output type by u_out (and
    underflowing to its subnormals by half their spacing, tiny_out). reference_twice: the float64
    reference has errors of the same size as the kernel's (FP64), so the bound counts both."""

    u_in: float
    u_acc: float
    u_out: float
    tiny_out: float = 0.0
    reference_twice: bool = False
    # Accumulation in chunks: `chunk` products summed with u_acc, the chunks' sums added with u_chunks
    # (FP8's promotion to FP32); 0: one sum of all k products with u_acc.
    chunk: int = 0
    u_chunks: float = 0.0


@dataclass(frozen=True)
class Precision:
    """One precision of a product: A and B's storage, the output's, the accumulation, the scales."""

    name: str
    inputs: str  # storage of A and B (STORAGE), or of A where b differs
    output: str  # storage of C
    accumulate: str  # "fp64", "fp32" (FMA units), "fp32-tc" (tensor cores)
    rounding: Rounding
    means: str  # one line: what a row of this precision holds
    b: str = ""  # storage of B when it differs from A's (FP8 e5m2 x e4m3)
    scaled: bool = False  # per-tensor scales of A and B (FP8): C = scale_a scale_b (A . B)

    @property
    def tensor_cores(self) -> bool:
        """Whether its products run on the tensor cores (the library's, and the peak it is held to)."""
        return self.accumulate == "fp32-tc"

    @property
    def a_type(self) -> np.dtype:
        return STORAGE[self.inputs]

    @property
    def b_type(self) -> np.dtype:
        return STORAGE[self.b or self.inputs]

    @property
    def c_type(self) -> np.dtype:
        return STORAGE[self.output]

    @property
    def word(self) -> str:
        """How messages name its rounding ("float32", "bf16")."""
        return "float32" if self.name == "fp32" else "float64" if self.name == "fp64" else self.name


def _tc(inputs: str, output: str, u_in: float = 0.0) -> Rounding:
    """A tensor-core product's rounding: exact products (or TF32 inputs), FP32 accumulation that
    truncates, the output type's rounding; FP8: 14-bit partial sums promoted to FP32 every 128
    products, and the scales' FP32 rounding."""
    if inputs.startswith("float8"):
        return Rounding(u_in, FP8_ACCUMULATION, unit_roundoff(output) + SCALE_PRODUCT_ROUNDOFF,
                        smallest_subnormal(output) / 2, chunk=FP8_PROMOTION, u_chunks=TENSOR_CORE_FP32)
    return Rounding(u_in, TENSOR_CORE_FP32, unit_roundoff(output), smallest_subnormal(output) / 2)


PRECISIONS = MappingProxyType({p.name: p for p in (
    Precision("fp64", "float64", "float64", "fp64", Rounding(0.0, 2.0**-53, 0.0, reference_twice=True),
              "A, B, C float64; float64 accumulation (DGEMM)"),
    Precision("fp32", "float32", "float32", "fp32", Rounding(0.0, 2.0**-24, 0.0),
              "A, B, C float32; float32 accumulation, no reduced-precision path (cuBLAS: SGEMM in pedantic math)"),
    Precision("tf32", "float32", "float32", "fp32-tc", _tc("float32", "float32", u_in=TF32_ROUNDOFF),
              "A, B, C float32 in memory; the tensor cores round A and B to TF32 (10-bit significand) and "
              "accumulate in float32"),
    Precision("fp16", "float16", "float16", "fp32-tc", _tc("float16", "float16"),
              "A, B, C float16; float32 accumulation on the tensor cores, C rounded to float16"),
    Precision("bf16", "bfloat16", "bfloat16", "fp32-tc", _tc("bfloat16", "bfloat16"),
              "A, B, C bfloat16; float32 accumulation on the tensor cores, C rounded to bfloat16"),
    Precision("fp8e4m3", "float8_e4m3", "bfloat16", "fp32-tc", _tc("float8_e4m3", "bfloat16"),
              "A, B float8 e4m3 with per-tensor float32 scales; C = scale_a scale_b (A . B) in bfloat16; "
              "float32 accumulation, promoted every 128 products", scaled=True),
    Precision("fp8e5m2", "float8_e5m2", "bfloat16", "fp32-tc", _tc("float8_e5m2", "bfloat16"),
              "A float8 e5m2, B float8 e4m3 (no library multiplies e5m2 by e5m2), per-tensor float32 scales; "
              "C = scale_a scale_b (A . B) in bfloat16; float32 accumulation, promoted every 128 products",
              b="float8_e4m3", scaled=True),
)})
DEFAULT = "fp32"  # what every row before precisions was

# The numbers kernels/common/types.cuh gives the precisions (its MMB_ names): the DTYPE #define a
# built-in kernel that takes several precisions is compiled with (never at fp32, its default).
DTYPE_CODES = MappingProxyType({"fp64": 1, "fp32": 2, "tf32": 3, "fp16": 4, "bf16": 5, "fp8e4m3": 6, "fp8e5m2": 7})


# Layouts of a product's operands, BLAS's N/T on the row-major product C (m x n) = A (m x k) . B (k x n):
# the first letter A's, the second B's; n stores the operand as the product writes it (A m x k, B k x n,
# rows contiguous), t its transpose (A as k x m, B as n x k). nt is K-major A and B: what FP8 tensor
# cores take, and what a linear layer's weight (n x k) is.
LAYOUTS = MappingProxyType({
    "nn": "A m x k and B k x n, row-major (A K-major, B N-major)",
    "nt": "A m x k row-major, B stored n x k (both K-major)",
    "tn": "A stored k x m, B k x n row-major (both M- and N-major)",
    "tt": "A stored k x m, B stored n x k",
})
DEFAULT_LAYOUT = "nn"


class PrecisionError(ValueError):
    """An unknown precision or layout; the message names the value and the choices."""


def get_precision(name: str) -> Precision:
    try:
        return PRECISIONS[name]
    except KeyError:
        raise PrecisionError(f"unknown precision '{name}'; choose from: {', '.join(PRECISIONS)}") from None


def check_layout(name: str) -> str:
    if name not in LAYOUTS:
        raise PrecisionError(f"unknown layout '{name}'; choose from: {', '.join(LAYOUTS)}")
    return name


def meaning(dtype: str, op: str = "gemm") -> str:
    """What a row of this precision holds, for its operation (a metadata file's `precisions`): GEMM's
    Precision.means; a GEMV's vectors and sums; a move's element width."""
    p = get_precision(dtype)
    if op == "gemv":
        sums = "float64" if p.a_type == np.float64 else "float32"
        return f"A, x, y {p.inputs}; sums in {sums}" + (", y rounded once" if p.a_type.itemsize < 4 else "")
    if op in ("transpose", "copy"):
        return f"elements of {p.a_type.itemsize} bytes ({p.inputs}), moved bit for bit"
    return p.means


def precision_key(dtype: str, op: str = "gemm") -> str:
    """The key of a precision's meaning in a metadata file: the name for GEMM (as before other
    operations had precisions), "NAME (op)" for the others."""
    return dtype if op == "gemm" else f"{dtype} ({op})"


def form_suffix(dtype: str, layout: str) -> str:
    """" bf16 nt" for a point of another precision or layout than fp32, nn; "" for those (how names
    of points and series say them)."""
    return "".join(f" {x}" for x, default in ((dtype, DEFAULT), (layout, DEFAULT_LAYOUT)) if x != default)


def transposed(layout: str) -> tuple[bool, bool]:
    """(A stored transposed, B stored transposed)."""
    check_layout(layout)
    return layout[0] == "t", layout[1] == "t"


# -- the error bound of a sum of k products ----------------------------------------------------------
def gamma(k: int, u: float) -> float:
    """Higham's gamma_k = k u / (1 - k u): the worst-case relative error of a length-k dot product
    whose additions round with unit roundoff u; infinite where k u >= 1 (no bound)."""
    ku = k * u
    return ku / (1.0 - ku) if ku < 1.0 else math.inf


@lru_cache(maxsize=4096)
def bound_terms(rounding: Rounding, k: int) -> tuple[float, float, float]:
    """(c_products, c_reference, absolute) of the elementwise bound
    |out - ref| <= c_products |A||B| + c_reference |ref| + absolute:
    each product off by at most (1 + u_in)^2 - 1, their sum by gamma_k(u_acc) more, the result
    rounded to the output type (u_out relative, tiny_out absolute); twice the accumulation where
    the reference errs as much (float64)."""
    inputs = (1.0 + rounding.u_in) ** 2 - 1.0
    if rounding.chunk:  # each chunk's sum off by gamma_c, their sum by gamma_{k/c} of the chunks' sums more
        within = gamma(min(k, rounding.chunk), rounding.u_acc)
        sums = within + gamma(math.ceil(k / rounding.chunk), rounding.u_chunks) * (1.0 + within)
    else:
        sums = gamma(k, rounding.u_acc)
    sums *= 2.0 if rounding.reference_twice else 1.0
    products = (inputs + sums * (1.0 + rounding.u_in) ** 2) * (1.0 + rounding.u_out)
    return products, rounding.u_out, rounding.tiny_out


FROBENIUS_FACTOR = 8.0


def frobenius_tolerance(rounding: Rounding, k: int) -> float:
    """The largest relative Frobenius error a correct product may show: 8 u_acc sqrt(k) for the
    sums (on zero-mean inputs a sum errs by about 0.4 u sqrt(k): a 20x margin, which reduced
    accumulation does not get: a BF16 accumulator errs by about 0.4 * 2^-8 sqrt(k)), plus 4 u_in for
    inputs rounded inside the products (each product errs by up to 2 u_in, biased where they
    truncate) and 2 u_out for the output's rounding (each output errs by at most u_out)."""
    if rounding.chunk:  # the chunks' errors and the errors of summing them, each a random walk
        sums = rounding.u_acc * math.sqrt(min(k, rounding.chunk)) + rounding.u_chunks * math.sqrt(k / rounding.chunk)
    else:
        sums = rounding.u_acc * math.sqrt(k)
    return FROBENIUS_FACTOR * sums + 4.0 * rounding.u_in + 2.0 * rounding.u_out


# -- inputs in a precision --------------------------------------------------------------------------
def fp8_scale(storage: str) -> float:
    """The per-tensor scale of FP8 inputs drawn from [-1, 1): A = scale . A_q with A_q within half of
    the format's largest value (products and sums stay far from overflow). Not a power of two, so a
    kernel that ignores or doubles a scale is off by a factor the check sees."""
    return float(np.float32(2.0 / float(ml_dtypes.finfo(STORAGE[storage]).max)))


# Where FP8's scales of A and B lie in their device buffer, in bytes: 16 apart, since cuBLASLt refuses
# (CUBLAS_STATUS_NOT_SUPPORTED at the call, after its heuristic accepted the product) a scale pointer
# aligned to 4 bytes only, measured on an H100 with cuBLASLt 13.1.
SCALE_OFFSETS = (0, 16)


def scale_block(scales: tuple[float, float]) -> np.ndarray:
    """The float32 words of the scales' device buffer: scale_a at SCALE_OFFSETS[0], scale_b at [1]."""
    block = np.zeros(SCALE_OFFSETS[1] // 4 + 4, np.float32)
    block[SCALE_OFFSETS[0] // 4], block[SCALE_OFFSETS[1] // 4] = scales
    return block


def quantize(values: np.ndarray, storage: np.dtype, scale: float = 1.0) -> np.ndarray:
    """values / scale rounded to the storage type (round to nearest, as the casts of ml_dtypes)."""
    if scale != 1.0:
        values = values / scale
    return np.asarray(values).astype(storage)


def as_float64(stored: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """The float64 values a stored array holds, times its scale: what the reference multiplies."""
    out = stored.astype(np.float64)
    if scale != 1.0:
        out *= scale
    return out


def raw_view(array: np.ndarray) -> np.ndarray:
    """The array's bytes as unsigned integers of its width: what device copies take (NumPy's
    buffer protocol does not carry ml_dtypes' types)."""
    if array.dtype.kind == "V" or array.dtype.type in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
                                                        ml_dtypes.float8_e5m2):
        return np.ascontiguousarray(array).view({1: np.uint8, 2: np.uint16}[array.dtype.itemsize])
    return np.ascontiguousarray(array)


def nan_bits(dtype: np.dtype) -> tuple[int, int]:
    """(bit pattern, bytes) of a quiet NaN of a storage type: what poisoning an output fills it with."""
    dtype = np.dtype(dtype)
    nan = np.array([np.nan], dtype=np.float64).astype(dtype)
    width = dtype.itemsize
    return int(nan.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[width])[0]), width
