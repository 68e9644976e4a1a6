"""Nothing measured is lost (the CPU's BLAS points stand in for a GPU's): Ctrl-C or a failure at
any stage of `mmbench run` or `mmbench tune` leaves either nothing or a results file whose CSV and
metadata agree and resume, says in one line how many points the file holds, and never shows a
traceback; a resume on another machine keeps the first machine's record; a compressed run is
never written to again."""

import gzip
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from mmbench import environment, schema
from mmbench.engine import batched_local, session
from mmbench.engine.interface import BatchedEngine
from mmbench.cli import main
from mmbench.results import CsvSink, read_metadata, read_results
from mmbench.engine.points_local import LocalPoints
from mmbench.tuning import batched_run, for_runs

REPO = Path(__file__).resolve().parent.parent
SIZES = "31:97"  # 31, 32, 33, 63, 64, 65, 95, 96, 97: nine points
PLANNED = 9
FIRST = "32,33"  # what a resumed file holds before the resume


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def run(out, sizes=SIZES, *more):
    return invoke("run", "-v", "blas", "-s", sizes, "--runs", "1", "--threads", "1", "-o", out, *more)


def files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def held(message: str) -> int | None:
    """The finished points the one-line message says the file holds; 0 for 'nothing was written'."""
    if "nothing was written" in message:
        return 0
    found = re.search(r"holds (\d+) finished points?", message)
    return int(found.group(1)) if found else None


def injected(real, error: BaseException, nth: int = 1):
    """real, but raising error at its nth call (the calls before go through)."""
    calls = []

    def wrapper(*args, **kwargs):
        calls.append(1)
        if len(calls) == nth:
            raise error
        return real(*args, **kwargs)

    return wrapper


# Where a run can be stopped: (name, the object and attribute to wrap, at which call).
STAGES = [
    ("planning", "mmbench.sweep", "plan", 1),
    ("tuned parameters", for_runs, "with_tuned", 1),
    ("opening the runner", session, "open_engine", 1),
    ("learning the machine", environment, "collect", 1),
    ("writing the metadata", session, "write_metadata", 1),
    ("writing the header", CsvSink, "_write", 1),
    ("before the first row", LocalPoints, "_run_point", 1),
    ("after row 2", LocalPoints, "_run_point", 3),
    ("closing the runner", LocalPoints, "close", 1),
    ("finishing", session.Session, "finish", 1),
    ("the summary", "mmbench.cli.running", "_summary", 1),
]


def stop_at(monkeypatch, stage, error):
    _, target, name, nth = stage
    if isinstance(target, str):  # imported here: a command's module loads when the command is used
        target = importlib.import_module(target)
    real = getattr(target, name)
    wrapper = injected(real, error, nth)
    static = isinstance(inspect.getattr_static(target, name), staticmethod)
    monkeypatch.setattr(target, name, staticmethod(wrapper) if static else wrapper)


def check_left(folder: Path, out: Path, result, resumed: bool = False):
    """The invariants after a stop: one line, no traceback, and either nothing or a CSV with its
    metadata, whose rows the message counts; a new file is there only with a row in it."""
    lines = result.output.rstrip("\n").splitlines()
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit), result.output
    assert lines and lines[-1].startswith("Error: "), result.output
    left = files(folder)
    assert left in (set(), {"r.csv", "r.meta.json"}), left  # no .part, .tmp, header-only CSV or lone metadata
    in_file = len(read_results(out)) if out.exists() else 0
    assert held(lines[-1]) == in_file, lines[-1]
    assert resumed or not out.exists() or in_file > 0  # no header-only CSV that a plain rerun calls "already exists"
    if out.exists():
        meta = read_metadata(out)
        claimed = sum(meta["status_counts"].values())
        assert claimed <= in_file and (claimed == in_file or meta["state"] != "finished")  # no claim the rows belie
    return lines[-1]


