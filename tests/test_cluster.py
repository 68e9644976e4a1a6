"""Sweeps on a Dask cluster (issue 16), on the CPU: a LocalCluster of CPU worker processes runs
compiled-C and BLAS points; the client is the only writer, rows stream, resume works, and a
worker killed mid-sweep loses and duplicates nothing."""

from __future__ import annotations

import os
import signal

import pytest
from click.testing import CliRunner

distributed = pytest.importorskip("distributed")

from mmbench.engine import session  # noqa: E402
from mmbench.cli import main  # noqa: E402
from mmbench.engine.wire import unwire, wire  # noqa: E402
from mmbench.engine.points_dask import ClusterSpec, DaskPoints, chunks  # noqa: E402
from mmbench.results import read_metadata, read_results  # noqa: E402
from mmbench.sizes import Shape  # noqa: E402
from mmbench.engine.plan import plan, Point, Selection, Settings  # noqa: E402
from mmbench.variants import REGISTRY, Variant  # noqa: E402

SIZES = "32,48,64,80,96,112,128,144"


@pytest.fixture(scope="module")
def scheduler():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def keys(df):
    return sorted(zip(df.variant, df.m, df.n, df.k, df.status))


def test_points_cross_the_wire_as_tuples_and_come_back_equal():
    points = plan([Selection((REGISTRY["dbuf"], REGISTRY["shared"]), "33,1000x37x2049", {"BLOCK": (16,)},
                             scopes=("kernel", "device"), pads=(False, True))], "cold")
    assert all(unwire(wire(p)) == p for p in points)


def test_chunks_keep_a_shapes_points_together_and_split_a_big_shape_for_every_worker():
    shape_points = [Point(REGISTRY["shared"], (("BLOCK", b),), Shape(64, 64, 64), "cold") for b in (8, 16, 32)] * 10
    other = [Point(REGISTRY["naive"], (("BLOCK", 8),), Shape(32, 32, 32), "cold")]
    parts = chunks(shape_points + other, workers=2)
    assert sum(len(c) for c in parts) == 31 and len(parts) >= 2 * 2
    assert all(len({p.shape for p in c}) == 1 for c in parts)


def test_a_cluster_run_writes_the_same_points_as_one_process(tmp_path, scheduler):
    one, many = tmp_path / "one.csv", tmp_path / "many.csv"
    args = ("run", "-v", "cpu_naive_matmul,blas", "-s", SIZES, "--runs", "2")
    assert invoke(*args, "-o", one).exit_code == 0
    result = invoke(*args, "-o", many, "--scheduler", scheduler)
    assert result.exit_code == 0, result.output
    a, b = read_results(one), read_results(many)
    assert keys(a) == keys(b) and len(b) == 16 and set(b.status) == {"ok"}
    # the same inputs (seeded by shape): the compiled loop's results, and so their errors, agree (the
    # norms are summed by a BLAS whose threads may round in another order)
    naive = lambda df: df[df.variant == "cpu_naive_matmul"].set_index(["m", "n", "k"]).rel_err.sort_index()  # noqa: E731
    assert list(naive(a).index) == list(naive(b).index)
    assert naive(a).to_numpy() == pytest.approx(naive(b).to_numpy(), rel=1e-9)
    assert set(b.host) == {os.uname().nodename} and set(b.gpu) == {""}
    meta = read_metadata(many)
    assert meta["cluster"]["scheduler"] == scheduler and len(meta["cluster"]["workers"]) == 2
    assert meta["status_counts"] == {"ok": 16}
    # where each worker's time went, under its host and process id: the workers' own, not the client's
    spent = meta["invocations"][-1]["time_spent_s"]
    pids = {str(w["pid"]) for w in meta["cluster"]["workers"].values()}
    assert spent and {key.split(":")[-1] for key in spent} <= pids
    for phases in spent.values():
        assert phases["run"] >= phases.get("cpu", 0.0) >= 0 and "inputs" in phases  # a phase under 0.5 ms is left out
    # each chunk's trip: its worker, points, start and return, time on the worker and in its runner
    trips = meta["cluster"]["chunks"]
    assert sum(c["points"] for c in trips) == 16 and {c["worker"].split(":")[-1] for c in trips} <= pids
    assert all(0 <= c["run_s"] <= c["task_s"] and c["started_s"] <= c["returned_s"] for c in trips)
    assert sum(c["run_s"] for c in trips) == pytest.approx(sum(p["run"] for p in spent.values()), abs=0.01)
    assert set(read_metadata(one)["invocations"][-1]["time_spent_s"]) == {f"{os.uname().nodename}:{os.getpid()}"}
    # Dask's nanny set MALLOC_TRIM_THRESHOLD_; each worker took a plain process's thresholds back
    assert all(w["malloc"].startswith("mmap threshold 32 MiB, trim threshold 64 MiB")
               for w in meta["cluster"]["workers"].values())


