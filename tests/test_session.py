"""The run workflow without the CLI (mmbench/engine/session.py, engine/refusals.py), on the CPU: what
scripts build on."""

import json

import pytest

from mmbench.engine import refusals, session
from mmbench.results import read_metadata, read_results
from mmbench.sizes import parse_sizes
from mmbench.engine.interface import spent_between
from mmbench.engine.plan import Point, Settings
from mmbench.variants import get_variant

NUMPY = get_variant("blas")


def points(spec: str) -> list[Point]:
    return [Point(NUMPY, (), s, "hot") for s in parse_sizes(spec)]


def test_sessions_sharing_one_runner_keep_their_own_settings_and_files(tmp_path):
    one, five = Settings(runs=1, warmup=0, cache="hot"), Settings(runs=5, warmup=1, cache="hot")
    runner = session.open_engine(one, points("8"))
    a = session.Session(tmp_path / "a.csv", one, {"name": "a"}, ["test"], runner, points_planned=2)
    b = session.Session(tmp_path / "b.csv", five, {"name": "b"}, ["test"], runner, points_planned=1)
    a.run(points("8"))
    b.run(points("200"))  # large enough that its "cpu" phase outlasts the milliseconds the metadata keeps
    a.run(points("10"))
    a.finish("finished")
    b.finish("finished")
    runner.close()
    ra, rb = read_results(tmp_path / "a.csv"), read_results(tmp_path / "b.csv")
    assert sorted(ra.n) == [8, 10] and (ra.runs == 1).all() and list(rb.n) == [200] and (rb.runs == 5).all()
    meta = read_metadata(tmp_path / "b.csv")
    assert meta["settings"]["runs"] == 5 and meta["state"] == "finished" and meta["status_counts"] == {"ok": 1}
    assert meta["invocations"][0]["command"] == ["test"] and meta["invocations"][0]["finished_at"]
    # where each session's time went: the whole of run() and its parts, which fit inside it; each
    # session records only the passes it ran points in, so the two add up to the runner's time
    (phases,) = meta["invocations"][0]["time_spent_s"].values()
    parts = sum(v for k, v in phases.items() if k not in ("run", "reference_host"))  # the reference: within inputs
    assert {"run", "cpu"} <= set(phases) <= {"run", "inputs", "reference_host", "cpu", "rows"}
    assert 0 < parts <= phases["run"] + 0.005
    (phases_a,) = read_metadata(tmp_path / "a.csv")["invocations"][0]["time_spent_s"].values()
    assert phases_a["run"] + phases["run"] == pytest.approx(runner.spent_s["run"], abs=0.003)


def test_time_spent_between_two_readings_is_per_process_and_phase():
    before = {"h:1": {"run": 1.0, "inputs": 0.5}}
    after = {"h:1": {"run": 3.25, "inputs": 0.5, "verify": 0.75}, "h:2": {"run": 2.0}}
    assert spent_between(before, after) == {"h:1": {"run": 2.25, "verify": 0.75}, "h:2": {"run": 2.0}}
    assert spent_between(after, after) == {}


def test_an_interrupted_execute_keeps_every_finished_row_and_says_so(tmp_path):
    seen = []

    def stop_after_two(row):
        seen.append(row)
        if len(seen) == 2:
            raise KeyboardInterrupt

    out = tmp_path / "r.csv"
    outcome = session.execute(points("4,5,6,7"), Settings(runs=1, warmup=0, cache="hot"), out, {"name": "r"}, ["t"],
                           on_row=stop_after_two)
    assert outcome.state == "interrupted" and outcome.counts == {"ok": 2} and outcome.failures == {}
    assert sorted(read_results(out).n) == [4, 5]
    assert json.loads(out.with_suffix(".meta.json").read_text())["state"] == "interrupted"


def test_refusals_name_the_bad_value(tmp_path):
    with pytest.raises(refusals.RunRefused, match="ends in .csv"):
        refusals.check_output(tmp_path / "r.txt")
    with pytest.raises(refusals.RunRefused, match="runs=3; this resume asks for runs=5"):
        out = tmp_path / "r.csv"
        session.execute(points("4"), Settings(runs=3, warmup=0, cache="hot"), out, {}, ["t"])
        refusals.resolve_settings({"runs": 5}, out, read_metadata(out))


