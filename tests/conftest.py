"""Shared fixtures. GPU tests (marked `gpu`) skip where no GPU can be opened, and only there."""

from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import settings

# mmbench's own cache (ptxas reports, compiled CPU loops) starts empty in every test session, so
# the compile checks run nvcc each time, never a report kept from an earlier session.
os.environ["MMBENCH_CACHE_DIR"] = tempfile.mkdtemp(prefix="mmbench-test-cache-")
# The user's tuning cache (places.user_cache()) is the session's own file, not yet there: no test
# reads the tunings of whoever runs the tests, and none writes into theirs.
os.environ["MMBENCH_TUNING_CACHE"] = os.path.join(tempfile.mkdtemp(prefix="mmbench-test-tuning-"), "tuning-cache.json")

# Property tests run the same examples on every run, with no time limit per example: a slow
# example (a large size spec) must fail or pass on its merits, never on the machine's speed.
settings.register_profile("mmbench", deadline=None, derandomize=True)
settings.load_profile("mmbench")


@pytest.fixture(scope="session")
def gpu():
    from mmbench.device import GpuUnavailable, open_gpu

    try:
        return open_gpu()
    except GpuUnavailable as exc:
        pytest.skip(f"no GPU: {exc}")


def pytest_collection_modifyitems(config, items):
    """Skip gpu-marked tests up front on a machine without PyCUDA (CI), before any fixture runs."""
    import importlib.util

    if importlib.util.find_spec("pycuda") is not None:
        return
    skip = pytest.mark.skip(reason="no GPU here: PyCUDA is not installed")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
