"""The optional capabilities an operation declares (ops/capabilities.py), asked for with isinstance."""

import ctypes

import numpy as np
import pytest

from mmbench.ops import OPERATIONS, get_op
from mmbench.ops.base import SCOPES, ScopeError
from mmbench.ops.capabilities import (BatchedCheck, CpuBaseline, LibraryBaseline, Padded, Scoped, must_pad, needs,
                                      scope_problem, scopes, timed_sequence, tune_engine)
from mmbench.sizes import Shape
from mmbench.variants import CPU_BACKENDS, REGISTRY


def test_each_operation_declares_what_it_can_do():
    declared = {name: {c.__name__ for c in (Scoped, Padded, CpuBaseline, LibraryBaseline, BatchedCheck)
                       if isinstance(op, c)} for name, op in OPERATIONS.items()}
    assert declared == {"gemm": {"Scoped", "Padded", "CpuBaseline", "LibraryBaseline"},
                        "gemv": {"BatchedCheck", "CpuBaseline", "LibraryBaseline"},
                        "transpose": {"CpuBaseline"}, "copy": {"LibraryBaseline"}}


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_baseline_has_its_operations_capability(name):
    variant = REGISTRY[name]
    op = get_op(variant.op)
    if variant.backend in CPU_BACKENDS:
        assert isinstance(op, CpuBaseline)
    elif variant.backend != "cuda":
        assert isinstance(op, LibraryBaseline)


def test_what_an_operation_lacks_is_named():
    with pytest.raises(ValueError, match="transpose has no GPU library baseline"):
        needs(get_op("transpose"), LibraryBaseline)
    with pytest.raises(ValueError, match="gemm has no sums check the batched tuner can run on the GPU"):
        needs(get_op("gemm"), BatchedCheck)
    assert needs(get_op("gemv"), BatchedCheck) is get_op("gemv")


def test_scopes_padding_and_the_tuning_engine_come_from_the_declarations():
    gemm, gemv, transpose = get_op("gemm"), get_op("gemv"), get_op("transpose")
    assert scopes(gemm) == tuple(SCOPES) and scopes(gemv) == scopes(transpose) == ("kernel",)
    assert must_pad(gemm, REGISTRY["shared_padded"]) and not must_pad(gemm, REGISTRY["shared"])
    assert not must_pad(transpose, REGISTRY["transpose_naive"])
    assert tune_engine(gemv) == "batched" and tune_engine(gemm) == tune_engine(transpose) == "points"
    assert scope_problem(transpose, REGISTRY["transpose_naive"], "kernel", True) == \
        "transpose_naive is a transpose, which has no padding"
    assert scope_problem(gemm, REGISTRY["cublas"], "kernel", True) == "cublas has no tile over C to pad to"
    assert scope_problem(gemm, REGISTRY["shared"], "end_to_end", True) is None


def test_an_operation_without_scopes_times_its_kernel_alone():
    with pytest.raises(ScopeError, match="transpose is timed as the kernel alone"):
        timed_sequence(get_op("transpose"), None, REGISTRY["transpose_naive"], (), Shape(4, 4, 0), "device", False,
                       None, None, lambda shape, bufs: None)


class _FakeCublas:
    """CuPy's cuBLAS binding, recording the calls."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, routine):
        return lambda *args: self.calls.append((routine, args)) or 7


def test_the_library_baselines_call_cublas_with_a_row_major_products_arguments(monkeypatch):
    import sys
    import types

    from mmbench.cublas import Cublas
    from mmbench.ops.base import DeviceBuffers

    lib = _FakeCublas()
    cuda = types.SimpleNamespace(cublas=lib)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(__version__="0", cuda=cuda))
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    handle = Cublas(stream_handle=5)
    one, zero = handle.one, handle.zero
    assert np.frombuffer((ctypes.c_float * 2).from_address(one), np.float32).tolist() == [1.0, 0.0]
    lib.calls.clear()
    get_op("gemm").library_call(handle, Shape(3, 4, 5), DeviceBuffers((11, 12), 13, 12))()
    get_op("gemv").library_call(handle, Shape(3, 4, 0), DeviceBuffers((21, 22), 23, 3, (24,)))()
    assert lib.calls == [("sgemm", (7, 0, 0, 4, 3, 5, one, 12, 4, 11, 5, zero, 13, 4)),
                         ("sgemv", (7, 0, 3, 4, one, 21, 3, 22, 1, zero, 23, 1))]
