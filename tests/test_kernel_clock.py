"""The second clock and sampling that stops (issue 17), on recorded activity and scripted samples."""

from __future__ import annotations

import numpy as np
import pytest

from mmbench.kernel_clock import Activity, KernelClockError, call_work, per_call_ms
from mmbench.ops import DeviceBuffers, gemm
from mmbench.schema import samples_of
from mmbench.sizes import Shape
from mmbench.engine.plan import Point, Settings
from mmbench.engine.points_local import LocalPoints
from mmbench.timing import MIN_BATCH, median_interval, next_batch, noise, stop_reason
from mmbench.variants import REGISTRY

from helpers import verified
from test_derived_columns import FakeGpu


def recorded_calls(durations_us, t0=1_000_000, flush="kernel"):
    """CUPTI-like records of consecutive calls, each a main kernel, a strip kernel that overlaps it
    (another stream) and a memset, every call after an L2 flush, the batch after a stream hold."""
    out, t = [Activity("kernel", "hold_stream", t0 - 5000, t0 - 10)], t0
    for main, strip, zero in durations_us:
        out.append(Activity("kernel", "flush_l2_read", t, t + 800) if flush == "kernel"
                   else Activity("memset", "", t, t + 900, bytes=100 * 2**20))
        t += 1000
        out.append(Activity("memset", "", t, t + zero, bytes=4096))
        t += zero + 5
        out.append(Activity("kernel", "dbuf", t, t + main))
        out.append(Activity("kernel", "dbuf_col_strip", t + 2, t + 2 + strip))
        t += max(main, strip + 2) + 50
    return out[::-1]  # CUPTI's buffers need not be in time order


def test_each_calls_work_is_summed_and_the_harness_left_out():
    records = recorded_calls([(4000, 300, 1000), (4100, 310, 1000), (3900, 290, 1000)])
    read = per_call_ms(records, 3)
    assert (read.records, read.kernels) == (3, 2)  # memset, main kernel, strip kernel
    assert read.ms == pytest.approx([5.3e-3, 5.41e-3, 5.19e-3])  # memset + main + strip, in ms
    assert read.kernels_ms == pytest.approx([4.3e-3, 4.41e-3, 4.19e-3])  # what Nsight Compute would sum
    assert [r.name for r in call_work(records)[:3]] == ["", "dbuf", "dbuf_col_strip"]


def test_a_write_flush_is_a_memset_left_out_by_its_size():
    records = recorded_calls([(4000, 300, 1000), (4000, 300, 1000)], flush="memset")
    assert per_call_ms(records, 2).ms == pytest.approx([6.2e-3, 6.2e-3])  # not told its size: the flush counts
    read = per_call_ms(records, 2, harness_memset_bytes=100 * 2**20)
    assert read.records == 3 and read.ms == pytest.approx([5.3e-3, 5.3e-3])


def test_records_that_do_not_split_into_the_calls_are_an_error():
    records = recorded_calls([(4000, 300, 1000)] * 3)[1:]  # one record lost
    with pytest.raises(KernelClockError, match="do not split into 3 calls"):
        per_call_ms(records, 3)
    with pytest.raises(KernelClockError, match="0 activity records"):
        per_call_ms([Activity("kernel", "hold_stream", 0, 1)], 1)


class RecordedClock:
    """A KernelClock that hands back recorded activity: nothing before the samples, then the calls."""

    def __init__(self, calls):
        self.batches = [[], recorded_calls(calls)]

    def collect(self):
        return self.batches.pop(0)


def time_naive_8(runner) -> dict:
    """The row of a naive 8 x 8 x 8 point through the runner's verify-and-time, its "kernel" a
    host product (the fake GPU and clock give the samples)."""
    shape = Shape(8, 8, 8)
    inputs = gemm.make_gemm_inputs(shape, np.random.default_rng(0))
    c = np.empty(64, np.float32)

    def launch():
        c[:] = (inputs.a @ inputs.b).ravel()

    return verified(runner, Point(REGISTRY["naive"], (("BLOCK", 8),), shape, "cold"), inputs,
                                   DeviceBuffers((inputs.a, inputs.b), c, 64), lambda s, b: launch)