def test_resume_across_a_cluster_run_measures_only_what_is_missing(tmp_path, scheduler):
    out = tmp_path / "r.csv"
    assert invoke("run", "-v", "cpu_naive_matmul", "-s", "32,64", "--runs", "2", "-o", out, "--scheduler",
                  scheduler).exit_code == 0
    result = invoke("run", "-v", "cpu_naive_matmul", "-s", "32,64,96,128", "-o", out, "--resume", "--scheduler", scheduler)
    assert result.exit_code == 0, result.output
    df = read_results(out)
    assert sorted(df.n) == [32, 64, 96, 128] and set(df.runs) == {2}  # each once; the file's settings kept
    assert [i["points_planned"] for i in read_metadata(out)["invocations"]] == [2, 2]


def test_a_worker_killed_mid_sweep_loses_and_duplicates_nothing(tmp_path, scheduler):
    """The first row's arrival kills a worker that is running a chunk; the scheduler runs that chunk
    again on the other worker (or the restarted one), and the client writes every point once."""
    out = tmp_path / "k.csv"
    settings = Settings(runs=3, warmup=1)
    points = plan([Selection((REGISTRY["cpu_naive_matmul"],), "96,128,160,192,224,256,288,320,352,384", {})], "hot")
    client = distributed.Client(scheduler)
    pids = client.run(os.getpid)  # worker address -> its process
    killed = []

    def kill_a_busy_worker(row):
        if killed:
            return
        busy = [w for w, tasks in client.processing().items() if tasks and w in pids]
        if busy:
            killed.append(busy[0])
            os.kill(pids[busy[0]], signal.SIGKILL)

    try:
        outcome = session.execute(points, settings, out, {"name": "k"}, ["test"], on_row=kill_a_busy_worker,
                               cluster=ClusterSpec(scheduler=scheduler), say=lambda _: None)
    finally:
        client.close()
    assert killed, "no worker was busy when the first row came"
    df = read_results(out)
    assert outcome.state == "finished" and len(df) == len(points) == 10
    assert sorted(df.n) == [96, 128, 160, 192, 224, 256, 288, 320, 352, 384] and set(df.status) == {"ok"}


def test_a_chunk_that_cannot_run_becomes_failed_rows_and_the_sweep_goes_on(scheduler, monkeypatch):
    from mmbench.variants import registry

    ghost = Variant(name="ghost", backend="cpu", label="ghost", description="in this process's registry only")
    monkeypatch.setitem(registry._ENTRIES, "ghost", ghost)  # so it travels by name: the workers do not know it
    points = [Point(ghost, (), Shape(32, 32, 32), "hot"), Point(REGISTRY["blas"], (), Shape(48, 48, 48), "hot")]
    runner = DaskPoints(Settings(runs=1, warmup=0), points, ClusterSpec(scheduler=scheduler), say=lambda _: None)
    rows = []
    try:
        runner.run(points, rows.append)
    finally:
        runner.close()
    by = {r["variant"]: r for r in rows}
    assert by["blas"]["status"] == "ok"
    assert by["ghost"]["status"] == "failed" and "unknown variant 'ghost'" in by["ghost"]["reason"]


@pytest.mark.parametrize("args,needle", [
    (["--cluster", "local", "--scheduler", "tcp://x:1"], "give one of them"),
    (["--workers", "2"], "--workers sizes a cluster that --cluster local starts"),
    (["--scheduler", ""], "--scheduler '': expected an address"),
])
def test_cluster_options_refuse_what_cannot_be_meant(tmp_path, args, needle):
    result = invoke("run", "-v", "blas", "-s", "32", "-o", tmp_path / "x.csv", *args)
    assert result.exit_code == 2 and needle in result.output and not (tmp_path / "x.csv").exists()


def test_a_scheduler_that_is_not_there_is_one_line(tmp_path):
    result = invoke("run", "-v", "blas", "-s", "32", "-o", tmp_path / "x.csv", "--scheduler", "tcp://127.0.0.1:9")
    assert result.exit_code == 1 and "no Dask scheduler at tcp://127.0.0.1:9" in result.output
    assert "Traceback" not in result.output


def test_a_workers_runner_keeps_a_shapes_inputs_for_its_next_chunk_of_that_shape(monkeypatch):
    from mmbench.ops.gemm import Gemm
    from mmbench.engine.points_local import LocalPoints

    made = []
    original = Gemm.make_inputs
    monkeypatch.setattr(Gemm, "make_inputs", lambda self, shape, rng, products=None, *form: made.append(shape)
                        or original(self, shape, rng, products, *form))
    chunk = lambda n: [Point(REGISTRY["blas"], (), Shape(n, n, n), "hot")]  # noqa: E731
    runner = LocalPoints(Settings(runs=1, warmup=0), [])
    rows = []
    for n in (32, 32, 48):
        runner.run(chunk(n), rows.append)
    assert made == [Shape(32, 32, 32), Shape(32, 32, 32), Shape(48, 48, 48)]  # one process: each chunk anew
    made.clear()
    runner.keep_shape = True
    for n in (32, 32, 48, 48):
        runner.run(chunk(n), rows.append)
    assert made == [Shape(32, 32, 32), Shape(48, 48, 48)] and all(r["status"] == "ok" for r in rows)
    runner.close()


