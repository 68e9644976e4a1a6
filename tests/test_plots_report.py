"""Figures, Table 1 and the report from a cut of the real H200 run (tests/data), on the CPU."""

import re
import shutil
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from mmbench import analysis, plots
from mmbench.studies import papers, study
from mmbench.studies.zosa2017 import claims
from mmbench.studies.zosa2017.figures import fig_block_sizes, fig_gflops, fig_roofline, fig_speedup
from mmbench.studies.zosa2017.measures import table1
from mmbench.studies.zosa2017.paper import TABLE1_SIZES
from mmbench.cli import main
from mmbench.results import read_metadata, read_results

DATA = Path(__file__).parent / "data"
CUT = DATA / "zosa2017-h200-cut.csv"
ZOSA = Path(__file__).resolve().parent.parent / "configs" / "zosa2017.toml"
SERIES = ["CUDA-Best const (32x32)", "CUDA-Best (32x32)", "CUDA-Best (16x16)", "CUDA-Best (8x8)", "CUDA-1IL (32x32)",
          "CUDA-C_Unroll (32x32)", "CUDA-1 (32x32)", "CUDA-Naive (32x32)", "CUDA-1u (32x32)", "BLAS (multicore)", "cuBLAS"]


@pytest.fixture(scope="module")
def df():
    return read_results(CUT)


@pytest.fixture(scope="module")
def meta():
    return read_metadata(CUT)


@pytest.fixture(scope="module")
def profile():
    return pd.read_csv(DATA / "zosa2017-h200-cut.profile.csv", dtype={"params": str}).fillna({"params": ""})


def test_series_in_registry_order_with_paper_labels(df):
    assert [s.label for s in analysis.series_list(df)] == SERIES


def test_a_curve_refuses_two_rows_at_one_size_rather_than_pick_one(df):
    from mmbench.results import ResultsError

    blas = analysis.find(df, "blas")
    assert analysis.curve(df, blas).index.is_unique
    twice = pd.concat([df, df[(df.variant == "blas") & (df.n == 1024)]])
    with pytest.raises(ResultsError, match="BLAS \\(multicore\\) has 2 verified rows at n = 1024: a curve takes one"):
        analysis.curve(twice, blas)


def test_figure1_bars_per_block_and_size(df, meta):
    fig = fig_block_sizes(df, meta)
    ax = fig.axes[0]
    assert len(ax.patches) == 3 * 4
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["CUDA-Best (8x8)", "CUDA-Best (16x16)", "CUDA-Best (32x32)"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["256", "512", "1024", "2048"]
    assert "GFLOP/s" in ax.get_ylabel() and "NVIDIA H200" in ax.get_title()
    tallest = max(p.get_height() for p in ax.patches)
    assert tallest == pytest.approx(analysis.curve(df, analysis.find(df, "best", 32))[2048])
    plt.close(fig)


def test_figure2_one_line_per_series_over_every_size(df, meta):
    fig = fig_gflops(df, meta)
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.get_lines()] == SERIES
    assert all(len(line.get_xdata()) == 12 for line in ax.get_lines())
    assert ax.get_xscale() == "log" and "log2" in ax.get_xlabel()
    styles = {line.get_label(): (line.get_color(), line.get_linestyle()) for line in ax.get_lines()}
    assert styles["CUDA-Best (16x16)"][0] == styles["CUDA-Best (32x32)"][0]  # one colour per variant
    assert styles["CUDA-Best (16x16)"][1] != styles["CUDA-Best (32x32)"][1]  # the block sets the style
    assert len({c for c, _ in styles.values()}) == 9  # nine variants
    plt.close(fig)


def test_same_colour_for_a_series_in_every_figure(df, meta):
    f2, f5 = fig_gflops(df, meta), fig_speedup(df, meta)
    best_colour = {line.get_label(): line.get_color() for line in f2.axes[0].get_lines()}["CUDA-Best (32x32)"]
    assert f5.axes[0].get_lines()[0].get_color() == best_colour
    plt.close("all")