def test_points_of_several_sessions_run_together_land_in_their_own_files(tmp_path):
    """Mixed shapes in one pass: every row goes to the session its point came from."""
    settings = Settings(runs=1, warmup=0, cache="hot")
    items = points("8,9,10")
    runner = session.open_engine(settings, items)
    a = session.Session(tmp_path / "a.csv", settings, {}, ["t"], runner, points_planned=2)
    b = session.Session(tmp_path / "b.csv", settings, {}, ["t"], runner, points_planned=2)
    # the runner takes both 8s first: rows routed in the order given would put an 8 in a twice
    session.run_together(runner, [(a, items[0]), (a, items[1]), (b, items[0]), (a, items[2])])
    for s in (a, b):
        s.finish("finished")
    runner.close()
    assert sorted(read_results(tmp_path / "a.csv").n) == [8, 9, 10] and list(read_results(tmp_path / "b.csv").n) == [8]
    with pytest.raises(ValueError, match="same settings"):
        c = session.Session(tmp_path / "c.csv", Settings(runs=2, warmup=0, cache="hot"), {}, ["t"], runner, points_planned=1)
        session.run_together(runner, [(a, items[0]), (c, items[1])])


def test_a_runner_compiles_a_runs_new_kernels_at_once_before_the_first_point():
    """One nvcc after another leaves the GPU idle; the runner hands every kernel not compiled yet
    to the GPU's parallel compile first (a cluster worker with its share of the host's cores)."""
    from mmbench.sizes import Shape
    from mmbench.engine.plan import Point, Settings
    from mmbench.engine.points_local import LocalPoints
    from mmbench.variants import REGISTRY

    class CompilingGpu:
        def __init__(self):
            self.done, self.calls = set(), []

        def compiled(self, variant, params):
            return (variant.name, params) in self.done

        def precompile_pairs(self, pairs, jobs, wait=True):
            self.calls.append(([(v.name, p) for v, p in pairs], jobs))
            self.done.update((v.name, p) for v, p in pairs)

    shape = Shape(4, 4, 4)
    points = [Point(REGISTRY["shared"], (("BLOCK", b),), shape, "cold") for b in (8, 16, 8)]
    points += [Point(REGISTRY["naive"], (("BLOCK", 8),), shape, "cold"), Point(REGISTRY["blas"], (), shape, "cold")]
    runner = LocalPoints(Settings(), [])
    runner.gpu, runner.compile_jobs = CompilingGpu(), 5
    runner.precompile(points)
    assert runner.gpu.calls == [([("shared", (("BLOCK", 8),)), ("shared", (("BLOCK", 16),)), ("naive", (("BLOCK", 8),))], 5)]
    runner.precompile(points)  # all compiled: nothing more
    runner.precompile(points + [Point(REGISTRY["naive"], (("BLOCK", 16),), shape, "cold")])  # one new: compiled too
    assert runner.gpu.calls[1:] == [([("naive", (("BLOCK", 16),))], 5)]  # (a cluster worker's share may be one kernel)


def test_a_pool_threads_gpu_is_opened_current_nowhere(monkeypatch):
    """A Dask worker's tasks run on pool threads: open_gpu with CURRENT_ON_OPEN False retains the
    primary context, builds the Gpu with it current, and leaves every thread's stack as it was
    (else the worker aborts at exit: "the context stack was not empty upon module cleanup")."""
    import sys
    import types

    from mmbench import device

    stack, log = [], []

    class Context:
        def push(self):
            stack.append(self)

        @staticmethod
        def pop():
            stack.pop()

    class Device:
        def __init__(self, ordinal):
            log.append(("device", ordinal))

        def retain_primary_context(self):
            log.append("retain")
            return Context()

    driver = types.SimpleNamespace(init=lambda: log.append("init"), Device=Device, Context=Context)
    pycuda = types.ModuleType("pycuda")
    pycuda.driver = driver
    monkeypatch.setitem(sys.modules, "pycuda", pycuda)
    monkeypatch.setitem(sys.modules, "pycuda.driver", driver)

    class FakeGpu:
        def __init__(self, drv):
            assert drv is driver and len(stack) == 1  # built with the primary context current
            self.primary = None

    monkeypatch.setattr(device, "Gpu", FakeGpu)
    monkeypatch.setattr(device, "CURRENT_ON_OPEN", False)
    gpu = device.open_gpu()
    assert log == ["init", ("device", 0), "retain"] and stack == [] and isinstance(gpu.primary, Context)