def test_workers_share_their_hosts_cores_for_blas():
    from mmbench.engine.dask_worker import blas_shares

    workers = {"a1": {"host": "a", "host_cpus": 16, "cpus": 16}, "a2": {"host": "a", "host_cpus": 16, "cpus": 16},
               "b1": {"host": "b", "host_cpus": 8, "cpus": 8},
               "c1": {"host": "c", "cpus": 2}, "c2": {"host": "c", "cpus": 2}, "c3": {"host": "c", "cpus": 2},
               # dask-cuda pins each worker to its GPU's NUMA node: 8 GPUs on 2 x 64 cores, 64 a worker
               **{f"d{i}": {"host": "d", "host_cpus": 128, "cpus": 64} for i in range(8)}}
    assert blas_shares(workers) == {"a": 8, "b": 8, "c": 1, "d": 16}  # the host's cores over its workers, not 64 // 8


def test_a_worker_pinned_to_fewer_cores_than_its_share_takes_those(monkeypatch):
    from mmbench.engine import dask_worker

    monkeypatch.setattr(dask_worker, "own_cpus", lambda: 4)
    assert dask_worker.my_share({dask_worker.HOST: 16}) == 4 and dask_worker.my_share({dask_worker.HOST: 2}) == 2
    assert dask_worker.my_share({"elsewhere": 16}) is None


def test_a_lone_worker_runs_blas_on_all_its_hosts_cores_not_on_dasks_one_thread(tmp_path):
    """Dask starts workers with OPENBLAS_NUM_THREADS=1; the float64 references and the `blas`
    baseline would run on one core. A worker alone on its host gets every core."""
    cpus = len(os.sched_getaffinity(0))
    out = tmp_path / "lone.csv"
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as lone:
        result = invoke("run", "-v", "blas", "-s", "64", "--runs", "1", "-o", out, "--scheduler",
                        lone.scheduler_address)
    assert result.exit_code == 0, result.output
    assert list(read_results(out).threads) == [cpus]
    assert read_metadata(out)["cluster"]["blas_threads_per_worker"] == {os.uname().nodename: cpus}


def test_small_shapes_travel_together_and_the_last_chunks_stay_small():
    """121 shapes of 8 points each (a study's sweep): far fewer chunks than shapes (a chunk costs 20 to
    30 ms beside its points); each shape whole in one chunk, the largest first; every chunk at least
    1/16 of a worker's estimated share until the tail, where they shrink to no less than 1/64 (but the
    last), none more than one shape beyond its target."""
    from mmbench.engine.points_dask import SMALLEST_SHARE, estimated_s, tail_target
    from mmbench.sizes import parse_sizes

    shapes = parse_sizes("512:8192:+64")
    points = [Point(REGISTRY["naive"], (("BLOCK", b),), s, "cold") for s in shapes for b in (8, 16, 32, 4, 2, 1, 64, 12)]
    for workers in (1, 2, 4):
        parts = chunks(points, workers)
        assert sorted(map(str, (p for c in parts for p in c))) == sorted(map(str, points))
        assert all(len({p.shape for p in c}) * 8 == len(c) for c in parts)  # whole shapes
        assert parts[0][:8] == [p for p in points if p.shape == max(shapes, key=lambda s: s.m)]
        total = sum(estimated_s([p]) for p in points)
        packing = total / (workers * SMALLEST_SHARE)
        held = [sum(estimated_s(c[i:i + 8]) for i in range(0, len(c), 8)) for c in parts]
        left = total
        for h, c in zip(held[:-1], parts):
            target = tail_target(left / workers, total / workers)
            assert packing / 4 <= target <= packing and h >= target and h - estimated_s(c[-8:]) < target
            assert target == packing or left / workers / 2 < packing  # smaller only in the tail
            left -= h
        assert held[-2] < packing  # the tail shrank
        assert len(parts) < len(shapes) / (4 if workers == 1 else 2)


def test_a_tunings_chunks_hold_a_sixteenth_of_a_workers_share_and_the_last_ones_shrink():
    """4 shapes x 1000 configurations on 4 workers: a shape's parts (a quarter of it) split to 1/16 of
    a worker's estimated share, no chunk more than twice that, the largest shape first, then pieces
    that shrink in the tail (4 x H200: the last chunks of 1 s each left the workers' ends 1 s apart); every
    point once, each chunk of one shape."""
    from mmbench.engine.points_dask import SMALLEST_SHARE, estimated_s

    configs = [(("BLOCK", b),) for b in range(1, 1001)]
    shapes = [Shape(n, n, n) for n in (1024, 2048, 2049, 4096)]
    points = [Point(REGISTRY["naive"], c, s, "cold") for s in shapes for c in configs]
    parts = chunks(points, 4)
    assert sorted(map(str, (p for c in parts for p in c))) == sorted(map(str, points))
    assert all(len({p.shape for p in c}) == 1 for c in parts)
    held = [estimated_s(c) for c in parts]
    packing = sum(held) / (4 * SMALLEST_SHARE)
    assert parts[0][0].shape == Shape(4096, 4096, 4096) and packing / 2 < held[0] <= 2 * packing
    assert max(held) <= 2 * packing and {c[0].shape for c in parts[:16]} == {Shape(4096, 4096, 4096)}
    assert held[-1] < packing / 2  # the tail shrank


