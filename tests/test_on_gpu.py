"""Inputs, references and checks made on the GPU (mmbench/ops/on_gpu.py): the host reads
check_outputs' slots to the verdict check_sums gives (on the CPU, from a numpy twin of the kernel's
slots); on a GPU (marked gpu), the inputs drawn into device buffers are the host's draws bit for
bit at every precision and layout, and the GPU's verdict on an output is the host's."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from mmbench.draws import CounterDraws, run_key
from mmbench.ops.base import check_sums
from mmbench.ops.gemm import GEMM, make_gemm_inputs
from mmbench.ops.on_gpu import CHECK_WORDS, StreamProtocol, cupy_stream, measures_verdict
from mmbench.precisions import LAYOUTS, PRECISIONS, as_float64, get_precision, raw_view, transposed
from mmbench.sizes import Shape

FP32 = PRECISIONS["fp32"]


def slots_of(out: np.ndarray, ref: np.ndarray, bound: np.ndarray, blocks: int) -> np.ndarray:
    """What check_outputs writes: block b measures rows b, b + blocks, ... (a numpy twin of its slots)."""
    rows, cols = ref.shape
    words = np.zeros((blocks, CHECK_WORDS), np.uint64)
    floats = words[:, 4:].view(np.float64)
    for b in range(blocks):
        at = np.concatenate([np.arange(r * cols, (r + 1) * cols) for r in range(b, rows, blocks)])
        o, r, bd = (x.reshape(-1)[at].astype(np.float64) for x in (out, ref, bound))
        finite = np.isfinite(o)
        words[b, 0] = np.count_nonzero(~finite)
        words[b, 1] = at[~finite].min() if (~finite).any() else np.iinfo(np.uint64).max
        d = np.abs(o[finite] - r[finite])
        ratio = d / np.maximum(bd[finite], np.finfo(np.float64).tiny)
        words[b, 2] = np.count_nonzero(ratio > 1.0)
        best = int(ratio.argmax()) if ratio.size else 0
        words[b, 3] = at[finite][best] if ratio.size else np.iinfo(np.uint64).max
        floats[b] = (ratio[best] if ratio.size else 0.0, d @ d, r[finite] @ r[finite], bd[finite] @ bd[finite])
    return words


@pytest.fixture
def product():
    inputs = make_gemm_inputs(Shape(37, 29, 65), CounterDraws(run_key([1, 37, 29, 65])))
    return inputs, (inputs.a.astype(np.float64) @ inputs.b.astype(np.float64)).astype(np.float32)


@pytest.mark.parametrize("blocks", [1, 4, 37])
def test_the_slots_read_to_the_hosts_verdict(product, blocks):
    inputs, good = product
    bad_nan, bad_far = good.copy(), good.copy()
    bad_nan[3, 5] = bad_nan[20, 1] = np.nan
    bad_far[30, 7] += 1.0
    for out in (good, bad_nan, bad_far):
        host = check_sums(out, inputs.reference, inputs.bound, 65)
        gpu = measures_verdict(slots_of(out, inputs.reference, inputs.bound, blocks), out.shape, 65, FP32, None)
        assert (gpu.ok, gpu.reason) == (host.ok, host.reason)
        assert math.isclose(gpu.rel_err, host.rel_err, rel_tol=1e-12) or (math.isnan(gpu.rel_err)
                                                                            and math.isnan(host.rel_err))
    assert "2 of 1073 outputs not finite" in measures_verdict(
        slots_of(bad_nan, inputs.reference, inputs.bound, blocks), bad_nan.shape, 65, FP32, None).reason
    assert "at (30, 7)" in measures_verdict(slots_of(bad_far, inputs.reference, inputs.bound, blocks), good.shape,
                                            65, FP32, None).reason


def test_our_stream_reaches_cupy_by_the_cuda_stream_protocol():
    """CuPy 14's Stream.from_external takes (version 0, handle) from __cuda_stream__ (its ExternalStream,
    which took the handle alone, is deprecated); CuPy 13 has only ExternalStream: each gets the handle
    unchanged."""
    assert StreamProtocol(0x7F3A12C0).__cuda_stream__() == (0, 0x7F3A12C0)
    assert StreamProtocol(0).__cuda_stream__() == (0, 0)  # the legacy default stream
    cupy14 = SimpleNamespace(cuda=SimpleNamespace(Stream=SimpleNamespace(from_external=lambda o: ("new", o))))
    kind, protocol = cupy_stream(cupy14, 0x7F3A12C0)
    assert kind == "new" and protocol.__cuda_stream__() == (0, 0x7F3A12C0)
    cupy13 = SimpleNamespace(cuda=SimpleNamespace(Stream=SimpleNamespace(), ExternalStream=lambda h: ("old", h)))
    assert cupy_stream(cupy13, 0x7F3A12C0) == ("old", 0x7F3A12C0)


def test_the_worst_is_the_first_of_equals_across_blocks(product):
    inputs, good = product
    out = good.copy()
    out[9, 4] = out[2, 8] = out[2, 8] + 10.0  # rows in different blocks; (2, 8) comes first
    out[9, 4] = inputs.reference[9, 4] + (out[2, 8] - inputs.reference[2, 8]) * inputs.bound[9, 4] / inputs.bound[2, 8]
    words = slots_of(out, inputs.reference, inputs.bound, 4)
    assert measures_verdict(words, out.shape, 65, FP32, None).reason == check_sums(
        out, inputs.reference, inputs.bound, 65).reason


def stored_logical(inputs) -> tuple[np.ndarray, np.ndarray]:
    """A (m x k) and B (k x n) of inputs stored as their layout says."""
    ta, tb = transposed(inputs.layout)
    return (inputs.a.T if ta else inputs.a), (inputs.b.T if tb else inputs.b)


# -- on a GPU ------------------------------------------------------------------------------------------
AWKWARD = [Shape(1, 1, 1), Shape(33, 65, 31), Shape(1, 257, 63), Shape(127, 1, 33), Shape(256, 128, 64)]


@pytest.mark.gpu
@pytest.mark.parametrize("precision", list(PRECISIONS))
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_inputs_made_on_the_gpu_are_the_hosts(gpu, precision, layout):
    for shape in AWKWARD:
        key = run_key([7, shape.m, shape.n, shape.k])
        host = make_gemm_inputs(shape, CounterDraws(key), None, precision, layout)
        made = GEMM.inputs_on_gpu(gpu, shape, key, precision, layout)
        try:
            assert np.array_equal(raw_view(made.a), raw_view(host.a)) and np.array_equal(raw_view(made.b),
                                                                                         raw_view(host.b)), shape
            # float64 sums in another order: apart by at most twice float64's gamma_k |A||B| (relative to the
            # reference alone they need not be close where it cancels to almost nothing)
            a64, b64 = (np.abs(as_float64(x, s)) for x, s in zip(stored_logical(host), host.scales))
            apart = 2 * shape.k * 2.0**-53 / (1 - shape.k * 2.0**-53) * (a64 @ b64)
            assert (np.abs(made.reference - host.reference) <= apart).all(), shape
            np.testing.assert_allclose(made.bound, host.bound, rtol=1e-9)
            assert made.magnitude_norm == pytest.approx(host.magnitude_norm, rel=1e-12) if host.magnitude_norm else \
                made.magnitude_norm is None
        finally:
            made.free()
            made.buffers.free()


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp8e4m3", "fp64"])
def test_the_gpus_verdict_is_the_hosts(gpu, precision):
    """A correct output, one poisoned with NaN and one off by more than its bound: the same verdict and
    reason on the GPU as on the host, and the same check of a result in a padded buffer (row pitch)."""
    shape = Shape(130, 67, 129)
    made = GEMM.inputs_on_gpu(gpu, shape, run_key([3, 130, 67, 129]), precision, "nt")
    c_type = get_precision(precision).c_type
    try:
        good = made.reference.astype(c_type)
        nan, far = good.copy(), good.copy()
        nan[100, 60] = np.nan
        far[7, 66] = (far[7, 66].astype(np.float64) + 4.0).astype(c_type)
        for out in (good, nan, far):
            host = GEMM.check(out, made)
            for pitch in (shape.n, shape.n + 29):
                padded = np.zeros((shape.m, pitch), c_type)
                padded[:, :shape.n] = out
                buf = gpu.upload(raw_view(padded))
                try:
                    on_gpu = made.sums.check(buf, pitch, c_type)
                finally:
                    buf.free()
                assert (on_gpu.ok, on_gpu.reason) == (host.ok, host.reason), (precision, pitch)
                if host.ok:
                    assert on_gpu.rel_err == pytest.approx(host.rel_err, rel=1e-9)
                    assert on_gpu.err_bound_ratio == host.err_bound_ratio
        assert not GEMM.check(far, made).ok and "at (7, 66)" in GEMM.check(far, made).reason
    finally:
        made.free()
        made.buffers.free()
