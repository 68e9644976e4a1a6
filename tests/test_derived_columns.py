"""The numbers a row reports, pinned on known inputs: each computed column against its formula
written out here, so a swapped statistic or a changed factor fails."""

import math

import numpy as np
import pytest

from mmbench.ops import base as ops
from mmbench.ops import gemm
from mmbench.sizes import Shape
from mmbench.engine.plan import Point
from mmbench.engine.rows import timing_fields
from mmbench.schema import clock_sagged
from mmbench.timing import summarize
from mmbench.variants import REGISTRY

from helpers import verified

SAMPLES = [1.0, 2.0, 3.0, 10.0]  # mean 4, median 2.5, min 1, max 10: every statistic differs


def test_summary_statistics_of_known_samples():
    st = summarize(SAMPLES)
    assert (st.mean, st.median, st.min, st.max) == (4.0, 2.5, 1.0, 10.0)
    std = math.sqrt(((1 - 4) ** 2 + (2 - 4) ** 2 + (3 - 4) ** 2 + (10 - 4) ** 2) / 3)  # sample std (n - 1)
    assert st.std == pytest.approx(std, rel=1e-15) and st.cv == pytest.approx(std / 4.0, rel=1e-15)
    one = summarize([2.0])
    assert one.std == 0.0 and one.cv == 0.0
    with pytest.raises(ValueError):
        summarize([])


def test_timing_fields_follow_their_formulas():
    shape = Shape(100, 200, 300)
    fields = timing_fields(Point(REGISTRY["blas"], (), shape, "hot"), SAMPLES)
    flops = 2 * 100 * 200 * 300
    nbytes = 4 * (100 * 300 + 300 * 200 + 100 * 200)
    assert fields["gflops_mean"] == pytest.approx(flops / (4.0e-3 * 1e9), rel=1e-15)  # from the mean time
    assert fields["gflops_median"] == pytest.approx(flops / (2.5e-3 * 1e9), rel=1e-15)  # from the median time
    assert fields["gbytes_per_s"] == pytest.approx(nbytes / (2.5e-3 * 1e9), rel=1e-15)  # from the median time
    assert (fields["time_ms_mean"], fields["time_ms_median"], fields["time_ms_min"], fields["time_ms_max"]) == \
           (4.0, 2.5, 1.0, 10.0)
    assert fields["cv"] == pytest.approx(fields["time_ms_std"] / 4.0, rel=1e-15)
    assert fields["time_ms_samples"] == "1.0;2.0;3.0;10.0"


@pytest.mark.parametrize("readings,max_mhz,sagged", [
    ((1980, 1980), 1980, False),
    ((1980, 1700), 1980, True),  # 86 % of the maximum: under the 90 % line
    ((1800, 1980), 1980, False),  # 90.9 %
    ((1782, 1980), 1980, False),  # exactly 90 %: not below
    ((1781, 1980), 1980, True),
    ((None, 1500), 1980, True),  # an unknown reading is left out, the known one decides
    ((None, None), 1980, False),  # nothing known: nothing flagged
    ((1000, 1000), None, False),  # no maximum: nothing to compare with
])
def test_clock_sag_flag(readings, max_mhz, sagged):
    assert clock_sagged(readings, max_mhz, 0.9) is sagged


def test_verification_factors():
    u = 2.0**-24
    assert ops.UNIT_ROUNDOFF_F32 == u and ops.FROBENIUS_FACTOR == 8.0
    for k in (1, 64, 4096):
        assert ops.frobenius_tolerance(k) == 8.0 * u * math.sqrt(k)
        assert ops.gamma(k) == k * u / (1 - k * u)


@pytest.mark.parametrize("scale,ok", [(7.0, True), (9.0, False)])
def test_the_frobenius_rule_sits_at_8_u_sqrt_k(scale, ok):
    """An output off by a uniform relative error of scale * u * sqrt(k): inside the elementwise
    bound (gamma_k is 64x wider at k = 4096), so only the Frobenius rule decides, at 8."""
    k = 4096
    inputs = gemm.make_gemm_inputs(Shape(16, 16, k), np.random.default_rng(5))
    c = (inputs.reference * (1 + scale * 2.0**-24 * math.sqrt(k))).astype(np.float32)
    check = gemm.check_gemm(c, inputs)
    assert check.ok is ok and check.err_bound_ratio < 1
    assert check.rel_err == pytest.approx(scale * 2.0**-24 * math.sqrt(k), rel=0.02)


