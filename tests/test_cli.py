"""The command line on the CPU: listing, plans, info without a GPU, BLAS runs, resume, bad input."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mmbench import device, source
from mmbench.cli import main
from mmbench.results import read_results
from mmbench.schema import COLUMNS
from mmbench.engine.points_local import LocalPoints
from mmbench.variants import REGISTRY

ZOSA = str(Path(__file__).resolve().parent.parent / "configs" / "zosa2017.toml")


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def no_gpu(monkeypatch):
    def refuse():
        raise device.GpuUnavailable("PyCUDA is not installed (test)")

    monkeypatch.setattr(device, "open_gpu", refuse)


def test_list_fits_a_narrow_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    result = invoke("list")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80 and "…" not in result.output
    assert len(lines) == len(REGISTRY) + 5  # title, three rules, header
    for v in REGISTRY.values():
        assert v.name in result.output and v.label in result.output
    assert "665" in result.output and "79200" in result.output  # warptile's and dbuf's tuning spaces


@pytest.mark.parametrize("wide", [False, True], ids=["compact", "wide"])
@pytest.mark.parametrize("columns", [80, 60, 40])
def test_list_shows_every_fact_whole_at_any_width(monkeypatch, columns, wide):
    """The listing cropped what did not fit: at 60 columns the tuning space vanished, and --wide at
    80 was names and slivers. Now columns fold or leave, and below any table each variant is a
    paragraph; a user's variant with a long label folds too."""
    import dataclasses
    import re

    from mmbench.cli import listing

    monkeypatch.setenv("COLUMNS", str(columns))
    registry = {**REGISTRY, "a_users_kernel": dataclasses.replace(
        REGISTRY["best"], name="a_users_kernel", label="a label long enough to fold over two lines of the table")}
    monkeypatch.setattr(listing, "REGISTRY", registry)
    out = invoke("list", *(["--wide"] if wide else [])).output
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= columns and "…" not in out
    assert all(line.rstrip()[-1] in "┓┃┩│┘┛" for line in lines if line[:1] in "┏┃┡│└┗")  # no row cut short
    for v in registry.values():
        assert re.search(rf"(^|[│ ]){v.name}[ (│]", out, re.MULTILINE), v.name
    assert re.search(r"[│ ]79200( |$)", out, re.MULTILINE)  # dbuf's tuning space
    words = set(re.sub("[│┃]", " ", out).split())
    assert set(REGISTRY["dbuf"].description.split()) <= words or not wide


def test_list_one_variant_in_full_and_the_wide_table(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    result = invoke("list", "-v", "dbuf")
    assert result.exit_code == 0
    assert "kernels/gemm/dbuf.cu, entry dbuf, dbuf_row_strip, dbuf_col_strip" in result.output
    assert "ORDER = 1  (tuned over 0/1)" in result.output and "constraint: SK == 0 or SPLITK == 1" in result.output
    assert "tuning space: 79200 points" in result.output and "…" not in result.output
    monkeypatch.setenv("COLUMNS", "250")
    wide = invoke("list", "--wide")
    assert wide.exit_code == 0 and "BLOCK=32" in wide.output and REGISTRY["best"].description in wide.output


def test_the_progress_bar_gives_an_eta_and_shapes_as_the_user_writes_them(monkeypatch):
    """The bar said how long a sweep had run, never how long it has left; a transpose's 64 x 32
    read 64x32x0 there and a square GEMM 64x64x64."""
    import io

    from rich.console import Console

    from mmbench.cli import running

    clock, out = [0.0], io.StringIO()
    monkeypatch.setattr(running, "console", Console(file=out, width=120, get_time=lambda: clock[0]))
    with running.progress_bar(10) as on_row:
        for t, (m, n, k) in ((0, (64, 64, 64)), (10, (1000, 37, 2049)), (20, (64, 32, 0))):
            clock[0] = t
            on_row({"variant": "v", "params": "BLOCK=32", "m": m, "n": n, "k": k})
    text = out.getvalue()
    assert "3/10 0:00:20 ETA 0:01:10" in text  # 7 points left at one point per 10 s
    assert "v BLOCK=32 64x32 " in text and "x0" not in text


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
    real = LocalPoints._run_point
    calls = {"n": 0}

    def interrupted_on_third(self, point, inputs, buffers):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(self, point, inputs, buffers)

    monkeypatch.setattr(LocalPoints, "_run_point", interrupted_on_third)
    result = invoke("run", "-v", "blas", "-s", "31:97", "--runs", "1", "-o", out)
    assert result.exit_code == 130 and "interrupted" in result.output and "--resume" in result.output
    assert len(read_results(out)) == 2
    assert json.loads(out.with_suffix(".meta.json").read_text())["state"] == "interrupted"
    monkeypatch.setattr(LocalPoints, "_run_point", real)
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
    (["--runs", "0"], "0 is not in the range 1<=x<=1000"),
    (["--resume"], "--resume needs --output"),
    (["--config", ZOSA, "--variant", "best"], "do not combine it with --variant"),
    (["--config", "nope.toml"], "nope.toml: no such config file"),
])
def test_bad_input_is_a_clear_error_with_exit_2(args, needle):
    result = invoke("run", "--dry-run", *args)
    assert result.exit_code == 2 and needle in result.output, result.output
    assert "Traceback" not in result.output