def test_roofline_has_both_ceilings_and_measured_points(df, meta, profile):
    fig = plots.fig_roofline(df, meta, profile, 2048)
    ax = fig.axes[0]
    roofs = [line for line in ax.get_lines()]
    assert len(roofs) == 2
    assert roofs[0].get_label().startswith("datasheet: 66.9 TFLOP/s FP32, 4814 GB/s")
    assert roofs[1].get_label().startswith("measured: 64.5 TFLOP/s FP32, 4234 GB/s")
    assert max(roofs[1].get_ydata()) == pytest.approx(meta["ceilings"]["fp32_fma_tflops"] * 1e3)
    points = ax.collections
    assert len(points) == 10  # every GPU series; the CPU baseline is not under the GPU's roof
    assert "measured DRAM traffic (Nsight Compute)" in ax.get_title()
    x = [c.get_offsets()[0][0] for c in points]
    assert all(300 < v < 600 for v in x)  # the measured intensities of the profile, not 2mnk/4(...) = 341.3
    plt.close(fig)


def test_roofline_without_profile_uses_algorithmic_intensity(df, meta):
    fig = plots.fig_roofline(df, meta, None, 1024)
    ax = fig.axes[0]
    assert "algorithmic minimum" in ax.get_title()
    assert {round(c.get_offsets()[0][0], 2) for c in ax.collections} == {round(analysis.algorithmic_intensity("gemm", 1024, 1024, 1024), 2)}
    plt.close(fig)


def test_speedup_panels(df, meta):
    fig = fig_speedup(df, meta)
    top, bottom = fig.axes
    assert top.get_lines()[0].get_label() == "CUDA-Best (32x32) / BLAS (multicore)"
    assert bottom.get_lines()[0].get_label() == "cuBLAS / CUDA-Best (32x32)"
    ratio = bottom.get_lines()[0].get_ydata()
    assert len(ratio) == 12 and min(ratio) > 0.8
    plt.close(fig)


def test_table1_matches_rows(df):
    t = table1(df, TABLE1_SIZES)
    assert list(t.index) == TABLE1_SIZES
    best = df[(df.variant == "best") & (df.params == "BLOCK=32") & (df.n == 1024)].gflops_mean.iloc[0]
    assert t.loc[1024, "CUDA-Best (32x32)"] == best
    assert t.loc[1024, "CUDA-Best (32x32) / cuBLAS"] == pytest.approx(best / t.loc[1024, "cuBLAS"])


def test_findings_all_checked(df):
    verdicts = claims.verdicts(df)
    assert len(verdicts) == len(claims.FINDINGS) + len(claims.ERA_FINDINGS) == 16
    assert all(v.holds in ("yes", "no", "partly") and v.evidence for v in verdicts[:len(claims.FINDINGS)])
    by = {v.finding: v for v in verdicts}
    assert by["CUDA-C_Unroll adds little over CUDA-1"].holds == "yes"  # +7.7 % here, 1.30x under the paper's about +10 %
    assert by["CUDA-1u is slower than CUDA-Naive"].holds == "yes"  # faster at 1 of these 12 sizes: the share rule's yes
    assert "1u slower at 11 of 12 sizes" in by["CUDA-1u is slower than CUDA-Naive"].evidence
    speedup = by["The CUDA-Best / BLAS speed-up falls with size"]  # a K80 against 2017's CPUs; it rises on the H200
    assert speedup.holds == "not testable here" and "(not the verdict)" in speedup.evidence


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def results_copy(tmp_path):
    for f in DATA.glob("zosa2017-h200-cut*"):
        shutil.copy(f, tmp_path / f.name)
    return tmp_path / CUT.name


@pytest.mark.parametrize("name,stems", [("gflops", ["fig1-block-sizes", "fig2-gflops"]),
                                        ("roofline", ["fig3-4-roofline"]), ("speedup", ["fig5-speedup"])])
def test_plot_commands_write_png_and_svg(results_copy, name, stems):
    result = invoke("plot", name, results_copy)
    assert result.exit_code == 0, result.output
    out = results_copy.with_suffix("")
    for stem in stems:
        for ext in ("png", "svg"):
            assert (out / f"{stem}.{ext}").stat().st_size > 1000
            assert f"wrote {out / f'{stem}.{ext}'}" in result.output