def test_a_studys_big_shape_stays_on_one_gpu_and_a_tunings_is_split():
    """The limits study's shapes (9 variants each) on 4 workers: 8192 holds far more than 1/16 of a
    worker's share, yet its nine points stay in one chunk, for its rows are compared with each other
    (% of cuBLAS, on one GPU); the configurations of one variant at one shape (a tuning's) go out in even
    pieces of 1/16 to 1/8 of a worker's share, each a chunk of its own."""
    from mmbench.engine.points_dask import SMALLEST_SHARE, estimated_s
    from mmbench.sizes import parse_sizes

    variants = ("best", "tile2d", "vec4", "warptile", "pipelined", "dbuf", "multistage", "kmajor", "cublas")
    shapes = parse_sizes("512:8192:+256,8191")
    points = [Point(REGISTRY[v], (), s, "cold") for s in shapes for v in variants]
    parts = chunks(points, 4)
    held = [estimated_s(c) for c in parts]
    assert estimated_s([p for p in points if p.shape == Shape(8192, 8192, 8192)]) > 4 * sum(held) / (4 * SMALLEST_SHARE)
    assert all(len([p for p in c if p.shape == s]) in (0, len(variants)) for c in parts for s in shapes)
    configs = [(("BLOCK", b),) for b in range(1, 101)]
    tuning = [Point(REGISTRY["naive"], c, s, "cold") for s in (Shape(4096, 4096, 4096), Shape(512, 512, 512))
              for c in configs]
    parts = chunks(tuning, 4)
    held = [estimated_s(c) for c in parts]
    packing = sum(held) / (4 * SMALLEST_SHARE)
    big = [c for c in parts if c[0].shape == Shape(4096, 4096, 4096)]
    assert len(big) >= 16 and all(len({p.shape for p in c}) == 1 for c in big)
    assert all(packing <= estimated_s(c) < 2 * packing for c in big)
    assert max(len(c) for c in big) - min(len(c) for c in big) <= 1  # even pieces


def test_chunks_go_out_largest_work_first():
    small, big = Shape(32, 32, 32), Shape(512, 512, 512)
    points = [Point(REGISTRY["naive"], (("BLOCK", 8),), s, "cold") for s in (small, big, Shape(64, 64, 64))]
    assert [c[0].shape for c in chunks(points, workers=2)] == [big, Shape(64, 64, 64), small]


def test_each_host_compiles_the_runs_kernels_once_shared_among_its_workers_before_the_first_chunk():
    submitted, said = [], []

    class Client:
        def submit(self, fn, settings, wires, shares, **kw):
            submitted.append((fn.__name__, [(w[0][0], w[1]) for w in wires], kw["workers"]))
            return kw["workers"][0]

        def gather(self, futures, errors):
            assert errors == "skip"
            return [f for f in futures if f != "tcp://c:3"]  # that worker's compiling fails

    runner = DaskPoints.__new__(DaskPoints)
    runner.client, runner.settings, runner.shares, runner.say = Client(), Settings(), {"h": 8}, said.append
    runner.workers = {"tcp://a:1": {"host": "h"}, "tcp://b:2": {"host": "h"}}
    shape, other = Shape(64, 64, 64), Shape(96, 96, 96)
    points = [Point(REGISTRY["shared"], (("BLOCK", 8),), s, "cold") for s in (shape, other)]
    points += [Point(REGISTRY["naive"], (("BLOCK", 8),), shape, "cold"), Point(REGISTRY["blas"], (), shape, "cold")]
    runner.prepare(points)
    shared, naive = ("shared", (("BLOCK", 8),)), ("naive", (("BLOCK", 8),))
    assert submitted == [("prepare_worker", [shared], ["tcp://a:1"]), ("prepare_worker", [naive], ["tcp://b:2"])]
    submitted.clear()
    runner.workers = {"tcp://a:1": {"host": "h"}}
    runner.prepare(points)
    assert submitted == [("prepare_worker", [shared, naive], ["tcp://a:1"])]
    submitted.clear()
    runner.prepare(points[-1:])  # CPU points only: nothing to compile
    assert submitted == [] and said == []
    runner.workers = {"tcp://a:1": {"host": "h"}, "tcp://b:2": {"host": "h"}, "tcp://c:3": {"host": "g"},
                      "tcp://d:4": {"host": "h"}}
    runner.prepare(points)  # d gets none of h's two kernels; c, alone on g, all of them, and fails
    assert submitted == [("prepare_worker", [shared], ["tcp://a:1"]), ("prepare_worker", [naive], ["tcp://b:2"]),
                         ("prepare_worker", [shared, naive], ["tcp://c:3"])]
    assert said == ["cluster: 1 of 3 workers could not compile ahead; their kernels compile as the chunks come"]


def test_a_cpu_workers_prepare_compiles_nothing(scheduler):
    from mmbench.engine.dask_worker import prepare_worker

    with distributed.Client(scheduler) as client:
        point = Point(REGISTRY["blas"], (), Shape(32, 32, 32), "hot")
        assert client.submit(prepare_worker, Settings(runs=1, warmup=0), [wire(point)], {}).result()["compiled"] == 0


