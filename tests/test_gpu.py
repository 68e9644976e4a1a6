"""GPU tests (pytest -m gpu): every variant at awkward sizes, verified against float64."""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType

import pytest
from click.testing import CliRunner

from mmbench.cli import main
from mmbench.ops import OPERATIONS, get_op
from mmbench.results import read_results
from mmbench.schema import samples_of
from mmbench.engine.plan import plan, Selection, Settings
from mmbench.engine.points_local import LocalPoints
from mmbench.variants import REGISTRY, Variant, format_params, parse_params, tuning_space

pytestmark = pytest.mark.gpu

BLOCKS = (8, 16, 32)
# Those that take float32 at layout nn (every kernel but the tensor-core ones: test_gpu_precisions.py has those)
GPU_VARIANTS = tuple(v for v in REGISTRY.values() if v.on_gpu and "fp32" in v.dtypes and "nn" in v.layouts)
CASES = [(v.name, b) for v in GPU_VARIANTS for b in (BLOCKS if "BLOCK" in v.axes else (None,))]


def _run(gpu, variants, sizes, overrides=None, scopes=("kernel",), pads=(False,), dtypes=("fp32",), layouts=("nn",),
         **settings):
    """The rows of one run of these points; overrides a list of dicts: a selection each, in one run (its
    kernels compiled side by side, as a sweep does)."""
    each = overrides if isinstance(overrides, list) else [overrides or {}]
    points = plan([Selection(tuple(variants), sizes, o, scopes=scopes, pads=pads, dtypes=dtypes, layouts=layouts)
                   for o in each], settings.pop("cache", "cold"))
    runner = LocalPoints(Settings(**{"runs": 3, "warmup": 1, **settings}), points, gpu_factory=lambda: gpu)
    rows: list[dict] = []
    try:
        runner.run(points, rows.append)
    finally:
        runner.close()
    return rows


@pytest.fixture(scope="module")
def awkward_rows(gpu):
    """Every GPU variant at the awkward shapes its operation names."""
    by_case: dict[tuple, list[dict]] = {}
    for name, op in OPERATIONS.items():
        variants = [v for v in GPU_VARIANTS if v.op == name]
        for r in _run(gpu, variants, op.tested_sizes, {"BLOCK": BLOCKS}) if variants else ():
            by_case.setdefault((r["variant"], dict(parse_params(r["params"])).get("BLOCK")), []).append(r)
    return by_case


@pytest.mark.parametrize("name,block", CASES)
def test_variant_correct_at_awkward_sizes(awkward_rows, name, block):
    rows = awkward_rows[(name, block)]
    op = get_op(REGISTRY[name].op)
    assert len(rows) == len(op.parse_sizes(op.tested_sizes))
    for r in rows:
        assert r["status"] == "ok", f"{name} BLOCK={block} at {r['m']}x{r['n']}x{r['k']}: {r['reason']}"
        assert 0 <= r["err_bound_ratio"] <= 1
        assert r["time_ms_median"] > 0 and len(samples_of(r["time_ms_samples"])) == 3


@pytest.mark.parametrize("name", ["tile2d", "vec4", "warptile", "pipelined", "dbuf", "multistage", "kmajor",
                                  "register_tiling"])
def test_ladder_sample_of_the_tuning_space_is_correct(gpu, name):
    """Beyond the defaults: a seeded sample of each space at aligned and unaligned shapes."""
    import random

    variant = REGISTRY[name]
    sample = random.Random(7).sample(tuning_space(variant), 3)
    rows = _run(gpu, [variant], "65,128,1000x37x2049", [{k: (v,) for k, v in params} for params in sample])
    assert len(rows) == 9 and len({r["params"] for r in rows}) == 3
    assert [r["status"] for r in rows] == ["ok"] * 9, [(r["params"], r["m"], r["n"], r["k"], r["reason"]) for r in rows]


@pytest.mark.parametrize("name", ["transpose_tiled", "transpose_vec", "transpose_swizzle", "transpose_pipe", "gemv_split",
                                  "gemv_rows", "gemv_versatile", "gemv_columns", "gemv_wide", "gemv_tuned"])
