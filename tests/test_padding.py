"""GEMM's padding and timing scopes (issue 15), on the CPU: a fake GPU whose device buffers are
numpy arrays runs the same sequences (ops/gemm.py's scoped) that the real one does."""

from __future__ import annotations

import numpy as np
import pytest

from mmbench.ops import DeviceBuffers
from mmbench.ops import gemm
from mmbench.ops.base import SCOPES
from mmbench.sizes import Shape
from mmbench.engine.plan import plan, Point, Selection, Settings
from mmbench.engine.points_local import LocalPoints
from mmbench.variants import REGISTRY

from helpers import verified
from test_derived_columns import FakeGpu

SHARED32 = (("BLOCK", 32),)


class DeviceArray(np.ndarray):
    def free(self):
        self.freed = True


class NumpyGpu(FakeGpu):
    """Device buffers are flat float32 arrays; copies and memsets act at once, and are logged."""

    def __init__(self, runs):
        super().__init__([1.0] * 1000, [1980] * 1000)
        self.log = []

    free = 2**40  # bytes of device memory free

    def free_memory(self):
        return self.free

    def alloc(self, nbytes):
        return np.full(nbytes // 4, 7.0, np.float32).view(DeviceArray)  # never zeros: padding must zero what it needs

    def pinned(self, shape):
        return np.full(shape, 7.0, np.float32)

    def zero_async(self, buf, count):
        self.log.append("zero")
        buf[:count] = 0.0

    def copy2d_async(self, dst, dst_cols, src, src_cols, rows, cols, item=4):
        self.log.append("copy2d")
        dst.reshape(-1, dst_cols)[:rows, :cols] = src.reshape(-1, src_cols)[:rows, :cols]

    def htod_async(self, buf, host):
        self.log.append("htod")
        buf[:host.size] = host.ravel()

    def dtoh_async(self, host, buf):
        self.log.append("dtoh")
        host[...] = buf[:host.size].reshape(host.shape)


def fake_kernel(checks_borders: bool, tile: int = 32):
    """compute(shape, buffers) of a tiled kernel: with border checks it computes C; without, it
    reads past the rows it was given when a dimension is not a tile multiple (here: garbage)."""
    def compute(shape, bufs):
        a, b = (x.reshape(r, c) for x, (r, c) in zip(bufs.inputs, ((shape.m, shape.k), (shape.k, shape.n))))
        out = bufs.output

        def launch():
            if not checks_borders and any(d % tile for d in (shape.m, shape.n, shape.k)):
                out[:shape.m * shape.n] = 1e30
                return
            out[:shape.m * shape.n] = (a.astype(np.float64) @ b).astype(np.float32).ravel()
        return launch
    return compute


def run_point(variant, shape, scope, pad, compute):
    runner = LocalPoints(Settings(runs=3, warmup=1), [])
    runner.gpu = NumpyGpu(3)
    inputs = gemm.make_gemm_inputs(shape, np.random.default_rng(1))
    bufs = DeviceBuffers((inputs.a.ravel().copy(), inputs.b.ravel().copy()),
                         np.empty(shape.m * shape.n, np.float32), shape.m * shape.n)
    row = verified(runner, Point(REGISTRY[variant], SHARED32, shape, "cold", scope, pad), inputs, bufs, compute)
    return row, runner.gpu


def test_padded_shape_rounds_m_and_n_to_the_tile_and_k_to_the_k_tile():
    assert gemm.padded_shape(REGISTRY["shared"], SHARED32, Shape(33, 1, 65)) == Shape(64, 32, 96)
    assert gemm.padded_shape(REGISTRY["shared"], SHARED32, Shape(64, 32, 96)) == Shape(64, 32, 96)
    dbuf = dict(REGISTRY["dbuf"].axes)
    params = tuple(sorted((k, v[0]) for k, v in dbuf.items()))  # BM = BN = 128, BK = 16
    assert gemm.padded_shape(REGISTRY["dbuf"], params, Shape(4095, 2049, 4095)) == Shape(4096, 2176, 4096)
    with pytest.raises(gemm.ScopeError, match="no tile over C"):
        gemm.padded_shape(REGISTRY["cublas"], (), Shape(33, 33, 33))


@pytest.mark.parametrize("shape", [Shape(1, 1, 1), Shape(33, 31, 65), Shape(1, 97, 5), Shape(97, 1, 64)])
def test_the_padded_product_equals_the_unpadded_one(shape):
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (shape.m, shape.k)).astype(np.float32)
    b = rng.uniform(-1, 1, (shape.k, shape.n)).astype(np.float32)
    p = gemm.padded_shape(REGISTRY["shared"], SHARED32, shape)
    pa, pb = gemm.pad_host(a, p.m, p.k), gemm.pad_host(b, p.k, p.n)
    assert pa.shape == (p.m, p.k) and not pa[shape.m:].any() and not pa[:, shape.k:].any()
    product = pa.astype(np.float64) @ pb
    # Zeros add nothing; only the library's order of summation may differ, at float64 roundoff.
    np.testing.assert_allclose(product[:shape.m, :shape.n], a.astype(np.float64) @ b, rtol=0, atol=1e-12)
    assert not product[shape.m:].any() and not product[:, shape.n:].any()


