"""GPU tests (pytest -m gpu) of the tensor-core ladder: every step at fp16 and bf16 at awkward m and n
(k a multiple of 8, which they require), at its defaults and a sample of its tuning space, verified
against float64; a k they cannot take is a skipped row that names the requirement."""

from __future__ import annotations

import random

import pytest

from mmbench.variants import REGISTRY, parse_params, tuning_space

from test_gpu import _run  # noqa: E402  (tests/ is on the path: pytest's rootdir-relative imports)

pytestmark = pytest.mark.gpu

LADDER = ("tc_mma", "tc_tma", "tc_ws", "tc_persistent", "tc_overlap", "tc_cluster", "tc_tiles")
# m and n odd, prime, 1 and below a tile; k from one 8 to several k-tiles with a partial last one
SIZES = "8,31x33x64,127x129x8,1x257x16,257x1x24,1000x37x2056,37x1000x72,4095x4097x1000,1000x40x64,33x264x1000"
SAMPLE = 4  # configurations of each space besides the defaults


@pytest.mark.parametrize("name", LADDER)
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_each_step_is_correct_at_awkward_shapes(gpu, name, dtype):
    variant = REGISTRY[name]
    rows = _run(gpu, [variant], SIZES, dtypes=(dtype,), layouts=("nt",))
    assert len(rows) == 10 and sum(r["status"] == "ok" for r in rows) >= 4
    for r in rows:
        if variant.unmet(parse_params(r["params"]), {"m": r["m"], "n": r["n"], "k": r["k"]}):  # TMA stores: n % 8
            assert r["status"] == "skipped" and f"{name} requires n % 8 == 0" in r["reason"], r
            continue
        assert r["status"] == "ok", f"{name} {dtype} at {r['m']}x{r['n']}x{r['k']}: {r['reason']}"
        assert 0 <= r["err_bound_ratio"] <= 1


@pytest.mark.parametrize("name", LADDER)
def test_a_sample_of_each_steps_space_is_correct(gpu, name):
    variant = REGISTRY[name]
    sample = random.Random(name).sample(tuning_space(variant), SAMPLE)
    rows = _run(gpu, [variant], "127x136x8,1000x40x2056,4095x4104x1000",
                [{axis: (value,) for axis, value in params} for params in sample], dtypes=("bf16",), layouts=("nt",))
    assert len(rows) == 3 * SAMPLE and len({r["params"] for r in rows}) == SAMPLE
    for r in rows:
        assert r["status"] == "ok" or "local memory" in (r["reason"] or ""), \
            f"{name} {r['params']} at {r['m']}x{r['n']}x{r['k']}: {r['reason']}"


def test_a_k_the_ladder_cannot_take_is_skipped_naming_the_requirement(gpu):
    rows = _run(gpu, [REGISTRY[n] for n in LADDER], "64x64x33", dtypes=("bf16",), layouts=("nt",))
    assert [(r["status"], r["reason"]) for r in rows] == [("skipped", f"{n} requires k % 8 == 0; k = 33")
                                                         for n in LADDER]


def test_the_fp8_step_is_correct_with_its_per_tensor_scales(gpu):
    """C = scale_a scale_b (A . B) in bfloat16, checked by FP8's rounding model; m awkward, k and n as
    TMA needs them (k % 16, n % 8)."""
    rows = _run(gpu, [REGISTRY["tc_fp8"]], "16,31x40x64,1000x264x2064,4095x4096x1024,33x8x16", dtypes=("fp8e4m3",),
                layouts=("nt",))
    assert len(rows) == 5
    for r in rows:
        assert r["status"] == "ok", f"tc_fp8 at {r['m']}x{r['n']}x{r['k']}: {r['reason']}"
        assert 0 <= r["err_bound_ratio"] <= 1


@pytest.mark.parametrize("engine", [["--isolation", "process"], ["--isolation", "none"], ["--cluster", "local"]])
def test_the_ladder_runs_unchanged_isolated_in_process_and_on_the_cluster_engine(tmp_path, engine):
    """Steps launched through cuda-python (tensor maps, clusters) in a worker process, in this one and
    on a Dask worker: every row verified, and CUPTI's kernel clock reads them where it is installed."""
    import importlib.util

    from click.testing import CliRunner

    from mmbench.cli import main
    from mmbench.results import read_results

    if engine[0] == "--cluster" and importlib.util.find_spec("dask_cuda") is None:
        pytest.skip("the cluster engine needs dask-cuda")
    out = tmp_path / "e.csv"
    result = CliRunner().invoke(main, ["run", "-v", "tc_tma,tc_cluster,tc_tiles,cublas", "--dtype", "bf16", "--layout",
                                       "nt", "-s", "1000x264x2056", "--runs", "3", *engine, "-o", str(out)])
    assert result.exit_code == 0, result.output
    df = read_results(out)
    assert list(df.status) == ["ok"] * 4, df[["variant", "status", "reason"]]
    if importlib.util.find_spec("cupti") is not None:
        assert df.kernel_records.min() >= 1


def test_padded_the_ladder_takes_any_k_and_verifies(tmp_path):
    """k whose rows are not 16-byte aligned (2055, 4095 at BF16; 4097 at FP8) runs padded to the
    kernel's tile: verified in the kernel and device scopes, the padded shape in the row."""
    from click.testing import CliRunner

    from mmbench.cli import main
    from mmbench.results import read_results

    out = tmp_path / "p.csv"
    for variant, dtype, sizes in (("tc_tiles", "bf16", "1000x264x2055,4095"), ("tc_fp8", "fp8e4m3", "4097")):
        result = CliRunner().invoke(main, ["run", "-v", variant, "--dtype", dtype, "--layout", "nt", "-s", sizes, "--pad",
                                           "--scope", "kernel,device", "--runs", "3", "-o", str(out)])
        assert result.exit_code == 0, result.output
        df = read_results(out)
        assert list(df.status) == ["ok"] * len(df), df[["variant", "m", "n", "k", "scope", "status", "reason"]]
        assert (df.pad == 1).all() and (df.padded_shape.str.split("x").str[-1].astype(int) % 64 == 0).all()
        out.unlink()
        out.with_suffix(".meta.json").unlink()


# stream-K: a partial last wave (2560: 100 units of 2 tiles on 66 clusters), fewer units than clusters
# (1024, 257 x 1024), several k-tiles a share or none to split (k = 64), awkward m and n
STREAM_K_SIZES = "2560,1024,257x1024x1024,1000x264x2064,4095x4104x1008,3328x3328x64,33x264x1008"


@pytest.mark.parametrize("name,dtype", [("tc_tiles", "bf16"), ("tc_tiles", "fp16"), ("tc_fp8", "fp8e4m3")])
@pytest.mark.parametrize("tile", ["", "BN=128,CONSUMERS=1,WM=2,STAGES=6", "BN=192,STAGES=4"])
def test_stream_k_shares_the_last_wave_and_verifies(gpu, name, dtype, tile):
    """Every row verified after its warm-up and timed launches (each launch lowers the flags it raised:
    a flag left up would hand the next launch stale sums)."""
    variant = REGISTRY[name]
    overrides = {axis: (value,) for axis, value in (("STREAMK", 1), *parse_params(tile))}
    rows = _run(gpu, [variant], STREAM_K_SIZES, overrides, dtypes=(dtype,), layouts=("nt",))
    assert len(rows) == 7
    for r in rows:
        assert r["status"] == "ok", f"{name} {tile} {dtype} at {r['m']}x{r['n']}x{r['k']}: {r['reason']}"
        assert 0 <= r["err_bound_ratio"] <= 1