def test_tuning_space_sample_is_correct_at_awkward_shapes(gpu, name):
    """Transposes and GEMVs: a seeded sample of each space at the operation's awkward shapes."""
    import random

    variant = REGISTRY[name]
    op = get_op(variant.op)
    sample = random.Random(7).sample(tuning_space(variant), 3)
    rows = _run(gpu, [variant], op.tested_sizes, [{k: (v,) for k, v in params} for params in sample])
    assert len({r["params"] for r in rows}) == 3
    assert all(r["status"] == "ok" for r in rows), [(r["params"], r["m"], r["n"], r["reason"]) for r in rows
                                                   if r["status"] != "ok"]


SCOPE_SHAPES = "1,33,1x97x5,97x1x64,1000x37x2049"


def test_every_scope_padded_or_not_is_correct_on_the_gpu(gpu):
    """Issue 15: the kernel alone, with the device padding, and end to end, on the inputs as given
    and padded, for Lameski's two approaches and the fastest kernel."""
    from mmbench.ops.base import SCOPES

    variants = [REGISTRY[n] for n in ("shared_padded", "shared", "dbuf", "register_tiling")]
    rows = _run(gpu, variants, SCOPE_SHAPES, {"BLOCK": (32,)}, scopes=tuple(SCOPES), pads=(False, True))
    bad = [(r["variant"], r["scope"], r["pad"], r["m"], r["n"], r["k"], r["reason"]) for r in rows if r["status"] != "ok"]
    assert not bad
    shapes = len(get_op("gemm").parse_sizes(SCOPE_SHAPES))
    assert len(rows) == shapes * len(SCOPES) * (1 + 2 * 3)  # shared_padded is always padded
    padded = [r for r in rows if r["pad"]]
    assert all(r["padded_shape"] for r in padded) and not any(r["padded_shape"] for r in rows if not r["pad"])
    by = {(r["variant"], r["scope"], r["pad"], r["m"], r["n"], r["k"]): r["time_ms_median"] for r in rows}
    # end to end moves the data both ways around the kernel: never faster than the kernel alone
    for (v, scope, pad, *shape), t in by.items():
        if scope == "end_to_end":
            assert t > by[(v, "kernel", pad, *shape)], (v, pad, shape)


@pytest.mark.parametrize("splits,vec4", [(1, 0), (2, 1), (3, 0), (4, 1), (1, 2), (3, 2)])
def test_split_k_is_correct_at_awkward_sizes(gpu, splits, vec4):
    """Layers that add into C: k shorter than the layers (some add nothing), odd k, borders;
    with float4 loads where rows allow (VEC4 = 1), with coalesced single floats (VEC4 = 0) and with B
    by cp.async (VEC4 = 2)."""
    rows = _run(gpu, [REGISTRY["dbuf"]], "1,7,31,65,1000x37x2049,37x1000x65,128x128x9,256x260x68",
                {"SPLITK": (splits,), "VEC4": (vec4,)})
    assert [r["status"] for r in rows] == ["ok"] * 8, [(r["m"], r["n"], r["k"], r["reason"]) for r in rows]


@pytest.mark.parametrize("name", ["multistage", "kmajor"])
@pytest.mark.parametrize("splits", [1, 2, 3, 4])
def test_cp_async_kernels_split_k_is_correct_at_awkward_and_unaligned_sizes(gpu, name, splits):
    """multistage's and kmajor's products, whole (SPLITK = 1) and in layers that add into C: k shorter than
    the layers (some add nothing), rows aligned (16-byte cp.async) and not (4-byte: K or N odd), a mid size
    of few tiles (895) and an odd one (2047), at the default 256 x 128 tile and a 64 x 64 one."""
    sizes = "1,7,31,65,895,2047,1000x37x2049,37x1000x65,128x128x9,256x260x68"
    small = {"BM": (64,), "BN": (64,), "BK": (8,), "WM": (32,), "WN": (32,), "TM": (4,), "TN": (8,), "THREADS": (128,)}
    rows = _run(gpu, [REGISTRY[name]], sizes, [{"SPLITK": (splits,)}, {**small, "SPLITK": (splits,)}])
    assert [r["status"] for r in rows] == ["ok"] * 20, [(r["params"], r["m"], r["n"], r["k"], r["reason"]) for r in rows]


@pytest.mark.parametrize("stage,splits", [(0, 1), (1, 3)])
def test_thin_remainders_as_strips_are_correct(gpu, stage, splits):
    """STRIP = 4 (128 x 128 tiles): 1 to 4 rows and/or columns past the last whole tile go to the
    strip kernels (beside the tiled kernel); C thinner than a tile is all strip; split-K adds into
    C around them; k longer than the column strip's shared-memory chunk."""
    sizes = "1,3,7,129,2049,132x131x65,131x132x1000,4x300x77,300x4x77,1000x37x2049,256x260x68,260x132x4100"
    rows = _run(gpu, [REGISTRY["dbuf"]], sizes, {"STRIP": (4,), "STAGE": (stage,), "SPLITK": (splits,)})
    assert [r["status"] for r in rows] == ["ok"] * 12, [(r["m"], r["n"], r["k"], r["reason"]) for r in rows]