def test_a_runner_hashes_a_variants_source_once_not_per_configuration(monkeypatch):
    """The metadata names each compiled kernel's source hash; the file and its headers are read and
    hashed once a variant, however many of its configurations a tuning compiles."""
    from types import SimpleNamespace

    from mmbench import source
    from mmbench.engine.plan import Settings
    from mmbench.engine.points_local import LocalPoints
    from mmbench.variants import REGISTRY

    hashed = []
    monkeypatch.setattr(source, "source_hash", lambda v: hashed.append(v.name) or f"h-{v.name}")
    monkeypatch.setattr(source, "compile_report", lambda *a: (_ for _ in ()).throw(OSError("no nvcc here")))
    runner = LocalPoints(Settings(), [])
    runner.gpu = SimpleNamespace(resources=lambda fn: {}, facts=SimpleNamespace(arch="sm_90"))
    for variant, block in (("shared", 8), ("shared", 16), ("shared", 32), ("naive", 8)):
        runner._record_kernel(REGISTRY[variant], (("BLOCK", block),), None)
    assert hashed == ["shared", "naive"]
    assert {e["source_hash"] for e in runner.kernels.values()} == {"h-shared", "h-naive"} and len(runner.kernels) == 4


def test_background_builds_are_waited_for_one_by_one_and_dropped_at_the_end(monkeypatch):
    """precompile(wait=False) returns before nvcc is done; function() waits for its own module's
    build (not a second nvcc), and stop_building drops what has not begun."""
    import subprocess
    import threading
    from types import SimpleNamespace

    from mmbench import source
    from mmbench.device import Gpu
    from mmbench.variants import REGISTRY

    nvcc_runs, release = [], threading.Event()
    real_run = subprocess.run

    def slow_nvcc(command, **kwargs):
        release.wait(30)  # nvcc "runs" until the test lets it go
        nvcc_runs.append(open(f"{kwargs['cwd']}/kernel.cu").read())  # the module it builds
        return real_run(command, **kwargs)

    monkeypatch.setattr(source.subprocess, "run", slow_nvcc)
    gpu = Gpu.__new__(Gpu)
    gpu.facts = SimpleNamespace(arch="sm_90")
    gpu.drv = SimpleNamespace(module_from_buffer=lambda cubin: SimpleNamespace(get_function=lambda name: (name, len(cubin))))
    gpu._modules, gpu._functions, gpu._precompiled, gpu._building, gpu._pool = {}, {}, set(), {}, None
    variant = REGISTRY["shared"]
    configs = [(("BLOCK", b),) for b in (7, 9, 11)]  # sizes no other test builds: each needs nvcc
    gpu.precompile(variant, configs, jobs=1, wait=False)
    assert nvcc_runs == [] and all(gpu.compiled(variant, c) for c in configs)  # returned at once, all under way
    release.set()
    name, size = gpu.function(variant, configs[0])
    assert name == variant.entry_name and size > 0
    assert 1 <= len(nvcc_runs) <= 2  # its own build, and perhaps the next one's begun
    gpu.stop_building()  # the rest dropped, or finished if begun
    assert gpu._pool is None and not any(future.cancelled() for future in gpu._building.values())
    gpu.function(variant, configs[0])
    gpu.function(variant, configs[1])  # dropped or built: from the cache, or built now, once
    assert len(nvcc_runs) == len(set(nvcc_runs)) <= 3  # no module built twice


def test_a_resume_reads_its_file_once(tmp_path, monkeypatch):
    """The results file is scanned once on a resume (the planning's scan, handed to the session's
    ResultsFile, which repairs, appends and counts without reading it again); the summary after
    the run reads it for display."""
    from click.testing import CliRunner

    from mmbench import results
    from mmbench.cli import main
    from mmbench.engine import refusals

    out = tmp_path / "r.csv"
    assert CliRunner().invoke(main, ["run", "-v", "blas", "-s", "32,33", "--runs", "1", "-o", str(out)]).exit_code == 0
    with out.open("ab") as f:
        f.write(b"gemm,blas,torn")  # a torn last row: set aside from the same scan
    scans, real, during = [], results.scan, []
    monkeypatch.setattr(refusals, "scan", lambda path: scans.append(path) or real(path))
    monkeypatch.setattr(results, "scan", lambda path: scans.append(path) or real(path))
    execute = session.execute

    def counted(*args, **kwargs):
        during.append(len(scans))
        try:
            return execute(*args, **kwargs)
        finally:
            during.append(len(scans))

    monkeypatch.setattr(session, "execute", counted)
    resumed = CliRunner().invoke(main, ["run", "-v", "blas", "-s", "32,33,34", "--runs", "1", "-o", str(out), "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert during == [1, 1]  # the planning's, before the run; none while it ran
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert meta["status_counts"] == {"ok": 3} and "set aside" in (meta["invocations"][-1]["repaired"] or "")