def test_resume_after_a_crash_mid_row_measures_the_torn_point_again(tmp_path):
    """The issue's reproduction: cut the last line in half, then resume with one size more."""
    out = tmp_path / "r.csv"
    assert invoke("run", "-v", "blas", "-s", "64,128,256,512", "--runs", "3", "-o", out).exit_code == 0
    lines = out.read_text().rstrip("\n").split("\n")
    lines[-1] = lines[-1][: len(lines[-1]) // 2]
    out.write_text("\n".join(lines))
    plot = invoke("plot", "gflops", out)
    assert plot.exit_code == 0 and "line 5) is a torn row" in plot.output and "left out" in plot.output
    result = invoke("run", "-v", "blas", "-s", "64,128,256,512,1024", "--runs", "3", "-o", out, "--resume")
    assert result.exit_code == 0, result.output
    assert f"set aside in {tmp_path / 'r.torn.txt'}; its point, if planned, is measured again" in result.output
    df = read_results(out)
    assert sorted(df.n) == [64, 128, 256, 512, 1024] and (df.status == "ok").all() and "warning" not in df.attrs
    assert df.time_ms_samples.map(lambda s: len(s.split(";"))).eq(3).all()
    assert lines[-1] in (tmp_path / "r.torn.txt").read_text()
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert meta["status_counts"] == {"ok": 5} and len(meta["invocations"]) == 2
    first, second = meta["invocations"]
    assert first["status_counts"] == {"ok": 4} and second["status_counts"] == {"ok": 2}
    assert "torn row" in second["repaired"] and second["resumed"] and not first["resumed"]
    assert "--resume" in second["command"] and "--resume" not in first["command"]
    assert meta["started_at"] == first["started_at"] and meta["finished_at"] == second["finished_at"]


def test_resume_takes_the_files_settings_and_refuses_others(tmp_path):
    out = tmp_path / "r.csv"
    assert invoke("run", "-v", "blas", "-s", "32", "--runs", "2", "--warmup", "1", "-o", out).exit_code == 0
    before = out.read_bytes(), out.with_suffix(".meta.json").read_bytes()
    clash = invoke("run", "-v", "blas", "-s", "32,64", "--runs", "5", "-o", out, "--resume")
    assert clash.exit_code == 2 and "measured with runs=2; this resume asks for runs=5" in clash.output
    assert (out.read_bytes(), out.with_suffix(".meta.json").read_bytes()) == before
    resumed = invoke("run", "-v", "blas", "-s", "32,64", "-o", out, "--resume")  # settings left out: the file's
    assert resumed.exit_code == 0, resumed.output
    df = read_results(out)
    assert list(df.runs) == [2, 2] and list(df.warmup) == [1, 1]


def test_resume_of_a_file_with_old_metadata_keeps_it_as_the_first_invocation(tmp_path):
    out = tmp_path / "r.csv"
    assert invoke("run", "-v", "blas", "-s", "32", "--runs", "1", "-o", out).exit_code == 0
    meta_path = out.with_suffix(".meta.json")
    meta = json.loads(meta_path.read_text())
    old = {k: v for k, v in meta.items() if k not in ("invocations", "finished_at")}
    old.update(command=["mmbench", "run", "old"], wall_s=1.5, points_planned=1, status_counts={"ok": 1})
    meta_path.write_text(json.dumps(old))
    assert invoke("run", "-v", "blas", "-s", "32,33", "--runs", "1", "-o", out, "--resume").exit_code == 0
    meta = json.loads(meta_path.read_text())
    assert [i["command"][-1] for i in meta["invocations"]][:1] == ["old"] and len(meta["invocations"]) == 2
    assert meta["status_counts"] == {"ok": 2} and meta["started_at"] == old["started_at"]
    last = meta["invocations"][-1]  # the process's age at the run's end: the test process's, so beyond the run's
    assert last["process_s"] > last["wall_s"] >= 0


def test_a_point_too_large_for_memory_is_a_skipped_row(tmp_path):
    out = tmp_path / "r.csv"
    result = invoke("run", "-v", "blas", "-s", "32,99999999", "--runs", "1", "-o", out)
    assert result.exit_code == 0, result.output
    df = read_results(out)
    assert list(df.status) == ["ok", "skipped"]
    assert df.reason[1].startswith("needs 923.7 PiB of host memory") and "available" in df.reason[1]


def test_figures_from_a_cpu_only_run_draw_what_it_holds(tmp_path):
    out = tmp_path / "b.csv"
    assert invoke("run", "-v", "blas", "-s", "256,512", "--runs", "1", "-o", out).exit_code == 0
    gflops = invoke("plot", "gflops", out)
    assert gflops.exit_code == 0 and (tmp_path / "b" / "fig2-gflops.png").exists()
    assert "fig1-block-sizes not drawn: Figure 1 needs CUDA-Best ('best') rows (the results hold blas rows)" in gflops.output
    for name, needle in (("speedup", "no CUDA-Best ('best') rows"), ("roofline", "needs a GPU run's metadata"),
                         ("vs-cublas", "no 'cublas' rows")):
        result = invoke("plot", name, out)
        assert result.exit_code == 2 and needle in result.output and len(result.output.strip().splitlines()) == 1
    table = invoke("table", out)
    assert table.exit_code == 0 and "| 512 |" in table.output and "BLAS (multicore)" in table.output
    before = sorted(p.name for p in (tmp_path / "b").iterdir())
    report = invoke("report", "--config", ZOSA, out)  # a Zosa report of "not checked" rows says nothing: refused
    assert report.exit_code == 2 and len(report.output.strip().splitlines()) == 1, report.output
    assert "the zosa2017 report needs verified rows of every variant" in report.output and "best_const" in report.output
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == before  # no figure, no REPORT.md


def test_metadata_records_the_checkout_commit_and_kernel_hashes(tmp_path, monkeypatch):
    """With a copied (non-editable) install, the commit comes from the checkout the run starts in."""
    import subprocess

    from mmbench import environment

    repo = Path(__file__).resolve().parent.parent
    monkeypatch.setattr(environment, "REPO", tmp_path)  # the package as a copy outside any checkout
    monkeypatch.delenv("MMBENCH_GIT_COMMIT", raising=False)
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert environment.git_info(repo)["commit"] == head and environment.git_info(repo)["checkout"] == str(repo)
    assert environment.git_info(tmp_path)["commit"] is None
    sources = environment.software_info()["kernel_sources"]
    assert sources["gemm/naive.cu"] == source.source_hash(REGISTRY["naive"]) and "harness.cu" in sources
    assert "common/unpack.cuh" in sources  # headers too: a kernel's hash covers those it includes


def test_resume_with_damaged_metadata_is_refused_before_the_file_is_touched(tmp_path):
    out = tmp_path / "r.csv"
    assert invoke("run", "-v", "blas", "-s", "32,33", "--runs", "1", "-o", out).exit_code == 0
    out.write_bytes(out.read_bytes()[:-40])  # and a torn last row, which must stay where it is
    for meta in ({"settings": {"cache": "warm"}}, {"gpu": "H100"}, {"invocations": 5}):
        out.with_suffix(".meta.json").write_text(json.dumps(meta))
        before = out.read_bytes()
        result = invoke("run", "-v", "blas", "-s", "32,33", "-o", out, "--resume")
        assert result.exit_code == 2 and "cannot be resumed" in result.output and "Traceback" not in result.output
        assert out.read_bytes() == before and not (tmp_path / "r.torn.txt").exists()
    out.with_suffix(".meta.json").write_text(json.dumps({"name": "x"}))  # no start recorded: still fine
    result = invoke("run", "-v", "blas", "-s", "32,33", "-o", out, "--resume")
    assert result.exit_code == 0, result.output
    assert sorted(read_results(out).n) == [32, 33]


def test_resume_of_a_config_run_takes_what_the_config_leaves_to_the_file(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('name = "c"\n[run]\nruns = 1\n[[sweep]]\nname = "s"\nvariants = ["blas"]\nsizes = "32,33"\n')
    out = tmp_path / "k.csv"
    assert invoke("run", "--config", config, "--threads", "1", "-o", out).exit_code == 0
    out.write_bytes(out.read_bytes()[:-30])
    result = invoke("run", "--config", config, "-o", out, "--resume")
    assert result.exit_code == 0, result.output
    df = read_results(out)
    assert sorted(df.n) == [32, 33] and (df.threads == 1).all() and (df.runs == 1).all()


def test_resume_without_metadata_says_where_its_settings_come_from(tmp_path):
    out = tmp_path / "r.csv"
    assert invoke("run", "-v", "blas", "-s", "32", "--runs", "2", "-o", out).exit_code == 0
    out.with_suffix(".meta.json").unlink()
    result = invoke("run", "-v", "blas", "-s", "32,33", "-o", out, "--resume")
    assert result.exit_code == 0 and "meta.json is missing: runs, warmup and cache are taken from the rows" in result.output
    assert list(read_results(out).runs) == [2, 2]


@pytest.mark.parametrize("dropped", [("op", "scope", "pad", "padded_shape"), ("scope", "pad", "padded_shape")])
def test_resume_of_an_older_file_gives_it_the_added_columns(tmp_path, dropped):
    """A file from before operations (no op) or before scopes and padding: read with the values its
    rows had, and on resume rewritten with the columns, each with that value."""
    import csv

    out = tmp_path / "r.csv"
    assert invoke("run", "-v", "blas", "-s", "32", "--runs", "1", "-o", out).exit_code == 0
    rows = list(csv.reader(out.read_text().splitlines()))
    keep = [i for i, c in enumerate(rows[0]) if c not in dropped]
    assert rows[0][0] == "op" and rows[1][0] == "gemm"
    out.write_text("".join(",".join(r[i] for i in keep) + "\r\n" for r in rows), newline="")  # as an older mmbench wrote it
    old = read_results(out)
    assert list(old.op) == ["gemm"] and list(old.scope) == ["kernel"] and list(old.pad) == [0]
    result = invoke("run", "-v", "blas", "-s", "32,33", "-o", out, "--resume")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert f"written before the columns {', '.join(dropped)} existed; its 1 rows now have them" in text
    assert "scope = kernel, pad = 0, padded_shape = empty)" in text
    df = read_results(out)
    assert list(df.columns)[:12] == list(COLUMNS[:12]) and list(df.op) == ["gemm", "gemm"] and sorted(df.n) == [32, 33]
    assert list(df.scope) == ["kernel", "kernel"] and list(df.pad) == [0, 0]


def test_a_dry_run_says_when_this_machine_cannot_run_its_gpu_points(monkeypatch):
    from mmbench import device

    monkeypatch.setattr(device, "gpu_problem", lambda: "no GPU (a test's)")
    planned = CliRunner().invoke(main, ["run", "-v", "best,blas", "-s", "32", "--dry-run"])
    assert planned.exit_code == 0 and "this machine cannot run the plan's 1 GPU point: no GPU (a test's)" in planned.output
    cpu = CliRunner().invoke(main, ["run", "-v", "blas", "-s", "32", "--dry-run"])
    assert cpu.exit_code == 0 and "cannot run" not in cpu.output


def test_the_test_session_leaves_nothing_in_tmpdir(tmp_path):
    """A pytest session of this suite (one quick test, in its own $TMPDIR) leaves no mmbench-test-*
    folder behind: conftest removes its folders when the session ends."""
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/test_sizes.py::test_rectangular_shapes"], cwd=repo, capture_output=True, text=True,
                          env={**os.environ, "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("mmbench-test-")]


def test_a_new_gpu_run_samples_to_the_interval_and_a_resume_keeps_the_files_sampling(tmp_path):
    """New runs on the GPU take --max-interval 0.005 within 1 s a point unless told otherwise; off,
    a noise target or a CPU-only run take none; a resume samples as its file was sampled (a file from
    before the interval target: exactly --runs)."""
    from mmbench import sweep

    def settings(**asked):
        return sweep.perform(sweep.RunRequest(**{"variants": ("best",), "sizes": "64", "output": tmp_path / "p.csv",
                                                 **asked}), say=lambda _: None, dry_run=True).plan.settings

    new = settings()
    assert (new.max_interval, new.budget_s, new.target) == (sweep.INTERVAL, sweep.INTERVAL_BUDGET_S, ("interval", 0.005))
    assert (settings(max_interval="off").target, settings(max_interval="off").budget_s) == (None, 15.0)
    assert settings(max_noise=0.01).target == ("noise", 0.01) and settings(max_interval=0.02, time_budget=3).budget_s == 3
    assert settings(variants=("blas",)).target is None
    out = tmp_path / "r.csv"
    assert invoke("run", "-v", "blas", "-s", "32", "--runs", "2", "-o", out).exit_code == 0
    assert settings(output=out, resume=True).target is None
    clash = invoke("run", "-v", "best", "-s", "64", "--max-interval", "0.01", "-o", out, "--resume")
    assert clash.exit_code == 2 and "measured with max_interval=None; this resume asks for max_interval=0.01" in clash.output


def test_each_command_is_found_in_its_module_and_every_module_command_has_a_home():
    """The main group imports a command's module when the command is used (cli/__init__.py
    COMMAND_HOMES): every name there is a command of that module, and no module's command is
    missing from it (it would vanish from the command line)."""
    import importlib

    import click

    from mmbench.cli import COMMAND_HOMES

    ctx = click.Context(main)
    for name, home in COMMAND_HOMES.items():
        assert main.get_command(ctx, name).name == name, name
    for home in set(COMMAND_HOMES.values()):
        module = importlib.import_module(f"mmbench.cli.{home}")
        names = {getattr(module, function).name for function in module.COMMANDS}
        assert {n for n, h in COMMAND_HOMES.items() if h == home} == names, home


@pytest.mark.parametrize("args", [["--config", "limits", "--dry-run"], ["-v", "blas", "-s", "16,17", "--runs", "2"]])
def test_a_run_imports_no_pandas(tmp_path, args):
    """A run's start and end are part of every command's time (4 GPUs finish the limits study in 7 s of
    measuring): pandas (0.4 s) is imported only by the commands that read files into frames; a run's
    closing summary reads its file without it (mmbench/summary.py). A dry run, and a whole run with its
    summary."""
    import subprocess
    import sys

    code = ("import sys, json; from mmbench.cli import main\n"
            "try: main(['run', *json.loads(sys.argv[2]), '-o', sys.argv[1]])\n"
            "except SystemExit: pass\n"
            "print('pandas' in sys.modules, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "x.csv"), json.dumps(args)], capture_output=True,
                          text=True, timeout=120)
    assert done.stderr.strip().splitlines()[-1] == "False", done.stdout[-2000:] + done.stderr
    if "--dry-run" not in args:
        assert "summary of" in done.stdout and "blas" in done.stdout, done.stdout


def test_a_mistyped_command_is_told_the_nearest_one():
    """Commands load when used, so Click's hint (drawn from the commands loaded) would name none."""
    result = invoke("lis")
    assert result.exit_code == 2 and "Did you mean 'list'?" in result.output, result.output