@pytest.mark.parametrize("vec4,strip,order", [(1, 4, 1), (0, 0, 0), (2, 4, 0)])
def test_stream_k_is_correct_at_awkward_sizes(gpu, vec4, strip, order):
    """SK = 1: a persistent grid shares the (tile, k-tile) iterations out; shares that start or end
    inside a tile add into C. Fewer iterations than blocks (1, 7), odd k, C's edges, strips beside."""
    sizes = "1,7,65,129,2049,132x131x65,1000x37x2049,37x1000x65,300x4x77,256x260x68,260x132x4100"
    rows = _run(gpu, [REGISTRY["dbuf"]], sizes, {"SK": (1,), "STAGE": (1,), "VEC4": (vec4,), "STRIP": (strip,),
                                                   "ORDER": (order,)})
    assert [r["status"] for r in rows] == ["ok"] * 11, [(r["m"], r["n"], r["k"], r["reason"]) for r in rows]


# 64-thread blocks (two warps), the ladder's smallest: a thread then loads more of each tile, the
# strips and the staged edge stores run beside fewer threads.
SMALL_BLOCKS = (
    "BK=8,BM=64,BN=64,MINB=1,ORDER=1,SK=0,SPLITK=3,STAGE=1,STRIP=4,THREADS=64,TM=4,TN=4,VEC4=1,WM=32,WN=64,WNITER=2",
    "BK=16,BM=64,BN=64,MINB=1,ORDER=0,SK=0,SPLITK=4,STAGE=0,STRIP=0,THREADS=64,TM=8,TN=8,VEC4=0,WM=64,WN=32,WNITER=1",
    "BK=8,BM=64,BN=128,MINB=1,ORDER=1,SK=1,SPLITK=1,STAGE=1,STRIP=4,THREADS=64,TM=8,TN=4,VEC4=1,WM=64,WN=64,WNITER=2",
    "BK=8,BM=64,BN=128,MINB=1,ORDER=1,SK=0,SPLITK=3,STAGE=1,STRIP=4,THREADS=64,TM=8,TN=4,VEC4=2,WM=64,WN=64,WNITER=2",
)
AWKWARD = "1,7,31,33,63,65,127,131,1x97x5,97x1x64,1000x37x2049,37x1000x65,256x260x68,300x200x77"


@pytest.mark.parametrize("params", SMALL_BLOCKS)
def test_64_thread_blocks_are_correct_at_awkward_sizes(gpu, params):
    """THREADS = 64: split-K, stream-K, strips, float4 and single-float loads, staged and direct
    edge stores, at odd shapes, 1 x N and N x 1 included."""
    rows = _run(gpu, [REGISTRY["dbuf"]], AWKWARD, {k: (v,) for k, v in parse_params(params)})
    assert [r["status"] for r in rows] == ["ok"] * 14, [(r["m"], r["n"], r["k"], r["reason"]) for r in rows]


def test_64_thread_kmajor_is_correct_at_awkward_sizes(gpu):
    """64 threads, a 64 x 128 tile: a thread's B elements (unaligned rows) lie along a row of the tile as well
    as down it; split-K's layers add."""
    params = "BK=8,BM=64,BN=128,MINB=1,SPLITK=2,STAGES=3,THREADS=64,TM=16,TN=8,WM=64,WN=64"
    rows = _run(gpu, [REGISTRY["kmajor"]], AWKWARD, {k: (v,) for k, v in parse_params(params)})
    assert [r["status"] for r in rows] == ["ok"] * 14, [(r["m"], r["n"], r["k"], r["reason"]) for r in rows]