@pytest.mark.parametrize("scope", list(SCOPES))
@pytest.mark.parametrize("shape", [Shape(1, 1, 1), Shape(33, 31, 65), Shape(64, 32, 96)])
def test_every_scope_padded_or_not_verifies_a_kernel_with_border_checks(scope, shape):
    for pad in (False, True):
        row, gpu = run_point("shared", shape, scope, pad, fake_kernel(True))
        assert row["status"] == "ok", row["reason"]
        assert (row["scope"], row["pad"]) == (scope, int(pad))
        padded = gemm.padded_shape(REGISTRY["shared"], SHARED32, shape)
        assert row["padded_shape"] == (str(padded) if pad else "")


@pytest.mark.parametrize("scope", list(SCOPES))
def test_a_kernel_without_border_checks_is_right_only_when_padded(scope):
    shape = Shape(33, 31, 65)
    assert run_point("shared_padded", shape, scope, True, fake_kernel(False))[0]["status"] == "ok"
    row = run_point("shared_padded", shape, scope, False, fake_kernel(False))[0]
    assert row["status"] == "wrong" and "exceed" in row["reason"]


def test_what_each_scope_times():
    """The kernel scope pads before timing; the device scope zeroes and copies on the device inside
    every sample; end to end pads on the host and moves the data both ways inside every sample."""
    shape = Shape(33, 31, 65)
    per_call = {"kernel": [], "device": ["zero", "zero", "copy2d", "copy2d", "copy2d"],
                "end_to_end": ["htod", "htod", "dtoh"]}
    for scope, calls in per_call.items():
        row, gpu = run_point("shared", shape, scope, True, fake_kernel(True))
        setup = ["zero", "zero", "copy2d", "copy2d"] if scope == "kernel" else []
        launches = 1 + 1 + 3  # verification, warm-up, samples
        assert gpu.log == setup + calls * launches, scope
    row, gpu = run_point("shared", shape, "end_to_end", False, fake_kernel(True))
    assert gpu.log == ["htod", "htod", "dtoh"] * 5
    row, gpu = run_point("shared", shape, "device", False, fake_kernel(True))
    assert gpu.log == []  # nothing to pad: the device scope is the kernel alone


def test_the_plan_pads_a_kernel_without_border_checks_always_and_keeps_cpu_points_plain():
    sel = Selection((REGISTRY["shared_padded"], REGISTRY["shared"], REGISTRY["blas"]), "33", {},
                    scopes=("kernel", "end_to_end"), pads=(False, True))
    points = plan([sel], "cold")
    pads = {(p.variant.name, p.scope, p.pad) for p in points}
    assert pads == {("shared_padded", "kernel", True), ("shared_padded", "end_to_end", True),
                    ("shared", "kernel", False), ("shared", "kernel", True),
                    ("shared", "end_to_end", False), ("shared", "end_to_end", True), ("blas", "kernel", False)}
    assert len({p.key for p in points}) == len(points)


