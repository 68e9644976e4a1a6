"""Crash isolation of the batched tuner (issue 46, section 4), on the CPU: the batched engine measures
in a child process that can be thrown away (engine/batched_isolated.py). A configuration whose
kernel kills the child, loses its CUDA context or never ends is one `failed` row naming what happened
at the shape where it did, and its size class goes on in a fresh child; every other row is what a
run without the fault gives. The children are tests/isolation_fakes.py's Tuner* runners on a
stand-in GPU, which fault at BLOCKSIZE 96 and m = 24 (the shape 24x20 of the cell 5x5)."""

from __future__ import annotations

import csv
import json
import time
from dataclasses import replace

import pytest
from click.testing import CliRunner

import isolation_fakes
from mmbench import environment
from mmbench.cli import main
from mmbench.engine import batched_local, points_isolated, session
from mmbench.engine.batched_isolated import TIMEOUT_RULE, IsolatedBatched, config_timeout, shape_timeout
from mmbench.engine.batched_local import ConfigFault, LocalBatched, Recovery, Watcher
from mmbench.engine.points_isolated import Isolation
from mmbench.ops import get_op
from mmbench.results import read_metadata
from mmbench.sizes import Shape
from mmbench.tuning import resolve
from mmbench.variants import REGISTRY

GEMV = get_op("gemv")
TUNED = REGISTRY["gemv_tuned"]
CONFIGS = [(("BLOCKSIZE", b), ("KERNEL", 0), ("WORKSIZE_M", 1), ("WORKSIZE_N", 1)) for b in (32, 64, 96, 128)]
CULPRIT = "BLOCKSIZE=96,KERNEL=0,WORKSIZE_M=1,WORKSIZE_N=1"
SIZES = "cell:3x3,cell:5x5,cell:7x7"  # the fault is in the second class, at its fourth shape


@pytest.fixture(autouse=True)
def no_sanitizer(monkeypatch):
    monkeypatch.setattr(points_isolated, "sanitizer", lambda: None)  # a reason without the rerun hint


def isolated(tmp_path, runner: str, sizes: str = SIZES, **more):
    """The isolated batched engine's rows (the file as written), metadata part and wall time."""
    out, started = tmp_path / "t.csv", time.perf_counter()
    engine = IsolatedBatched(TUNED, CONFIGS, "cold", "read", Isolation(batched_runner=f"isolation_fakes:{runner}",
                                                                       **more))
    try:
        engine.prepare(1, time.perf_counter(), lambda line: None)
        engine.run(GEMV.parse_sizes(sizes), out, 1, set(), None, {}, 0.5)
    finally:
        engine.close()
    return out.read_text(), engine.meta()["isolation"], time.perf_counter() - started


def in_this_process(tmp_path, sizes: str = SIZES) -> str:
    """The same tuning by LocalBatched in this process, on the stand-in's healthy tuner."""
    out = tmp_path / "here.csv"
    engine = LocalBatched(isolation_fakes.STAND_IN, TUNED, CONFIGS, "cold", "read")
    engine.tuner = isolation_fakes.StandInShapes(TUNED, CONFIGS, lambda config, alone: None)
    engine.run(GEMV.parse_sizes(sizes), out, 1, set(), None, {}, 0.5)
    return out.read_text()


def lines(text: str) -> list[list[str]]:
    """The rows of a batched tuning file as written: size_class, params, status, reason, ..."""
    return list(csv.reader(text.splitlines()))[1:]


def test_without_a_fault_the_child_writes_the_file_this_process_writes(tmp_path):
    text, isolation, _ = isolated(tmp_path, "TunerFaulty")
    assert text == in_this_process(tmp_path) and len(lines(text)) == 3 * len(CONFIGS)
    assert isolation == {"mode": "process", "point_timeout": TIMEOUT_RULE, "restarts": 0, "faults": []}
    assert TIMEOUT_RULE.startswith("a shape: max(30 s, 5 x 2 launches of every configuration at 2 TFLOP/s or 50 GB/s")


