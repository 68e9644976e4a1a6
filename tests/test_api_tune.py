"""mmbench.tune (mmbench/api.py) on the CPU: a replay of a recorded tuning says, records and returns
what `mmbench tune` prints and records; a dry run returns the points it would measure and writes
nothing; a tuning on the GPU (the recorded run standing in for it) returns its rows and its best;
bad input is one line naming the value; the example of docs/api.md runs."""

import json
import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import mmbench
from mmbench import places
from mmbench.cli import main
from mmbench.engine import session
from mmbench.results import read_metadata, read_results
from mmbench.tuning import cache as tuning_cache
from mmbench.tuning import workflow
from mmbench.tuning.plan import load_plan

REPO = Path(__file__).resolve().parent.parent
RECORDED = REPO / "tests" / "data" / "recorded" / "tune-pipelined-h200.csv"  # an H200 tuning of pipelined


@pytest.fixture(autouse=True)
def apart(tmp_path, monkeypatch):
    """Each test in an empty folder of its own, with its own runs folder and tuning cache."""
    for name in ("cwd", "runs"):
        (tmp_path / name).mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setenv(places.RUNS_ENV, str(tmp_path / "runs"))
    monkeypatch.setenv(places.CACHE_ENV, str(tmp_path / "mine.json"))


def _entries(path: Path) -> dict:
    """A cache's entries without the time they were written."""
    return {k: {f: v for f, v in e.items() if f != "tuned_at"} for k, e in tuning_cache.load_cache(path).items()}


def test_a_replay_says_records_and_returns_what_the_command_line_prints(tmp_path):
    shown = CliRunner().invoke(main, ["tune", "-v", "pipelined", "--replay", str(RECORDED), "--strategy", "tpe",
                                      "--budget", "12", "--tuning-cache", str(tmp_path / "cli.json")])
    assert shown.exit_code == 0, shown.output
    said = []
    df = mmbench.tune("pipelined", replay=RECORDED, strategy="tpe", budget=12, tuning_cache=tmp_path / "api.json",
                      say=said.append)
    assert "\n".join(said) + "\n" == shown.output.replace("cli.json", "api.json")
    assert _entries(tmp_path / "api.json") == _entries(tmp_path / "cli.json")
    best = {e["size_class"]: e for e in tuning_cache.load_cache(tmp_path / "api.json").values()}
    assert df.attrs["best"].keys() == best.keys() == {"1024", "2048", "2048u", "4096"}
    assert all(df.attrs["best"][c]["params"] == best[c]["params"] for c in best)
    recorded = read_results(RECORDED)
    assert df.equals(recorded[recorded.variant == "pipelined"].reset_index(drop=True)) and len(df) == 240
    assert df.attrs["metadata"] == read_metadata(RECORDED) and df.attrs["path"] == RECORDED


def test_a_dry_run_returns_the_points_it_would_measure_and_writes_nothing(tmp_path):
    shown = CliRunner().invoke(main, ["tune", "-v", "pipelined", "-s", "1024,2049", "--budget", "3", "--strategy",
                                       "random", "--dry-run"])
    assert shown.exit_code == 0, shown.output
    listed = [line.strip() for line in shown.output.splitlines() if line.startswith("  ")]
    said = []
    df = mmbench.tune("pipelined", [1024, 2049], budget=3, strategy="random", dry_run=True, say=said.append)
    assert len(df) == 6 and list(df.params.unique()) == listed and sorted(set(df.m)) == [1024, 2049]
    assert set(df.variant) == {"pipelined"} and set(df.dtype) == {"fp32"} and set(df.cache) == {"cold"}
    assert re.sub(r"\d{8}-\d{6}", "T", "\n".join(said)) == re.sub(r"\d{8}-\d{6}", "T", shown.output.rstrip("\n"))
    tuning = df.attrs["metadata"]["tuning"]
    assert (tuning["strategy"], tuning["budget"], tuning["tried"], tuning["space"]) == ("random", 3, 3, 1005)
    assert df.attrs["best"] == {} and "path" not in df.attrs
    plan = mmbench.tune(plan="ladder", dry_run=True, say=lambda _: None)
    assert len(plan) == len(load_plan("ladder").points()) and plan.attrs["metadata"]["name"] == "tune-ladder"
    assert sorted(os.listdir(tmp_path / "cwd")) == sorted(os.listdir(tmp_path / "runs")) == []
    assert not (tmp_path / "mine.json").exists()


def test_a_tuning_returns_its_rows_and_the_best_it_recorded(monkeypatch, tmp_path):
    def measured(points, settings, output, about, **kwargs):  # the recorded run stands for the GPU's
        for suffix in (".csv", ".meta.json"):
            shutil.copy(RECORDED.with_suffix(suffix), output.with_suffix(suffix))
        kwargs["on_row"]({"variant": points[0].variant.name})  # what the session hands each row to
        return session.Outcome(output, "finished")

    monkeypatch.setattr(session, "execute", measured)
    rows = []
    df = mmbench.tune("pipelined", "1024,2048,2049,4096", budget=3, strategy="random", output="t.csv", say=lambda _: None,
                      on_row=rows.append)
    assert rows == [{"variant": "pipelined"}]
    out = tmp_path / "cwd" / "t.csv"
    assert df.attrs["path"].resolve() == out and df.equals(read_results(out)) and len(df) == 240
    assert df.attrs["metadata"] == read_metadata(out)
    recorded = {e["size_class"]: e["params"] for e in tuning_cache.load_cache(tmp_path / "mine.json").values()}
    assert {c: e["params"] for c, e in df.attrs["best"].items()} == recorded
    assert set(recorded) == {"1024", "2048", "2048u", "4096"}


