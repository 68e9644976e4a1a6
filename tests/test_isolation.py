"""Crash isolation (issue 30, part 2), on the CPU: the isolated engine runs points in a child process
that can be thrown away. Its rows are those of this process; a child that exits, is killed, hangs
past its timeout or loses its CUDA context gives one failed row naming why, and the run goes on in a
fresh child with every earlier row intact and the restart in the metadata. The children here are
tests/isolation_fakes.py's runners, which fail at the point of size 5."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from mmbench.cli import main
from mmbench.engine import points_isolated, session
from mmbench.engine.plan import Point, Settings
from mmbench.engine.points_isolated import Isolation, IsolatedPoints, point_timeout, rerun_command, with_hint
from mmbench.engine.points_local import LocalPoints
from mmbench.results import read_metadata, read_results
from mmbench.sizes import Shape, parse_sizes
from mmbench.variants import get_variant

SETTINGS = Settings(runs=1, warmup=0, cache="hot")


def points(spec: str, variant: str = "blas") -> list[Point]:
    return [Point(get_variant(variant), (), s, "hot") for s in parse_sizes(spec)]


def faulty(runner: str, **more) -> Isolation:
    return Isolation(cpu_points=True, runner=f"isolation_fakes:{runner}", **more)


def run(tmp_path, isolation: Isolation, spec: str = "4,5,6,7"):
    out = tmp_path / "r.csv"
    outcome = session.execute(points(spec), SETTINGS, out, {"name": "r"}, ["test"], isolation=isolation)
    return outcome, read_results(out), read_metadata(out)


def same(row: dict) -> tuple:
    return row["op"], row["variant"], row["m"], row["n"], row["k"], row["status"], row["rel_err"]


def test_the_isolated_engine_gives_the_rows_of_this_process():
    pts = points("4,5,6,7") + points("3,5", "cpu_naive_matmul")
    here, there = [], []
    local = LocalPoints(SETTINGS, pts)
    local.run(pts, here.append)
    local.close()
    isolated = IsolatedPoints(SETTINGS, pts, Isolation(cpu_points=True))
    try:
        isolated.run(pts, there.append)
        child = isolated.time_spent()
    finally:
        isolated.close()
    assert [same(r) for r in there] == [same(r) for r in here] and len(there) == 6
    assert {r["status"] for r in there} == {"ok"}
    assert isolated.meta()["isolation"]["restarts"] == 0
    # the points ran in another process, which says where its time went
    assert any(key != f"{os.uname().nodename}:{os.getpid()}" and "run" in phases for key, phases in child.items())


def test_a_parked_isolated_runner_keeps_its_child_and_counts_the_next_run_anew():
    """Between two runs of a running cluster the isolated runner parks: the same child serves the
    next run, whose restarts and faults are its own, as are its runner's checks (LocalPoints.park)."""
    pts = points("3,4,5", "cpu_naive_matmul")
    isolated = IsolatedPoints(SETTINGS, pts, Isolation(cpu_points=True))
    try:
        isolated.run(pts, lambda row: None)
        child = isolated._child.process.pid
        isolated.restarts, isolated.faults = 1, [{"point": "x", "reason": "y"}]  # as if a point had lost a child
        isolated.park()
        assert isolated.alive() and isolated.restarts == 0 and isolated.faults == []
        rows = []
        isolated.run(pts[:2], rows.append)
        assert isolated._child.process.pid == child and [r["status"] for r in rows] == ["ok", "ok"]
    finally:
        isolated.close()
    local = LocalPoints(SETTINGS, pts)
    local.checks = {"gpu": 5, "host": 2}
    local.park()
    assert local.checks == {"gpu": 0, "host": 0} and local.alive()
    local.close()


def test_a_variant_the_registry_lacks_reaches_the_child_whole():
    """A kernel from another folder (a test's, a user's) is not in the child's registry: its variant
    travels with its points."""
    from dataclasses import replace

    from mmbench.variants import REGISTRY

    variant = replace(get_variant("cpu_naive_matmul"), name="elsewhere")
    pts = [Point(variant, (), s, "hot") for s in parse_sizes("3,4")]
    isolated = IsolatedPoints(SETTINGS, pts, Isolation(cpu_points=True))
    rows = []
    try:
        isolated.run(pts, rows.append)
    finally:
        isolated.close()
    assert [(r["variant"], r["m"], r["status"]) for r in rows] == [("elsewhere", 3, "ok"), ("elsewhere", 4, "ok")]
    assert "elsewhere" not in REGISTRY


@pytest.mark.parametrize("runner,needle", [("ExitsAt", "worker process exited with status 7"),
                                           ("KilledAt", "worker process killed by signal 9 (SIGKILL)")])
