"""Counter-based draws (mmbench/draws.py): values exact in their type, in range, never 0 where
symmetric, the same for a key and a draw wherever they are made, a narrower type the float32 values
rounded (FP8 divided by its scale first); the ops take them as they took numpy's."""

import numpy as np
import pytest

from mmbench import draws
from mmbench.ops import get_op
from mmbench.precisions import STORAGE, fp8_scale, quantize
from mmbench.sizes import Shape

KEY = draws.run_key([2017, 64, 64, 64])


@pytest.mark.parametrize("wide", [False, True])
def test_values_are_exact_in_range_and_never_zero(wide):
    storage = np.dtype(np.float64 if wide else np.float32)
    v = draws.host_values(KEY, 0, 200_000, "symmetric", storage)
    bits = 53 if wide else 24
    scaled = v * 2.0**bits  # an odd integer minus 2^bits: exact, never 0
    assert v.dtype == storage and (np.abs(v) < 1).all() and (v != 0).all()
    assert (scaled == np.round(scaled)).all() and (np.round(scaled).astype(np.int64) % 2 != 0).all()
    w = draws.host_values(KEY, 1, 200_000, "one_two", storage)
    assert (w >= 1).all() and (w < 2).all() and len(np.unique(w)) > 0.98 * w.size  # 2^23 values: a few repeat
    assert abs(v.mean()) < 0.01 and abs(v.std() - 1 / np.sqrt(3)) < 0.01  # uniform on (-1, 1)


def test_the_same_key_and_draw_give_the_same_values_and_another_draw_others():
    a = draws.host_values(KEY, 0, 1000, "symmetric", np.dtype(np.float32))
    assert np.array_equal(a, draws.host_values(KEY, 0, 1000, "symmetric", np.dtype(np.float32)))
    assert np.array_equal(a[:10], draws.host_values(KEY, 0, 10, "symmetric", np.dtype(np.float32)))  # elementwise
    assert not np.array_equal(a, draws.host_values(KEY, 1, 1000, "symmetric", np.dtype(np.float32)))
    assert not np.array_equal(a, draws.host_values(draws.run_key([2017, 64, 64, 65]), 0, 1000, "symmetric",
                                                   np.dtype(np.float32)))


@pytest.mark.parametrize("storage", ["float16", "bfloat16", "float8_e4m3", "float8_e5m2"])
def test_a_narrower_type_is_the_float32_values_rounded(storage):
    scale = fp8_scale(storage) if storage.startswith("float8") else 1.0
    f32 = draws.host_values(KEY, 0, 5000, "symmetric", np.dtype(np.float32))
    typed = draws.host_values(KEY, 0, 5000, "symmetric", STORAGE[storage], scale)
    assert typed.dtype == STORAGE[storage]
    assert np.array_equal(typed.view(np.uint8 if typed.itemsize == 1 else np.uint16),
                          quantize(f32, STORAGE[storage], scale).view(np.uint8 if typed.itemsize == 1 else np.uint16))
    assert np.isfinite(typed.astype(np.float64)).all()


@pytest.mark.parametrize("op, precision", [("gemm", "bf16"), ("gemm", "fp8e5m2"), ("gemv", "fp16"),
                                           ("transpose", "fp8e4m3"), ("gemm", "fp64")])
def test_the_ops_draw_their_inputs_in_their_types_from_counter_draws(op, precision):
    operation = get_op(op)
    shape = operation.parse_sizes("33x17x9" if op == "gemm" else "33x17")[0]
    first = operation.make_inputs(shape, draws.CounterDraws(KEY), precision=precision)
    again = operation.make_inputs(shape, draws.CounterDraws(KEY), precision=precision)
    assert np.array_equal(first.a.view(np.uint8), again.a.view(np.uint8))  # reproducible from the key
    assert first.a.dtype == operation.make_inputs(shape, np.random.default_rng(0), precision=precision).a.dtype
    if op == "gemm":  # A and B are two draws, B of its own type (e4m3 at fp8e5m2)
        assert first.b.dtype == STORAGE["float8_e4m3" if precision == "fp8e5m2" else first.a.dtype.name
                                        if first.a.dtype.name in STORAGE else "float64"]


def test_a_device_makes_the_draws_it_is_given():
    made = []

    def device(key, stream, count, kind, storage, scale):
        made.append((stream, count, kind, storage))
        return draws.host_values(key, stream, count, kind, storage, scale)

    d = draws.CounterDraws(KEY, device)
    inputs = get_op("gemm").make_inputs(Shape(8, 4, 2), d, precision="bf16")
    assert [(s, c, k) for s, c, k, _ in made] == [(0, 16, "symmetric"), (1, 8, "symmetric")]
    assert inputs.a.shape == (8, 2) and inputs.b.shape == (2, 4)