# kmajor's C through shared memory (unaligned rows): 2, 4 and 16 lanes along a warp's row (2 and 4: padded region
# rows; 8 lanes: test_64_thread_kmajor), both places of the copies, split-K; and a tile whose regions would not fit
# in its stages (stored directly)
KMAJOR_STAGED = (
    "BK=8,BM=64,BN=64,COPY_AT=0,MINB=1,SPLITK=1,STAGES=3,THREADS=64,TM=4,TN=16,WM=64,WN=32",
    "BK=8,BM=128,BN=64,COPY_AT=1,MINB=1,SPLITK=2,STAGES=4,THREADS=128,TM=8,TN=8,WM=64,WN=32",
    "BK=8,BM=64,BN=128,COPY_AT=1,MINB=1,SPLITK=3,STAGES=2,THREADS=128,TM=16,TN=4,WM=32,WN=64",
    "BK=8,BM=128,BN=128,COPY_AT=1,MINB=1,SPLITK=2,STAGES=2,THREADS=256,TM=4,TN=16,WM=64,WN=32",
)


@pytest.mark.parametrize("params", KMAJOR_STAGED)
def test_kmajor_staged_stores_are_correct_at_awkward_sizes(gpu, params):
    rows = _run(gpu, [REGISTRY["kmajor"]], AWKWARD, {k: (v,) for k, v in parse_params(params)})
    assert [r["status"] for r in rows] == ["ok"] * 14, [(r["m"], r["n"], r["k"], r["reason"]) for r in rows]


def test_64_thread_multistage_is_correct_at_awkward_sizes(gpu):
    params = "BK=16,BM=64,BN=64,MINB=1,STAGES=3,THREADS=64,TM=16,TN=4,WM=32,WN=64"
    rows = _run(gpu, [REGISTRY["multistage"]], AWKWARD, {k: (v,) for k, v in parse_params(params)})
    assert [r["status"] for r in rows] == ["ok"] * 14, [(r["m"], r["n"], r["k"], r["reason"]) for r in rows]


# dbuf configurations that spill registers with nvcc 13.0 for sm_90 (the first that still does is used);
# every parameter is named, so that the compile check and the run build the same kernel
SPILLERS = tuple(f"{p},ORDER=0,SK=0" for p in (
    "BK=16,BM=256,BN=64,MINB=2,SPLITK=1,STAGE=0,STRIP=0,THREADS=256,TM=4,TN=8,VEC4=0,WM=64,WN=32,WNITER=2",
    "BK=16,BM=64,BN=256,MINB=2,SPLITK=1,STAGE=1,STRIP=0,THREADS=256,TM=8,TN=8,VEC4=0,WM=64,WN=32,WNITER=1",
    "BK=8,BM=128,BN=128,MINB=2,SPLITK=2,STAGE=1,STRIP=0,THREADS=256,TM=4,TN=4,VEC4=1,WM=64,WN=32,WNITER=2"))


def test_tuner_skips_configurations_that_spill(gpu):
    from mmbench import source

    dbuf = REGISTRY["dbuf"]
    spills = next((p for p in map(parse_params, SPILLERS) if source.compile_report(dbuf, p, gpu.facts.arch).spills), None)
    assert spills is not None, "none of SPILLERS spills any more: list one that does"
    rows = _run(gpu, [dbuf], "128", {k: (v,) for k, v in spills}, skip_spills=True)
    assert rows[0]["status"] == "skipped" and "local memory" in rows[0]["reason"], rows[0]


FAULTY = Path(__file__).parent / "kernels"


@pytest.mark.parametrize("name,needle", [("drops_last_k", "exceed the float32 error bound"),
                                         ("skips_last_row", "not finite")])
def test_wrong_kernel_is_reported_wrong(gpu, name, needle):
    faulty = Variant(name=name, backend="cuda", label=name, description="deliberately wrong", family="faulty",
                     axes=MappingProxyType({"BLOCK": (16,)}), source_dir=FAULTY)
    rows = _run(gpu, [faulty], "65,1000x37x2049")
    assert [r["status"] for r in rows] == ["wrong", "wrong"]
    assert all(needle in r["reason"] for r in rows)
    assert all("time_ms_median" not in r for r in rows)  # a wrong point is never timed


def test_block_over_the_thread_limit_is_a_skipped_row(gpu):
    rows = _run(gpu, [REGISTRY["shared"]], "65", {"BLOCK": (64,)})
    assert rows[0]["status"] == "skipped"
    assert "4096 threads per block exceed the device limit of 1024" in rows[0]["reason"]


@pytest.mark.parametrize("cache", ["cold", "hot"])
def test_cache_modes_time_every_sample(gpu, cache):
    rows = _run(gpu, [REGISTRY["best"]], "256", cache=cache, runs=70)  # more than one hold batch
    (row,) = rows
    assert row["status"] == "ok" and row["cache"] == cache
    samples = samples_of(row["time_ms_samples"])
    assert len(samples) == 70 and min(samples) > 0
    assert row["sm_clock_mhz_after"] is None or row["sm_clock_mhz_after"] > 0


