"""Crash isolation on the GPU (pytest -m gpu): deliberately broken kernels (tests/broken_kernels/) in a
sweep between good ones. Isolated, an out-of-bounds write is a failed row naming the illegal address,
an endless kernel a failed row after --point-timeout, a kernel that writes nothing a wrong row, and
every good kernel around them is measured. In one process, the out-of-bounds write loses the
context, and the points after it fail at once saying so (run in a subprocess: it would poison this
one's CUDA for the other GPU tests). The batched tuner alike: gemv_tuned with an out-of-bounds and an
endless configuration among good ones, each a failed row and every class measured."""

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
# the endless kernels wait this long to be failed rows: long enough for a good point at 256 (milliseconds), short
# enough that the waits (six in this file) do not dominate the GPU suite
TIMEOUT_S = 4


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
                              isolation=Isolation(timeout_s=TIMEOUT_S))
    took = time.perf_counter() - started
    df = read_results(out)
    assert outcome.state == "finished" and took < 120
    assert list(df.variant) == ["best", "oob_write", "shared", "endless", "writes_nothing", "naive"]
    assert list(df.status) == ["ok", "failed", "ok", "failed", "wrong", "ok"], list(df.reason)
    reasons = dict(zip(df.variant, df.reason))
    assert "illegal memory access" in reasons["oob_write"] or "illegal address" in reasons["oob_write"], reasons
    assert reasons["endless"].startswith(f"timed out after {TIMEOUT_S} s: a kernel that never ends?")
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
               "--point-timeout", str(TIMEOUT_S), "-o", str(out), *where]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr  # failed points: exit 1, every row kept
    df = read_results(out).set_index("variant")
    assert df.status.to_dict() == {"best": "ok", "oob_write": "failed", "shared": "ok", "endless": "failed",
                                   "writes_nothing": "wrong", "naive": "ok"}
    assert "illegal" in df.reason["oob_write"] and f"timed out after {TIMEOUT_S} s" in df.reason["endless"]


# -- the batched tuner (issue 46, section 4) -------------------------------------------------------------
GEMV_CONFIGS = [(("BLOCKSIZE", b), ("KERNEL", 0), ("WORKSIZE_M", 1), ("WORKSIZE_N", 1)) for b in (32, 64, 96, 128)]
# Put at the top of gemv_tuned: BLOCKSIZE 64 writes a terabyte past y (an illegal address, which loses
# the context), BLOCKSIZE 96 spins on y's NaN poison for ever; 32 and 128 are the kernel as it is.
GEMV_BUGS = """
#if BLOCKSIZE == 64
    y[(size_t)1 << 38] = 1.0f;
#endif
#if BLOCKSIZE == 96
    { volatile float* spin = (volatile float*)y; while (!(spin[0] == 1.0e30f)) {} }
#endif
"""


def broken_gemv(folder: Path) -> Variant:
    """gemv_tuned from a copy of its kernel with GEMV_BUGS in it (its headers found under kernels/)."""
    import dataclasses

    text = (Path(__file__).parents[1] / "kernels" / "gemv" / "tuned.cu").read_text()
    broken = text.replace("(GEMV_WORK_ARGS)\n{\n", "(GEMV_WORK_ARGS)\n{\n" + GEMV_BUGS, 1)
    assert broken != text
    (folder / "gemv").mkdir()
    (folder / "gemv" / "tuned.cu").write_text(broken)
    return dataclasses.replace(REGISTRY["gemv_tuned"], source_dir=folder)


def batched(engine, sizes: str, out: Path):
    """A batched tuning of sizes by an opened engine (closed after), pruning nothing; its rows."""
    from mmbench.engine import batched_local
    from mmbench.ops import get_op

    try:
        engine.prepare(4, time.perf_counter(), print)
        engine.run(get_op("gemv").parse_sizes(sizes), out, 1, set(), None, {}, 0.0)
    finally:
        engine.close()
    return batched_local.read_rows(out)


def test_a_batched_tunings_faulting_and_endless_configurations_are_failed_rows_and_its_classes_go_on(tmp_path, gpu):
    """In each class the out-of-bounds configuration and the endless one are failed rows naming the
    illegal address and the timeout, found at the class's pivot; the two good ones are verified at
    every shape. Each class costs three fresh workers (the fault in the batches, then each culprit)."""
    from mmbench.engine.batched_isolated import IsolatedBatched

    started = time.perf_counter()
    engine = IsolatedBatched(broken_gemv(tmp_path), GEMV_CONFIGS, "cold", "read", Isolation(timeout_s=TIMEOUT_S))
    rows = batched(engine, "cell:9x9,cell:12x10", tmp_path / "t.csv")
    assert time.perf_counter() - started < 300
    assert list(rows.size_class) == ["cell09x09"] * 4 + ["cell12x10"] * 4
    assert list(rows.status) == ["ok", "failed", "failed", "ok"] * 2, list(rows.reason)
    assert (rows.shapes[rows.status == "ok"] == 9).all() and (rows.gflops[rows.status == "ok"] > 0).all()
    for reason in rows.reason[rows.params.str.startswith("BLOCKSIZE=64,")]:
        assert "illegal" in reason, reason
    for reason in rows.reason[rows.params.str.startswith("BLOCKSIZE=96,")]:
        assert f"timed out after {TIMEOUT_S} s: a kernel that never ends?" in reason, reason
    isolation = engine.meta()["isolation"]
    assert isolation["restarts"] == 6
    assert [f["configuration"].split(",")[0] if f["configuration"] else None for f in isolation["faults"]] == \
        [None, "BLOCKSIZE=64", "BLOCKSIZE=96"] * 2


def test_the_isolated_batched_tuner_verifies_what_this_process_verifies(tmp_path, gpu):
    """The same configurations and shapes in this process and in a worker process: the same rows but
    for their times, every configuration verified at every shape."""
    from mmbench.engine.batched_isolated import IsolatedBatched
    from mmbench.engine.batched_local import LocalBatched

    good = [c for c in GEMV_CONFIGS if dict(c)["BLOCKSIZE"] in (32, 128)]
    sizes = "cell:9x9,cell:12x10"
    here = batched(LocalBatched(gpu, REGISTRY["gemv_tuned"], good, "cold", "read"), sizes, tmp_path / "here.csv")
    there = batched(IsolatedBatched(REGISTRY["gemv_tuned"], good, "cold", "read"), sizes, tmp_path / "there.csv")
    columns = ["size_class", "params", "status", "shapes"]
    assert here[columns].equals(there[columns]) and set(there.status) == {"ok"} and len(there) == 4