class FakeGpu:
    """Just enough of device.Gpu for LocalPoints._verify_and_time: samples and clock readings scripted."""

    def __init__(self, samples_ms, clocks_mhz, max_mhz=1980):
        self.samples, self.clocks, self.stream = iter(samples_ms), iter(clocks_mhz), None
        self.clock = self
        self._max = max_mhz
        self.flushes = []

    def current_mhz(self):
        return next(self.clocks)

    def max_mhz(self):
        return self._max

    def conditions(self, when):
        return {f"gpu_temp_c_{when}": 41, f"power_w_{when}": 120.5}

    def compiled(self, variant, params):  # nothing to compile ahead: the fake launches no kernel
        return True

    flush_bytes = 100 * 2**20

    def poison(self, buf, count, dtype=np.float32):
        buf[:count] = np.nan

    def download(self, buf, shape, dtype=np.float32):
        return buf.reshape(shape).astype(dtype)

    def event(self):
        gpu = self

        class Event:
            def record(self, stream):
                pass

            def time_since(self, start):
                return next(gpu.samples)

            def synchronize(self):
                pass

        return Event()

    synchronize = hold = release = lambda self: None

    def flush_l2(self, method="read"):
        self.flushes.append(method)

    def held_ok(self):
        return True


@pytest.mark.parametrize("clocks,sagged", [((1980, 1980), False), ((1980, 1500), True)])
def test_a_gpu_row_carries_the_timing_fields_and_the_clock_flag(clocks, sagged):
    from mmbench.engine.plan import Settings
    from mmbench.engine.points_local import LocalPoints

    shape = Shape(8, 8, 8)
    inputs = gemm.make_gemm_inputs(shape, np.random.default_rng(0))
    runner = LocalPoints(Settings(runs=4, warmup=0), [])
    runner.gpu = FakeGpu(SAMPLES, clocks)
    from mmbench.ops import DeviceBuffers

    c = np.empty(64, np.float32)
    bufs = DeviceBuffers((inputs.a, inputs.b), c, 64)

    def launch():
        c[:] = (inputs.a @ inputs.b).ravel()

    row = verified(runner, Point(REGISTRY["naive"], (("BLOCK", 8),), shape, "cold"), inputs, bufs,
                                  lambda shape, buffers: launch)
    assert row["status"] == "ok" and row["clock_sagged"] is sagged
    assert (row["sm_clock_mhz_before"], row["sm_clock_mhz_after"]) == clocks
    assert row["gflops_mean"] == pytest.approx(2 * 512 / (4.0e-3 * 1e9), rel=1e-15)
    assert row["gflops_median"] == pytest.approx(2 * 512 / (2.5e-3 * 1e9), rel=1e-15)
    assert row["time_ms_samples"] == "1.0;2.0;3.0;10.0" and row["runs"] == 4
    assert runner.gpu.flushes == ["read"] * 4  # cold: an L2 emptied by reading, before each sample


@pytest.mark.parametrize("mode,expected", [
    ("concurrent", ["hold", "flush", "flush", "flush", "release", "sync"]),  # one held batch, back to back
    ("isolated", ["flush", "sync", "flush", "sync", "flush", "sync"]),  # every call from an idle GPU
])
def test_the_isolated_kernel_clock_launches_every_sample_on_an_idle_gpu(mode, expected):
    from mmbench.ops import DeviceBuffers
    from mmbench.engine.plan import Settings
    from mmbench.engine.points_local import LocalPoints

    class LoggingGpu(FakeGpu):
        def __init__(self, *args):
            super().__init__(*args)
            self.log = []

        def hold(self):
            self.log.append("hold")

        def release(self):
            self.log.append("release")

        def synchronize(self):
            self.log.append("sync")

        def flush_l2(self, method="read"):
            self.log.append("flush")

    shape = Shape(8, 8, 8)
    inputs = gemm.make_gemm_inputs(shape, np.random.default_rng(0))
    runner = LocalPoints(Settings(runs=3, warmup=0, kernel_clock=mode), [])
    runner.gpu = LoggingGpu([1.0, 2.0, 3.0], (1980, 1980))
    c = np.empty(64, np.float32)

    def launch():
        c[:] = (inputs.a @ inputs.b).ravel()

    row = verified(runner, Point(REGISTRY["naive"], (("BLOCK", 8),), shape, "cold"), inputs,
                                  DeviceBuffers((inputs.a, inputs.b), c, 64), lambda shape, buffers: launch)
    assert row["status"] == "ok" and row["time_ms_samples"] == "1.0;2.0;3.0"
    assert runner.gpu.log[-len(expected):] == expected