def test_cli_smoke_run_writes_csv_and_metadata(tmp_path):
    out = tmp_path / "smoke.csv"
    result = CliRunner().invoke(main, ["run", "--variant", "best,cublas", "--sizes", "63:129", "--runs", "3",
                                       "--output", str(out)])
    assert result.exit_code == 0, result.output
    df = read_results(out)
    assert len(df) == 18 and (df.status == "ok").all()
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert meta["state"] == "finished" and meta["gpu"]["sm_count"] > 0
    assert meta["cublas"]["math_mode"] == 2
    kernel = meta["kernels"]["best[BLOCK=32]"]
    assert kernel["ptxas_registers"] == kernel["registers"] and kernel["ptxas_spill_store_bytes"] == 0


def test_a_shape_beyond_free_gpu_memory_is_a_skipped_row(gpu, monkeypatch):
    """The GPU points of a shape whose A, B and C exceed the free memory are skipped with the
    bytes needed and free; the CPU point of the same shape still runs."""
    free = gpu.free_memory()
    assert free > 1 << 30
    monkeypatch.setattr(type(gpu), "free_memory", lambda self: 4 * 3 * 64 * 64 - 1)
    rows = _run(gpu, [REGISTRY["best"], REGISTRY["blas"]], "32,64")
    status = {(r["variant"], r["m"]): (r["status"], r["reason"]) for r in rows}
    assert status[("best", 32)][0] == status[("blas", 64)][0] == "ok"
    assert status[("best", 64)] == ("skipped", "needs 48.0 KiB of GPU memory for its inputs and output; 48.0 KiB free")


def test_cli_resume_on_the_gpu_keeps_history_and_refuses_other_settings(tmp_path):
    out = tmp_path / "r.csv"
    first = CliRunner().invoke(main, ["run", "-v", "best", "-s", "63:97", "--runs", "3", "-o", str(out)])
    assert first.exit_code == 0, first.output
    lines = out.read_text().rstrip("\n").split("\n")
    out.write_text("\n".join(lines[:-1] + [lines[-1][:40]]))  # a crash mid-row
    clash = CliRunner().invoke(main, ["run", "-v", "best", "-s", "63:129", "--runs", "5", "-o", str(out), "--resume"])
    assert clash.exit_code == 2 and "measured with runs=3; this resume asks for runs=5" in clash.output
    again = CliRunner().invoke(main, ["run", "-v", "best", "-s", "63:129", "-o", str(out), "--resume"])
    assert again.exit_code == 0, again.output
    assert "set aside in" in again.output
    df = read_results(out)
    assert sorted(df.n) == [63, 64, 65, 95, 96, 97, 127, 128, 129] and (df.status == "ok").all()
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert [i["status_counts"] for i in meta["invocations"]] == [{"ok": 6}, {"ok": 4}]
    assert meta["status_counts"] == {"ok": 9} and meta["gpu"]["sm_count"] > 0