def test_a_row_carries_the_kernel_clock_beside_the_events():
    runner = LocalPoints(Settings(runs=3, warmup=1), [])
    runner.gpu = FakeGpu([9.0, 8.0, 8.5], [1980] * 10)
    runner.cupti = RecordedClock([(7000, 300, 1000), (4000, 300, 1000), (4100, 310, 1000), (3900, 290, 1000)])
    row = time_naive_8(runner)
    assert row["status"] == "ok" and row["runs"] == 3
    assert samples_of(row["kernel_ms_samples"]) == pytest.approx([5.3e-3, 5.41e-3, 5.19e-3])  # the warm-up call left out
    assert row["kernel_ms_median"] == pytest.approx(5.3e-3) and row["kernel_records"] == 3
    assert row["kernels_only_ms_median"] == pytest.approx(4.3e-3)
    assert row["time_ms_median"] == 8.5  # the events' own, unchanged
    assert (row["gpu_temp_c_before"], row["power_w_after"]) == (41, 120.5)


def test_noise_leaves_out_the_samples_taken_while_the_clock_sagged():
    assert noise([1.0, 1.0, 1.0, 5.0], [False, False, False, True]) == 0.0
    assert noise([1.0, 2.0], [False, False]) == pytest.approx(np.std([1.0, 2.0], ddof=1) / 1.5)
    assert np.isnan(noise([1.0, 9.0], [False, True]))


@pytest.mark.parametrize("samples,sagged,elapsed,expected", [
    ([1.0] * 9, [False] * 9, 0.1, None),  # under the least number of samples
    ([1.0] * 10, [False] * 10, 0.1, "noise"),
    ([1.0] * 10 + [9.0], [False] * 10 + [True], 0.1, "noise"),  # a sagged sample does not spoil the noise
    ([1.0] * 9 + [9.0], [False] * 9 + [True], 0.1, None),  # nor counts toward the least number
    ([1.0, 2.0] * 10, [False] * 20, 0.1, None),
    ([1.0, 2.0] * 10, [False] * 20, 15.0, "budget"),
    ([1.0, 2.0] * 50, [False] * 100, 0.1, "max"),
])
def test_sampling_stops_when_the_noise_is_known_or_the_budget_is_spent(samples, sagged, elapsed, expected):
    assert stop_reason(samples, sagged, min_runs=10, target=0.005, elapsed_s=elapsed, budget_s=15.0,
                       max_runs=100) == expected


def test_the_medians_interval_is_the_order_statistics_around_it_relative_to_it():
    """floor(n/2 - 0.98 sqrt(n)) to ceil(1 + n/2 + 0.98 sqrt(n)), from 1: with 10 samples the whole
    range, with 100 the 40th to the 61st of the sorted samples; sagged samples left out."""
    ten = [1.0, 1.1, 0.9, 1.0, 1.0, 1.2, 1.0, 1.0, 0.95, 1.0]
    assert median_interval(ten) == pytest.approx((1.2 - 0.9) / (2 * 1.0))
    hundred = list(np.linspace(1.0, 2.0, 100))
    assert median_interval(hundred[::-1]) == pytest.approx((hundred[60] - hundred[39]) / (2 * np.median(hundred)))
    assert median_interval([1.0, 1.0, 9.0], [False, False, True]) == 0.0
    assert np.isnan(median_interval([1.0, 9.0], [False, True]))


def test_an_interval_target_takes_batches_until_the_median_is_pinned():
    spread = [1.0, 1.04, 0.96, 1.02, 0.98, 1.0, 1.01, 0.99, 1.03, 0.97]  # 10 samples: +- 4 % around the median
    runner = LocalPoints(Settings(runs=10, warmup=0, max_interval=0.01, max_runs=500), [])
    runner.gpu = FakeGpu(spread + [1.0] * 200, [1980] * 1000)
    row = time_naive_8(runner)
    # +- 4 % at 10 samples: 16 times as many wanted, one batch of MAX_BATCH; then it holds
    assert row["stopped"] == "interval" and row["interval"] <= 0.01 and row["runs"] == 10 + 64
    assert row["noise"] == pytest.approx(noise(samples_of(row["time_ms_samples"])))