def test_table_command(results_copy):
    result = invoke("table", results_copy)
    assert result.exit_code == 0, result.output
    md = (results_copy.with_suffix("") / "table1.md").read_text()
    assert md.count("\n| ") == 9 and "cuBLAS" in md
    assert len(pd.read_csv(results_copy.with_suffix("") / "table1.csv")) == 9


def test_report_lists_every_finding_and_figure(results_copy):
    result = invoke("report", "--config", ZOSA, results_copy)
    assert result.exit_code == 0, result.output
    text = (results_copy.with_suffix("") / "REPORT.md").read_text()
    for v in claims.verdicts(read_results(results_copy)):
        assert v.finding in text
    for stem in ("fig1-block-sizes", "fig2-gflops", "fig3-4-roofline", "fig5-speedup"):
        assert f"]({stem}.png)" in text and (results_copy.with_suffix("") / f"{stem}.png").exists()
    assert "| 2048 | 182 | 465 |" in text  # the paper's K80 numbers beside ours
    assert "Nsight Compute measures" in text


@pytest.mark.parametrize("content,needle", [(None, "no results file"), ("", "is empty"),
                                            ("a,b\n1,2\n", "not an mmbench results CSV")])
def test_bad_results_are_clear_errors(tmp_path, content, needle):
    path = tmp_path / "r.csv"
    if content is not None:
        path.write_text(content)
    for args in (["plot", "gflops", path], ["table", path], ["report", "--config", ZOSA, path]):
        result = invoke(*args)
        assert result.exit_code == 2 and needle in result.output and "Traceback" not in result.output


def test_results_without_verified_rows(results_copy):
    df = read_results(results_copy)
    df["status"] = "wrong"
    df.to_csv(results_copy, index=False)
    result = invoke("plot", "gflops", results_copy)
    assert result.exit_code == 2 and "no verified (status ok) rows" in result.output


