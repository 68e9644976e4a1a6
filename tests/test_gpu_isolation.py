"""Crash isolation on the GPU (pytest -m gpu): deliberately broken kernels (tests/broken_kernels/) in a
sweep between good ones. Isolated, an out-of-bounds write is a failed row naming the illegal address,
an endless kernel a failed row after --point-timeout, a kernel that writes nothing a wrong row, and
every good kernel around them is measured. In one process, the out-of-bounds write loses the
context, and the points after it fail at once saying so (run in a subprocess: it would poison this
one's CUDA for the other GPU tests)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from types import MappingProxyType

import pytest

from mmbench.engine import session
from mmbench.engine.plan import Point, Settings
from mmbench.engine.points_isolated import Isolation
from mmbench.results import read_metadata, read_results
from mmbench.sizes import Shape
from mmbench.variants import REGISTRY, Variant, param_points

pytestmark = pytest.mark.gpu

BROKEN = Path(__file__).parent / "broken_kernels"
SHAPE = Shape(256, 256, 256)
SETTINGS = Settings(runs=3, warmup=1)


def broken(name: str) -> Variant:
    return Variant(name=name, backend="cuda", label=name, description="deliberately broken", family="broken",
                   axes=MappingProxyType({"BLOCK": (16,)}), source_dir=BROKEN)


def point(variant: Variant) -> Point:
    return Point(variant, param_points(variant, {})[0], SHAPE, "cold")


def sweep() -> list[Point]:
    return [point(v) for v in (REGISTRY["best"], broken("oob_write"), REGISTRY["shared"], broken("endless"),
                               broken("writes_nothing"), REGISTRY["naive"])]


def test_broken_kernels_are_their_own_rows_and_the_sweep_goes_on(tmp_path, gpu):
    out = tmp_path / "broken.csv"
    started = time.perf_counter()
    outcome = session.execute(sweep(), SETTINGS, out, {"name": "broken"}, ["test"],
                              isolation=Isolation(timeout_s=10))
    took = time.perf_counter() - started
    df = read_results(out)
    assert outcome.state == "finished" and took < 120
    assert list(df.variant) == ["best", "oob_write", "shared", "endless", "writes_nothing", "naive"]
    assert list(df.status) == ["ok", "failed", "ok", "failed", "wrong", "ok"], list(df.reason)
    reasons = dict(zip(df.variant, df.reason))
    assert "illegal memory access" in reasons["oob_write"] or "illegal address" in reasons["oob_write"], reasons
    assert reasons["endless"].startswith("timed out after 10 s: a kernel that never ends?")
    assert "not finite" in reasons["writes_nothing"]
    assert all(df.time_ms_median[df.status == "ok"] > 0) and set(df.gpu) == {gpu.facts.name}
    meta = read_metadata(out)
    isolation = meta["invocations"][-1]["isolation"]
    assert isolation["restarts"] == 2 and [f["point"].split(" @")[0] for f in isolation["faults"]] == \
        ["oob_write[BLOCK=16]", "endless[BLOCK=16]"]
    assert meta["gpu"]["name"] == gpu.facts.name and meta["state"] == "finished"
    assert any(k.startswith("best[") for k in meta["kernels"]) and any(k.startswith("oob_write[") for k in meta["kernels"])


IN_ONE_PROCESS = """
import json, sys
sys.path.insert(0, sys.argv[1])
from test_gpu_isolation import SETTINGS, broken, point
from mmbench.engine.points_local import LocalPoints
from mmbench.variants import REGISTRY
points = [point(REGISTRY["best"]), point(broken("oob_write")), point(REGISTRY["shared"])]
runner = LocalPoints(SETTINGS, points)
rows = []
runner.run(points, rows.append)
runner.close()
print(json.dumps([[r["status"], r["reason"]] for r in rows] + [runner.meta()]), flush=True)
import os; os._exit(0)  # the rows are what is tested, not how PyCUDA's exit copes with a lost context
"""


def test_in_one_process_a_lost_context_fails_the_later_points_at_once_naming_the_fault():
    done = subprocess.run([sys.executable, "-c", IN_ONE_PROCESS, str(Path(__file__).parent)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    *rows, meta = json.loads(done.stdout.strip().splitlines()[-1])
    assert [s for s, _ in rows] == ["ok", "failed", "failed"]
    assert "the CUDA context of the process is lost" in rows[1][1]
    assert rows[2][1].startswith("not run: the CUDA context of the process is lost at an earlier point (")
    assert "illegal" in rows[2][1] and "--isolation process" in rows[2][1]
    assert meta["isolation"]["mode"] == "none" and "illegal" in meta["isolation"]["context_lost"]


@pytest.mark.parametrize("where", [[], ["--cluster", "local"]], ids=["here", "dask"])
def test_a_users_broken_kernels_cost_one_row_each_from_the_command_line(tmp_path, where):
    """The same kernels as a user's variant file (broken.toml), through `mmbench run`, in this machine's
    worker process and on a Dask worker: each fault one row, the good kernels around them measured."""
    out = tmp_path / "cli.csv"
    command = [sys.executable, "-m", "mmbench", "-f", str(BROKEN / "broken.toml"), "run", "-v",
               "best,oob_write,shared,endless,writes_nothing,naive", "-s", "256", "--runs", "3",
               "--point-timeout", "10", "-o", str(out), *where]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr  # failed points: exit 1, every row kept
    df = read_results(out).set_index("variant")
    assert df.status.to_dict() == {"best": "ok", "oob_write": "failed", "shared": "ok", "endless": "failed",
                                   "writes_nothing": "wrong", "naive": "ok"}
    assert "illegal" in df.reason["oob_write"] and "timed out after 10" in df.reason["endless"]