def test_each_operation_says_which_scopes_and_padding_a_variant_takes():
    """What runs and configs ask before planning: a scope or padding a variant cannot take is
    refused with the reason, where the plan would leave it out without a word."""
    from mmbench.ops import timing_problem

    v = REGISTRY
    assert timing_problem((v["best"], v["dbuf"], v["cublas"]), tuple(SCOPES), (False,)) is None
    assert timing_problem((v["shared"], v["dbuf"], v["shared_padded"]), ("kernel", "device"), (False, True)) is None
    assert timing_problem((v["blas"], v["cpu_naive_matmul"]), ("kernel",), (False,)) is None
    assert timing_problem((v["best"], v["cublas"]), ("kernel",), (False, True)) == \
        ("pad", "cublas has no tile over C to pad to")
    cpu = "blas runs on the CPU: it is timed as its own call (kernel), never padded"
    assert timing_problem((v["best"], v["blas"]), ("kernel",), (True,)) == ("pad", cpu)
    assert timing_problem((v["best"], v["blas"]), ("kernel", "device"), (False,)) == ("device", cpu)
    assert timing_problem((v["transpose_naive"],), ("end_to_end",), (False,)) == \
        ("end_to_end", "transpose_naive is a transpose, timed only as kernel")
    assert timing_problem((v["gemv_row"],), ("kernel",), (True,)) == ("pad", "gemv_row is a gemv, which has no padding")


def test_padded_buffers_beyond_free_memory_are_a_skipped_row():
    runner = LocalPoints(Settings(runs=1, warmup=0), [])
    runner.gpu = NumpyGpu(1)
    runner.gpu.free = 1000
    shape = Shape(33, 31, 65)
    inputs = gemm.make_gemm_inputs(shape, np.random.default_rng(1))
    bufs = DeviceBuffers((inputs.a.ravel().copy(), inputs.b.ravel().copy()), np.empty(33 * 31, np.float32), 33 * 31)
    row = verified(runner, Point(REGISTRY["shared"], SHARED32, shape, "cold", "kernel", True), inputs, bufs,
                                  fake_kernel(True))
    assert row["status"] == "skipped" and "padded buffers (64x32x96) need" in row["reason"] and "MiB free" in row["reason"]


class ByteGpu(NumpyGpu):
    """Device buffers of raw bytes, as cudaMalloc gives them: copies and memsets in bytes, downloads
    in the storage type asked for (bf16, FP8 and their bfloat16 output through ml_dtypes)."""

    def alloc(self, nbytes):
        return np.full(nbytes, 0x7F, np.uint8).view(DeviceArray)  # never zeros: padding must zero what it needs

    def zero_async(self, buf, count):
        self.log.append("zero")
        buf[:4 * count] = 0

    def zero_bytes_async(self, buf, nbytes):
        self.log.append("zero")
        buf[:nbytes] = 0

    def copy2d_async(self, dst, dst_cols, src, src_cols, rows, cols, item=4):
        self.log.append("copy2d")
        dst.reshape(-1, item * dst_cols)[:rows, :item * cols] = src.reshape(-1, item * src_cols)[:rows, :item * cols]

    def poison(self, buf, count, dtype=np.float32):
        buf[:count * np.dtype(dtype).itemsize] = 0xFF  # every bit set: a NaN of every float type

    def download(self, buf, shape, dtype=np.float32):
        return buf[:int(np.prod(shape)) * np.dtype(dtype).itemsize].view(dtype).reshape(shape).copy()