def test_a_child_that_dies_mid_point_gives_one_failed_row_and_the_run_goes_on(tmp_path, runner, needle):
    outcome, df, meta = run(tmp_path, faulty(runner))
    assert list(df.m) == [4, 5, 6, 7] and list(df.status) == ["ok", "failed", "ok", "ok"]
    assert df.reason[1] == needle
    assert df.time_ms_median[0] > 0 and df.time_ms_median[2] > 0  # the rows around it measured whole
    assert outcome.state == "finished" and meta["state"] == "finished" and meta["status_counts"] == {"ok": 3, "failed": 1}
    isolation = meta["invocations"][-1]["isolation"]
    assert isolation["mode"] == "process" and isolation["restarts"] == 1
    assert isolation["faults"] == [{"point": "blas @ 5", "reason": needle}]


def test_a_point_past_its_timeout_is_stopped_and_recorded_and_the_run_goes_on(tmp_path):
    started = time.perf_counter()
    _, df, meta = run(tmp_path, faulty("HangsAt", timeout_s=1.5))
    assert time.perf_counter() - started < 30  # not the hour the point would sleep
    assert list(df.status) == ["ok", "failed", "ok", "ok"]
    assert df.reason[1] == "timed out after 2 s: a kernel that never ends?"
    isolation = meta["invocations"][-1]["isolation"]
    assert isolation["restarts"] == 1 and isolation["point_timeout"] == "1.5 s"


def test_a_point_that_loses_the_childs_context_names_the_fault_and_a_fresh_child_goes_on(tmp_path):
    _, df, meta = run(tmp_path, faulty("LosesContextAt"), "4,5,6,5x3x2")
    assert list(df.status) == ["ok", "failed", "ok", "failed"]  # a fresh child reached 5x3, and lost its context too
    assert df.reason[1] == "LogicError: cuCtxSynchronize failed: an illegal memory access was encountered"
    isolation = meta["invocations"][-1]["isolation"]
    assert isolation["restarts"] == 2
    assert [f["reason"] for f in isolation["faults"]] == ["cuCtxSynchronize failed: an illegal memory access was "
                                                          "encountered"] * 2


def test_an_interrupted_isolated_run_keeps_its_rows_and_stops_its_child_at_once(tmp_path):
    out, seen = tmp_path / "r.csv", []

    def interrupt(row):
        seen.append(row)
        raise KeyboardInterrupt  # Ctrl-C after the first row: the child is then stuck in the point of size 5

    isolation = faulty("HangsAt")
    started = time.perf_counter()
    outcome = session.execute(points("4,5,6"), SETTINGS, out, {"name": "r"}, ["test"], on_row=interrupt,
                              isolation=isolation)
    assert time.perf_counter() - started < 10  # not the 30 s the hung point's timeout would take
    assert outcome.state == "interrupted" and list(read_results(out).m) == [4] and len(seen) == 1
    assert read_metadata(out)["state"] == "interrupted"


def test_a_fault_on_a_gpu_point_names_the_command_that_reruns_it_under_compute_sanitizer(monkeypatch, tmp_path):
    point = Point(get_variant("shared"), (("BLOCK", 16),), Shape(1000, 37, 2049), "cold", "device", True)
    command = rerun_command(point, "compute-sanitizer")
    assert command == ("compute-sanitizer mmbench run -v shared --sizes 1000x37x2049 --params BLOCK=16 --scope device "
                       "--pad --runs 1 --warmup 0 --isolation none -o sanitized.csv")
    monkeypatch.setattr(points_isolated, "sanitizer", lambda: "compute-sanitizer")
    assert with_hint("boom", point) == f"boom (rerun under compute-sanitizer: {command})"
    assert with_hint("boom", points("5")[0]) == "boom"  # a CPU point: no sanitizer for it
    monkeypatch.setattr(points_isolated, "sanitizer", lambda: None)
    assert with_hint("boom", point) == "boom"


def test_compute_sanitizer_is_found_on_path_or_in_cuda_home(monkeypatch, tmp_path):
    monkeypatch.setattr(points_isolated.shutil, "which", lambda name: None)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    tool = tmp_path / "bin" / "compute-sanitizer"
    if not os.path.exists("/usr/local/cuda/bin/compute-sanitizer"):
        assert points_isolated.sanitizer() is None
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert points_isolated.sanitizer() == str(tool)


