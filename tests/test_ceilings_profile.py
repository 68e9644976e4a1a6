"""Ceilings and profiles on the CPU: datasheet arithmetic, ncu CSV parsing, clear errors."""

import math

import pytest
from click.testing import CliRunner

from mmbench import ceilings, profile
from mmbench.cli import main
from mmbench.sizes import Shape
from mmbench.engine.plan import Point
from mmbench.variants import REGISTRY

H200 = {"name": "NVIDIA H200", "compute_capability": "9.0", "sm_count": 132, "clock_khz": 1980000,
        "memory_clock_khz": 3201000, "memory_bus_width_bits": 6016}


def test_datasheet_peaks_of_an_h200():
    sheet = ceilings.datasheet(H200)
    assert sheet["fp32_tflops"] == pytest.approx(66.9, abs=0.1)  # NVIDIA's 67 TFLOP/s
    assert sheet["dram_gbytes_per_s"] == pytest.approx(4815, abs=1)  # NVIDIA's 4.8 TB/s


def test_datasheet_of_an_unknown_architecture_has_no_fp32_peak():
    assert ceilings.datasheet({**H200, "compute_capability": "12.1"})["fp32_tflops"] is None


def test_ceilings_cache_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    entry = {"gpu": "NVIDIA H200", "uuid": "GPU-1", "fp32_fma_tflops": 64.0}
    ceilings.save_cached(entry)
    assert ceilings.cached_for({"name": "NVIDIA H200", "uuid": "GPU-1"}) == entry
    assert ceilings.cached_for({"name": "other", "uuid": "GPU-2"}) is None


NCU = '''==PROF== Connected to process 1443
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1","python3","h","best","1","13","(32, 32, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","byte","49,152"
"0","1","python3","h","best","1","13","(32, 32, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_write.sum","byte","16384"
"0","1","python3","h","best","1","13","(32, 32, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","smsp__sass_thread_inst_executed_op_ffma_pred_on.sum","inst","262144"
"0","1","python3","h","best","1","13","(32, 32, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","ns","6720"
"1","1","python3","h","cutlass_gemm","1","13","(128, 1, 1)","(4, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","byte","1000"
'''


def test_parse_ncu_csv_per_launch_in_order():
    launches = profile.parse_ncu_csv(NCU)
    assert [la["kernel"] for la in launches] == ["best", "cutlass_gemm"]
    assert launches[0]["dram_bytes_read"] == 49152 and launches[0]["gpu_time_ns"] == 6720
    row = profile._row(Point(REGISTRY["best"], (("BLOCK", 32),), Shape(64, 64, 64), "cold"), launches[:1])
    assert row["fp32_flops"] == 2 * 262144 and row["dram_intensity"] == pytest.approx(2 * 262144 / 65536)


def test_profile_without_ncu_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(profile, "ncu_path", lambda: None)
    csv = tmp_path / "r.csv"
    CliRunner().invoke(main, ["run", "-v", "blas", "-s", "32", "--runs", "1", "-o", str(csv)])
    result = CliRunner().invoke(main, ["profile", "--config", "configs/zosa2017.toml", "--points", "256",
                                       "-v", "best", "--results", str(csv)])
    assert result.exit_code == 1 and "Nsight Compute (ncu) is not on PATH" in result.output


def test_ceilings_without_gpu_is_a_clear_error(monkeypatch):
    from mmbench import device

    def refuse():
        raise device.GpuUnavailable("no driver (test)")

    monkeypatch.setattr(device, "open_gpu", refuse)
    result = CliRunner().invoke(main, ["ceilings"])
    assert result.exit_code == 1 and "cannot open the GPU: no driver (test)" in result.output


CONFLICTS = '''"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1","python3","h","transpose_shmem_unpadded","1","13","(32, 8, 1)","(128, 128, 1)","0","9.0","Command line profiler metrics","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum","","4,063,232"
"0","1","python3","h","transpose_shmem_unpadded","1","13","(32, 8, 1)","(128, 128, 1)","0","9.0","Command line profiler metrics","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum","","0"
"0","1","python3","h","transpose_shmem_unpadded","1","13","(32, 8, 1)","(128, 128, 1)","0","9.0","Command line profiler metrics","smsp__inst_executed_op_shared_ld.sum","inst","131,072"
"0","1","python3","h","transpose_shmem_unpadded","1","13","(32, 8, 1)","(128, 128, 1)","0","9.0","Command line profiler metrics","smsp__inst_executed_op_shared_st.sum","inst","131,072"
'''


def test_bank_conflicts_per_shared_instruction():
    """Made-up counts in ncu's format: 31 extra passes per load is a 32-way conflict."""
    (launch,) = profile.parse_ncu_csv(CONFLICTS)
    point = Point(REGISTRY["transpose_shmem_unpadded"], (), Shape(4096, 4096, 0), "cold")
    row = profile._row(point, [launch])
    assert row["shared_ld_conflicts"] == 4063232 and row["shared_ld_inst"] == 131072
    assert row["conflicts_per_shared_ld"] == 4063232 / 131072 == 31  # the formula: conflicts / instructions
    assert row["conflicts_per_shared_st"] == 0
    assert set(row) == set(profile.COLUMNS)