def _workers_runner_settings():
    from mmbench.engine import dask_worker

    return dask_worker._RUNNER[0]


def _workers_runner_id():
    from mmbench.engine import dask_worker

    return id(dask_worker._RUNNER[1]) if dask_worker._RUNNER[1] is not None else None


def test_a_running_clusters_workers_keep_their_runners_for_the_next_run_and_release_frees_them(scheduler):
    """At a run's end on a running cluster each worker parks its runner (its shape freed; on a GPU
    its context, handles and modules kept): a second run of the same settings takes it and opens
    nothing. An explicit release frees it (a task, not the process's exit)."""
    from mmbench.engine.dask_worker import release_worker

    settings = Settings(runs=2, warmup=0)  # not another test's runner left on the shared cluster
    points = [Point(REGISTRY["blas"], (), Shape(n, n, n), "hot") for n in (32, 48, 64, 80)]
    with distributed.Client(scheduler) as client:
        ids = []
        for _ in range(2):
            runner = DaskPoints(settings, points, ClusterSpec(scheduler=scheduler), say=lambda _: None)
            try:
                runner.run(points, lambda row: None)
            finally:
                runner.close()
            assert set(client.run(_workers_runner_settings).values()) == {settings}  # kept after the run
            ids.append(client.run(_workers_runner_id))
        assert ids[0] == ids[1] and None not in ids[0].values()  # the second run took the first's runners
        client.run(release_worker)
        assert set(client.run(_workers_runner_settings).values()) == {None}


def test_releasing_a_worker_frees_its_runners_and_tuners_with_their_gpus_context_current(monkeypatch):
    import weakref

    from mmbench import device
    from mmbench.engine import dask_worker

    said = []

    class FakeContext:
        def push(self):
            said.append("push")

    class FakeDrv:
        class Context:
            @staticmethod
            def pop():
                said.append("pop")

    class FakeGpu(device.Gpu):
        def __init__(self):
            self.context, self.drv = FakeContext(), FakeDrv

        def __del__(self):
            said.append("gpu freed")

    class FakeRunner:
        def __init__(self, gpu):
            self.gpu = gpu

        def close(self):
            said.append("close")

        def __del__(self):
            said.append("runner freed")

    class FakeTuner:  # a batched tuner: nothing to close, dropped
        def __init__(self, gpu):
            self.gpu = gpu

    gpu = FakeGpu()
    runner, tuner = FakeRunner(gpu), FakeTuner(gpu)
    dead = [weakref.ref(o) for o in (gpu, runner, tuner)]
    monkeypatch.setattr(dask_worker, "_RUNNER", [object(), runner])
    monkeypatch.setattr(dask_worker, "_TUNERS", {"gpu": gpu, ("gemv_tuned",): tuner})
    del gpu, runner, tuner
    assert dask_worker.release_worker() == {"released": 2, "kept": False, "failed": []}
    assert all(ref() is None for ref in dead) and dask_worker._RUNNER == [None, None] and dask_worker._TUNERS == {}
    assert said[0] == "push" and said[-1] == "pop" and {"close", "runner freed", "gpu freed"} <= set(said)


class KeptRunner:
    """A runner a running cluster's worker may keep: parks, lives or not, closes."""
    gpu = None

    def __init__(self, alive=True, parks=True):
        self.said, self._alive, self._parks, self.compile_jobs = [], alive, parks, 1

    def alive(self):
        return self._alive

    def park(self):
        if not self._parks:
            raise RuntimeError("child lost")
        self.said.append("parked")

    def close(self):
        self.said.append("closed")

    def ensure(self, points):
        self.said.append("ensured")


def test_a_running_clusters_worker_parks_its_runner_and_the_next_run_of_the_same_settings_takes_it(monkeypatch):
    from mmbench.engine import dask_worker

    runner, key = KeptRunner(), Settings(runs=1, warmup=0)
    monkeypatch.setattr(dask_worker, "_RUNNER", [key, runner])
    monkeypatch.setattr(dask_worker, "_TUNERS", {})
    assert dask_worker.release_worker(keep=True) == {"released": 0, "kept": True, "failed": []}
    assert runner.said == ["parked"] and dask_worker._RUNNER == [key, runner]
    assert dask_worker._runner(key, [], {}) is runner  # same settings: taken as it is
    fresh = dask_worker._runner(Settings(runs=2, warmup=0), [], {})  # other settings: replaced
    assert fresh is not runner and runner.said == ["parked", "ensured", "closed"]


