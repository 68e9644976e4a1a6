"""The compiled naive CPU baselines: correct, timed as CPU points, and kept within a time budget."""

import numpy as np
import pytest

from mmbench import naive_cpu
from mmbench.sizes import Shape
from mmbench.engine.plan import Point, Settings
from mmbench.engine.points_local import LocalPoints
from mmbench.variants import REGISTRY


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (1, 7, 3), (33, 5, 65), (64, 64, 64)])
def test_the_compiled_loops_compute_what_they_should(m, n, k):
    rng = np.random.default_rng(1)
    a, b = rng.random((m, k), dtype=np.float32), rng.random((k, n), dtype=np.float32)
    c = np.full((m, n), np.nan, np.float32)
    naive_cpu.matmul_ijk(a, b, c)
    assert np.allclose(c, a.astype(np.float64) @ b, rtol=1e-5)
    out = np.full((k, m), np.nan, np.float32)
    naive_cpu.transpose_naive(a, out)
    assert (out == a.T).all()


def test_cpu_naive_points_run_and_verify():
    points = [Point(REGISTRY["cpu_naive_matmul"], (), Shape(31, 33, 65), "hot"),
              Point(REGISTRY["cpu_naive_transpose"], (), Shape(33, 4097, 0), "hot")]
    rows = []
    LocalPoints(Settings(runs=2, warmup=0), points).run(points, rows.append)
    assert [r["status"] for r in rows] == ["ok", "ok"], rows
    assert rows[0]["gflops_mean"] > 0 and rows[1]["gflops_mean"] is None and rows[1]["gbytes_per_s"] > 0


def test_a_point_over_the_cpu_budget_is_skipped_with_its_estimate():
    point = Point(REGISTRY["cpu_naive_matmul"], (), Shape(512, 512, 512), "hot")
    rows = []
    LocalPoints(Settings(runs=10, warmup=3, cpu_budget_s=0.001), [point]).run([point], rows.append)
    (row,) = rows
    assert row["status"] == "skipped" and "over the CPU time budget of 0.001 s" in row["reason"]
    assert "14 calls of about" in row["reason"] and "scaled from one call at 128" in row["reason"]


def test_no_c_compiler_is_a_failed_row_that_says_so(monkeypatch):
    naive_cpu.library.cache_clear()
    monkeypatch.setattr(naive_cpu.shutil, "which", lambda name: None)
    point = Point(REGISTRY["cpu_naive_transpose"], (), Shape(8, 8, 0), "hot")
    rows = []
    LocalPoints(Settings(runs=1, warmup=0), [point]).run([point], rows.append)
    naive_cpu.library.cache_clear()
    assert rows[0]["status"] == "failed" and "no C compiler (cc) on PATH" in rows[0]["reason"]


def test_a_budgets_reason_never_rounds_a_duration_to_zero():
    from mmbench.engine.points_local import seconds

    assert [seconds(x) for x in (0.0312, 0.4, 3.456, 12.4, 123.6)] == ["0.031 s", "0.4 s", "3.5 s", "12 s", "124 s"]