def test_the_profiler_target_gets_a_transpose_shape_whole():
    """A transpose's 4096 is 4096 x 4096 x 0: written out, so the profiled launch is the same shape."""
    point = Point(REGISTRY["transpose_shmem"], (), Shape(4096, 4096, 0), "cold")
    assert profile._args(point) == ["transpose_shmem", "-", "4096x4096x0"]
    assert profile._args(Point(REGISTRY["best"], (("BLOCK", 32),), Shape(63, 63, 63), "cold"))[2] == "63x63x63"
    # a typed point names its precision and layout: the target draws its inputs and compiles its kernel so
    typed = Point(REGISTRY["tc_tiles"], (("BN", 128),), Shape(8192, 8192, 8192), "cold", dtype="bf16", layout="nt")
    assert profile._args(typed)[2] == "8192x8192x8192@bf16/nt"


def test_ncus_reference_is_the_median_of_the_calls_summed_kernels():
    # cuBLAS at 63: a GEMM and its split-K reduce each call; three calls, one slow
    kernels = [4000.0, 4600.0, 4100.0, 4500.0, 9000.0, 4700.0]
    assert profile.per_call_median(kernels, 3) == (8600.0, 2)  # per call: 8600, 8600, 13700
    assert profile.per_call_median([5000.0], 1) == (5000.0, 1)
    with pytest.raises(profile.ProfileError, match="5 kernel launches under ncu do not split into 3 equal calls"):
        profile.per_call_median(kernels[:5], 3)


def test_the_profiler_target_refuses_a_bad_repeat_without_touching_a_gpu(capsys):
    from mmbench import profiler_target

    assert profiler_target.main(["--repeat", "0", "best", "-", "63"]) == 2
    assert profiler_target.main(["--repeat", "2", "best", "-"]) == 2
    assert "--repeat N" in capsys.readouterr().err


def test_a_profile_may_go_past_the_runs_sizes_and_takes_each_kernel_once():
    """Zosa's sweeps stop at 2049; a roofline past L2 profiles every GPU series at 4096 too, each
    (variant, parameters) once, while a swept size keeps the points the config sweeps there."""
    from pathlib import Path

    from mmbench import api
    from mmbench.sweep import selections_of

    config = Path("configs/zosa2017.toml")
    _, selections, _ = selections_of((), None, None, (), config)
    points = api.points_to_profile(selections, "cold", "1024,4096", (), set(), config)
    at = {n: sorted((p.variant.name, profile.format_params(p.params)) for p in points if p.shape.n == n)
          for n in (1024, 4096)}
    assert at[1024] == at[4096] and len(at[4096]) == len(set(at[4096])) == 10  # best x 3 blocks, 6 others, cuBLAS
    assert ("best", "BLOCK=8") in at[4096] and ("cublas", "") in at[4096] and not any(v == "blas" for v, _ in at[4096])
    assert {p.scope for p in points} == {"kernel"}


def test_lameskis_padded_kernel_is_profiled_at_the_shape_it_runs_at():
    from pathlib import Path

    from mmbench import api
    from mmbench.sweep import selections_of

    config = Path("configs/lameski2013.toml")
    _, selections, _ = selections_of((), None, None, (), config)
    points = api.points_to_profile(selections, "cold", "1000x1000x32", ("shared_padded",), {"shared_padded"}, config)
    assert len(points) == 1  # three timing scopes, one kernel
    assert profile._args(points[0]) == ["shared_padded", "BLOCK=32", "1024x1024x32"]


def test_hierarchical_counts_aggregate_by_kind():
    """Counts add over a library call's kernels, rates weight by time, the device's peaks are
    the median; the ceilings are per-cycle peaks times the clocks."""
    launches = [{"kernel": "a", "gpu_time_ns": 1000.0, "l2_bytes": 10.0, "l2_hit_pct": 90.0, "peak_l2_bytes_per_cycle": 5000.0,
                 "l2_hz": 2e9, "peak_ffma_per_cycle": 16896.0, "sm_hz": 1.98e9},
                {"kernel": "b", "gpu_time_ns": 3000.0, "l2_bytes": 30.0, "l2_hit_pct": 50.0, "peak_l2_bytes_per_cycle": 5000.0,
                 "l2_hz": 2e9, "peak_ffma_per_cycle": 16896.0, "sm_hz": 1.98e9}]
    row = profile._row(Point(REGISTRY["cublas"], (), Shape(64, 64, 64), "cold"), launches)
    assert row["l2_bytes"] == 40 and row["l2_hit_pct"] == pytest.approx(60.0)  # (90 x 1 + 50 x 3) / 4
    assert row["peak_l2_bytes_per_s"] == 5000 * 2e9
    assert row["peak_fp32_flops_per_s"] == pytest.approx(66.9e12, rel=1e-3)  # 132 SMs x 128 lanes x 2 x 1.98 GHz
    assert math.isnan(row["l1_bytes"]) and math.isnan(row["sectors_per_global_ld"])  # not measured: empty, not 0
    assert set(row) == set(profile.COLUMNS)