def test_an_interval_target_asks_a_batch_the_size_its_interval_needs():
    assert next_batch(0.006, 0.005, 10, 1000) == MIN_BATCH  # 4.4 more wanted: the fewest a batch takes
    assert next_batch(0.01, 0.005, 10, 1000) == 30  # twice too wide: four times the samples
    assert next_batch(0.05, 0.005, 10, 1000) == 64 and next_batch(0.05, 0.005, 990, 1000) == 10
    assert next_batch(float("nan"), 0.005, 10, 1000) == 64


def test_adaptive_sampling_takes_batches_until_the_noise_target():
    noisy = [1.0, 1.3, 0.8, 1.2]  # the first `runs` samples: 20 % noise
    steady = [1.0] * 200
    runner = LocalPoints(Settings(runs=4, warmup=0, max_noise=0.1, max_runs=500), [])
    runner.gpu = FakeGpu(noisy + steady, [1980] * 1000)
    row = time_naive_8(runner)
    assert row["stopped"] == "noise" and row["noise"] <= 0.1
    assert row["runs"] == len(samples_of(row["time_ms_samples"])) == 4 + 64  # one batch of MAX_BATCH more
    assert row["samples_sagged"] == 0


def test_the_figures_kernel_clock_scales_each_rate_by_event_time_over_kernel_time():
    import pandas as pd

    from mmbench.analysis import with_clock

    df = pd.DataFrame({"status": ["ok", "ok"], "time_ms_mean": [0.010, 2.0], "time_ms_median": [0.009, 2.0],
                       "time_ms_min": [0.008, 1.9], "gflops_mean": [50.0, 100.0], "gflops_median": [55.0, 100.0],
                       "gbytes_per_s": [10.0, 20.0], "kernel_ms_mean": [0.005, None],
                       "kernel_ms_median": [0.0045, None], "kernel_ms_min": [0.004, None]})
    assert with_clock(df, "events") is df
    k = with_clock(df, "kernel")
    assert k.time_ms_median[0] == 0.0045 and k.gflops_median[0] == pytest.approx(55.0 * 0.009 / 0.0045)
    assert k.gflops_mean[0] == pytest.approx(50.0 * 0.010 / 0.005) and k.gbytes_per_s[0] == pytest.approx(20.0)
    assert np.isnan(k.gflops_median[1]) and np.isnan(k.time_ms_median[1])  # no kernel time: no rate, not the events'


def test_verify_timing_compares_the_calls_kernels_alone_with_nsight_compute():
    import pandas as pd

    from mmbench.verify_timing import compare

    rows = pd.DataFrame({"status": ["ok", "ok", "failed"], "variant": ["dbuf", "best", "best"],
                         "params": ["SPLITK=2", "BLOCK=32", "BLOCK=32"], "m": [63, 63, 128], "n": [63, 63, 128],
                         "k": [63, 63, 128], "time_ms_median": [0.0095, 0.009, None],
                         "kernel_ms_median": [0.0080, 0.0064, None], "kernels_only_ms_median": [0.0052, 0.0064, None],
                         "kernel_records": [2, 1, None]})
    ncu = {("dbuf", "SPLITK=2", 63, 63, 63): (5000.0, 1), ("best", "BLOCK=32", 63, 63, 63): (7000.0, 1),
           ("best", "BLOCK=32", 128, 128, 128): (12000.0, 1)}
    table = compare(rows, ncu).set_index("variant")
    assert list(table.index) == ["dbuf", "best"]  # the failed point has nothing to compare
    assert table.loc["dbuf", "kernel_vs_ncu"] == pytest.approx(5.2 / 5.0) and table.loc["dbuf", "within"]
    assert table.loc["best", "kernel_vs_ncu"] == pytest.approx(6.4 / 7.0) and not table.loc["best", "within"]
    assert table.loc["best", "events_vs_ncu"] == pytest.approx(9.0 / 7.0)


