"""The batched tuner's bookkeeping, on the CPU: scoring a class, reading the GPU check's words,
cutting a class a crash left partial, and the tuning cache's cells."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from mmbench.engine import batched_local
from mmbench.engine.batched_local import Measured, class_rows, done_classes, verdict
from mmbench.ops import get_op
from mmbench.sizes import Shape
from mmbench.tuning.cache import YOURS, CacheFile, lookup
from mmbench.vocabulary import DeviceId
from mmbench.variants import REGISTRY

GEMV = get_op("gemv")


def _words(bad: int, worst: float, sq: float) -> np.ndarray:
    return np.concatenate([np.array([bad], np.uint32), np.array([worst], np.float32).view(np.uint32),
                           np.array([sq], np.float64).view(np.uint32)])


def test_verdict_reads_the_gpu_checks_words_with_check_sums_rules():
    assert verdict(_words(0, 0.5, 1e-12), 100, 1.0, 64)[:2] == ("ok", "")
    status, reason, _ = verdict(_words(3, 0.0, 0.0), 100, 1.0, 64)
    assert status == "wrong" and reason.startswith("3 of 100 outputs not finite")
    status, reason, worst = verdict(_words(0, 2.5, 0.0), 100, 1.0, 64)
    assert status == "wrong" and "error bound" in reason and worst == 2.5
    # rule 3: relative Frobenius error over 8 u sqrt(k)
    tol = 8 * 2.0**-24 * math.sqrt(64)
    assert verdict(_words(0, 0.5, (0.9 * tol) ** 2), 100, 1.0, 64)[0] == "ok"
    assert verdict(_words(0, 0.5, (1.1 * tol) ** 2), 100, 1.0, 64)[0] == "wrong"


def test_class_rows_score_by_the_mean_gflops_over_the_shapes_and_fail_whole():
    shapes = [Shape(100, 200, 0), Shape(300, 400, 0)]
    configs = [(("BLOCKSIZE", 32),), (("BLOCKSIZE", 64),)]
    results = [[Measured("ok", "", 0.01, 0.1), Measured("ok", "", 0.02, 0.2)],
               [Measured("ok", "", 0.03, 0.3), Measured("wrong", "1 of 300 outputs not finite", 0.04, math.nan)]]
    rows = class_rows("cell01x02", configs, shapes, results, GEMV.flops)
    mean = (2 * 100 * 200 / (0.01 * 1e6) + 2 * 300 * 400 / (0.03 * 1e6)) / 2
    assert rows[0]["status"] == "ok" and rows[0]["gflops"] == pytest.approx(mean)
    assert rows[0]["time_ms_min"] == 0.01 and rows[0]["time_ms_max"] == 0.03 and rows[0]["err_bound_ratio"] == 0.3
    assert rows[1]["status"] == "wrong" and rows[1]["reason"] == "300x400: 1 of 300 outputs not finite"
    assert "gflops" not in rows[1]


def test_a_pruned_configuration_keeps_its_pivot_speed_and_reason():
    shapes = [Shape(100, 200, 0), Shape(300, 400, 0)]
    configs = [(("BLOCKSIZE", 32),), (("BLOCKSIZE", 64),)]
    results = [[Measured("ok", "", 0.01, 0.1), Measured("ok", "", 0.04, 0.2)],
               [Measured("ok", "", 0.03, 0.3), Measured("pruned", "100x200: slow", math.nan, math.nan)]]
    rows = class_rows("cell01x02", configs, shapes, results, GEMV.flops)
    assert rows[1]["status"] == "pruned" and rows[1]["reason"] == "100x200: slow" and rows[1]["shapes"] == 1
    assert rows[1]["gflops"] == pytest.approx(2 * 100 * 200 / (0.04 * 1e6)) and rows[1]["time_ms_max"] == 0.04
    assert rows[0]["status"] == "ok" and rows[0]["shapes"] == 2


def test_after_the_pivot_the_slow_and_the_failed_are_left_untimed():
    pivot = Shape(100, 200, 0)
    measured = [Measured("ok", "", 0.010, 0.1), Measured("ok", "", 0.019, 0.1), Measured("ok", "", 0.021, 0.1),
                Measured("wrong", "2 of 100 outputs not finite", 0.01, math.nan), Measured("skipped", "spills", math.nan, math.nan)]
    untimed = batched_local.pruned_after_pivot(measured, 0.5, pivot, GEMV.flops)
    assert sorted(untimed) == [2, 3, 4]  # 0.021 ms is slower than the best's 0.010 / 0.5; 0.019 is not
    assert untimed[2].status == "pruned" and untimed[2].reason == "under 0.5 of the best's 4 GFLOP/s at the pivot 100x200"
    assert (untimed[3].status, untimed[3].reason) == ("wrong", "2 of 100 outputs not finite")
    assert untimed[4].status == "skipped"
    assert sorted(batched_local.pruned_after_pivot(measured, 0.0, pivot, GEMV.flops)) == [3, 4]  # 0: no pruning


def test_a_design_skipped_at_some_shape_of_a_class_is_timed_nowhere_in_it():
    """Threads along columns (KERNEL 1) at BLOCKSIZE 64 runs at m = 63 but not at 76 or 92: its row
    is skipped, so it is not timed even at the pivot, where it could otherwise set the best speed
    that prunes the others."""
    tuned = REGISTRY["gemv_tuned"]
    group = [s for _, g in batched_local.by_class(GEMV, GEMV.parse_sizes("cell:7x7")) for s in g]
    assert sorted({s.m for s in group}) == [63, 76, 92] and group[0].m == 63  # the pivot: it runs there
    p = lambda kernel, bs: (("BLOCKSIZE", bs), ("KERNEL", kernel), ("WORKSIZE_M", 1), ("WORKSIZE_N", 1))  # noqa: E731
    configs = [p(1, 64), p(1, 128), p(0, 32), p(2, 64)]
    skipped = batched_local.skipped_in_class(GEMV, tuned, configs, group)
    assert list(skipped) == [0] and skipped[0].status == "skipped" and "m = 76" in skipped[0].reason


def test_a_class_starts_at_its_pivot_the_shape_of_median_footprint():
    cell = GEMV.parse_sizes("cell:10x12")
    [(cls, group)] = list(batched_local.by_class(GEMV, cell))
    sizes = sorted(GEMV.device_bytes(s) for s in cell)
    assert cls == "cell10x12" and len(group) == 9 and set(group) == set(cell)
    assert GEMV.device_bytes(group[0]) == sizes[4] and group[1:] == [s for s in cell if s != group[0]]


def test_a_resume_cuts_the_class_a_crash_left_partial_and_reads_a_finished_gz(tmp_path):
    path = tmp_path / "t.csv"
    writer = batched_local.ClassWriter(path)
    row = {"params": "BLOCKSIZE=32", "status": "ok", "reason": "", "shapes": 9, "gflops": 1.5}
    writer.write([{**row, "size_class": "cell00x00"}, {**row, "size_class": "cell00x00", "params": "BLOCKSIZE=64"}])
    writer.write([{**row, "size_class": "cell00x01"}])  # the crash came before the class's second row
    writer.close()
    with open(path, "a") as f:
        f.write("cell00x01,BLOCKSIZE=64,o")  # and a torn line
    done, notice = done_classes(path, configs=2)
    assert done == {"cell00x00"} and "cell00x01" in notice and "measured again" in notice
    assert [ln.split(",")[0] for ln in path.read_text().splitlines()] == ["size_class", "cell00x00", "cell00x00"]
    assert path.read_text().endswith("\n")
    assert done_classes(path, configs=2) == ({"cell00x00"}, None)  # whole now: nothing more to cut
    gz = batched_local.compress(path)
    assert not path.exists() and gz.name == "t.csv.gz"
    assert list(batched_local.read_rows(path).size_class) == ["cell00x00", "cell00x00"]
    assert done_classes(path, configs=2) == ({"cell00x00"}, None) and path.exists()  # a resume unpacks it


def test_a_file_of_other_columns_is_refused(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("op,variant\nx,y\n")
    with pytest.raises(batched_local.BatchError, match="other columns"):
        done_classes(path, configs=1)


def test_best_per_class_takes_the_highest_mean_among_the_verified():
    import pandas as pd

    rows = pd.DataFrame({"size_class": ["cell01x01"] * 3 + ["cell02x02"], "params": ["A=1", "A=2", "A=3", "A=1"],
                         "status": ["ok", "ok", "wrong", "wrong"], "shapes": [9] * 4, "gflops": [5.0, 7.0, None, None]})
    assert batched_local.best_per_class(rows) == {"cell01x01": {"params": "A=2", "gflops": 7.0, "shapes": 9, "tried": 3}}


def test_a_run_takes_its_shapes_cell_else_the_nearest_tuned_cell():
    tuned = REGISTRY["gemv_tuned"]
    entry = lambda cls, p: {"device": "G", "variant": "gemv_tuned", "source_hash": "h", "size_class": cls, "params": p}  # noqa: E731
    entries = {"a": entry("cell03x14", "BLOCKSIZE=64,KERNEL=1,WORKSIZE_M=1,WORKSIZE_N=2"),
               "b": entry("cell14x03", "BLOCKSIZE=256,KERNEL=0,WORKSIZE_M=2,WORKSIZE_N=1")}
    cache = (CacheFile(Path("cache.json"), YOURS, entries),)
    device = DeviceId("G")
    assert dict(lookup(cache, device, tuned, "h", Shape(8, 4000, 0)).params)["KERNEL"] == 1
    assert dict(lookup(cache, device, tuned, "h", Shape(4000, 8, 0)).params)["BLOCKSIZE"] == 256
    assert dict(lookup(cache, device, tuned, "h", Shape(9000, 3, 0)).params)["BLOCKSIZE"] == 256  # cell 15x2: nearest
    assert GEMV.class_distance("cell05x05", "cell05x06") < GEMV.class_distance("cell05x05", "cell07x05")


def test_the_batched_engine_here_opens_this_processs_gpu_and_says_when_it_cannot(monkeypatch):
    """session.open_batched_engine without a cluster: LocalBatched on the GPU that device.open_gpu
    gives (its model what a resumed file is checked against), or RunAborted in one line."""
    from types import SimpleNamespace

    from mmbench import device
    from mmbench.engine.refusals import RunAborted
    from mmbench.engine.session import open_batched_engine

    def none():
        raise RuntimeError("no CUDA device")

    monkeypatch.setattr(device, "open_gpu", none)
    with pytest.raises(RunAborted, match="cannot open the GPU: no CUDA device"):
        open_batched_engine(REGISTRY["gemv_tuned"], [], "cold", "read")
    gpu = SimpleNamespace(facts=SimpleNamespace(name="Fake GPU"))
    monkeypatch.setattr(device, "open_gpu", lambda: gpu)
    engine = open_batched_engine(REGISTRY["gemv_tuned"], [], "cold", "read")
    assert isinstance(engine, batched_local.LocalBatched) and engine.gpu is gpu
    assert engine.gpu_names() == {"Fake GPU"} and engine.kernels == {} and engine.meta() == {}