def test_batched_tuner_verifies_on_the_gpu_and_catches_a_wrong_kernel(gpu, tmp_path):
    """The batched engine at awkward GEMV shapes: every design of gemv_tuned is verified by the GPU
    check at every shape it is timed at (threads along columns, KERNEL 1, is skipped where m >
    BLOCKSIZE), with a positive time, and KERNEL 2's launches, one after another on one workspace,
    each leave its arrival counts at zero; a copy of the kernel that leaves a row unwritten is
    caught, as one that adds a wrong term is."""
    import dataclasses

    from mmbench.engine import batched_local
    from mmbench.ops.gemv import make_gemv_inputs
    from mmbench.sizes import Shape
    import numpy as np

    tuned = REGISTRY["gemv_tuned"]
    configs = [tuple(sorted({"KERNEL": k, "BLOCKSIZE": b, "WORKSIZE_M": wm, "WORKSIZE_N": wn}.items()))
               for k in (0, 1, 2) for b, wm, wn in ((32, 1, 1), (64, 3, 2), (256, 8, 8))]
    shapes = [Shape(1, 1, 0), Shape(1, 4097, 0), Shape(4097, 1, 0), Shape(63, 65, 0), Shape(257, 3001, 0),
              Shape(3001, 3, 0), Shape(997, 1009, 0)]
    tuner = batched_local.BatchedTuner(gpu, tuned, configs, "cold", "read")
    for s in shapes:
        got = tuner.shape(s, make_gemv_inputs(s, np.random.default_rng(1)))
        expected = ["skipped" if get_op("gemv").tuning_skip(tuned, c, s) else "ok" for c in configs]
        assert [g.status for g in got] == expected, [(s, c, g.reason) for c, g in zip(configs, got) if g.status != "ok"]
        assert all(g.time_ms > 0 and 0 <= g.err_bound_ratio <= 1 for g in got if g.status == "ok")
        assert expected.count("ok") >= 6
    (tmp_path / "gemv").mkdir()
    text = (Path(__file__).parents[1] / "kernels/gemv/tuned.cu").read_text()
    # a row left unwritten (NaN, or 0 where the launch zeroes y first), then a wrong term in a sum
    for bug in ("if (threadIdx.x == 0 && blockIdx.x == 0) return;", "if (threadIdx.x == 0 && blockIdx.x == 0) x += 1;"):
        faulty = text.replace("(GEMV_WORK_ARGS)\n{\n", "(GEMV_WORK_ARGS)\n{\n    " + bug + "\n")
        assert faulty != text
        (tmp_path / "gemv" / "tuned.cu").write_text(faulty)
        variant = dataclasses.replace(tuned, source_dir=tmp_path)
        tuner = batched_local.BatchedTuner(gpu, variant, configs[:3], "hot", "read")
        got = tuner.shape(Shape(300, 500, 0), make_gemv_inputs(Shape(300, 500, 0), np.random.default_rng(2)))
        assert [g.status for g in got] == ["wrong"] * 3, got
        assert all("not finite" in g.reason or "error bound" in g.reason for g in got), got


def test_the_one_pass_wide_kernel_adds_this_launchs_partial_sums_and_leaves_its_counts_at_zero(gpu):
    """gemv_tuned's KERNEL 2: before each launch the workspace's partial sums are poisoned with NaN
    (its arrival counts left as the last launch left them), so y is right only if each row of
    blocks' last block read the sums this launch wrote; after each launch every count is zero."""
    import math

    import numpy as np

    from mmbench.device import NAN_BITS
    from mmbench.ops.gemv import make_gemv_inputs
    from mmbench.sizes import Shape

    op, tuned = get_op("gemv"), REGISTRY["gemv_tuned"]
    configs = [tuple(sorted({"KERNEL": 2, "BLOCKSIZE": b, "WORKSIZE_M": wm, "WORKSIZE_N": wn}.items()))
               for b, wm, wn in ((32, 1, 1), (64, 3, 2), (256, 8, 8))]
    for shape in (Shape(997, 5003, 0), Shape(33, 100003, 0), Shape(4097, 257, 0), Shape(1, 70000, 0)):
        inputs = make_gemv_inputs(shape, np.random.default_rng(3))
        bufs = op.upload(gpu, inputs)
        parts, counts = shape.m * math.ceil(shape.n / 32), math.ceil(shape.m / 32)
        work = bufs.scratch[0]
        try:
            for params in configs:
                launch = op.kernel(gpu, tuned, params, shape, bufs)
                for _ in range(3):
                    gpu.drv.memset_d32(work, NAN_BITS, parts)
                    gpu.poison(bufs.output, shape.m)
                    launch()
                    gpu.synchronize()
                    check = op.check(gpu.download(bufs.output, (shape.m,)), inputs)
                    assert check.ok, (shape, params, check.reason)
                    left = np.empty(counts, np.uint32)
                    gpu.drv.memcpy_dtoh(left, int(work) + 4 * parts)
                    assert not left.any(), (shape, params, left[left != 0][:5])
        finally:
            bufs.free()