@pytest.mark.parametrize("stage", STAGES, ids=[s[0] for s in STAGES])
@pytest.mark.parametrize("resume", [False, True], ids=["new file", "resume"])
def test_ctrl_c_at_any_stage_leaves_nothing_or_a_file_that_resumes(tmp_path, monkeypatch, stage, resume):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "r.csv"
    if resume:
        assert run(out, FIRST).exit_code == 0
    stop_at(monkeypatch, stage, KeyboardInterrupt())
    result = run(out, SIZES, *(["--resume"] if resume else []))
    assert result.exit_code == 130, result.output
    line = check_left(tmp_path, out, result, resume)
    assert line.startswith("Error: interrupted")
    if resume:
        assert out.exists() and held(line) >= 2
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    again = run(out, SIZES, *(["--resume"] if out.exists() else []))  # a plain rerun where nothing was left
    assert again.exit_code == 0, again.output
    df = read_results(out)
    assert len(df) == PLANNED and not df.duplicated(["m", "n", "k"]).any()
    if "nothing to do" not in again.output:  # (stopped in finish: every point was in, the metadata said running)
        assert read_metadata(out)["invocations"][-1]["state"] == "finished"


def test_an_interrupted_resume_counts_the_rows_in_the_file_not_this_runs(tmp_path, monkeypatch):
    """The issue's case: the file held 21 rows, the resume finished none, and the message said 0."""
    out = tmp_path / "r.csv"
    assert run(out, "32:672:+32").exit_code == 0  # 21 sizes
    stop_at(monkeypatch, ("first point", LocalPoints, "_run_point", 1), KeyboardInterrupt())
    result = run(out, "32:704:+32", "--resume")
    assert result.exit_code == 130
    assert "r.csv holds 21 finished points (0 from this run); rerun with --output" in result.output
    assert read_metadata(out)["invocations"][-1]["state"] == "interrupted"


FAILING = [s for s in STAGES if s[0] in ("learning the machine", "writing the metadata", "writing the header",
                                         "before the first row", "after row 2", "closing the runner")]


@pytest.mark.parametrize("stage", FAILING, ids=[s[0] for s in FAILING])
def test_a_failure_is_one_line_and_never_leaves_a_file_that_says_finished(tmp_path, monkeypatch, stage):
    """A bad value found late, a bug, a dead GPU: before the first row nothing is left; after it,
    the rows are kept and the metadata says `failed`, with the error and its traceback."""
    out = tmp_path / "r.csv"
    stop_at(monkeypatch, stage, RuntimeError("boom\nsecond line"))
    result = run(out)
    assert result.exit_code == 1, result.output
    line = check_left(tmp_path, out, result)
    assert "RuntimeError: boom" in line and "second line" not in result.output
    if stage[0] == "after row 2":
        meta = read_metadata(out)
        assert len(read_results(out)) == 2 and meta["state"] == "failed"
        assert meta["invocations"][-1]["error"] == "RuntimeError: boom" and "boom" in meta["invocations"][-1]["traceback"]
        assert "rerun with --output" in line
    elif stage[0] != "closing the runner":
        assert not out.exists() and "nothing was written" in line


def test_a_failure_before_the_first_row_leaves_no_folder_it_made(tmp_path, monkeypatch):
    out = tmp_path / "runs" / "deep" / "r.csv"
    stop_at(monkeypatch, ("first point", LocalPoints, "_run_point", 1), ValueError("seed must be non-negative"))
    result = run(out)
    assert result.exit_code == 1 and "ValueError: seed must be non-negative" in result.output
    assert files(tmp_path) == set()