def test_the_default_timeout_grows_with_the_points_work_above_a_floor():
    small, large = Point(get_variant("naive"), (), Shape(64, 64, 64), "cold"), \
        Point(get_variant("naive"), (), Shape(16384, 16384, 16384), "cold")
    assert point_timeout(small, Settings()) == 30
    # 2 x 16384^3 flops at 200 GFLOP/s, 14 launches (10 runs, 3 warm-up, 1 verification), 5 times over
    assert point_timeout(large, Settings()) == pytest.approx(5 * 14 * 2 * 16384 ** 3 / 2e11)
    launch = max(2 * 64 ** 3 / 2e11, 3 * 64 * 64 * 4 / 5e9)  # at 64, the bytes (A, B and C once) set the pace
    assert point_timeout(small, Settings(max_noise=0.01, budget_s=20)) == pytest.approx(5 * (2 * 20 + 14 * launch))
    gemv = Point(get_variant("gemv_row"), (), Shape(65536, 65536, 0), "cold")  # bytes, not flops, set its pace
    assert point_timeout(gemv, Settings()) == pytest.approx(5 * 14 * gemv.op.min_bytes(gemv.shape) / 5e9)
    assert point_timeout(large, Settings(), given=5) == 5


def test_a_run_without_gpu_points_stays_in_this_process_and_says_so(tmp_path):
    _, df, meta = run(tmp_path, Isolation())
    assert set(df.status) == {"ok"}
    assert meta["invocations"][-1]["isolation"] == {"mode": "none", "why": "no point of the run uses the GPU"}


@pytest.mark.parametrize("args,needle", [
    (["run", "-v", "blas", "-s", "4", "--isolation", "thread"], "'--isolation': 'thread' is not one of"),
    (["run", "-v", "blas", "-s", "4", "--point-timeout", "0"], "'--point-timeout': 0.0 is not in the range x>0"),
    (["run", "-v", "blas", "-s", "4", "--point-timeout", "nan"], "--point-timeout"),
    (["run", "-v", "blas", "-s", "4", "--isolation", "none", "--point-timeout", "5"],
     "--point-timeout 5 stops a point's worker process, and --isolation none runs the points in this process"),
    (["tune", "-v", "gemv_tuned", "-s", "256", "--strategy", "brute", "--engine", "batched", "--isolation", "none",
      "--point-timeout", "5"], "--point-timeout 5 stops a point's worker process, and --isolation none runs"),
])
def test_bad_isolation_options_are_one_line_and_exit_2(tmp_path, args, needle):
    out = tmp_path / "x.csv"
    result = CliRunner().invoke(main, [*args, "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert needle in result.output and len(result.output.strip().splitlines()) == 1
    assert not out.exists()


def test_a_gpu_workers_imports_leave_out_the_api_and_pandas():
    """`import mmbench` is lazy (its run, plan and tune come on first use), so that a worker process
    importing its module (the isolated GPU child, the batched one, a Dask worker's) does not import the
    API, the studies and pandas first: 0.48 s of 0.6 s here, paid by every worker start."""
    code = ("import sys, mmbench.engine.isolated_child, mmbench.engine.batched_child, mmbench.engine.dask_worker; "
            "print(sorted(m for m in ('pandas', 'mmbench.api', 'mmbench.sweep', 'mmbench.studies') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr
    import mmbench

    assert mmbench.run.__module__ == "mmbench.api" and "tune" in dir(mmbench)


@pytest.mark.parametrize("command", [
    ["run", "-v", "dbuf", "-s", "64", "--tuning-cache", "none"],
    ["tune", "-v", "dbuf", "-s", "64", "--strategy", "random", "--budget", "2", "--engine", "points"],
])
@pytest.mark.parametrize("isolation", ["process", "none"])
def test_a_gpu_run_or_tuning_starts_its_worker_while_planned_and_ends_one_it_did_not_take(tmp_path, monkeypatch,
                                                                                          command, isolation):
    """engine/ahead.py: an isolated GPU run or points tuning starts its worker before its points are
    made (prestart) and ends it when no run took it (here: the run is stopped before it opens the GPU);
    --isolation none starts none; a dry run starts none."""
    from mmbench.engine.refusals import RunRefused

    events = []
    monkeypatch.setattr(points_isolated, "prestart", lambda runner: events.append("prestart"))
    monkeypatch.setattr(points_isolated, "discard_prestarted", lambda: events.append("discarded"))

    def stopped(*_, **__):
        events.append("execute")
        raise RunRefused("stopped before the GPU")

    monkeypatch.setattr(session, "execute", stopped)
    args = [*command, "--isolation", isolation] + (["--tuning-cache", tmp_path / "c.json"] if command[0] == "tune" else [])
    assert CliRunner().invoke(main, [str(a) for a in [*args, "-o", tmp_path / "dry.csv", "--dry-run"]]).exit_code == 0
    assert "prestart" not in events
    events.clear()
    done = CliRunner().invoke(main, [str(a) for a in [*args, "-o", tmp_path / "x.csv"]])
    assert done.exit_code == 2 and "stopped before the GPU" in done.output, done.output
    started = ["prestart"] if isolation == "process" else []
    assert events == [*started, "execute", "discarded"]  # started before the points, ended after