def test_cli_batched_tune_fills_the_cache_by_cell_and_run_picks_each_shapes_cell(tmp_path):
    """mmbench tune --engine batched over two cells: a row per configuration and cell in the CSV.gz,
    one cache entry per cell; mmbench run -v gemv_tuned then takes each shape's own cell's entry
    (and the nearest cell's for a shape outside them), verified."""
    import gzip

    cache = tmp_path / "cache.json"
    out = tmp_path / "t" / "t.csv"
    result = CliRunner().invoke(main, ["tune", "-v", "gemv_tuned", "-s", "cell:3x14,cell:14x3", "--strategy", "random",
                                       "--budget", "12", "-o", str(out), "--tuning-cache", str(cache)])
    assert result.exit_code == 0, result.output
    assert not out.exists() and (tmp_path / "t" / "t.csv.gz").exists()
    with gzip.open(tmp_path / "t" / "t.csv.gz", "rt") as f:
        lines = f.read().splitlines()
    assert len(lines) == 1 + 2 * 12
    entries = json.loads(cache.read_text())
    assert sorted(e["size_class"] for e in entries.values()) == ["cell03x14", "cell14x03"]
    run_out = tmp_path / "r.csv"
    result = CliRunner().invoke(main, ["run", "-v", "gemv_tuned", "-s", "8x4000,4000x8,20x20", "-o", str(run_out),
                                       "--tuning-cache", str(cache), "--runs", "2"])
    assert result.exit_code == 0, result.output
    rows = read_results(run_out)
    by_cell = {e["size_class"]: e["params"] for e in entries.values()}
    assert set(rows.status) == {"ok"}
    assert rows[rows.m == 8].params.iloc[0] == by_cell["cell03x14"]
    assert rows[rows.m == 4000].params.iloc[0] == by_cell["cell14x03"]


def test_a_run_from_an_unrelated_folder_takes_the_shipped_tuning(gpu, tmp_path, monkeypatch):
    """The issue's H100 measurement: the same command gave dbuf 106.6 % of cuBLAS from the checkout
    and 63.9 % from /tmp, silently untuned. From any folder, the shipped cache now gives dbuf its
    tuned parameters (this GPU's entries, or a GPU's of its architecture and SM count), the rows
    carry them and the metadata says which cache gave them."""
    from mmbench import places, source
    from mmbench.tuning import cache as tuning_cache
    from mmbench.device import device_identity
    from mmbench.sizes import Shape

    dbuf, shape = REGISTRY["dbuf"], Shape(1024, 1024, 1024)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(places.CACHE_ENV, str(tmp_path / "no-cache-yet.json"))  # the user has tuned nothing
    wanted = tuning_cache.lookup(tuning_cache.read_caches(), device_identity(), dbuf, source.source_hash(dbuf), shape)
    if wanted is None:
        pytest.skip(f"the shipped cache has no dbuf entry for {device_identity()} or a GPU of its kind")
    result = CliRunner().invoke(main, ["run", "-v", "dbuf", "-s", "1024", "--runs", "2", "-o", "r.csv"])
    assert result.exit_code == 0, result.output
    assert f"dbuf: tuned parameters from the shipped cache {places.SHIPPED_CACHE}" in result.output
    rows = read_results(tmp_path / "r.csv")
    assert list(rows.params) == [format_params(wanted.params)] and list(rows.status) == ["ok"]
    meta = json.loads((tmp_path / "r.meta.json").read_text())
    (record,) = meta["invocations"][-1]["tuning_caches"]["variants"]["dbuf"]
    assert record == {"cache": str(places.SHIPPED_CACHE), "origin": tuning_cache.SHIPPED, "measured_on": wanted.device,
                      "borrowed": wanted.borrowed, "shapes": 1}


def test_a_cluster_of_the_visible_gpus_runs_a_sweep_and_tags_each_row_with_its_gpu(tmp_path, capfd):
    """Issue 16: `--cluster local`, one dask-cuda worker per visible GPU (one or two); every point
    verified once, rows naming the GPU (UUID) and host they ran on, metadata every worker; the
    workers free their GPU objects before they exit (PyCUDA warns of any it could not)."""
    pytest.importorskip("dask_cuda")
    import gc

    import pycuda.driver as drv

    gc.collect()  # GPU objects earlier tests left to the collector go here, not in the Dask client's threads
    drv.init()
    gpus = min(drv.Device.count(), 2)
    out = tmp_path / "c.csv"
    result = CliRunner().invoke(main, ["run", "-v", "dbuf,cublas,shared", "-s", "33,1000x37x2049,512,1024,2048",
                                       "--runs", "3", "--cluster", "local", "-o", str(out)])
    assert result.exit_code == 0, result.output
    df = read_results(out)
    assert len(df) == 15 and set(df.status) == {"ok"}
    assert len(set(df.gpu_uuid)) == gpus and all(df.gpu_uuid.str.startswith("GPU-")) and all(df.gpu) and all(df.host)
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert len(meta["cluster"]["workers"]) == drv.Device.count() and len(meta["cluster"]["gpus"]) == gpus
    assert meta["gpu"]["name"] == df.gpu.iloc[0]  # one model: the file's GPU, as on one GPU
    err = capfd.readouterr().err  # the workers' stderr is this process's
    assert "could not be cleaned up" not in err and "did not release" not in result.output, \
        result.output[-1500:] + err[-1500:]