@pytest.mark.parametrize("runner,reason", [
    ("TunerExitsAt", "worker process exited with status 7"),
    ("TunerKilledAt", "worker process killed by signal 9 (SIGKILL)"),
    ("TunerLosesContextAt", f"LogicError: {isolation_fakes.ILLEGAL}"),
    ("TunerHangsAt", "timed out after 2 s: a kernel that never ends?"),
], ids=["exits", "killed", "loses its context", "hangs"])
def test_a_faulting_configuration_is_one_failed_row_and_its_class_goes_on(tmp_path, runner, reason):
    """The child lost in the cell 5x5's batches, a fresh child times that shape one configuration at
    a time and is lost at BLOCKSIZE 96: that configuration's row fails naming the fault, and a third
    child measures the rest of the class and the next one. Every other row is the fault-free run's."""
    text, isolation, took = isolated(tmp_path, runner, timeout_s=1.5)
    assert took < 30  # the hang cost two timeouts, not the hour it sleeps
    got, expected = lines(text), lines(in_this_process(tmp_path))
    assert [row[:2] for row in got] == [row[:2] for row in expected]  # every class, every configuration, once
    failed = [row for row in got if row[2] != "ok"]
    assert failed == [["cell05x05", CULPRIT, "failed", f"24x20: {reason}", "9", "", "", "", "0.1"]]  # 0.1: at the shapes before
    assert [row for row in got if row not in failed] == [row for row in expected if row[:2] != failed[0][:2]]
    assert isolation["restarts"] == 2
    first = reason.removeprefix("LogicError: ")  # in the batches, the error as the synchronize raised it
    assert isolation["faults"] == [{"class": "cell05x05", "shape": "24x20", "configuration": None, "reason": first},
                                   {"class": "cell05x05", "shape": "24x20", "configuration": CULPRIT, "reason": reason}]


def test_a_fault_at_a_classs_pivot_fails_the_configuration_at_every_shape_after(tmp_path):
    """24x20 is the pivot of these three shapes: the configuration that faults there is not timed at
    the others (as one that failed there never is), and needs no further restart."""
    text, isolation, _ = isolated(tmp_path, "TunerExitsAt", sizes="24x20,29x24,20x20")
    assert [row[2] for row in lines(text)] == ["ok", "ok", "failed", "ok"]
    assert lines(text)[2][3] == "24x20: worker process exited with status 7"
    assert isolation["restarts"] == 2


def test_a_fault_that_does_not_come_back_leaves_every_configuration_measured(tmp_path, monkeypatch):
    monkeypatch.setenv("MMBENCH_TEST_FAULTED", str(tmp_path / "faulted"))
    text, isolation, _ = isolated(tmp_path, "TunerFaultsOnce")
    assert text == in_this_process(tmp_path)
    assert isolation["restarts"] == 1 and isolation["faults"] == [
        {"class": "cell05x05", "shape": "24x20", "configuration": None, "reason": "worker process killed by signal 9 (SIGKILL)"}]


def test_a_child_lost_twice_at_a_shape_before_any_configuration_ran_fails_the_tuning(tmp_path):
    """Not a configuration's fault (the child dies before the first runs alone): the tuning fails as
    it would in this process, the classes before it written, rather than restarting for ever."""
    with pytest.raises(RuntimeError, match=r"lost in size class cell05x05 at 24x20 twice, the second time before any "
                                           r"configuration ran: worker process exited with status 7"):
        isolated(tmp_path, "TunerDiesAtShape")
    assert {row[0] for row in lines((tmp_path / "t.csv").read_text())} == {"cell03x03"}


def test_a_recovery_fails_its_culprits_from_their_shape_on_and_times_its_careful_shape_one_by_one():
    """measure_class after a fault: BLOCKSIZE 96, found faulting at the shape 3, is failed there and
    after (timed before it); the shape 3 is told configuration by configuration, the others not."""
    group = next(g for cls, g in batched_local.by_class(GEMV, GEMV.parse_sizes("cell:5x5")))
    told = []
    tuner = isolation_fakes.StandInShapes(TUNED, CONFIGS, lambda config, alone: None)
    watcher = Watcher(lambda j: told.append(("at", j)), lambda c: told.append(("try", c)))
    rows = batched_local.measure_class(tuner, "cell05x05", group, lambda s: None, 0.0,
                                       Recovery(careful=3, failed={2: (3, "boom")}), watcher)
    assert [r["status"] for r in rows] == ["ok", "ok", "failed", "ok"] and rows[2]["reason"] == "24x20: boom"
    assert told == [("at", 0), ("at", 1), ("at", 2), ("at", 3), ("try", 0), ("try", 1), ("try", 3),
                    *(("at", j) for j in range(4, 9))]


