"""The drawing commands (cli/figures.py) and where runs go: `mmbench run` and `tune` write into the
user's runs folder; `plot`, `table` and `report` without RESULTS take the newest run there that they
can draw; and nothing is written that the data cannot make: each command decides first, then
writes, or refuses in one line with every file as it was."""

from __future__ import annotations

import dataclasses

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from mmbench.cli import main
from mmbench.results import read_metadata, read_results, write_metadata

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"
ZOSA_CUT = DATA / "zosa2017-h200-cut.csv"
LAB3 = REPO / "results" / "lab3-h200" / "lab3-h200.csv"
CUTS = {"zosa2017": ZOSA_CUT, "amd-tiling": DATA / "amd-tiling-h100-cut.csv",
        "lameski2013": DATA / "lameski2013-h100-cut.csv", "limits": DATA / "limits-h200-cut.csv",
        "sorensen2012": DATA / "sorensen2012-h100-cut.csv", "lab3": LAB3}  # a run of each study's config


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def files(folder: Path) -> dict[str, bytes]:
    """Every file under folder with its bytes: what a refusal must leave as it was."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def refused(result, *needles: str) -> None:
    """One line, exit 2, no traceback, naming what is missing."""
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output, result.output
    for needle in needles:
        assert needle in result.output, result.output


def a_run(root: Path, name: str, source: Path, finished: dt.datetime, keep=None, gpu: bool = True) -> Path:
    """A run as `mmbench run` leaves one: root/NAME/NAME.csv and its metadata, with the rows of
    source that keep(df) selects and source's metadata, finished at `finished`."""
    df = read_results(source)
    folder = root / name
    folder.mkdir(parents=True)
    csv = folder / f"{name}.csv"
    (df[keep(df)] if keep else df).to_csv(csv, index=False)
    meta = {**read_metadata(source), "name": name, "started_at": (finished - dt.timedelta(hours=1)).isoformat(),
            "finished_at": finished.isoformat()}
    if not gpu:
        meta.pop("gpu", None)
    write_metadata(csv, meta)
    return csv


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """An empty folder to work in, whose runs/ is the user's runs folder (the default)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MMBENCH_RUNS", raising=False)
    return Path("runs")


NOW = dt.datetime.now(dt.timezone.utc)


# -- where runs go ------------------------------------------------------------------------------------
def test_run_writes_into_the_users_runs_folder_never_results(runs, tmp_path, monkeypatch):
    result = invoke("run", "-v", "blas", "-s", "32", "--runs", "1")
    assert result.exit_code == 0, result.output
    [csv] = list(runs.glob("run-*/run-*.csv"))
    assert csv.parent.name == csv.stem and csv.with_suffix(".meta.json").exists()  # a folder per run
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]  # no results/ made
    monkeypatch.setenv("MMBENCH_RUNS", str(tmp_path / "elsewhere"))
    assert invoke("run", "-v", "blas", "-s", "32", "--runs", "1").exit_code == 0
    assert len(list((tmp_path / "elsewhere").glob("run-*/run-*.csv"))) == 1


def test_config_runs_and_tunings_plan_their_output_in_the_runs_folder(runs):
    config = invoke("run", "--config", REPO / "configs" / "zosa2017.toml", "--dry-run")
    assert config.exit_code == 0 and "output: runs/zosa2017-" in config.output, config.output
    tune = invoke("tune", "-v", "dbuf", "-s", "1024", "--budget", "2", "--dry-run")
    assert tune.exit_code == 0 and "output: runs/tuning/tune-dbuf-" in tune.output, tune.output
    help_text = "".join(invoke("run", "--help").output.split())  # as one word: Click breaks lines at hyphens
    assert "Default:RUNS/NAME-TIMESTAMP/NAME-TIMESTAMP.csv" in help_text and "$MMBENCH_RUNS" in help_text
    assert "results/" not in help_text


# -- the newest run a command can draw -----------------------------------------------------------------
def test_the_design_cards_path_plot_roofline_draws_the_run_just_made(runs):
    """`mmbench run --variant best --sizes 63:2049`, then `mmbench plot roofline`: the run (here its
    rows, cut from the H200's) is drawn, past a newer CPU run it cannot draw and a newer tuning."""
    dry = invoke("run", "--variant", "best", "--sizes", "63:2049", "--dry-run")
    assert dry.exit_code == 0 and "output: runs/run-" in dry.output
    card = a_run(runs, "run-best", ZOSA_CUT, NOW - dt.timedelta(hours=1), keep=lambda df: df.variant == "best")
    a_run(runs, "zosa-older", ZOSA_CUT, NOW - dt.timedelta(days=2))
    a_run(runs / "tuning", "tune-transpose", LAB3, NOW + dt.timedelta(hours=1),  # a tuning: never a default
          keep=lambda df: df.op == "transpose")
    assert invoke("run", "-v", "blas", "-s", "32", "--runs", "1").exit_code == 0  # the newest: no GPU, no roofs
    cpu = next(p for p in runs.glob("run-2*/run-*.csv"))
    before = files(runs)
    result = invoke("plot", "roofline")
    assert result.exit_code == 0, result.output
    assert f"results: {card} (the newest run in runs/ that `mmbench plot roofline` can use)" in result.output
    written = set(files(runs)) - set(before)
    assert written == {f"run-best/{name}" for name in ("fig3-4-roofline.png", "fig3-4-roofline.svg")}
    assert all(files(runs)[name] == data for name, data in before.items())  # nothing else touched
    assert cpu.exists()


def test_a_fresh_clone_takes_no_tuning_and_writes_nothing_without_a_run(runs, tmp_path):
    """No run of the user's: one line naming the runs folder and a reference run that exists."""
    a_run(runs / "tuning", "tune-transpose", LAB3, NOW, keep=lambda df: df.op == "transpose")
    before = files(tmp_path)
    for args, reference in ((["plot", "gflops"], "results/zosa2017-h200/zosa2017-h200.csv.gz"),
                            (["plot", "roofline"], "results/zosa2017-h200/zosa2017-h200.csv.gz"),
                            (["plot", "transpose-bandwidth"], "results/lab3-h200/lab3-h200.csv"),
                            (["plot", "gemv-mesh"], "results/sorensen2012-h100/sorensen2012-h100.csv.gz"),
                            (["table"], "results/zosa2017-h200/zosa2017-h200.csv.gz"),
                            (["report", "--config", REPO / "configs" / "lameski2013.toml"],
                             "results/lameski2013-h100/lameski2013-h100.csv.gz")):
        result = invoke(*args)
        refused(result, "no run in runs/", "it holds no results CSV with its metadata", reference)
        assert (REPO / reference).exists()
    assert files(tmp_path) == before


def test_every_study_names_a_reference_run_that_exists():
    from mmbench.studies import figure_families, papers, study

    for paper in papers():
        assert (REPO / study(paper).REFERENCE_RUN).exists(), paper
    assert all((REPO / family.reference).exists() for family in figure_families().values())


def test_runs_it_cannot_draw_are_skipped_and_the_newest_reason_given(runs, tmp_path):
    a_run(runs, "zosa", ZOSA_CUT, NOW - dt.timedelta(days=1))
    gemv = a_run(runs, "gemv", CUTS["sorensen2012"], NOW)  # newer; no GEMM at square sizes, no best
    speedup = invoke("plot", "speedup")
    assert speedup.exit_code == 0 and (runs / "zosa" / "fig5-speedup.png").exists(), speedup.output
    table = invoke("table")
    assert table.exit_code == 0 and (runs / "zosa" / "table1.md").exists() and not (runs / "gemv" / "table1.md").exists()
    mesh = invoke("plot", "gemv-mesh")
    assert mesh.exit_code == 0 and (runs / "gemv" / "fig5-mesh.png").exists()
    shutil.rmtree(runs / "zosa")
    before = files(tmp_path)
    refused(invoke("plot", "speedup"), f"none of its 1 runs will do (the newest, {gemv}: ", "no CUDA-Best ('best') rows")
    assert files(tmp_path) == before


def test_report_without_results_takes_the_newest_run_of_its_config(runs):
    a_run(runs, "limits", CUTS["limits"], NOW - dt.timedelta(days=1))
    a_run(runs, "lameski", CUTS["lameski2013"], NOW - dt.timedelta(days=2))
    a_run(runs, "zosa", ZOSA_CUT, NOW)
    result = invoke("report", "--config", REPO / "configs" / "lameski2013.toml")
    assert result.exit_code == 0, result.output
    assert (runs / "lameski" / "REPORT.md").exists() and not list(runs.glob("*/REPORT.md"))[1:]


# -- nothing written that the data cannot make ---------------------------------------------------------
def copied(tmp_path: Path, source: Path, name: str | None = None) -> Path:
    """A results CSV and its metadata copied into tmp_path (as NAME.csv where given)."""
    csv = tmp_path / (f"{name}.csv" if name else source.name)
    shutil.copy(source, csv)
    shutil.copy(source.with_suffix(".meta.json"), csv.with_suffix(".meta.json"))
    return csv


CASES = {  # the reproductions, then the others of their class
    "gflops, kernel clock, none measured": (ZOSA_CUT, ["plot", "gflops", "--clock", "kernel"], "no kernel-clock times"),
    "zosa report of a Lab 3 run": (LAB3, ["report", "--config", REPO / "configs" / "zosa2017.toml"],
                                   "the zosa2017 report needs verified rows of every variant"),
    "amd report of a Zosa run": (ZOSA_CUT, ["report", "--config", REPO / "configs" / "amd-tiling.toml"],
                                 "has none of register_tiling"),
    "table without Table 1's sizes": (CUTS["lameski2013"], ["table"], "Table 1 needs cuBLAS rows at its sizes"),
    "table at sizes not run": (ZOSA_CUT, ["table", "--sizes", "3000,4000"], "at its sizes (n = 3000, 4000)"),
    "table at no square size": (ZOSA_CUT, ["table", "--sizes", "5x6x7"], "is not square"),
    "gflops of GEMVs": (CUTS["sorensen2012"], ["plot", "gflops"], "square sizes (n x n x n)"),
    "amd % of cuBLAS of a Zosa run": (ZOSA_CUT, ["plot", "amd-cublas"], "needs a step of the tutorial"),
    "Lab 3 time of a Zosa run": (ZOSA_CUT, ["plot", "matmul-time"], "the time figure needs the lab's matmul rows"),
    "Lab 3 bandwidth of copies alone": (CUTS["sorensen2012"], ["plot", "transpose-bandwidth"],
                                        "the bandwidth figure needs transpose rows"),
    "vs-cublas of GEMVs": (CUTS["sorensen2012"], ["plot", "vs-cublas"], "no 'cublas' rows"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_figure_table_or_report_the_data_cannot_make_is_refused_before_writing(tmp_path, case):
    source, args, needle = CASES[case]
    csv = copied(tmp_path, source)
    before = files(tmp_path)
    refused(invoke(*args, csv), needle)
    assert files(tmp_path) == before


def test_rows_without_a_time_of_the_figures_clock_are_not_drawn():
    """--clock kernel: a row the kernel clock did not time (the CPU's) keeps its status but is no
    point of any figure; none timed at all is refused before any figure is made."""
    import pandas as pd

    from mmbench.analysis import ok_rows, with_clock
    from mmbench.results import ResultsError

    df = pd.DataFrame({"variant": ["best", "blas", "naive"], "status": ["ok", "ok", "wrong"],
                       "time_ms_mean": [1.0, 2.0, 3.0], "time_ms_median": [1.0, 2.0, 3.0], "time_ms_min": [1.0] * 3,
                       "gflops_mean": [10.0] * 3, "gflops_median": [10.0] * 3, "gbytes_per_s": [1.0] * 3,
                       "kernel_ms_mean": [0.5, None, None], "kernel_ms_median": [0.5, None, None],
                       "kernel_ms_min": [0.5, None, None]})
    assert list(ok_rows(with_clock(df, "kernel")).variant) == ["best"]
    assert list(ok_rows(df).variant) == ["best", "blas"]
    with pytest.raises(ResultsError, match="no kernel-clock times"):
        with_clock(df.assign(kernel_ms_median=None), "kernel")


@pytest.mark.parametrize("config", CUTS)
def test_each_studys_report_refuses_every_other_studys_run(tmp_path, config):
    """The check is the config's, for every study: a report needs a row of each variant it sweeps."""
    for study, source in CUTS.items():
        if study == config:
            continue
        csv = copied(tmp_path, source, study)
        before = files(tmp_path)
        refused(invoke("report", "--config", REPO / "configs" / f"{config}.toml", csv),
                f"the {config} report needs verified rows of every variant")
        assert files(tmp_path) == before


def test_a_summary_that_cannot_be_made_refuses_its_figure_too(tmp_path, monkeypatch):
    """vs-cublas prints a summary after its figure: both are made before either is written."""
    from mmbench.results import ResultsError
    from mmbench.studies import limits

    def fails(df, meta):
        raise ResultsError("no targets (test)")

    monkeypatch.setitem(limits.FIGURES, "vs-cublas", dataclasses.replace(limits.FIGURES["vs-cublas"], summary=fails))
    csv = copied(tmp_path, CUTS["limits"])
    before = files(tmp_path)
    refused(invoke("plot", "vs-cublas", csv), "no targets (test)")
    assert files(tmp_path) == before


def test_a_report_whose_text_cannot_be_made_writes_no_figure(tmp_path, monkeypatch):
    from mmbench.results import ResultsError
    from mmbench.studies import amd_tiling

    def fails(*args):
        raise ResultsError("the report lacks something (test)")

    monkeypatch.setattr(amd_tiling, "report", fails)
    csv = copied(tmp_path, CUTS["amd-tiling"])
    before = files(tmp_path)
    refused(invoke("report", "--config", REPO / "configs" / "amd-tiling.toml", csv), "lacks something (test)")
    assert files(tmp_path) == before


def test_an_unwritable_folder_is_one_line(tmp_path):
    csv = copied(tmp_path, ZOSA_CUT)
    (tmp_path / "file").write_text("")
    refused(invoke("plot", "speedup", csv, "--out", tmp_path / "file" / "out"), "file is not a folder")
    refused(invoke("table", csv, "--out", tmp_path / "file" / "out"), "file is not a folder")


# -- the GPU commands' defaults -----------------------------------------------------------------------
def test_ceilings_record_into_the_newest_run_of_this_gpu_only(runs, monkeypatch):
    from mmbench import ceilings, environment
    from mmbench.cli import gpu as gpu_cli

    mine = a_run(runs, "h200", ZOSA_CUT, NOW - dt.timedelta(days=1))
    other = a_run(runs, "h100", CUTS["amd-tiling"], NOW)  # newer, of another GPU
    facts = read_metadata(ZOSA_CUT)["gpu"]
    measured = []
    monkeypatch.setattr(gpu_cli, "_open_gpu_or_fail", lambda: object())
    monkeypatch.setattr(environment, "gpu_info", lambda gpu: facts)
    monkeypatch.setattr(ceilings, "save_cached", lambda c: runs / "cache.json")
    sheet = ceilings.datasheet(facts)

    def measure(gpu, f):
        measured.append(f)
        return {"gpu": f["name"], "fp32_fma_tflops": 60.0, "dram_copy_gbytes_per_s": 4000.0, "datasheet": sheet,
                "library_tflops": {"bf16": {"tflops": 750.0, "at": 8192}, "fp8e4m3": {"unavailable": "no FP8 (test)"}}}

    monkeypatch.setattr(ceilings, "measure", measure)
    result = invoke("ceilings")
    assert result.exit_code == 0, result.output
    assert read_metadata(mine)["ceilings"]["fp32_fma_tflops"] == 60.0 and read_metadata(other)["ceilings"] is None
    assert f"recorded in {mine.with_suffix('.meta.json')}" in result.output
    assert "bf16 GEMM, n=8192" in result.output and "750.0" in result.output
    assert f"{750.0 / sheet['precision_tflops']['bf16']:.1%}" in result.output and "no FP8 (test)" in result.output
    before = files(runs)
    refused(invoke("ceilings", "--results", other), "measured on NVIDIA H100 80GB HBM3, not on this NVIDIA H200")
    assert len(measured) == 1 and files(runs) == before  # refused before measuring


def test_profile_goes_beside_the_newest_run_that_holds_its_points(runs, monkeypatch):
    import pandas as pd

    from mmbench import profile

    holding = a_run(runs, "zosa", ZOSA_CUT, NOW - dt.timedelta(days=1))
    a_run(runs, "limits", CUTS["limits"], NOW)  # newer, but best at 256 is not in it
    monkeypatch.setattr(profile, "profile_points", lambda points: pd.DataFrame(
        [{c: 1.0 for c in profile.COLUMNS} | {"variant": p.variant.name, "params": "", "m": 256, "n": 256, "k": 256}
         for p in points], columns=list(profile.COLUMNS)))
    result = invoke("profile", "--config", REPO / "configs" / "zosa2017.toml", "--points", "256", "-v", "best")
    assert result.exit_code == 0, result.output
    assert (runs / "zosa" / "zosa.profile.csv").exists() and not (runs / "limits" / "limits.profile.csv").exists()
    assert str(holding.with_name("zosa.profile.csv")) in result.output
    json.loads(holding.with_suffix(".meta.json").read_text())  # untouched metadata still whole
    profiled = json.loads((runs / "zosa" / "zosa.profile.meta.json").read_text())  # its own provenance: best at blocks 8, 16, 32
    assert profiled["points"] == 3 and "profiled_at" in profiled and "git" in profiled and "ncu" in profiled


@pytest.mark.gpu
def test_the_design_cards_two_commands_on_a_gpu(gpu, runs):
    """On a GPU: `mmbench run --variant best --sizes ...`, then `mmbench plot roofline` with no file
    draws that run, from a folder that is not the checkout (fewer sizes than 63:2049, for time)."""
    run = invoke("run", "--variant", "best", "--sizes", "63,64,2049", "--runs", "2")
    assert run.exit_code == 0, run.output
    [csv] = list(runs.glob("run-*/run-*.csv"))
    roofline = invoke("plot", "roofline")
    assert roofline.exit_code == 0, roofline.output
    assert f"results: {csv} " in roofline.output and (csv.parent / "fig3-4-roofline.png").exists()
