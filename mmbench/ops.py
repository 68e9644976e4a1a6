"""Operations: what a kernel computes, its work, its inputs, and how its output is checked.

Verification rule (GEMM). The float64 product of the float32 inputs is the reference; a
point passes when all three hold:

1. every output is finite (outputs are poisoned with NaN first, so unwritten ones show);
2. elementwise |C - AB| <= gamma_k (|A||B|), gamma_k = k u / (1 - k u), u = 2^-24: the
   rigorous bound for any float32 sum of k products in any order, with or without FMA
   (Higham, Accuracy and Stability of Numerical Algorithms, eq. 3.13). No correct kernel fails
   it, and one wrong element anywhere does;
3. relative Frobenius error ||C - AB|| / ||AB|| <= 8 u sqrt(k). On our zero-mean random inputs
   a float32 dot product errs by about 0.4 u sqrt(k) (random rounding over growing partial
   sums), so this leaves a 20x margin, while reduced-precision paths (TF32, fp16 inputs) err
   by ~1e-4 and fail, which the worst-case bound alone, loose at large k, would let pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .sizes import Shape

UNIT_ROUNDOFF_F32 = 2.0**-24
FROBENIUS_FACTOR = 8.0  # rule 3 above: tolerance = FROBENIUS_FACTOR * u * sqrt(k)


def gamma(k: int) -> float:
    """Higham's gamma_k for float32: the worst-case relative error of a length-k dot product."""
    ku = k * UNIT_ROUNDOFF_F32
    return ku / (1.0 - ku)


@dataclass(frozen=True)
class GemmInputs:
    """Host inputs of one GEMM check with their float64 reference and error bound."""

    a: np.ndarray  # float32, m x k, row-major
    b: np.ndarray  # float32, k x n, row-major
    reference: np.ndarray  # float64 A.B
    bound: np.ndarray  # gamma_k * (|A| |B|), elementwise


@dataclass(frozen=True)
class Check:
    """Outcome of comparing one output with its reference."""

    ok: bool
    rel_err: float  # relative Frobenius error
    err_bound_ratio: float  # max over elements of |C - ref| / bound; <= 1 passes
    reason: str


def frobenius_tolerance(k: int) -> float:
    """Largest relative Frobenius error a float32 GEMM with inner size k may show (rule 3)."""
    return FROBENIUS_FACTOR * UNIT_ROUNDOFF_F32 * math.sqrt(k)


def gemm_flops(shape: Shape) -> float:
    return 2.0 * shape.m * shape.n * shape.k


def gemm_min_bytes(shape: Shape) -> float:
    """Fewest bytes a float32 GEMM moves: each input read once, C written once."""
    return 4.0 * (shape.m * shape.k + shape.k * shape.n + shape.m * shape.n)


def gemm_device_bytes(shape: Shape) -> int:
    """Device memory one GEMM point needs: A, B and C in float32."""
    return 4 * (shape.m * shape.k + shape.k * shape.n + shape.m * shape.n)


def gemm_host_bytes(shape: Shape) -> int:
    """Host memory one GEMM point needs at its peak: the float32 inputs, their float64 copies and
    absolute values for the reference and its bound (20 bytes an input element), and the
    reference, bound, downloaded output and the check's float64 temporaries (64 an output element)."""
    return 20 * (shape.m * shape.k + shape.k * shape.n) + 64 * shape.m * shape.n


def make_gemm_inputs(shape: Shape, rng: np.random.Generator) -> GemmInputs:
    """Random inputs in [-1, 1) (never zeros: they hide unwritten outputs) and their reference."""
    a = rng.uniform(-1.0, 1.0, size=(shape.m, shape.k)).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, size=(shape.k, shape.n)).astype(np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    reference = a64 @ b64
    bound = gamma(shape.k) * (np.abs(a64) @ np.abs(b64))
    return GemmInputs(a, b, reference, bound)


def check_gemm(c: np.ndarray, inputs: GemmInputs) -> Check:
    """Compare a float32 result with the float64 reference under the gamma_k bound."""
    ref = inputs.reference
    if c.shape != ref.shape:
        return Check(False, float("nan"), float("nan"), f"output shape {c.shape} != {ref.shape}")
    c64 = c.astype(np.float64)
    finite = np.isfinite(c64)
    diff = np.abs(c64 - ref)
    norm = float(np.linalg.norm(ref))
    rel_err = float(np.linalg.norm(np.where(finite, diff, 0.0))) / norm if norm else float("nan")
    if not finite.all():
        bad = int((~finite).sum())
        first = np.argwhere(~finite)[0]
        return Check(False, float("nan"), float("nan"),
                     f"{bad} of {c.size} outputs not finite (unwritten?), first at {tuple(int(i) for i in first)}")
    ratio = diff / np.maximum(inputs.bound, np.finfo(np.float64).tiny)
    worst = float(ratio.max())
    if worst > 1.0:
        where = tuple(int(i) for i in np.unravel_index(int(ratio.argmax()), ratio.shape))
        over = int((ratio > 1.0).sum())
        return Check(False, rel_err, worst,
                     f"{over} of {c.size} outputs exceed the float32 error bound, worst {worst:.3g}x at {where}")
    tol = frobenius_tolerance(inputs.a.shape[1])
    if rel_err > tol:
        return Check(False, rel_err, worst, f"relative error {rel_err:.3g} exceeds the float32 tolerance "
                                            f"{tol:.3g} (8 u sqrt(k)): reduced precision?")
    return Check(True, rel_err, worst, "")