def test_the_timeouts_cover_a_shapes_batches_and_a_configuration_alone():
    small, large = Shape(24, 20, 0), Shape(16384, 16384, 0)  # the last: 1 GiB of A
    assert shape_timeout(GEMV, small, 1536) == config_timeout(GEMV, small) == 30
    launch = GEMV.min_bytes(large)
    assert shape_timeout(GEMV, large, 1536) == pytest.approx(5 * 2 * 1536 * launch / 5e10)  # at 50 GB/s
    assert config_timeout(GEMV, large) == pytest.approx(max(30, 5 * 2 * launch / 5e9))  # the points rule's 5 GB/s
    assert shape_timeout(GEMV, large, 1536, given=4) == config_timeout(GEMV, large, given=4) == 4


def test_isolation_none_keeps_the_batched_engine_in_this_process(monkeypatch):
    from mmbench import device

    monkeypatch.setattr(device, "open_gpu", lambda: isolation_fakes.STAND_IN)
    here = session.open_batched_engine(TUNED, CONFIGS, "cold", "read", isolation=Isolation("none"))
    assert isinstance(here, LocalBatched) and here.gpu is isolation_fakes.STAND_IN
    there = session.open_batched_engine(TUNED, CONFIGS, "cold", "read",
                                        isolation=Isolation(batched_runner="isolation_fakes:TunerFaulty"))
    try:
        assert isinstance(there, IsolatedBatched) and there.gpu_names() == {"Stand-in GPU"}
    finally:
        there.close()


# -- through `mmbench tune` -------------------------------------------------------------------------
def tune(tmp_path, monkeypatch, runner: str, *more):
    """`mmbench tune --engine batched` of CONFIGS on the cells 3x3 and 5x5 with the runner as its child."""
    collect = environment.collect  # the parent opens no GPU: the child's facts stand in for the machine's
    monkeypatch.setattr(environment, "collect", lambda gpu=None: {**collect(None),
                                                                  "gpu": {"name": "Stand-in GPU", "uuid": "GPU-0"}})
    real = resolve.isolation_of
    monkeypatch.setattr(resolve, "isolation_of", lambda *args: replace(real(*args),
                                                                       batched_runner=f"isolation_fakes:{runner}"))
    cache = tmp_path / "cache.json"
    if not cache.exists():
        cache.write_text("{}\n")
    return CliRunner().invoke(main, ["tune", "-v", "gemv_tuned", "-s", "cell:3x3,cell:5x5", "--strategy", "brute",
                                     "--params", "BLOCKSIZE=32/64/96/128,KERNEL=0,WORKSIZE_M=1,WORKSIZE_N=1",
                                     "--engine", "batched", "--tuning-cache", str(cache), "-o",
                                     str(tmp_path / "t.csv"), *more])


def test_a_tuning_with_a_faulting_configuration_finishes_and_a_resume_runs_nothing_again(tmp_path, monkeypatch):
    result = tune(tmp_path, monkeypatch, "TunerKilledAt", "--point-timeout", "5")
    assert result.exit_code == 0, result.output
    assert "rows: 7 ok, 1 failed" in result.output and "1 configuration faulted" in result.output
    rows = batched_local.read_rows(tmp_path / "t.csv")
    assert len(rows) == 8 and list(rows.status).count("failed") == 1
    assert json.loads((tmp_path / "cache.json").read_text())  # both classes' best recorded
    again = tune(tmp_path, monkeypatch, "TunerKilledAt", "--resume")
    assert again.exit_code == 0, again.output
    assert batched_local.read_rows(tmp_path / "t.csv").equals(rows)  # the failed row kept, nothing measured again
    first, second = read_metadata(tmp_path / "t.csv")["invocations"]
    assert first["isolation"]["point_timeout"] == "5 s" and first["isolation"]["restarts"] == 2
    assert [f["configuration"] for f in first["isolation"]["faults"]] == [None, CULPRIT]
    assert second["isolation"]["restarts"] == 0 and second["status_counts"] == {"wall_s": 0.0}