def test_an_output_that_cannot_be_created_is_refused_before_anything_is_measured(tmp_path, monkeypatch):
    import tempfile

    def read_only(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    measured = []
    monkeypatch.setattr(LocalPoints, "_run_point", lambda *a: measured.append(a))
    result = run(tmp_path / "new" / "r.csv")
    assert result.exit_code == 2 and "cannot write" in result.output and "Read-only file system" in result.output
    assert not measured and files(tmp_path) == set()


def test_a_csv_appears_with_its_first_row_never_header_alone(tmp_path, monkeypatch):
    path = tmp_path / "r.csv"
    sink = CsvSink(path)
    sink.close()
    assert not path.exists()  # a sink that got no row leaves nothing
    sink = CsvSink(path)
    real = os.replace
    monkeypatch.setattr(os, "replace", injected(real, KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        sink.write({"variant": "blas"})
    assert files(tmp_path) == set()  # neither the file nor its part
    monkeypatch.setattr(os, "replace", real)
    sink.write({"op": "gemm", "variant": "blas", "params": "", "m": 8, "n": 8, "k": 8, "cache": "hot", "status": "ok",
                "runs": 1, "time_ms_samples": "0.5", "time_ms_median": 0.5, "finished_at": "2026-11-23T08:00:00+00:00"})
    sink.close()
    assert files(tmp_path) == {"r.csv"} and len(read_results(path)) == 1


# -- a real Ctrl-C, in a process of its own ---------------------------------------------------------
def _mmbench(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """python -c CODE with this checkout first on the path (the code ends by calling mmbench's main)."""
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def test_a_real_ctrl_c_while_the_command_line_loads_is_one_line_and_exit_130(tmp_path):
    """SIGINT while pandas and the commands are imported (the first half second of every command)."""
    code = (
        "import os, signal, sys\n"
        "class Stop:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'mmbench.cli':\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "sys.meta_path.insert(0, Stop())\n"
        "sys.argv = ['mmbench', 'list']\n"
        "from mmbench.__main__ import main\n"
        "main()\n")
    done = _mmbench(code, tmp_path)
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip() == "Error: interrupted while starting; nothing was run" and "Traceback" not in done.stderr


def test_a_real_ctrl_c_mid_run_keeps_the_rows_and_counts_them(tmp_path):
    code = (
        "import os, signal, sys\n"
        "from mmbench.engine.points_local import LocalPoints\n"
        "real, calls = LocalPoints._run_point, []\n"
        "def point(self, *a):\n"
        "    calls.append(1)\n"
        "    if len(calls) == 3:\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "    return real(self, *a)\n"
        "LocalPoints._run_point = point\n"
        f"sys.argv = ['mmbench', 'run', '-v', 'blas', '-s', '{SIZES}', '--runs', '1', '-o', 'r.csv']\n"
        "from mmbench.__main__ import main\n"
        "main()\n")
    done = _mmbench(code, tmp_path)
    assert done.returncode == 130 and "Traceback" not in done.stderr + done.stdout, done.stderr
    rows = len(read_results(tmp_path / "r.csv"))
    assert 2 <= rows <= 3 and f"r.csv holds {rows} finished points ({rows} from this run)" in done.stderr
    assert read_metadata(tmp_path / "r.csv")["state"] == "interrupted"


# -- a resume on another machine ---------------------------------------------------------------------
def test_a_resume_on_another_machine_keeps_the_first_machines_record(tmp_path, monkeypatch):
    """The file's top-level host, software and commit are those of the machine that began it; each
    invocation keeps its own, and each row names the host that measured it."""
    out = tmp_path / "r.csv"
    assert run(out, "32").exit_code == 0
    first = read_metadata(out)
    real = environment.collect

    def elsewhere(gpu=None):
        facts = real(gpu)
        software = {**facts["software"], "blas": [{"internal_api": "mkl", "version": "2099.0", "num_threads": 1}]}
        return {**facts, "host": {**facts["host"], "hostname": "other-host"}, "software": software,
                "git": {"commit": "f00d", "dirty": False}}

    monkeypatch.setattr(environment, "collect", elsewhere)
    monkeypatch.setattr(schema, "HOST", "other-host")
    result = run(out, "32,33", "--resume")
    assert result.exit_code == 0, result.output
    assert (f"this run differs in host other-host (was {first['host']['hostname']}); commit f00d "
            f"(was {first['git']['commit']}); software (BLAS)") in " ".join(result.output.split())
    meta = read_metadata(out)
    for key in ("host", "software", "git"):
        assert meta[key] == first[key], key  # the first machine's record, not replaced
        assert meta["invocations"][0][key] == first[key], key
    second = meta["invocations"][1]
    assert second["host"]["hostname"] == "other-host" and second["git"]["commit"] == "f00d"
    assert second["software"]["blas"][0]["internal_api"] == "mkl"
    df = read_results(out)
    assert dict(zip(df.n, df.host)) == {32: first["invocations"][0]["host"]["hostname"], 33: "other-host"}


# -- a finished, compressed run -----------------------------------------------------------------------
def _compressed_run(folder: Path) -> Path:
    out = folder / "g.csv"
    assert run(out, "32").exit_code == 0
    packed = folder / "g.csv.gz"
    packed.write_bytes(gzip.compress(out.read_bytes(), mtime=0))
    out.unlink()
    return packed


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("args", [
    ["run", "-v", "blas", "-s", "32,33", "-o", "g.csv", "--resume"],
    ["run", "-v", "blas", "-s", "32,33", "-o", "g.csv"],
    ["tune", "-v", "pipelined", "-s", "64", "--budget", "1", "-o", "g.csv"],
], ids=["run --resume", "run", "tune"])
def test_a_compressed_run_is_never_written_to_again(tmp_path, monkeypatch, args):
    packed = _compressed_run(tmp_path)
    monkeypatch.chdir(tmp_path)
    before = _snapshot(tmp_path)
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert "g.csv.gz is that run, finished and compressed" in line and "choose another --output" in line
    assert _snapshot(tmp_path) == before and packed.exists()


def test_metadata_standing_alone_is_not_overwritten_by_a_new_run(tmp_path, monkeypatch):
    _compressed_run(tmp_path).unlink()  # g.meta.json stays: the record of a run whose CSV is elsewhere
    monkeypatch.chdir(tmp_path)
    before = _snapshot(tmp_path)
    result = invoke("run", "-v", "blas", "-s", "32", "-o", "g.csv")
    assert result.exit_code == 2 and "g.meta.json already exists without g.csv: it records an earlier run" in result.output
    assert _snapshot(tmp_path) == before


# -- the batched tuner ---------------------------------------------------------------------------------
GPU = SimpleNamespace(facts=SimpleNamespace(name="Fake GPU", arch="sm_90", sm_count=132))


def _fake_batched(monkeypatch, classes_before_stop: int, error: BaseException | None):
    """A batched tuning without a GPU: the factory opens a fake batched engine on a fake GPU, whose
    run writes whole classes of one ok row per configuration, then raises error (if any)."""
    class FakeBatched(BatchedEngine):
        gpu, kernels = GPU, {}

        def gpu_names(self):
            return {GPU.facts.name}

        def prepare(self, jobs, since, say):
            return 0.0

        def run(self, shapes, output, seed, skip, on_class, counts, prune):
            writer = batched_local.ClassWriter(output)
            try:
                for i in range(classes_before_stop):
                    writer.write([{"size_class": f"cell{i:02d}", "params": "A=1", "status": "ok", "shapes": 1,
                                   "gflops": 1.0}])
                    counts["ok"] = counts.get("ok", 0) + 1
                if error is not None:
                    raise error
            finally:
                writer.close()
            return counts

        def close(self):
            pass

    collect = environment.collect
    monkeypatch.setattr(environment, "collect", lambda gpu=None: {**collect(None),
                                                                  "gpu": {"name": "Fake GPU", "uuid": "GPU-1"}})
    monkeypatch.setattr(batched_run, "open_batched_engine", lambda *args, **kwargs: FakeBatched())


def tune_batched(tmp_path, *more):
    cache = tmp_path / "cache.json"
    cache.write_text("{}\n")
    return invoke("tune", "-v", "gemv_tuned", "-s", "cell:3x3", "--budget", "2", "--engine", "batched",
                  "--tuning-cache", cache, "-o", tmp_path / "out" / "t.csv", *more)


@pytest.mark.parametrize("error,code", [(KeyboardInterrupt(), 130), (RuntimeError("boom"), 1)],
                         ids=["interrupted", "failed"])
def test_a_batched_tuning_stopped_before_its_first_class_leaves_nothing(tmp_path, monkeypatch, error, code):
    _fake_batched(monkeypatch, 0, error)
    result = tune_batched(tmp_path)
    assert result.exit_code == code and "Traceback" not in result.output, result.output
    assert "nothing was written" in result.output.strip().splitlines()[-1]
    assert files(tmp_path) == {"cache.json"}


def test_a_batched_tuning_interrupted_after_a_class_keeps_it_and_says_how_many(tmp_path, monkeypatch):
    _fake_batched(monkeypatch, 2, KeyboardInterrupt())
    result = tune_batched(tmp_path)
    assert result.exit_code == 130, result.output
    assert "t.csv.gz holds 2 finished size classes (2 from this run)" in " ".join(result.output.split())
    meta = read_metadata(tmp_path / "out" / "t.csv")
    assert meta["state"] == "interrupted" and meta["invocations"][-1]["host"] == meta["host"]
    assert len(json.loads((tmp_path / "cache.json").read_text())) == 2
    again = tune_batched(tmp_path, "--resume", "--dry-run")  # the batched tuner's own .csv.gz: resumable
    assert again.exit_code == 0, again.output


def test_a_batched_tuning_that_fails_is_one_line_and_keeps_its_classes_for_resume(tmp_path, monkeypatch):
    _fake_batched(monkeypatch, 1, RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS"))
    result = tune_batched(tmp_path)
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    (line,) = [ln for ln in result.output.splitlines() if ln.startswith("Error: ")]
    assert "RuntimeError: CUDA_ERROR_ILLEGAL_ADDRESS" in line and "holds 1 finished size class and" in line
    meta = read_metadata(tmp_path / "out" / "t.csv")
    assert meta["state"] == "failed" and meta["invocations"][-1]["error"] == "RuntimeError: CUDA_ERROR_ILLEGAL_ADDRESS"
    assert (tmp_path / "out" / "t.csv").exists()  # plain, as a resume continues it


# -- on a GPU (pytest -m gpu) ----------------------------------------------------------------------------
@pytest.mark.gpu
def test_a_gpu_run_interrupted_after_two_rows_keeps_them_and_its_gpu_and_resumes(tmp_path, monkeypatch):
    out = tmp_path / "r.csv"
    stop_at(monkeypatch, ("after row 2", LocalPoints, "_run_point", 3), KeyboardInterrupt())
    # in this process, where the interrupt is planted (tests/test_isolation.py interrupts a worker process)
    result = invoke("run", "-v", "best", "-s", "63:129", "--runs", "2", "-o", out, "--isolation", "none")
    assert result.exit_code == 130 and "r.csv holds 2 finished points (2 from this run)" in result.output, result.output
    meta = read_metadata(out)
    assert meta["state"] == "interrupted" and meta["invocations"][0]["gpu"]["uuid"] == meta["gpu"]["uuid"]
    monkeypatch.undo()
    again = invoke("run", "-v", "best", "-s", "63:129", "-o", out, "--resume")
    assert again.exit_code == 0, again.output
    df = read_results(out)
    assert len(df) == 9 and (df.status == "ok").all() and (df.gpu_uuid == meta["gpu"]["uuid"]).all()
    assert [i["state"] for i in read_metadata(out)["invocations"]] == ["interrupted", "finished"]


@pytest.mark.gpu
def test_a_batched_tuning_on_the_gpu_interrupted_after_a_class_keeps_it_and_resumes(tmp_path, monkeypatch):
    cache = tmp_path / "cache.json"
    cache.write_text("{}\n")
    out = tmp_path / "t" / "t.csv"
    args = ["tune", "-v", "gemv_tuned", "-s", "cell:3x14,cell:14x3", "--budget", "4", "-o", out, "--tuning-cache", cache]
    stop_at(monkeypatch, ("second class", batched_local, "measure_class", 2), KeyboardInterrupt())
    # in this process, where the interrupt is planted (tests/test_batched_isolation.py interrupts a worker)
    result = invoke(*args, "--isolation", "none")
    assert result.exit_code == 130, result.output
    assert "t.csv.gz holds 1 finished size class (1 from this run)" in " ".join(result.output.split())
    assert len(json.loads(cache.read_text())) == 1 and read_metadata(out)["state"] == "interrupted"
    monkeypatch.undo()
    again = invoke(*args, "--resume")
    assert again.exit_code == 0, again.output
    assert batched_local.read_rows(out)["size_class"].nunique() == 2 and len(json.loads(cache.read_text())) == 2