def test_a_parked_runner_whose_kernel_was_edited_is_replaced_and_one_that_lost_its_context_mid_run_is_not(monkeypatch):
    """A parked runner's modules are of the sources it served then: a run after an edit of one of them
    opens a new runner. A runner not parked is kept whatever happened to it (a lost context then
    gives each later point of the run its row saying so, not a failed chunk)."""
    from mmbench.engine import dask_worker

    hashes = {"tiled": "aaaa"}
    monkeypatch.setattr(dask_worker, "source_hash", lambda variant: hashes[variant])
    runner, key = KeptRunner(), Settings(runs=1, warmup=0)
    monkeypatch.setattr(dask_worker, "_RUNNER", [key, runner])
    monkeypatch.setattr(dask_worker, "_TUNERS", {})
    monkeypatch.setattr(dask_worker, "_SERVED", {("tiled", None): "tiled"})
    monkeypatch.setattr(dask_worker, "_PARKED", [])
    assert dask_worker.release_worker(keep=True)["kept"] and dask_worker._PARKED == [("tiled", "aaaa")]
    assert dask_worker._runner(key, [], {}) is runner and dask_worker._PARKED == []  # unchanged: taken
    runner._alive = False  # its context lost in the run: not parked, so kept for the run's other points
    assert dask_worker._runner(key, [], {}) is runner
    runner._alive = True
    dask_worker.release_worker(keep=True)
    hashes["tiled"] = "bbbb"  # edited between the runs
    fresh = dask_worker._runner(key, [], {})
    assert fresh is not runner and runner.said[-1] == "closed" and dask_worker._SERVED == {}


@pytest.mark.parametrize("alive, parks", [(False, True), (True, False)])
def test_a_kept_runner_that_died_or_cannot_park_is_released(monkeypatch, alive, parks):
    from mmbench.engine import dask_worker

    runner = KeptRunner(alive, parks)
    monkeypatch.setattr(dask_worker, "_RUNNER", [Settings(runs=1, warmup=0), runner])
    monkeypatch.setattr(dask_worker, "_TUNERS", {})
    out = dask_worker.release_worker(keep=True)
    assert out["kept"] is False and out["released"] == 1 and dask_worker._RUNNER == [None, None]
    assert runner.said[-1] == "closed" and (out["failed"] == [] if parks else "child lost" in out["failed"][0])


def test_a_runner_that_fails_to_close_does_not_keep_the_others(monkeypatch):
    from mmbench.engine import dask_worker

    class Broken:
        gpu = None

        def close(self):
            raise RuntimeError("CUPTI gone")

    closed = []

    class Fine:
        gpu = None

        def close(self):
            closed.append(True)

    monkeypatch.setattr(dask_worker, "_RUNNER", [object(), Broken()])
    monkeypatch.setattr(dask_worker, "_TUNERS", {("a",): Fine()})
    out = dask_worker.release_worker()
    assert out["released"] == 2 and out["failed"] == ["Broken: RuntimeError: CUPTI gone"] and closed


def test_a_worker_that_cannot_release_in_time_is_named_and_the_close_goes_on(scheduler):
    import time

    said = []
    runner = DaskPoints(Settings(runs=1, warmup=0), [], ClusterSpec(scheduler=scheduler), say=said.append)
    with distributed.Client(scheduler) as client:
        busy = client.submit(time.sleep, 3, workers=[next(iter(client.nthreads()))], pure=False)
        time.sleep(0.5)  # started
        try:
            runner.release(timeout=1)
        finally:
            runner.close()  # releases again, after the busy task
        busy.result()
    late = [line for line in said if "did not release" in line]
    assert len(late) == 1 and "1 of 2 workers" in late[0] and "within 1 s" in late[0] and "tcp://" in late[0]


def test_the_client_keeps_every_workers_own_library_entries():
    """Workers report their libraries chunk by chunk; the client merges each entry one level deep,
    so one worker's reason for making references on the host does not hide another's."""
    runner = DaskPoints.__new__(DaskPoints)
    runner.kernels, runner._spent, runner._libraries, runner.gpus = {}, {}, {}, {}

    def chunk(pid, libraries):
        return {"kernels": {}, "time_spent": {}, "libraries": libraries, "gpu": None, "worker": {"host": "h", "pid": pid}}

    runner.absorb(chunk(1, {"cublas": {"version": 1}, "float64_reference": {"reference_gpu": "G", "not on the GPU at h:1": "x"}}))
    runner.absorb(chunk(2, {"cublas": {"version": 1}, "float64_reference": {"reference_gpu": "G", "not on the GPU at h:2": "y"}}))
    assert runner.library_meta() == {"cublas": {"version": 1}, "float64_reference": {
        "reference_gpu": "G", "not on the GPU at h:1": "x", "not on the GPU at h:2": "y"}}