def test_a_noise_target_on_the_kernel_clock_stops_where_the_events_would_go_on():
    rows = {}
    for clock in ("events", "kernel"):
        runner = LocalPoints(Settings(runs=10, warmup=0, max_noise=0.01, max_runs=74, noise_clock=clock), [])
        runner.gpu = FakeGpu([1.0, 1.2] * 100, [1980] * 1000)  # the events: 9 % noise
        stable = [(4000, 300, 1000)] * 10
        runner.cupti = RecordedClock(stable)  # the kernel clock: none
        runner.cupti.batches += [[], recorded_calls([(4000, 300, 1000)] * 64)]
        rows[clock] = time_naive_8(runner)
    assert (rows["kernel"]["stopped"], rows["kernel"]["runs"], rows["kernel"]["noise"]) == ("noise", 10, 0.0)
    assert rows["events"]["stopped"] == "max" and rows["events"]["runs"] == 74
    assert len(samples_of(rows["events"]["kernel_ms_samples"])) == 74  # the kernel clock read every batch
    assert (rows["kernel"]["noise_clock"], rows["events"]["noise_clock"]) == ("kernel", "events")


def test_a_noise_target_on_a_kernel_clock_that_is_not_there_says_the_events_judged():
    runner = LocalPoints(Settings(runs=10, warmup=0, max_noise=0.01, max_runs=10, noise_clock="kernel"), [])
    runner.gpu = FakeGpu([1.0] * 10, [1980] * 100)  # no CUPTI: runner.cupti stays None
    row = time_naive_8(runner)
    assert (row["stopped"], row["noise_clock"]) == ("noise", "events") and "kernel_ms_samples" not in row


def test_a_point_ncu_could_not_time_keeps_its_line_with_the_reason(monkeypatch):
    import pandas as pd

    from mmbench import profile, verify_timing
    from mmbench.engine.plan import Point

    monkeypatch.setattr(verify_timing, "ncu_path", lambda: "/usr/bin/ncu")
    asked = []

    def fake(point, cache_control, calls):
        asked.append((point.variant.name, cache_control, calls))
        if point.variant.name == "cublas":
            raise profile.ProfileError("5 kernel launches under ncu do not split into 10 equal calls")
        return (6000.0, 1)

    monkeypatch.setattr(verify_timing, "kernel_time_ns", fake)
    points = [Point(REGISTRY[name], (), Shape(63, 63, 63), "cold") for name in ("best", "cublas")]
    ncu = verify_timing.ncu_reference(points)
    assert asked == [("best", "all", 10), ("cublas", "all", 10)]
    rows = pd.DataFrame({"status": ["ok", "ok"], "variant": ["best", "cublas"], "params": ["", ""], "m": [63, 63],
                         "n": [63, 63], "k": [63, 63], "time_ms_median": [0.009, 0.010],
                         "kernel_ms_median": [0.006, 0.005], "kernels_only_ms_median": [0.006, 0.005],
                         "kernel_records": [1, 2]})
    table = verify_timing.compare(rows, ncu).set_index("variant")
    assert table.loc["best", "within"] and table.loc["best", "ncu_note"] == ""
    assert not table.loc["cublas", "within"] and np.isnan(table.loc["cublas", "kernel_vs_ncu"])
    assert "do not split" in table.loc["cublas", "ncu_note"]
    asked.clear()
    verify_timing.ncu_reference(points[:1], "none")  # caches left alone: one call (a later one finds L2 warm)
    assert asked == [("best", "none", 1)]


def test_verify_timing_without_ncu_says_so_before_timing_anything(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from mmbench import profile
    from mmbench.cli import main
    from mmbench.cli import running

    monkeypatch.setattr(profile, "ncu_path", lambda: None)
    monkeypatch.setattr(running, "run_points", lambda *a, **k: pytest.fail("timed points without ncu"))
    result = CliRunner().invoke(main, ["verify-timing", "-v", "best", "-s", "63", "-o", str(tmp_path / "v.csv")])
    assert result.exit_code == 1 and "Nsight Compute (ncu) is not on PATH" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "v.csv").exists()