def typed_kernel(precision, layout):
    """compute(shape, buffers) of a kernel that takes its operands as the layout stores them, rows of
    its k 16-byte aligned only (a TMA kernel): C from the buffers' bytes, in float64, rounded once."""
    from mmbench.precisions import PRECISIONS

    p = PRECISIONS[precision]

    def compute(shape, bufs):
        (ar, ac), (br, bc) = (gemm.stored_dims(x, shape, layout) for x in ("A", "B"))

        def launch():
            assert (shape.k * p.a_type.itemsize) % 16 == 0, "a row of k not 16-byte aligned"
            a = bufs.inputs[0][:ar * ac * p.a_type.itemsize].view(p.a_type).reshape(ar, ac).astype(np.float64)
            b = bufs.inputs[1][:br * bc * p.b_type.itemsize].view(p.b_type).reshape(br, bc).astype(np.float64)
            a, b = (a.T if layout[0] == "t" else a), (b.T if layout[1] == "t" else b)
            c = (a @ b * bufs.scales[0] * bufs.scales[1]).astype(bufs.output_type)
            bufs.output[:c.nbytes] = c.view(np.uint8).ravel()
        return launch
    return compute


@pytest.mark.parametrize("precision,layout", [("bf16", "nt"), ("fp16", "nt"), ("fp8e4m3", "nt"), ("bf16", "nn")])
@pytest.mark.parametrize("scope", ["kernel", "device"])
def test_padding_takes_any_precision_and_layout_to_a_kernel_that_needs_aligned_rows(precision, layout, scope):
    """A shape whose rows of k are not 16-byte aligned (k = 37) runs padded: A and B copied as the layout
    stores them, byte for byte, into zeroed buffers of the padded shape, C taken out at its own type;
    the padded product verifies, the unpadded one would have broken the kernel's requirement."""
    shape = Shape(33, 40, 37)
    variant = REGISTRY["tc_tiles"]
    params = tuple((k, v[0]) for k, v in variant.axes.items())  # its defaults
    runner = LocalPoints(Settings(runs=3, warmup=1), [])
    runner.gpu = ByteGpu(3)
    inputs = gemm.make_gemm_inputs(shape, np.random.default_rng(1), None, precision, layout)
    bufs = DeviceBuffers(tuple(np.frombuffer(x.tobytes(), np.uint8).copy().view(DeviceArray) for x in (inputs.a, inputs.b)),
                         runner.gpu.alloc(shape.m * shape.n * 4), shape.m * shape.n, precision=precision, layout=layout,
                         scales=inputs.scales)
    point = Point(variant, params, shape, "cold", scope, True, dtype=precision, layout=layout)
    row = verified(runner, point, inputs, bufs, typed_kernel(precision, layout))
    assert row["status"] == "ok", row["reason"]
    padded = gemm.padded_shape(variant, params, shape)
    assert row["padded_shape"] == str(padded) and padded.k % 64 == 0
    per_launch = ["zero", "zero", "copy2d", "copy2d"] + (["copy2d"] if scope == "device" else [])
    assert runner.gpu.log[-len(per_launch):] == per_launch


def test_the_end_to_end_scope_stays_float32_nn():
    shape = Shape(33, 40, 40)
    runner = LocalPoints(Settings(runs=3, warmup=1), [])
    runner.gpu = ByteGpu(3)
    inputs = gemm.make_gemm_inputs(shape, np.random.default_rng(1), None, "bf16", "nt")
    bufs = DeviceBuffers((), None, shape.m * shape.n, precision="bf16", layout="nt")
    variant = REGISTRY["tc_tiles"]
    params = tuple((k, v[0]) for k, v in variant.axes.items())
    row = verified(runner, Point(variant, params, shape, "cold", "end_to_end", True, dtype="bf16", layout="nt"),
                                  inputs, bufs, typed_kernel("bf16", "nt"))
    assert row["status"] == "skipped" and "end_to_end is timed at fp32, layout nn only" in row["reason"]
