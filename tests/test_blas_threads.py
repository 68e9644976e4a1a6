"""One threadpoolctl controller a process (blas_threads.py), and NVML's fixed facts read once (device.SmClock)."""

import sys
import types

import mmbench
from mmbench import blas_threads
from mmbench.device import SmClock


def blas_counts() -> list[int]:
    return [info["num_threads"] for info in blas_threads.blas_libraries()]


def test_the_controller_is_kept_until_modules_are_imported_and_limits_for_a_block_only():
    first = blas_threads.controller()
    assert blas_threads.controller() is first  # not made (a scan of every library) at every call
    before = blas_counts()
    assert before, "numpy's BLAS is not seen"
    with blas_threads.limited(1):
        assert blas_counts() == [1] * len(before)
    assert blas_counts() == before
    with blas_threads.limited(None):  # no limit asked: as they are
        assert blas_counts() == before
    sys.modules["_a_module_just_imported"] = types.ModuleType("_a_module_just_imported")
    try:
        assert blas_threads.controller() is not first  # it may have loaded a BLAS: looked at again
    finally:
        del sys.modules["_a_module_just_imported"]


def test_a_cpu_points_row_names_the_blas_threads_it_ran_with():
    df = mmbench.run("blas", "33", runs=1, threads=1, say=lambda _: None)
    assert list(df.threads) == [1] and (df.status == "ok").all()


class FakeNvml:
    """NVML's calls that SmClock.facts makes, counted."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM = 0, 1
    __version__ = "fake"

    def __init__(self):
        self.calls: list[str] = []
        self.power_mw = 700_000
        self.memory_fails = 0

    def _called(self, name, value):
        self.calls.append(name)
        return value

    def nvmlSystemGetDriverVersion(self):
        return self._called("driver", b"580.1")

    def nvmlDeviceGetUUID(self, handle):
        return self._called("uuid", "GPU-1")

    def nvmlDeviceGetMaxClockInfo(self, handle, which):
        if which == 1 and self.memory_fails:
            self.memory_fails -= 1
            raise RuntimeError("NVML_ERROR_UNKNOWN")
        return self._called(f"max{which}", 1980 if which == 0 else 3201)

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):
        return self._called("power", self.power_mw)


def test_the_fixed_facts_are_read_once_and_the_power_limit_each_time():
    clock = SmClock.__new__(SmClock)
    clock.handle, clock.error, clock._max_mhz, clock._facts = "handle", "", None, None
    clock.nvml = nvml = FakeNvml()
    nvml.memory_fails = 1  # a read that fails once is not kept
    assert clock.facts()["memory_clock_max_mhz"] is None
    first = clock.facts()
    assert first == {"uuid": "GPU-1", "driver_version": "580.1", "sm_clock_max_mhz": 1980,
                     "memory_clock_max_mhz": 3201, "power_limit_w": 700.0, "nvml_version": "fake"}
    nvml.calls.clear()
    nvml.power_mw = 500_000  # an administrator lowered it
    assert clock.facts() == {**first, "power_limit_w": 500.0} and nvml.calls == ["power"]