def test_series_summary_pins_each_column_and_the_cli_caps_the_table_at_the_fastest():
    """One row per series in the file's order: ok counts verified rows with a rate, not_ok the other
    statuses by count, median and peak of the operation's rate, the peak's shape, the median cv;
    a series with no ok row has NaN numbers. The CLI shows the SUMMARY_ROWS fastest of more."""
    import io

    from rich.console import Console

    from mmbench.cli import running
    from mmbench.summary import series_summary

    def rows(variant, params, rates, statuses, cvs, op="gemm", rate="gflops_median"):
        # the other rate columns hold a decoy: the summary reads the operation's rate (medians) alone
        return [{"op": op, "variant": variant, "params": params, "scope": "kernel", "pad": 0, "status": s,
                 "gflops_mean": 1e9, "gflops_median": 1e9, "gbytes_per_s": 1e9, rate: r,
                 "cv": c, "m": 10 * (i + 1), "n": 20 * (i + 1), "k": 30 * (i + 1) if op == "gemm" else 0}
                for i, (r, s, c) in enumerate(zip(rates, statuses, cvs))]

    # as results.scan gives them: every cell text, a missing rate an empty cell, pad and precision as written
    text = [{k: "" if isinstance(v, float) and math.isnan(v) else str(v) for k, v in r.items()}
            for r in rows("dbuf", "BM=64", [1.0, 5.0, 3.0, float("nan"), 2.0], ["ok", "ok", "ok", "ok", "wrong"],
                          [0.1, 0.3, 0.2, 0.9, 0.5])
            + rows("tile2d", "", [7.0, 7.0, 7.0], ["failed", "skipped", "failed"], [0.1] * 3)
            + rows("transpose_tiled", "", [100.0, 300.0], ["ok", "ok"], [0.01, 0.03], op="transpose",
                   rate="gbytes_per_s")]
    s = {x.variant: x for x in series_summary(text, {"gemm": "gflops_median", "transpose": "gbytes_per_s"}.get)}
    assert list(s) == ["dbuf", "tile2d", "transpose_tiled"]
    d = s["dbuf"]  # ok: 1, 5, 3 (a NaN rate is not ok; the wrong row neither)
    assert (d.ok, d.not_ok, d.median, d.peak, (d.m, d.n, d.k)) == (3, "1 wrong", 3.0, 5.0, (20, 40, 60))
    assert d.cv_median == pytest.approx(0.2) and (d.scope, d.pad, d.dtype, d.layout) == ("kernel", 0, "fp32", "nn")
    t = s["tile2d"]
    assert t.ok == 0 and t.not_ok == "2 failed, 1 skipped" and math.isnan(t.median) and math.isnan(t.peak)
    x = s["transpose_tiled"]
    assert (x.ok, x.median, x.peak, (x.m, x.n)) == (2, 200.0, 300.0, (20, 40))

    many = [r for i in range(running.SUMMARY_ROWS + 5) for r in rows("dbuf", f"BM={i}", [float(i)], ["ok"], [0.1])]
    path = io.StringIO()
    Console(file=path, width=200).print(running._summary_table(many, "x.csv"))
    shown = path.getvalue()
    assert f"the {running.SUMMARY_ROWS} fastest of {running.SUMMARY_ROWS + 5} series" in shown
    assert "BM=34" in shown and "BM=5 " in shown and "BM=4 " not in shown and "... 5 more series" in shown
