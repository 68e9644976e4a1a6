import numpy as np
import pytest

from mmbench.ops.base import frobenius_tolerance, gamma
from mmbench.ops.gemm import GEMM, check_gemm, gemm_flops, gemm_min_bytes, make_gemm_inputs
from mmbench.sizes import Shape


@pytest.fixture(params=[Shape(1, 1, 1), Shape(33, 31, 65), Shape(64, 64, 1024)], ids=str)
def inputs(request):
    return make_gemm_inputs(request.param, np.random.default_rng(1))


def test_work_counts():
    s = Shape(1000, 37, 2049)
    assert gemm_flops(s) == 2 * 1000 * 37 * 2049
    assert gemm_min_bytes(s) == 4 * (1000 * 2049 + 2049 * 37 + 1000 * 37)


def test_inputs_are_random_nonzero_float32(inputs):
    assert inputs.a.dtype == inputs.b.dtype == np.float32
    assert np.count_nonzero(inputs.a) == inputs.a.size
    assert inputs.a.size < 100 or inputs.a.std() > 0.3


def test_float32_products_pass_whatever_the_summation_order(inputs):
    a, b = inputs.a, inputs.b
    ordered = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k in range(a.shape[1]):  # one product at a time, rounding after every add
        ordered = ordered + np.outer(a[:, k], b[k, :]).astype(np.float32)
    for c in (a @ b, ordered):
        check = check_gemm(c, inputs)
        assert check.ok, check.reason
        assert check.err_bound_ratio <= 1 and check.rel_err < 1e-5


def test_one_wrong_element_fails(inputs):
    c = inputs.a @ inputs.b
    c[-1, -1] += 1e-2 * max(1.0, abs(float(c[-1, -1])))
    check = check_gemm(c, inputs)
    assert not check.ok and "exceed the float32 error bound" in check.reason
    assert f"at ({c.shape[0] - 1}, {c.shape[1] - 1})" in check.reason


def test_nan_never_passes(inputs):
    c = inputs.a @ inputs.b
    c[0, 0] = np.nan
    check = check_gemm(c, inputs)
    assert not check.ok and "not finite" in check.reason


@pytest.mark.parametrize("mantissa_bits", [10, 7], ids=["tf32/fp16", "bf16"])
def test_reduced_precision_inputs_fail(mantissa_bits):
    """Inputs rounded to fewer mantissa bits (what TF32 tensor cores do) must not pass as FP32."""
    inputs = make_gemm_inputs(Shape(64, 64, 1024), np.random.default_rng(2))

    def rounded(x):
        bits = x.view(np.uint32) + np.uint32(1 << (22 - mantissa_bits))
        return (bits & np.uint32(~((1 << (23 - mantissa_bits)) - 1) & 0xFFFFFFFF)).view(np.float32)

    check = check_gemm(rounded(inputs.a) @ rounded(inputs.b), inputs)
    assert not check.ok  # tf32/fp16 by the Frobenius rule, bf16 already by the elementwise bound


def test_frobenius_tolerance_leaves_margin_over_float32():
    for k in (1, 63, 2049):
        inputs = make_gemm_inputs(Shape(40, 40, k), np.random.default_rng(k))
        check = check_gemm(inputs.a @ inputs.b, inputs)
        assert check.ok and check.rel_err < frobenius_tolerance(k) / 4


def test_wrong_shape_fails(inputs):
    assert not check_gemm(np.zeros((2, 3), np.float32), inputs).ok


def test_gamma_grows_with_k():
    assert gamma(1) == pytest.approx(2.0**-24, rel=1e-6)
    assert gamma(4096) > 4000 * gamma(1)


@pytest.mark.parametrize("shape,cls", [(Shape(2048, 2048, 2048), "2048"), (Shape(2049, 2049, 2049), "2048u"),
                                       (Shape(1000, 37, 2049), "512u"), (Shape(700, 700, 700), "512"),
                                       (Shape(1, 1, 1), "1u"), (Shape(4096, 4096, 4096), "4096")])
def test_gemm_size_classes(shape, cls):
    assert GEMM.size_class(shape) == cls


def test_every_variant_has_a_known_operation():
    from mmbench.ops import OPERATIONS, get_op
    from mmbench.variants import REGISTRY

    assert {v.op for v in REGISTRY.values()} <= set(OPERATIONS)
    with pytest.raises(ValueError, match="unknown operation 'fft'; choose from: gemm"):
        get_op("fft")


def test_the_operations_are_found_in_the_packages_modules():
    from mmbench.ops import OPERATIONS, batched_by_default, size_forms_help

    assert list(OPERATIONS) == ["gemm", "gemv", "transpose", "copy"]  # by module, then as each defines them
    assert size_forms_help() == "GEMV also: mesh, mesh:MIB, cell:IxJ, tall:/square:/wide:SPEC."
    assert batched_by_default() == "GEMV"


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_the_check_reads_the_same_in_chunks_as_whole(monkeypatch, chunk):
    """check_sums goes through the output in chunks: counts, the first non-finite output, the worst
    element and the relative error come out as over the whole array."""
    from mmbench.ops import base

    inputs = make_gemm_inputs(Shape(33, 31, 65), np.random.default_rng(3))
    good = (inputs.a.astype(np.float64) @ inputs.b.astype(np.float64)).astype(np.float32)
    wrong = good.copy()
    wrong[3, 4] += 1.0
    wrong[30, 2] += 1.0
    wrong[10, :] += 0.5
    ratio = np.abs(wrong.astype(np.float64) - inputs.reference) / inputs.bound
    worst_at = tuple(int(i) for i in np.unravel_index(int(ratio.argmax()), ratio.shape))
    poisoned = good.copy()
    poisoned[2, 30], poisoned[20, 0], poisoned[32, 30] = np.nan, np.inf, np.nan
    whole = {}
    monkeypatch.setattr(base, "CHUNK", 1 << 20)
    for name, c in (("good", good), ("wrong", wrong), ("poisoned", poisoned)):
        whole[name] = check_gemm(c, inputs)
    assert whole["good"].ok
    assert whole["wrong"].reason.startswith(f"{31 + 2} of {33 * 31} outputs exceed") and whole["wrong"].reason.endswith(f"at {worst_at}")
    assert whole["poisoned"].reason == f"3 of {33 * 31} outputs not finite (unwritten?), first at (2, 30)"
    monkeypatch.setattr(base, "CHUNK", chunk)
    for name, c in (("good", good), ("wrong", wrong), ("poisoned", poisoned)):
        check = check_gemm(c, inputs)
        assert check.ok == whole[name].ok and check.reason == whole[name].reason
        np.testing.assert_allclose([check.rel_err, check.err_bound_ratio],
                                   [whole[name].rel_err, whole[name].err_bound_ratio], rtol=1e-12)