def test_a_batched_tuning_on_a_cluster_writes_every_class_once_and_records_the_gpu(tmp_path, capfd):
    """Issue 16: the batched engine with its size classes spread over the visible GPUs' workers."""
    pytest.importorskip("dask_cuda")
    from mmbench.engine import batched_local

    out, cache = tmp_path / "t.csv", tmp_path / "cache.json"
    result = CliRunner().invoke(main, ["tune", "-v", "gemv_tuned", "-s", "cell:8x8,cell:10x12,cell:14x9",
                                       "--strategy", "random", "--budget", "24", "--jobs", "8", "--cluster", "local",
                                       "-o", str(out), "--tuning-cache", str(cache)])
    assert result.exit_code == 0, result.output
    rows = batched_local.read_rows(out)
    assert sorted(rows.size_class.unique()) == ["cell08x08", "cell10x12", "cell14x09"] and len(rows) == 3 * 24
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    entries = json.loads(cache.read_text()).values()
    assert meta["cluster"]["gpus"] and len(entries) == 3 and {e["device"] for e in entries} == {meta["gpu"]["name"]}
    err = capfd.readouterr().err
    assert "could not be cleaned up" not in err and "did not release" not in result.output, \
        result.output[-1500:] + err[-1500:]


def test_the_kernel_clock_reads_every_sample_beside_the_events(tmp_path):
    """Issue 17: with cupti-python installed, every GPU row carries CUPTI's summed device work per
    call, one sample per event sample, never longer than the event pair around the same call."""
    pytest.importorskip("cupti")
    out = tmp_path / "k.csv"
    result = CliRunner().invoke(main, ["run", "-v", "best,cublas,dbuf,transpose_vec", "-s", "63,512", "--runs", "5",
                                       "--max-interval", "off",
                                       "-o", str(out)])
    assert result.exit_code == 0, result.output
    df = read_results(out)
    assert set(df.status) == {"ok"} and df.kernel_records.min() >= 1
    for r in df.itertuples():
        kernel, events = samples_of(r.kernel_ms_samples), samples_of(r.time_ms_samples)
        assert len(kernel) == len(events) == 5
        assert r.kernels_only_ms_median <= r.kernel_ms_median <= r.time_ms_median * 1.02, r.variant
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert meta["kernel_clock"]["on"] and meta["kernel_clock"]["misses"] == {}
    assert {"gpu_temp_c_before", "power_w_after"} <= set(df.columns) and df.power_w_after.notna().all()


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (31, 33, 65), (127, 1, 61), (1, 257, 3), (33, 31, 1), (1031, 1021, 1039)])
def test_the_gpus_float64_products_are_the_hosts(gpu, m, n, k):
    """A.B and |A|.|B| made on the GPU (cuBLAS DGEMM) agree with numpy's to float64 rounding: what
    every GEMM point is checked against (their difference is a billion times under the float32
    tolerance)."""
    import numpy as np

    from mmbench.cublas import float64_products
    from mmbench.ops.gemm import host_products

    rng = np.random.default_rng([m, n, k])
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    (ref, mag), (host_ref, host_mag) = float64_products(a, b), host_products(a, b)
    assert ref.dtype == mag.dtype == np.float64 and ref.shape == mag.shape == (m, n)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert np.all(np.abs(ref - host_ref) <= 4 * k * 2.0**-53 * scale)
    assert np.all(np.abs(mag - host_mag) <= 4 * k * 2.0**-53 * scale)


def test_a_gpu_run_makes_its_references_on_the_gpu_and_says_so(gpu):
    points = plan([Selection((REGISTRY["tile2d"], REGISTRY["cublas"]), "129x65x31,64")], "cold")
    runner = LocalPoints(Settings(runs=2, warmup=1), points, gpu_factory=lambda: gpu)
    rows: list[dict] = []
    try:
        runner.run(points, rows.append)
    finally:
        runner.close()
    assert [r["status"] for r in rows] == ["ok"] * 4
    assert runner.spent_s["reference_gpu"] > 0 and "reference_host" not in runner.spent_s
    meta = runner.library_meta()["float64_reference"]
    assert "DGEMM" in meta["reference_gpu"] and not [k for k in meta if k.startswith("not on the GPU")]
