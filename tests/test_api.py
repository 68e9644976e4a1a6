"""The Python API (mmbench.run, mmbench.plan: mmbench/api.py) on the CPU variants: the rows the
command line writes, the metadata attached, nothing written unless asked, variants declared as
dicts planned without a GPU, and bad input as one line naming the value."""

import os
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

import mmbench
from mmbench import sweep
from mmbench.cli import main
from mmbench.results import read_results
from mmbench.variants import files, registry

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gemm" / "tiled_sgemm.toml"
# What a point's row says that is no timing (nor when and where it ran): the same at the same seed.
NOT_TIMINGS = ["op", "variant", "label", "backend", "params", "m", "n", "k", "cache", "scope", "pad", "padded_shape",
               "status", "reason", "rel_err", "err_bound_ratio", "runs", "warmup", "threads"]


@pytest.fixture(autouse=True)
def quiet_places(tmp_path, monkeypatch):
    """Each test in an empty folder of its own, its runs folder and temporary files apart (to see
    what a run leaves), the registry as it was afterwards, no variant files from the environment."""
    for name in ("cwd", "runs", "tmp"):
        (tmp_path / name).mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setenv("MMBENCH_RUNS", str(tmp_path / "runs"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.delenv(files.ENVIRONMENT, raising=False)
    before = dict(registry._ENTRIES)
    yield
    registry._ENTRIES.clear()
    registry._ENTRIES.update(before)


def left(tmp_path) -> dict[str, list[str]]:
    return {name: sorted(os.listdir(tmp_path / name)) for name in ("cwd", "runs", "tmp")}


def test_the_api_returns_the_rows_the_command_line_writes_with_the_metadata_and_writes_nothing(tmp_path):
    cli = tmp_path / "cli.csv"
    shown = CliRunner().invoke(main, ["run", "-v", "blas,blas_gemv,numpy_transpose", "-s", "31,64", "--runs", "2",
                                      "--threads", "1", "--seed", "5", "-o", str(cli)])
    assert shown.exit_code == 0, shown.output
    said = []
    df = mmbench.run(["blas", "blas_gemv", "numpy_transpose"], "31,64", runs=2, threads=1, seed=5, say=said.append)
    expected = read_results(cli)
    assert len(df) == 6 and list(df.columns) == list(expected.columns)
    assert df[NOT_TIMINGS].equals(expected[NOT_TIMINGS]) and (df.status == "ok").all()
    meta = df.attrs["metadata"]
    assert meta["state"] == "finished" and meta["settings"]["seed"] == 5 and meta["settings"]["runs"] == 2
    assert meta["invocations"][0]["command"][0].startswith("mmbench.run(variants=['blas', ")
    assert "path" not in df.attrs
    assert left(tmp_path) == {"cwd": [], "runs": [], "tmp": []}  # the temporary folder is gone too


def test_the_rows_are_kept_where_asked_and_a_resume_continues_them(tmp_path):
    out = tmp_path / "kept" / "r.csv"
    first = mmbench.run("blas", 32, runs=1, output=out, say=lambda _: None)
    assert first.attrs["path"] == out and out.exists() and out.with_suffix(".meta.json").exists()
    with pytest.raises(mmbench.RunRefused, match="already exists; pass --resume"):
        mmbench.run("blas", 32, runs=1, output=out)
    both = mmbench.run("blas", [32, 64], output=out, resume=True, say=lambda _: None)  # runs: the file's
    assert sorted(both.n) == [32, 64] and (both.runs == 1).all() and len(read_results(out)) == 2
    assert len(both.attrs["metadata"]["invocations"]) == 2
    assert left(tmp_path) == {"cwd": [], "runs": [], "tmp": []}


def test_the_command_line_and_the_api_go_through_the_same_function(monkeypatch):
    asked = []

    def perform(request, **kwargs):
        asked.append((request, kwargs))
        raise mmbench.RunRefused("stopped here")

    monkeypatch.setattr(sweep, "perform", perform)
    monkeypatch.setattr("mmbench.api.perform", perform)
    result = CliRunner().invoke(main, ["run", "-v", "blas", "-s", "32", "--runs", "3", "--dry-run"])
    assert result.exit_code == 2 and result.output.strip() == "Error: stopped here"
    with pytest.raises(mmbench.RunRefused, match="stopped here"):
        mmbench.run("blas", 32, runs=3)
    (cli, cli_kwargs), (api, _) = asked
    assert cli.variants == api.variants == ("blas",) and cli.sizes == api.sizes == "32" and cli.runs == api.runs == 3
    assert cli_kwargs["dry_run"] and cli.time_budget is None and cli.cpu_budget is None  # defaults, not given


def test_a_variant_declared_as_a_dict_is_planned_without_a_gpu():
    table = tomllib.loads(EXAMPLE.read_text())["variant"][0]
    points = mmbench.plan([table, "cublas"], "256,512", base=EXAMPLE.parent, params={"TILE": [16, 32]},
                          tuning_cache="none")
    assert [str(p) for p in points] == ["tiled_sgemm[TILE=16,TM=4] @ 256", "tiled_sgemm[TILE=32,TM=4] @ 256",
                                        "cublas @ 256", "tiled_sgemm[TILE=16,TM=4] @ 512",
                                        "tiled_sgemm[TILE=32,TM=4] @ 512", "cublas @ 512"]
    assert points[0].variant.source_dir == EXAMPLE.parent and points[0].cache == "cold"
    alone = mmbench.plan(table, 128, base=EXAMPLE.parent, tuning_cache="none")  # no name: the dict's variant
    assert [str(p) for p in alone] == ["tiled_sgemm[TILE=32,TM=4] @ 128"]


def test_a_variant_files_variants_run_unless_some_are_named():
    assert [str(p) for p in mmbench.plan(sizes="64", variant_files=EXAMPLE, tuning_cache="none")] == [
        "tiled_sgemm[TILE=32,TM=4] @ 64"]
    named = mmbench.plan("cublas,tiled_sgemm", "64", variant_files=[EXAMPLE], tuning_cache="none")
    assert [p.variant.name for p in named] == ["cublas", "tiled_sgemm"]


@pytest.mark.parametrize("kwargs, said", [
    ({"variants": "bset"}, "unknown variant 'bset'; choose from: "),
    ({"variants": [3]}, "variants: 3 is neither a variant's name nor a [[variant]] table"),
    ({"sizes": "64:32"}, "64:32"),
    ({"sizes": [1.5]}, "sizes=[1.5]: expected a size spec"),
    ({"runs": 0}, "runs=0: expected an integer from 1 to 1000"),
    ({"runs": "3"}, "runs='3': expected an integer"),
    ({"seed": -1}, "seed=-1: expected an integer from 0"),
    ({"max_noise": 1.5}, "max_noise=1.5: expected a finite number over 0 and under 1"),
    ({"time_budget": float("nan")}, "time_budget=nan: expected a finite number"),
    ({"cache": "warm"}, "cache='warm'; choose from: cold, hot"),
    ({"rnus": 3}, "unknown setting rnus=...; choose from: "),
    ({"params": {"BM": 128}}, "parameter 'BM' belongs to none of blas"),
    ({"params": ["BM=1"]}, "params=['BM=1']: expected a dict"),
    ({"output": "r.txt"}, "--output r.txt: a results file ends in .csv"),
    ({"resume": True}, "resume=True continues a results file: give output="),
    ({"tuning_cache": "missing.json"}, "--tuning-cache 'missing.json': no such file"),
    ({"cache": "hot"}, "--cache hot: no variant of this run runs on the GPU"),
    ({"variants": {"name": "x"}}, "<python>: variant 'x': "),
])
def test_bad_input_is_one_line_naming_the_value_and_touches_nothing(tmp_path, kwargs, said):
    arguments = {"variants": "blas", "sizes": "32", **kwargs}
    for call in (mmbench.run, mmbench.plan):
        with pytest.raises(mmbench.RunRefused) as caught:
            call(**arguments)
        assert said in str(caught.value) and "\n" not in str(caught.value)
    assert left(tmp_path) == {"cwd": [], "runs": [], "tmp": []}


def test_an_interrupted_run_says_what_it_kept(tmp_path, monkeypatch):
    from mmbench.engine.points_local import LocalPoints

    real, calls = LocalPoints._run_point, []

    def interrupted_on_second(self, *args):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, *args)

    monkeypatch.setattr(LocalPoints, "_run_point", interrupted_on_second)
    with pytest.raises(mmbench.RunInterrupted, match="a run without output= keeps no rows"):
        mmbench.run("blas", "32,64", runs=1, say=lambda _: None)
    assert left(tmp_path) == {"cwd": [], "runs": [], "tmp": []}
    calls.clear()
    out = tmp_path / "r.csv"
    with pytest.raises(mmbench.RunInterrupted, match="holds 1 finished point"):
        mmbench.run("blas", "32,64", runs=1, output=out, say=lambda _: None)
    assert len(read_results(out)) == 1


def test_a_run_from_python_records_no_whole_command_time(tmp_path):
    """process_s is the command line's whole command; a notebook's process is older than its runs."""
    df = mmbench.run("blas", "32", runs=1, warmup=0, say=lambda _: None)
    assert df.attrs["metadata"]["invocations"][-1]["process_s"] is None