def test_default_results_is_the_newest(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MMBENCH_RUNS", raising=False)
    assert invoke("plot", "speedup").exit_code == 2  # no runs/ yet: a clear error
    (tmp_path / "runs").mkdir()
    for f in DATA.glob("zosa2017-h200-cut*"):
        shutil.copy(f, tmp_path / "runs" / f.name)
    result = invoke("plot", "speedup")
    assert result.exit_code == 0 and "runs/zosa2017-h200-cut/fig5-speedup.png" in result.output


LIMITS = DATA / "limits-h200-cut.csv"


def test_percent_of_cublas_and_targets():
    df = read_results(LIMITS)
    pct = analysis.percent_of(df, "cublas")
    assert set(pct.variant) == {"best", "tile2d", "vec4", "warptile", "pipelined"}
    row = pct[(pct.variant == "warptile") & (pct.n == 4096)].iloc[0]
    ours = df[(df.variant == "warptile") & (df.n == 4096)].gflops_median.iloc[0]  # medians, as every summary
    theirs = df[(df.variant == "cublas") & (df.n == 4096)].gflops_median.iloc[0]
    assert row.percent == pytest.approx(100 * ours / theirs)
    summary = analysis.target_summary(pct, (4096, 2049), [512, 513, 1023, 1024, 2047, 2048, 2049]).set_index("variant")
    assert summary.loc["warptile", "at_4096"] == pytest.approx(row.percent)
    assert summary.loc["warptile", "sizes"] == 7
    on = pct[(pct.variant == "pipelined") & pct.n.isin([512, 513, 1023, 1024, 2047, 2048, 2049])].groupby("n").percent.mean()
    assert summary.loc["pipelined", "geomean"] == pytest.approx(float(np.exp(np.log(on).mean())))  # the formula
    assert 0 < summary.loc["pipelined", "geomean"] < 100


def test_vs_cublas_figure(tmp_path):
    meta = read_metadata(LIMITS)
    fig = plots.fig_vs_cublas(read_results(LIMITS), meta)
    ax = fig.axes[0]
    labels = [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
    df = read_results(LIMITS)
    tuned = {v: df[df.variant == v].params.nunique() for v in ("warptile", "pipelined")}
    assert min(tuned.values()) > 1  # the cut holds several tuned configurations of each
    assert labels == ["CUDA-Best", "2D tiling", "2D tiling + float4",
                      f"warp tiling (tuned: {tuned['warptile']} configurations)",
                      f"warp tiling + cp.async (tuned: {tuned['pipelined']} configurations)"]
    assert {t.get_text() for t in ax.texts} == {"cuBLAS", "95 %", "90 %"}
    assert "% of cuBLAS" in ax.get_ylabel()
    plt.close(fig)


def test_plot_vs_cublas_prints_the_targets(tmp_path):
    for f in DATA.glob("limits-h200-cut*"):
        shutil.copy(f, tmp_path / f.name)
    result = invoke("plot", "vs-cublas", tmp_path / LIMITS.name)
    assert result.exit_code == 0, result.output
    assert "GFLOP/s as % of cuBLAS" in result.output and "warptile" in result.output
    assert (tmp_path / "limits-h200-cut" / "vs-cublas.png").exists()


def test_vs_cublas_with_a_variant_at_several_block_sizes(results_copy):
    """best ran at three block sizes: three series, never one line through all of them."""
    pct = analysis.percent_of(read_results(results_copy))
    assert {"best BLOCK=8", "best BLOCK=16", "best BLOCK=32"} <= set(pct.series)
    assert not pct.duplicated(["series", "n"]).any()
    result = invoke("plot", "vs-cublas", results_copy)
    assert result.exit_code == 0, result.output
    assert "best BLOCK=16" in result.output and "Traceback" not in result.output


def test_redrawn_figures_are_byte_identical(results_copy, tmp_path):
    """A committed figure redrawn from the same data must not dirty the tree."""
    for out in ("a", "b"):
        assert invoke("plot", "gflops", results_copy, "--out", tmp_path / out).exit_code == 0
    for name in ("fig2-gflops.svg", "fig2-gflops.png", "fig1-block-sizes.svg"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert b"<dc:date>" not in (tmp_path / "a" / "fig2-gflops.svg").read_bytes()


REPO = Path(__file__).resolve().parent.parent
# The reference runs the README cites, one per study and GPU: their committed figures, REPORT.md and
# tables are what `mmbench report` (and `mmbench table`) write from their committed CSV.
REFERENCE_RUNS = ("zosa2017-h200", "lab3-h200", "lameski2013-h100", "amd-tiling-h100", "limits-h200",
                  "limits-h100", "sorensen2012-h100", "tensor-cores-h100")


def _inputs(name: str) -> set[str]:
    """What a reference folder holds that no command of mmbench draws: the run's files and its notes."""
    return {f"{name}.csv", f"{name}.csv.gz", f"{name}.meta.json", f"{name}.profile.csv", f"{name}.profile.meta.json",
            "README.md", "run.log", "config.toml"}


def _committed(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in folder.iterdir() if p.is_file()}


@pytest.fixture(scope="module")
def redrawn(tmp_path_factory):
    """name -> a fresh folder holding what `mmbench report` (and `mmbench table`, where the run keeps
    Table 1) write from the committed CSV of that reference run. Run from an unrelated folder, as an
    installed mmbench would be: nothing may depend on the current folder (the metadata names its
    config relative to where the run was made; the report reads the config it is given)."""
    made = {}

    def redraw(name: str) -> Path:
        if name not in made:
            folder, out = REPO / "results" / name, tmp_path_factory.mktemp(name)
            csv = next(folder / f for f in (f"{name}.csv", f"{name}.csv.gz") if (folder / f).exists())
            # the study whose reference run this is gives the config (the metadata names the one the run had),
            # or the folder's own config.toml: the study's config as it was when a run older than its last change ran
            paper = next(p for p in papers() if name.startswith(f"{p}-"))  # results/PAPER-GPU/
            config = folder / "config.toml" if (folder / "config.toml").exists() else REPO / "configs" / f"{paper}.toml"
            before = _committed(folder)
            with pytest.MonkeyPatch.context() as mp:
                mp.chdir(tmp_path_factory.mktemp("elsewhere"))
                result = invoke("report", "--config", config, csv, "--out", out)
                assert result.exit_code == 0, result.output
                if (folder / "table1.md").exists():
                    result = invoke("table", csv, "--out", out)
                    assert result.exit_code == 0, result.output
            assert _committed(folder) == before, "the report wrote into the committed folder"
            made[name] = out
        return made[name]

    return redraw


@pytest.mark.parametrize("name", REFERENCE_RUNS)
def test_a_reference_runs_report_and_tables_are_what_mmbench_writes_from_its_csv(redrawn, name):
    """REPORT.md names the file it read (a CSV gzipped after its report named the .csv that the tree
    lacks), and every drawn file in the folder is one the commands still draw, none stale."""
    folder, out = REPO / "results" / name, redrawn(name)
    written = {p.name for p in out.iterdir()}
    committed = set(_committed(folder))
    assert written <= committed, f"not committed: {sorted(written - committed)}"
    assert committed - written <= _inputs(name), f"committed but no longer drawn: {sorted(committed - written - _inputs(name))}"
    for text in sorted(f for f in written if f.endswith((".md", ".csv"))):
        assert (out / text).read_text() == (folder / text).read_text(), f"{name}/{text} differs"


def _matplotlib_that_drew(png: Path) -> str:
    """The matplotlib version in a PNG's Software text chunk (matplotlib writes it there)."""
    found = re.search(rb"Matplotlib version\s*([0-9][0-9a-z.+]*)", png.read_bytes())
    return found.group(1).decode() if found else "unknown"


@pytest.mark.parametrize("name", REFERENCE_RUNS)
def test_a_reference_runs_figures_redraw_byte_identical(redrawn, name):
    """PNG and SVG, byte for byte, on the matplotlib that drew them: another version renders (and
    names itself in the files) differently, so there only the report and the tables are compared."""
    import matplotlib

    folder, out = REPO / "results" / name, redrawn(name)
    figures = sorted(p.name for p in out.iterdir() if p.suffix in (".png", ".svg"))
    assert figures, f"no figure drawn for {name}"
    drew = _matplotlib_that_drew(folder / next(f for f in figures if f.endswith(".png")))
    if drew != matplotlib.__version__:
        pytest.skip(f"{name}'s figures were drawn by matplotlib {drew}; this is {matplotlib.__version__}")
    differ = [f for f in figures if (out / f).read_bytes() != (folder / f).read_bytes() and not _antialiased(out, folder, f)]
    assert not differ, f"{name}: {differ} differ from the committed files"


def _antialiased(out: Path, folder: Path, png: str) -> bool:
    """Whether a PNG that differs does so only in the antialiasing of an edge: its SVG twin is
    byte-identical (every coordinate the same) and under 0.1 % of its pixels differ. NumPy's math
    on a CPU without AVX-512 can move a line by a sub-pixel (seen on an AMD EPYC: 381 of 2 million
    pixels of one roofline, the SVG identical)."""
    from PIL import Image

    svg = Path(png).with_suffix(".svg").name
    if not png.endswith(".png") or not (out / svg).exists() or (out / svg).read_bytes() != (folder / svg).read_bytes():
        return False
    drawn, kept = (np.asarray(Image.open(d / png).convert("RGB"), dtype=int) for d in (out, folder))
    return drawn.shape == kept.shape and (np.abs(drawn - kept).sum(axis=2) > 0).mean() < 1e-3


def test_a_variants_colour_is_its_own_not_its_place_in_the_registry():
    """A variant added to the registry shifted the fallback colour of every one after it, so the
    limits figure's multistage line came back another colour: colours go by name."""
    from mmbench.analysis import Series

    for name in ("multistage", "transpose_vec", "gemv_tuned", "a_users_kernel"):
        assert len({plots.style(Series(name, "", name, order))["color"] for order in (0, 7, 13, 40)}) == 1, name
    pinned = list(plots.COLOURS.values())
    assert len(set(pinned)) == len(pinned)  # no two variants share a colour


def test_default_results_skip_derived_tables(tmp_path, monkeypatch):
    """`mmbench table` writes table1.csv beside the run; the newest run, not that table, stays the default."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MMBENCH_RUNS", raising=False)
    (tmp_path / "runs").mkdir()
    for f in DATA.glob("zosa2017-h200-cut*"):
        shutil.copy(f, tmp_path / "runs" / f.name)
    assert invoke("table").exit_code == 0
    assert (tmp_path / "runs" / "zosa2017-h200-cut" / "table1.csv").exists()
    result = invoke("plot", "speedup")
    assert result.exit_code == 0, result.output
    assert "runs/zosa2017-h200-cut/fig5-speedup.png" in result.output


LAB3 = Path(__file__).resolve().parent.parent / "results" / "lab3-h200" / "lab3-h200.csv"


def test_lab3_report_from_the_committed_h200_run(tmp_path):
    """Lab 3's study: both tables beside the lab's, the bandwidth against memcpy, the claims checked."""
    shutil.copy(LAB3, tmp_path / "lab3.csv")
    shutil.copy(LAB3.with_suffix(".meta.json"), tmp_path / "lab3.meta.json")  # no profile: timing alone
    result = invoke("report", "--config", Path(__file__).resolve().parent.parent / "configs" / "lab3.toml",
                    tmp_path / "lab3.csv")
    assert result.exit_code == 0, result.output
    text = (tmp_path / "lab3" / "REPORT.md").read_text()
    assert "| 4096 | 176 | 143 | 0.75 | 0.0333 |" in text  # the lab's Naive CPU, ours, the lab's and our memcpy
    assert "| Padding A's tile slows the shared matmul |" in text
    assert ("**no** | our matmul_shared (a reconstruction), the lab's 4 sizes; slower, share rule (holds at >= 3/4 of the shapes: "
            "yes; >= 1/3 and >= 2 shapes: partly; else no) | padded time / unpadded time 0.30") in text
    assert "not counted with them: 1 by construction, 2 not testable here, 9 not checked." in text  # no profile, no sweep
    assert "](fig-transpose-bandwidth.png)" in text and (tmp_path / "lab3" / "fig-matmul-time.png").exists()


def test_every_studys_figures_are_plot_commands_and_titles_stay_the_papers(df, meta, profile):
    from mmbench.studies import figure_families

    families = figure_families()
    assert {"gflops", "roofline", "speedup", "vs-cublas", "transpose-bandwidth", "matmul-time"} <= set(families)
    result = invoke("plot", "--help")
    assert all(name in result.output for name in families)
    fig = fig_roofline(df, meta, profile, None)  # the study's default size: the largest profiled
    assert fig.axes[0].get_title().startswith("Figures 3-4: roofline at n = 2048\n")
    plt.close(fig)


def test_the_plot_listing_shows_each_familys_whole_short_help(monkeypatch):
    """Click cut a help at its first period: five families read "Sørensen Fig." or "Lameski Fig."."""
    from mmbench.studies import figure_families

    monkeypatch.setenv("COLUMNS", "80")
    listing = invoke("plot", "--help").output.splitlines()
    for name, family in figure_families().items():
        (line,) = [line for line in listing if line.split()[:1] == [name]]
        assert line.split(None, 1)[1] == family.short and len(line) <= 80, line  # whole, on its own line
    assert invoke("plot", "gemv-mesh", "--help").output.count("Sørensen Fig. 5: cuBLAS and the tuned kernel") == 1


def test_limits_report_gives_the_targets_and_the_spread_over_the_paper_sizes(tmp_path):
    cut = tmp_path / "limits.csv"
    shutil.copy(LIMITS, cut)
    shutil.copy(LIMITS.with_suffix(".meta.json"), cut.with_suffix(".meta.json"))
    config = tmp_path / "limits.toml"  # the config as the cut's run had it, before dbuf, multistage and kmajor joined
    config.write_text((ZOSA.parent / "limits.toml").read_text().replace('"dbuf", "multistage", "kmajor", ', ""))
    result = invoke("report", "--config", config, cut)
    assert result.exit_code == 0, result.output
    text = (tmp_path / "limits" / "REPORT.md").read_text()
    df = read_results(LIMITS)
    ours = df[(df.variant == "warptile") & (df.n == 4096)].gflops_median.iloc[0]  # medians, as every summary
    theirs = df[(df.variant == "cublas") & (df.n == 4096)].gflops_median.iloc[0]
    assert f"| warptile | {100 * ours / theirs:.1f} % |" in text  # % of cuBLAS at 4096, same run
    assert "![vs-cublas](vs-cublas.png)" in text and (tmp_path / "limits" / "vs-cublas.png").exists()


def test_lab3_padding_verdict_reads_bank_conflicts_from_the_profile():
    """Made-up profile counts: the verdict follows the measured conflicts, not the timing."""
    from mmbench.studies.lab3.claims import verdicts

    ok = read_results(LAB3)
    ok = ok[ok.status == "ok"]
    prof = pd.DataFrame([{"variant": v, "params": "", "n": 4096, "conflicts_per_shared_ld": ld, "conflicts_per_shared_st": 0.0}
                         for v, ld in (("transpose_shmem_unpadded", 31.0), ("transpose_shmem", 0.0))])
    (pad,) = [v for v in verdicts(ok, prof) if v.finding.startswith("Padding the tile")]
    assert pad.holds == "yes" and "n=4096: 31.0 / 0.0" in pad.evidence
    prof.loc[prof.variant == "transpose_shmem", "conflicts_per_shared_ld"] = 15.0  # padding did not help
    (pad,) = [v for v in verdicts(ok, prof) if v.finding.startswith("Padding the tile")]
    assert pad.holds == "no"
    (pad,) = [v for v in verdicts(ok) if v.finding.startswith("Padding the tile")]
    assert pad.holds == "not checked" and "no Nsight Compute profile" in pad.evidence
    twice = pd.concat([prof, prof.assign(conflicts_per_shared_ld=[30.0, 0.0])])  # a size profiled twice: the worst
    (pad,) = [v for v in verdicts(ok, twice) if v.finding.startswith("Padding the tile")]
    assert "n=4096: 31.0 / 15.0" in pad.evidence
    other = prof.assign(variant="transpose_vec")
    (pad,) = [v for v in verdicts(ok, other) if v.finding.startswith("Padding the tile")]
    assert pad.holds == "not checked" and "has no rows of transpose_shmem_unpadded and transpose_shmem" in pad.evidence


def test_limits_fastest_of_ours_is_the_max_over_the_ladder_per_size_and_the_paper_kernel_is_left_out():
    from mmbench.studies import limits

    rows = [{"variant": v, "label": v, "backend": "cublas" if v == "cublas" else "cuda", "params": "", "m": n, "n": n,
             "k": n, "scope": "kernel", "pad": 0, "status": "ok", "gflops_median": g, "time_ms_median": 1.0}
            for n, gs in ((512, {"cublas": 100, "best": 150, "dbuf": 90, "multistage": 96}),
                          (1024, {"cublas": 200, "best": 10, "dbuf": 210, "multistage": 100}))
            for v, g in gs.items()]
    best = limits.fastest(pd.DataFrame(rows))
    assert best.to_dict() == {512: 96.0, 1024: 105.0}  # best (the paper's) would have made 512 150 %
    assert limits.fastest_rows(pd.DataFrame(rows)).variant.to_dict() == {512: "multistage", 1024: "dbuf"}
    table = "\n".join(limits.fastest_summary(best))
    assert "| 2 | 2 | 1 | 96.0 % at 512 | 1.004 |" in table  # geomean sqrt(0.96 x 1.05) = 1.00399


def test_cublas_kernel_names_in_short():
    from mmbench.studies.limits import kernel_shape

    assert kernel_shape("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4"
                        "_execute_split_k_kernel__5x_cublas") == "xmma 64x64x8, 3 stages, its split-K reduction"
    assert kernel_shape("void Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(Params)") == "CUTLASS SIMT 256x128x8, 4 stages"
    assert kernel_shape("gemv2T_kernel") == "gemv2T_kernel"