def test_the_batched_engine_on_a_cluster_writes_each_class_once_and_leaves_a_failed_one_for_a_resume(
        tmp_path, monkeypatch):
    """session.open_batched_engine with a cluster gives the Dask batched engine: each size class
    goes to a worker (dask_worker.run_class, faked here: no GPU) and its rows are written once as it
    finishes; a class whose task fails is counted with its error, not written; the workers' kernels
    and GPU reach the engine's metadata."""
    from mmbench.engine import batched_dask, batched_local
    from mmbench.engine.interface import BatchedEngine
    from mmbench.engine.wire import packed
    from mmbench.ops import get_op

    def run_class(ref, configs, cache, l2_flush, jobs, cls, shapes, seed, prune, shares, isolation):
        (variant_name,) = ref  # a built-in variant goes by name alone
        assert isolation is None  # opened without: the workers measure in their own process
        if cls == "cell05x05":
            raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS")
        rows = [{"size_class": cls, "params": f"A={i}", "status": "ok", "shapes": len(shapes), "gflops": 1.0 + i}
                for i in range(len(configs))]
        return packed({"rows": rows, "kernels": {f"{variant_name}[A={jobs}]": {}}, "libraries": {},
                       "gpu": {"name": "Fake GPU", "uuid": "GPU-1"}, "worker": {"host": "h", "pid": 1}})

    monkeypatch.setattr(batched_dask, "run_class", run_class)  # the workers are this process's threads
    shapes = get_op("gemv").parse_sizes("cell:3x3,cell:5x5,cell:7x7")
    out, counts, seen = tmp_path / "t.csv", {}, []
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        engine = session.open_batched_engine(REGISTRY["gemv_tuned"], [(("A", 1),), (("A", 2),)], "cold", "read",
                                             ClusterSpec(cluster.scheduler_address), say=lambda line: None)
        try:
            assert isinstance(engine, batched_dask.DaskBatched) and isinstance(engine, BatchedEngine)
            assert engine.prepare(3, 0.0, print) is None  # the workers compile at their first class
            engine.run(shapes, out, 1, {"cell07x07"}, lambda cls, i, n: seen.append((i, n)), counts, 0.0)
        finally:
            engine.close()
    rows = batched_local.read_rows(out)
    assert list(rows.size_class) == ["cell03x03", "cell03x03"] and counts["ok"] == 2 and seen == [(1, 2)]
    assert counts["classes_failed"] == 1 and "cell05x05: RuntimeError" in counts["errors"][0]
    assert engine.kernels == {"gemv_tuned[A=3]": {}} and engine.meta()["gpu"]["name"] == "Fake GPU"


def test_a_workers_faulting_point_is_a_failed_row_and_the_worker_goes_on(tmp_path, scheduler):
    """Isolation on a cluster: each worker's points run in a child process of the worker, which
    tests/isolation_fakes.py's runner kills at the point of m = 48; the worker survives, that point
    is one failed row naming the fault, and its other points are measured by a fresh child."""
    from mmbench.engine.points_isolated import Isolation

    out = tmp_path / "i.csv"
    points = plan([Selection((REGISTRY["blas"],), "32,48,64,80")], "hot")
    isolation = Isolation(cpu_points=True, runner="isolation_fakes:ExitsAt")
    outcome = session.execute(points, Settings(runs=2, warmup=0, cache="hot"), out, {"name": "i"}, ["test"],
                              cluster=ClusterSpec(scheduler=scheduler), isolation=isolation)
    df = read_results(out).sort_values("m")
    assert outcome.state == "finished" and list(df.m) == [32, 48, 64, 80]
    assert list(df.status) == ["ok", "failed", "ok", "ok"] and "worker process exited with status 7" in list(df.reason)
    isolation = read_metadata(out)["invocations"][-1]["isolation"]
    assert isolation["mode"] == "process"
    assert sum(w["restarts"] for w in isolation["workers"].values()) == 1
    assert [f["point"] for w in isolation["workers"].values() for f in w["faults"]] == ["blas @ 48"]


def test_a_cluster_started_ahead_is_the_one_the_run_connects_to_and_one_no_run_took_is_closed(scheduler):
    """start_early connects on a thread while the run is planned; connect() takes that client (and
    says what the start said); a start no run took is closed by discard_early."""
    from mmbench.engine import points_dask
    from mmbench.engine.points_dask import ClusterSpec, connect, discard_early, start_early

    spec, said = ClusterSpec(scheduler=scheduler), []
    start_early(spec, gpus=False)
    client = connect(spec, False, said.append)
    try:
        assert client.status == "running" and len(client.scheduler_info()["workers"]) == 2
        assert points_dask._EARLY == {}  # taken: nothing left to discard
    finally:
        client.close()
    start_early(spec, gpus=False)
    started = points_dask._EARLY[(spec, False)]
    discard_early()
    assert points_dask._EARLY == {} and started["client"].status == "closed"


def test_a_failed_start_ahead_is_said_as_a_start_now_would_say_it(tmp_path):
    from mmbench.engine.points_dask import ClusterError, ClusterSpec, connect, start_early

    spec = ClusterSpec(scheduler="tcp://127.0.0.1:9")  # nothing listens on the discard port
    start_early(spec, gpus=False)
    with pytest.raises(ClusterError, match="no Dask scheduler at tcp://127.0.0.1:9"):
        connect(spec, False, lambda _: None)


def test_a_run_refused_for_its_output_starts_no_cluster(tmp_path, monkeypatch):
    from mmbench.engine import points_dask

    monkeypatch.setattr(points_dask, "start_early", lambda *a, **k: pytest.fail("a cluster started for a refused run"))
    out = tmp_path / "there.csv"
    assert invoke("run", "-v", "blas", "-s", "32", "--runs", "1", "-o", out).exit_code == 0
    refused = invoke("run", "-v", "blas", "-s", "32", "--cluster", "local", "--workers", "2", "-o", out)
    assert refused.exit_code == 2 and "already exists; pass --resume" in refused.output


