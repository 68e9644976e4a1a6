"""Where a local GPU cluster's start-up goes, on the GPU machine (source .device/setup.sh first):
    python3 scripts/cluster_startup.py
Times, one after another: importing mmbench's CLI, then Dask and dask-cuda; LocalCUDACluster and its
client, with the dashboard and without; the workers' first task (importing mmbench); their first
prepare (the runner: PyCUDA, the GPU's context, CUPTI), a second; the release; closing; and, for
comparison, what a plain run pays for the same: opening the GPU and the kernel clock."""

from __future__ import annotations

import time


def main() -> None:
    last = [time.perf_counter()]

    def lap(what: str) -> None:
        now = time.perf_counter()
        print(f"{now - last[0]:6.2f} s  {what}", flush=True)
        last[0] = now

    import mmbench.cli  # noqa: F401

    lap("import mmbench.cli")
    import distributed
    from dask_cuda import LocalCUDACluster

    lap("import distributed, dask_cuda")
    from mmbench.cluster import descriptor, prepare_worker, release_worker, worker_identity
    from mmbench.sizes import Shape
    from mmbench.sweep import Point, Settings
    from mmbench.variants import REGISTRY

    point = Point(REGISTRY["cublas"], (), Shape(64, 64, 64), "cold")  # nothing to compile: the runner alone
    for dashboard in (":8787", None):
        cluster = LocalCUDACluster(threads_per_worker=1, dashboard_address=dashboard)
        client = distributed.Client(cluster)
        lap(f"LocalCUDACluster + Client, dashboard {dashboard}")
        client.run(worker_identity)
        lap("client.run(worker_identity)")
        for which in ("first", "second"):
            client.submit(prepare_worker, Settings(), [descriptor(point)], {}, pure=False).result()
            lap(f"{which} prepare_worker" + (" (the runner: PyCUDA, GPU, CUPTI)" if which == "first" else ""))
        client.run(release_worker)
        lap("release")
        client.close()
        cluster.close()
        lap("close")
    from mmbench.device import open_gpu
    from mmbench.kernel_clock import KernelClock

    gpu = open_gpu()
    lap("plain: open_gpu")
    clock = KernelClock("concurrent")
    lap("plain: KernelClock")
    clock.close()
    del gpu


if __name__ == "__main__":  # the workers' processes import this module again: start nothing there
    main()