def test_the_reference_and_bound_come_from_the_products_given():
    """make_gemm_inputs takes A.B and |A|.|B| from `products` (a runner's GPU makes them there):
    the reference is the first, the bound gamma(k) times the second; by default numpy's."""
    from mmbench.ops.gemm import host_products

    shape = Shape(5, 7, 3)
    seen = []

    def products(a, b):
        seen.append((a.dtype, b.dtype, a.shape, b.shape))
        return np.full((5, 7), 2.0), np.full((5, 7), 3.0)

    given = make_gemm_inputs(shape, np.random.default_rng(4), products)
    assert seen == [(np.float32, np.float32, (5, 3), (3, 7))]
    assert np.all(given.reference == 2.0) and np.all(given.bound == gamma(3) * 3.0)
    plain = make_gemm_inputs(shape, np.random.default_rng(4))
    a64, b64 = plain.a.astype(np.float64), plain.b.astype(np.float64)
    assert np.array_equal(given.a, plain.a) and np.array_equal(plain.reference, a64 @ b64)
    assert np.array_equal(plain.bound, gamma(3) * (np.abs(a64) @ np.abs(b64)))
    assert all(np.array_equal(x, y) for x, y in zip(host_products(plain.a, plain.b), (a64 @ b64, np.abs(a64) @ np.abs(b64))))


def test_a_runner_gives_the_gpus_products_up_once_but_retries_after_a_shape_too_big(monkeypatch):
    """Products the GPU fails to make are made on the host: a shape it had no memory for (CuPy's
    OutOfMemoryError) alone, any other failure (no CuPy, no device) for the rest of the run, with
    the reason in the metadata; the seconds of each place are counted apart."""
    from mmbench import cublas
    from mmbench.engine.plan import Settings
    from mmbench.engine.points_local import LocalPoints

    class OutOfMemoryError(Exception):
        pass

    tries = []

    def failing(a, b):
        tries.append(a.shape)
        raise (OutOfMemoryError("out of memory allocating 8 GiB") if len(tries) == 1 else RuntimeError("no CUDA device"))

    monkeypatch.setattr(cublas, "float64_products", failing)
    runner = LocalPoints(Settings(), [])
    runner.gpu = object()  # a GPU that is there
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    for _ in range(3):
        reference, magnitude = runner.float64_products(a, b)
        assert np.all(reference == 3.0) and np.all(magnitude == 3.0)
    assert len(tries) == 2 and runner.gpu_products_error == "no CUDA device"
    assert "reference_host" in runner.spent_s and "reference_gpu" not in runner.spent_s
    meta = runner.library_meta()["float64_reference"]
    assert [v for k, v in meta.items() if k.startswith("not on the GPU at ")] == ["no CUDA device"]

    monkeypatch.setattr(cublas, "float64_products", lambda a, b: (np.zeros((2, 4)), np.ones((2, 4))))
    fresh = LocalPoints(Settings(), [])
    fresh.gpu = object()
    assert np.all(fresh.float64_products(a, b)[0] == 0.0) and "reference_host" not in fresh.spent_s
    assert fresh.spent_s["reference_gpu"] >= 0 and not [k for k in fresh.library_meta()["float64_reference"]
                                                        if k.startswith("not on the GPU")]


def test_the_gpus_products_free_their_arrays_before_the_pool_is_emptied_even_when_they_fail(monkeypatch):
    """CuPy's pool can only hand blocks back to the driver once no array holds them: a failing product
    (out of memory at the second matmul) must not keep its arrays alive through the traceback."""
    import sys
    import types
    import weakref

    from mmbench import cublas

    alive, seen_at_empty = weakref.WeakSet(), []

    class Array:
        def __init__(self, n):
            self.n = n
            alive.add(self)

        def astype(self, dtype):
            return Array(self.n)

        def __matmul__(self, other):
            raise MemoryError("out of memory allocating 1 GiB")

    fake = types.SimpleNamespace(float64="f8", asarray=lambda x: Array(x.size), abs=lambda x, out: x,
                                 get_default_memory_pool=lambda: types.SimpleNamespace(
                                     free_all_blocks=lambda: seen_at_empty.append(len(alive))))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    with pytest.raises(MemoryError) as raised:
        cublas.float64_products(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32))
    assert seen_at_empty == [0] and cublas.out_of_memory(raised.value)
    assert not cublas.out_of_memory(RuntimeError("no CUDA device"))
    assert cublas.out_of_memory(RuntimeError("CUBLAS_STATUS_ALLOC_FAILED"))