def test_a_batched_tuning_returns_its_class_rows(monkeypatch, tmp_path):
    from mmbench.engine import batched_local
    from mmbench.tuning import batched_run
    from mmbench.variants import format_params
    from mmbench.vocabulary import DeviceId

    def tuned(request, about, command, say):  # a finished batched tuning: its class rows compressed, its metadata
        best = {"3": {"params": format_params(request.configs[0]), "gflops": 2.0, "shapes": 9, "tried": 2}}
        pd.DataFrame([{"size_class": "3", "params": format_params(p), "status": "ok", "reason": "", "shapes": 9,
                       "gflops": 2.0 - i, "time_ms_min": 1.0, "time_ms_max": 1.0, "err_bound_ratio": 0.1}
                      for i, p in enumerate(request.configs)]).to_csv(batched_local.gz_path(request.output), index=False)
        request.output.with_suffix(".meta.json").write_text(json.dumps({**about, "engine": "batched"}))
        return best, DeviceId("G"), {"ok": 2, "wall_s": 1.0}

    monkeypatch.setattr(batched_run, "tune_batched", tuned)
    said = []
    df = mmbench.tune("gemv_tuned", "cell:3x3", budget=2, output="g.csv", say=said.append)
    assert said[1].startswith("batched: 2 configurations x 9 shapes in 1 size classes")
    assert list(df.columns) == list(batched_local.COLUMNS) and len(df) == 2 and set(df.size_class) == {"3"}
    assert df.attrs["path"] == Path("g.csv.gz") and df.attrs["metadata"]["tuning"]["engine"] == "batched"
    assert df.attrs["best"]["3"]["params"] == df.params[0]


@pytest.mark.parametrize("kwargs, said", [
    ({"budget": 0}, "budget=0: expected an integer from 1 up"),
    ({"budget": "3"}, "budget='3': expected an integer"),
    ({"seed": 2**32}, "seed=4294967296: expected an integer from 0 to 4294967295"),
    ({"prune": 1.0}, "prune=1.0: expected a finite number from 0 and under 1"),
    ({"strategy": "annealing"}, "strategy='annealing'; choose from: auto, brute, random, tpe, ga, forest"),
    ({"engine": "fast"}, "engine='fast'; choose from: auto, points, batched"),
    ({"bugdet": 3}, "unknown option bugdet=...; choose from: plan, strategy, budget"),
    ({"variant": None}, "give --variant NAME (the variant to tune) or --plan PLAN"),
    ({"variant": ["pipelined"]}, "variant=['pipelined']: expected a variant's name"),
    ({"variant": "pipelind"}, "unknown variant 'pipelind'"),
    ({"sizes": "abc"}, "size spec 'abc'"),
    ({"dtype": ["bf16"]}, "dtype=['bf16']: expected one name"),
    ({"params": {"XX": 8}}, "'pipelined' has no parameter XX"),
    ({"tuning_cache": "none"}, "--tuning-cache none is for run"),
    ({"replay": RECORDED, "jobs": 4}, "--jobs 4: a replay (--replay "),
    ({"plan": "ladder", "variant": None, "budget": None, "sizes": 64}, "--sizes 64: the plan (--plan ladder) names"),
    ({"top": 2}, "--top 2: it counts the fastest configurations of --candidates files"),
    ({"output": "t.txt"}, "--output t.txt: a results file ends in .csv"),
    ({"strategy": "tpe", "params": {"BK": 8}}, "--strategy tpe searches the whole space; --params and --candidates"),
    ({"strategy": "ga", "budget": None}, "--strategy ga needs --budget N"),
])
def test_bad_input_is_one_line_naming_the_value_and_touches_nothing(tmp_path, kwargs, said):
    with pytest.raises(mmbench.RunRefused) as caught:
        mmbench.tune(**{"variant": "pipelined", "budget": 2, **kwargs}, say=lambda _: None)
    assert said in str(caught.value) and "\n" not in str(caught.value)
    assert sorted(os.listdir(tmp_path / "cwd")) == sorted(os.listdir(tmp_path / "runs")) == []
    assert not (tmp_path / "mine.json").exists()


def test_the_command_line_and_the_api_go_through_the_same_function(monkeypatch):
    asked = []

    def perform(options, **kwargs):
        asked.append((options, kwargs))
        raise mmbench.RunRefused("stopped here")

    monkeypatch.setattr(workflow, "perform", perform)
    result = CliRunner().invoke(main, ["tune", "-v", "pipelined", "-s", "64", "--budget", "3", "--params", "BK=8"])
    assert result.exit_code == 2 and result.output.strip() == "Error: stopped here"
    with pytest.raises(mmbench.RunRefused, match="stopped here"):
        mmbench.tune("pipelined", 64, budget=3, params={"BK": 8})
    (cli, cli_kwargs), (api, api_kwargs) = asked
    assert cli == api and cli.given == {"variant", "sizes", "budget", "params"}
    assert cli_kwargs["command"][:2] == ["mmbench", "tune"] and api_kwargs["command"][0].startswith("mmbench.tune(")


def test_the_example_of_the_api_page_runs(tmp_path, monkeypatch):
    """docs/api.md's replay, as written, from the repository's root."""
    (line,) = [line for line in (REPO / "docs" / "api.md").read_text().splitlines()
               if line.startswith('df = mmbench.tune("pipelined", replay=')]
    monkeypatch.chdir(REPO)
    namespace = {"mmbench": mmbench}
    exec(line, namespace)
    df = namespace["df"]
    assert isinstance(df, pd.DataFrame) and set(df.attrs["best"]) == {"1024", "2048", "2048u", "4096"}
    assert df.attrs["metadata"]["gpu"]["name"] == "NVIDIA H200"
    assert json.loads((tmp_path / "mine.json").read_text())  # the picks went into the cache (the test's)