def test_metrics_an_ncu_does_not_know_are_left_out(monkeypatch):
    listing = ("Device NVIDIA H100 (GH100)\n----\nMetric Name   Metric Description\n"
               "dram__bytes   # of bytes accessed in DRAM\nlts__t_bytes   # of bytes requested\n")
    assert profile.query_metric_names(listing) == {"dram__bytes", "lts__t_bytes"}
    monkeypatch.setattr(profile, "ncu_path", lambda: "/x/ncu")
    monkeypatch.setitem(profile._AVAILABLE, "/x/ncu", frozenset({"dram__bytes", "lts__t_bytes"}))
    assert profile.available(("dram__bytes_read.sum", "dram__bytes.sum.peak_sustained", "lts__t_bytes.sum")) == (
        "dram__bytes.sum.peak_sustained", "lts__t_bytes.sum")


def test_a_config_profile_takes_the_tuned_parameters_a_run_would(monkeypatch):
    """dbuf under `profile --config` on an H200 gets the shipped cache's entry at 1024 x 1024 x 1024
    (as `run` does), not dbuf's default point."""
    from pathlib import Path

    from mmbench import device, places, source
    from mmbench.cli.gpu import _points_to_profile
    from mmbench.tuning.cache import cache_key, load_cache
    from mmbench.vocabulary import DeviceId
    from mmbench.variants import REGISTRY as R, param_points

    monkeypatch.setattr(device, "device_identity", lambda: DeviceId("NVIDIA H200", "sm_90", 132))
    (point,) = _points_to_profile(Path("configs/limits.toml"), "1024", ("dbuf",), None)
    shipped = load_cache(places.SHIPPED_CACHE)
    entry = shipped[cache_key("NVIDIA H200", "dbuf", source.source_hash(R["dbuf"]), "1024x1024x1024")]
    assert profile.format_params(point.params) == entry["params"]
    assert point.params != param_points(R["dbuf"])[0]


def test_a_typed_runs_rows_are_profiled_at_their_precision_and_layout(tmp_path):
    """`profile --results` took only fp32 rows at layout nn, so a BF16 run's verified rows were
    refused as "no verified GPU row": the profiler's target builds any precision and layout, so each
    row is profiled at its own; its profile row says which."""
    import pandas as pd

    from mmbench import api

    df = pd.DataFrame([{"variant": "tc_tiles", "params": "", "m": 2048, "n": 2048, "k": 2048, "cache": "cold",
                        "scope": "kernel", "pad": 0, "status": "ok", "dtype": dtype, "layout": "nt"}
                       for dtype in ("bf16", "fp16")])
    points = api.points_of_run(df, ["tc_tiles"], "2048", tmp_path / "run.csv")
    assert sorted((p.dtype, p.layout) for p in points) == [("bf16", "nt"), ("fp16", "nt")]
    assert profile._args(points[0])[-1] == "2048x2048x2048@bf16/nt"
    row = profile._row(points[0], [{"kernel": "tc_tiles", "gpu_time_ns": 1000.0}])
    assert (row["dtype"], row["layout"]) == ("bf16", "nt")


def test_a_configs_series_of_one_kernel_at_two_precisions_are_profiled_apart():
    """The tensor-core study runs cuBLASLt at BF16 and at FP8: one profile point each (its profiles
    held one cuBLASLt row at 8192, of whichever came first)."""
    from pathlib import Path

    from mmbench import api
    from mmbench.sweep import selections_of

    config = Path("configs/tensor-cores.toml")
    _, selections, _ = selections_of((), None, None, (), config)
    points = api.points_to_profile(selections, "cold", "8192", ("cublas",), {"cublas"}, config)
    assert sorted((p.dtype, p.layout) for p in points) == [("bf16", "nt"), ("fp8e4m3", "nt")]


def test_a_profile_from_before_the_precision_columns_reads_as_fp32_nn(tmp_path):
    path = tmp_path / "old.profile.csv"
    path.write_text(",".join(profile.ROOFLINE_COLUMNS) + "\nbest,BLOCK=16,64,64,64,best,1,1,1,1,1\n")
    df = profile.read_profile(path)
    assert (df.dtype.tolist(), df.layout.tolist()) == (["fp32"], ["nn"])


def test_the_run_a_profile_belongs_to_holds_each_point_at_its_precision_and_layout():
    """A run of cuBLASLt at BF16 and FP8 holds those points, not the same shape at FP16."""
    from pathlib import Path

    from mmbench.cli.common import InputError
    from mmbench.cli.gpu import _holding

    run = Path("results/tensor-cores-h100/tensor-cores-h100.csv.gz")
    at = lambda dtype: Point(REGISTRY["cublas"], (), Shape(8192, 8192, 8192), "cold", dtype=dtype, layout="nt")  # noqa: E731
    assert _holding([at("bf16"), at("fp8e4m3")])(run) == run
    with pytest.raises(InputError, match="no verified row of 1 of the 2 points"):
        _holding([at("bf16"), at("fp16")])(run)