def test_a_tuning_interrupted_after_a_fault_measures_that_class_whole_on_resume(tmp_path, monkeypatch):
    """Ctrl-C as the fresh child starts: the file keeps the cell 3x3; the resume measures the cell 5x5
    whole in its own invocation, which finds the fault again and records it: no row of that class
    comes from the interrupted run."""
    opened = IsolatedBatched._open

    def interrupted(self, points):
        if self.restarts:
            raise KeyboardInterrupt
        opened(self, points)

    monkeypatch.setattr(IsolatedBatched, "_open", interrupted)
    result = tune(tmp_path, monkeypatch, "TunerExitsAt")
    assert result.exit_code == 130 and "holds 1 finished size class" in " ".join(result.output.split()), result.output
    assert set(batched_local.read_rows(tmp_path / "t.csv").size_class) == {"cell03x03"}
    monkeypatch.setattr(IsolatedBatched, "_open", opened)
    again = tune(tmp_path, monkeypatch, "TunerExitsAt", "--resume")
    assert again.exit_code == 0, again.output
    rows = batched_local.read_rows(tmp_path / "t.csv")
    assert len(rows) == 8 and rows[rows.status == "failed"].params.tolist() == [CULPRIT]
    first, second = read_metadata(tmp_path / "t.csv")["invocations"]
    assert first["state"] == "interrupted" and [f["configuration"] for f in first["isolation"]["faults"]] == [None]
    assert second["state"] == "finished" and [f["configuration"] for f in second["isolation"]["faults"]] == [None, CULPRIT]
    assert second["status_counts"]["failed"] == 1 and rows[rows.status == "ok"].gflops.notna().all()


def test_on_a_cluster_each_workers_classes_are_isolated_alike(tmp_path, monkeypatch):
    """DaskBatched with an isolation: each worker measures its classes in a child process of its own
    (the workers are this process's threads here, their children real processes); the fault is one
    failed row, and the worker's restarts and faults reach the metadata under its name."""
    distributed = pytest.importorskip("distributed")
    from mmbench.engine.points_dask import ClusterSpec

    monkeypatch.setattr(environment, "gpu_info", lambda gpu: {"name": gpu.facts.name, "uuid": gpu.facts.uuid})
    out, isolation = tmp_path / "t.csv", Isolation(batched_runner="isolation_fakes:TunerKilledAt")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        engine = session.open_batched_engine(TUNED, CONFIGS, "cold", "read", ClusterSpec(cluster.scheduler_address),
                                             say=lambda line: None, isolation=isolation)
        try:
            engine.prepare(1, 0.0, lambda line: None)
            engine.run(GEMV.parse_sizes(SIZES), out, 1, set(), None, {}, 0.5)
            meta = engine.meta()
        finally:
            engine.close()
    got = lines(out.read_text())
    assert sorted(row[:2] for row in got) == sorted(row[:2] for row in lines(in_this_process(tmp_path)))
    assert [(row[0], row[1], row[3]) for row in got if row[2] != "ok"] == [
        ("cell05x05", CULPRIT, "24x20: worker process killed by signal 9 (SIGKILL)")]
    (worker,) = meta["isolation"]["workers"].values()
    assert meta["isolation"]["point_timeout"] == TIMEOUT_RULE and worker["restarts"] == 2
    assert [f["configuration"] for f in worker["faults"]] == [None, CULPRIT]


def test_a_lost_contexts_error_is_not_hidden_by_the_frees_after_it():
    class Buffer:
        def free(self):
            raise RuntimeError("cuMemFree failed: an illegal memory access was encountered")

    with pytest.raises(ConfigFault, match="illegal address"):
        try:
            raise ConfigFault(1, "illegal address")
        finally:
            batched_local.free_all([Buffer(), Buffer()])
    with pytest.raises(RuntimeError, match="cuMemFree"):  # with nothing else going wrong, a free's error is said
        batched_local.free_all([Buffer()])
