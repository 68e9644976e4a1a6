"""The command line on the CPU: listing, plans, info without a GPU, BLAS runs, resume, bad input."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mmbench import device
from mmbench.cli import main
from mmbench.results import read_results
from mmbench.sweep import Runner
from mmbench.variants import REGISTRY

ZOSA = str(Path(__file__).resolve().parent.parent / "configs" / "zosa2017.toml")


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def no_gpu(monkeypatch):
    def refuse():
        raise device.GpuUnavailable("PyCUDA is not installed (test)")

    monkeypatch.setattr(device, "open_gpu", refuse)


def test_list_shows_every_variant(monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # the table is wide; a narrow terminal elides cells
    result = invoke("list")
    assert result.exit_code == 0
    for v in REGISTRY.values():
        assert v.name in result.output and v.label in result.output
    assert "BLOCK=32 (3 points)" in result.output and "(665 points)" in result.output


def test_dry_run_prints_the_plan_without_a_gpu(no_gpu, tmp_path):
    result = invoke("run", "--variant", "best", "--variant", "naive,cublas", "--sizes", "63:2049", "--block", "8,16,32",
                    "--dry-run", "-o", tmp_path / "x.csv")
    assert result.exit_code == 0, result.output
    assert "plan: 1323 points" in result.output  # (3 + 3 blocks + cuBLAS) x 189 sizes
    assert not (tmp_path / "x.csv").exists()


def test_dry_run_of_the_zosa_config():
    result = invoke("run", "--config", ZOSA, "--dry-run")
    assert result.exit_code == 0 and "plan: 2079 points" in result.output


def test_info_without_gpu_says_so(no_gpu):
    result = invoke("info")
    assert result.exit_code == 0
    assert "none: PyCUDA is not installed" in result.output and "pip install '.[cuda,cublas]'" in result.output
    assert "nvcc" in result.output and "BLAS" in result.output


def test_gpu_variant_without_gpu_is_a_clear_error(no_gpu, tmp_path):
    result = invoke("run", "--variant", "best", "--sizes", "64", "-o", tmp_path / "x.csv")
    assert result.exit_code == 1 and "cannot open the GPU: PyCUDA is not installed" in result.output


def test_blas_run_writes_verified_rows_and_metadata(tmp_path):
    out = tmp_path / "blas.csv"
    result = invoke("run", "-v", "blas", "-s", "31,33,1000x37x65", "--runs", "4", "--threads", "1", "-o", out)
    assert result.exit_code == 0, result.output
    assert f"results: {out}" in result.output and "summary" in result.output
    df = read_results(out)
    assert len(df) == 3 and (df.status == "ok").all() and (df.threads == 1).all()
    assert (df.cache == "hot").all()  # CPU caches are not flushed, and the CSV says so
    assert (df.err_bound_ratio <= 1).all() and (df.gflops_mean > 0).all()
    assert df.time_ms_samples.map(lambda s: len(s.split(";"))).eq(4).all()
    assert list(zip(df.m, df.n, df.k))[-1] == (1000, 37, 65)
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert meta["state"] == "finished" and meta["status_counts"] == {"ok": 3} and meta["gpu"] is None
    assert meta["software"]["blas"] and meta["settings"]["runs"] == 4


def test_existing_output_needs_resume(tmp_path):
    out = tmp_path / "r.csv"
    assert invoke("run", "-v", "blas", "-s", "32", "--runs", "1", "-o", out).exit_code == 0
    again = invoke("run", "-v", "blas", "-s", "32", "--runs", "1", "-o", out)
    assert again.exit_code == 2 and "already exists; pass --resume" in again.output
    resumed = invoke("run", "-v", "blas", "-s", "32", "--runs", "1", "-o", out, "--resume")
    assert resumed.exit_code == 0 and "nothing to do" in resumed.output


def test_interrupt_keeps_rows_and_resume_finishes(tmp_path, monkeypatch):
    out = tmp_path / "r.csv"
    real = Runner._run_point
    calls = {"n": 0}

    def interrupted_on_third(self, point, inputs, buffers):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(self, point, inputs, buffers)

    monkeypatch.setattr(Runner, "_run_point", interrupted_on_third)
    result = invoke("run", "-v", "blas", "-s", "31:97", "--runs", "1", "-o", out)
    assert result.exit_code == 1 and "interrupted" in result.output and "--resume" in result.output
    assert len(read_results(out)) == 2
    assert json.loads(out.with_suffix(".meta.json").read_text())["state"] == "interrupted"
    monkeypatch.setattr(Runner, "_run_point", real)
    plan = invoke("run", "-v", "blas", "-s", "31:97", "--runs", "1", "-o", out, "--resume", "--dry-run")
    assert "plan: 7 points (2 already in" in plan.output
    assert invoke("run", "-v", "blas", "-s", "31:97", "--runs", "1", "-o", out, "--resume").exit_code == 0
    df = read_results(out)
    assert sorted(df.n) == [31, 32, 33, 63, 64, 65, 95, 96, 97]


def test_failing_point_becomes_a_row_and_the_sweep_goes_on(tmp_path, monkeypatch):
    import numpy as np

    real_matmul = np.matmul

    def broken_at_64(a, b, out=None):
        if a.shape[0] == 64:
            raise MemoryError("pretend the host ran out of memory")
        return real_matmul(a, b, out=out)

    monkeypatch.setattr(np, "matmul", broken_at_64)
    out = tmp_path / "r.csv"
    result = invoke("run", "-v", "blas", "-s", "63:65", "--runs", "1", "-o", out)
    assert result.exit_code == 1 and "1 point(s) failed" in result.output
    df = read_results(out)
    assert list(df.status) == ["ok", "failed", "ok"]
    assert df.reason[1] == "MemoryError: pretend the host ran out of memory"


@pytest.mark.parametrize("args,needle", [
    (["--variant", "bset"], "unknown variant 'bset'; choose from: best_const, best"),
    (["--sizes", "10:5"], "size spec '10:5': start 10 is after end 5"),
    (["--sizes", "abc"], "malformed size spec 'abc'; accepted forms"),
    (["--block", "0"], "--block '0': expected comma-separated positive integers"),
    (["--block", "x"], "--block 'x'"),
    (["--params", "TILE=4"], "parameter 'TILE' belongs to none of best"),
    (["--params", "BLOCK"], "--params 'BLOCK': expected NAME=V[/V...] pairs"),
    (["-v", "warptile", "--params", "BM=0"], "parameter BM=[0] for 'warptile': values must be positive integers"),
    (["--cache", "warm"], "'warm' is not one of 'cold', 'hot'"),
    (["--runs", "0"], "0 is not in the range x>=1"),
    (["--resume"], "--resume needs --output"),
    (["--config", ZOSA, "--variant", "best"], "do not combine it with --variant"),
    (["--config", "nope.toml"], "nope.toml: no such config file"),
])
def test_bad_input_is_a_clear_error_with_exit_2(args, needle):
    result = invoke("run", "--dry-run", *args)
    assert result.exit_code == 2 and needle in result.output, result.output
    assert "Traceback" not in result.output
