"""GPU tests (pytest -m gpu) of precisions and layouts: the vendor library at every precision and
layout at GEMM's awkward shapes, verified against float64 of the inputs it received; outputs of every
type poisoned with NaN; and kernels with a planted defect, each caught by its precision's check."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mmbench.ops import get_op
from mmbench.precisions import LAYOUTS, PRECISIONS
from mmbench.variants import REGISTRY, files, parse_params, registry

from test_gpu import _run  # noqa: E402  (tests/ is on the path: pytest's rootdir-relative imports)

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def library_rows(gpu):
    return _run(gpu, [REGISTRY["cublas"]], get_op("gemm").tested_sizes + ",256,1024x512x2048",
                dtypes=tuple(PRECISIONS), layouts=tuple(LAYOUTS))


@pytest.mark.parametrize("precision", list(PRECISIONS))
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_library_at_every_precision_and_layout(library_rows, precision, layout):
    rows = [r for r in library_rows if (r["dtype"], r["layout"]) == (precision, layout)]
    assert len(rows) == 10
    for r in rows:
        where = f"{precision} {layout} at {r['m']}x{r['n']}x{r['k']}: {r['reason']}"
        if precision.startswith("fp8"):
            # cuBLASLt's FP8 on Hopper: K-major A and B (layout nt), k and leading dimensions multiples of 16
            # bytes; elsewhere a skipped row that says so, never a wrong one
            assert r["status"] in ("ok", "skipped"), where
            assert r["status"] == "ok" or "cuBLASLt" in r["reason"], where
        else:
            assert r["status"] == "ok", where
        if r["status"] == "ok":
            assert 0 <= r["err_bound_ratio"] <= 1 and r["gflops_median"] > 0, where
    if precision.startswith("fp8") and layout == "nt":  # FP8 runs where its shape lets it
        assert {(r["m"], r["n"], r["k"]) for r in rows if r["status"] == "ok"} >= {(256, 256, 256), (1024, 512, 2048)}


@pytest.mark.parametrize("precision", list(PRECISIONS))
def test_poison_fills_every_output_type_with_nan(gpu, precision):
    dtype = PRECISIONS[precision].c_type
    buf = gpu.alloc(64 * dtype.itemsize)
    try:
        gpu.poison(buf, 64, dtype)
        assert np.isnan(gpu.download(buf, (64,), dtype).astype(np.float64)).all()
    finally:
        buf.free()


PLANTED = Path(__file__).resolve().parent / "planted" / "planted.toml"
DEFECTS = {  # variant -> what its check must say
    "planted_bf16_sum_in_bf16": "bf16 error bound", "planted_tf32_claims_fp32": "float32",
    "planted_fp8_without_scale_a": "fp8e4m3 error bound", "planted_b_read_as_nn": "float32 error bound"}


@pytest.fixture(scope="module")
def planted_rows(gpu):
    """Each planted kernel (tests/planted/planted.cu) at 512 (k long enough for reduced accumulation to
    show), at the precision and layout it declares."""
    before = dict(registry._ENTRIES)
    try:
        rows = [r for v in files.use([PLANTED]) for r in _run(gpu, [v], "512", dtypes=v.dtypes, layouts=v.layouts)]
    finally:
        registry._ENTRIES.clear()
        registry._ENTRIES.update(before)
    return {r["variant"]: r for r in rows}


@pytest.mark.parametrize("name", list(DEFECTS))
def test_each_precisions_check_catches_its_planted_defect(planted_rows, name):
    r = planted_rows[name]
    assert r["status"] == "wrong", (name, r["status"], r["reason"])
    assert DEFECTS[name] in r["reason"]
    # in units of the bound, or of the tolerance where the elements stay within theirs
    assert r["err_bound_ratio"] > 1 or "reduced precision?" in r["reason"]


def test_the_tf32_kernel_passes_as_what_it_is(planted_rows):
    r = planted_rows["planted_tf32_honest"]
    assert r["status"] == "ok", r["reason"]
    assert r["rel_err"] == planted_rows["planted_tf32_claims_fp32"]["rel_err"]  # the same arithmetic, judged by another rule


# -- the typed built-in kernels: every precision and layout each takes, at its operation's awkward shapes --
# (the libraries: test_library_at_every_precision_and_layout, test_typed_gemv_adds_narrow_partial_sums_in_float32)
TYPED = [v for v in REGISTRY.values() if v.backend == "cuda" and (len(v.dtypes) > 1 or len(v.layouts) > 1)]
TYPED_CASES = [(v.name, d, lay) for v in TYPED for d in v.dtypes for lay in v.layouts]


@pytest.fixture(scope="module")
def typed_rows(gpu):
    out = {}
    for v in TYPED:
        for r in _run(gpu, [v], get_op(v.op).tested_sizes, dtypes=v.dtypes, layouts=v.layouts):
            out.setdefault((r["variant"], r["dtype"], r["layout"]), []).append(r)
    return out


@pytest.mark.parametrize("name,dtype,layout", TYPED_CASES, ids=["-".join(c) for c in TYPED_CASES])
def test_typed_kernels_are_correct_at_every_precision_and_layout(typed_rows, name, dtype, layout):
    op = get_op(REGISTRY[name].op)
    rows = typed_rows.get((name, dtype, layout), [])
    assert len(rows) == len(op.parse_sizes(op.tested_sizes))
    variant = REGISTRY[name]
    for r in rows:
        shape = {"m": r["m"], "n": r["n"], "k": r["k"]}
        if variant.unmet(parse_params(r["params"]), shape):  # a shape it does not take: skipped, saying why
            assert r["status"] == "skipped" and " requires " in r["reason"], r
            continue
        assert r["status"] == "ok", f"{name} {dtype} {layout} at {r['m']}x{r['n']}x{r['k']}: {r['reason']}"
        assert 0 <= r["err_bound_ratio"] <= 1 and ((r["gflops_median"] or 0) > 0 or (r["gbytes_per_s"] or 0) > 0)


def test_typed_gemv_adds_narrow_partial_sums_in_float32(gpu):
    """gemv_tuned at fp16 and bf16 with a grid of several columns of blocks (partial sums): verified,
    as are the other two designs; the library beside it at every GEMV precision."""
    tuned = REGISTRY["gemv_tuned"]
    for kernel in (0, 1, 2):
        rows = _run(gpu, [tuned, REGISTRY["cublas_gemv"]], "37x5000,3001x3,2000x4097",
                    {"KERNEL": (kernel,), "BLOCKSIZE": (64,), "WORKSIZE_N": (2,)}, dtypes=("fp64", "fp16", "bf16"))
        bad = [(r["variant"], r["dtype"], r["m"], r["n"], r["reason"]) for r in rows if r["status"] != "ok"]
        assert len(rows) == 18 and not bad, bad


# -- inputs drawn on the GPU in their own types -------------------------------------------------------------
@pytest.mark.parametrize("storage", ["float64", "float32", "float16", "bfloat16", "float8_e4m3", "float8_e5m2"])
@pytest.mark.parametrize("kind", ["symmetric", "one_two"])
def test_the_gpus_draws_are_the_hosts_bit_for_bit(gpu, storage, kind):
    from mmbench import draws
    from mmbench.precisions import STORAGE, fp8_scale

    scale = fp8_scale(storage) if storage.startswith("float8") else 1.0
    key = draws.run_key([2017, 1000, 37, 2049])
    made = gpu.draw(key, 3, 100_003, kind, STORAGE[storage], scale)
    host = draws.host_values(key, 3, 100_003, kind, STORAGE[storage], scale)
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[host.itemsize]
    assert made.dtype == host.dtype and np.array_equal(made.view(width), host.view(width))