def test_a_tuning_on_a_cluster_starts_it_while_its_points_are_made_and_a_dry_run_starts_none(tmp_path, monkeypatch):
    """The points engine's tuning starts its cluster ahead (as a run does) and ends one no run took;
    a dry run starts none."""
    from mmbench.engine import points_dask
    from mmbench.engine.refusals import RunRefused
    from mmbench.tuning import workflow

    started, made = [], []
    monkeypatch.setattr(points_dask, "start_early", lambda spec, gpus, isolation=None: started.append((spec, gpus)))
    monkeypatch.setattr(points_dask, "discard_early", lambda: made.append("discarded"))

    def points_made(*_):
        made.append(list(started))
        raise RunRefused("stop here")  # said as one line, exit 2

    monkeypatch.setattr(workflow, "_tune_points", points_made)
    common = ["tune", "-v", "dbuf", "-s", "64", "--strategy", "random", "--budget", "2", "--engine", "points",
              "--scheduler", "tcp://127.0.0.1:9", "--tuning-cache", tmp_path / "c.json"]
    assert invoke(*common, "-o", tmp_path / "dry.csv", "--dry-run").exit_code == 0
    assert started == [] and made == []
    assert invoke(*common, "-o", tmp_path / "t.csv").exit_code == 2
    (spec, gpus), = started
    assert spec.scheduler == "tcp://127.0.0.1:9" and gpus
    assert made == [[(spec, True)], "discarded"]  # started before the points, ended after


def test_a_cluster_runs_tuned_parameters_are_for_its_workers_gpu_not_the_clients(tmp_path, monkeypatch):
    """A client without a GPU (a login node) driving a GPU cluster: the run's tuned parameters are
    looked up for the GPU its workers report (points_dask.cluster_gpu), not left at the defaults; the
    workers' GPUs of two models: looked up for neither, and said; no worker within the wait, or no
    cluster started: this machine's, said."""
    from dataclasses import asdict

    from mmbench import device, places, source, sweep
    from mmbench.engine import points_dask
    from mmbench.tuning import cache as tuning_cache
    from mmbench.variants import format_params
    from mmbench.vocabulary import DeviceId

    h200, other = DeviceId("NVIDIA H200", "sm_90", 132), DeviceId("Another GPU", "sm_100", 148)
    pipelined = REGISTRY["pipelined"]
    shipped = (tuning_cache.CacheFile.read(places.SHIPPED_CACHE, tuning_cache.SHIPPED),)
    tuned = format_params(tuning_cache.lookup(shipped, h200, pipelined, source.source_hash(pipelined),
                                              Shape(2048, 2048, 2048)).params)
    monkeypatch.setattr(device, "device_identity", lambda: None)  # this machine: no GPU
    monkeypatch.setattr(points_dask, "WORKERS_WAIT_S", 0.5)
    models = [h200, h200]
    defaults = "pipelined: no GPU {} to look up its tuned parameters for; using defaults"

    def planned(spec):
        said = []
        sweep.plan_run([Selection((pipelined,), "2048")], shipped, tmp_path / "r.csv", {}, resume=False,
                       say=said.append, gpu=sweep._cluster_gpu(spec, True, said.append))
        return said

    for workers in (2, 0):
        in_process = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=False,
                                              dashboard_address=None)
        with in_process as cluster:
            spec = ClusterSpec(scheduler=cluster.scheduler_address)
            addresses = sorted(w.address for w in cluster.workers.values())

            def identity(dask_worker=None):  # each worker its model (sent to the workers as it is then)
                return {"gpu_id": asdict(models[addresses.index(dask_worker.address)]), "gpu": "x"}

            monkeypatch.setattr(points_dask, "worker_identity", identity)
            try:
                points_dask.start_early(spec, True)
                if workers == 0:
                    assert planned(spec) == ["cluster: no worker reported its GPU within 0.5 s; tuned parameters are "
                                             "looked up for this machine's", defaults.format("found here")]
                    continue
                line = f"pipelined: tuned parameters from the shipped cache {places.SHIPPED_CACHE} for NVIDIA H200: "
                assert line + tuned in planned(spec)
                models[1] = other
                assert planned(spec) == [
                    "cluster: its workers' GPUs are of 2 models (Another GPU (sm_100, 148 SMs); NVIDIA H200 (sm_90, "
                    "132 SMs)): tuned parameters are looked up for none of them",
                    defaults.format("of one model on the cluster's workers")]
            finally:
                points_dask.discard_early()
    assert planned(spec) == [defaults.format("found here")]  # no start begun: this machine's GPU, none


def test_a_dry_run_on_a_cluster_says_its_tuned_parameters_are_this_machines():
    result = invoke("run", "-v", "pipelined", "-s", "2048", "--scheduler", "tcp://127.0.0.1:1", "--dry-run")
    assert result.exit_code == 0, result.output
    assert ("a dry run connects to no cluster: its tuned parameters are this machine's GPU's; the run looks them up "
            "for the GPU its workers report") in result.output.replace("\n", " ")
