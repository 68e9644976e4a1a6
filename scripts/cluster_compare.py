"""Compare a run on one GPU with the same points on a cluster (issue 16's check):
    python3 scripts/cluster_compare.py ONE.csv CLUSTER.csv [ONE_S CLUSTER_S]
Prints the wall times and the speedup: the measuring, from both files' metadata (the cluster's
start excluded), and ONE_S and CLUSTER_S when given, the whole commands' seconds (start-up,
imports and the cluster's start included); whether both hold the same
points, the GPUs the cluster's rows name, how the two runs' medians agree point by point, and
for a tuning (one variant, many configurations) the fastest configuration of every shape in
each run with its time in the other."""

from __future__ import annotations

import sys
from pathlib import Path

from mmbench.results import read_metadata, read_results

KEY = ["variant", "params", "m", "n", "k", "cache", "scope", "pad"]


def counts(df) -> str:
    return ", ".join(f"{n} {status}" for status, n in df.status.value_counts().items())


def main(one_path: Path, many_path: Path, commands: list[float]) -> None:
    one, many = read_results(one_path), read_results(many_path)
    last = [(read_metadata(p).get("invocations") or [{}])[-1] for p in (one_path, many_path)]
    wall = [i.get("wall_s") for i in last]
    states = [i.get("state") for i in last]
    if states != ["finished", "finished"] or not all(wall):
        print(f"runs not both finished (one GPU: {states[0]}, cluster: {states[1]}): no speedup")
        commands = []
    else:
        print(f"measuring (metadata wall_s): one GPU {wall[0]} s, cluster {wall[1]} s, speedup {wall[0] / wall[1]:.2f}x")
    if commands:
        print(f"whole commands: one GPU {commands[0]:.1f} s, cluster {commands[1]:.1f} s, "
              f"speedup {commands[0] / commands[1]:.2f}x")
    print(f"points: one GPU {len(one)} ({counts(one)}), "
          f"cluster {len(many)} ({counts(many)}), "
          f"same keys: {sorted(map(tuple, one[KEY].astype(str).values)) == sorted(map(tuple, many[KEY].astype(str).values))}")
    print("cluster rows by GPU: " + ", ".join(f"{uuid} ({host}): {n}" for (uuid, host), n
                                              in many.groupby(["gpu_uuid", "host"]).size().items()))
    ok = one[one.status == "ok"].merge(many[many.status == "ok"], on=KEY, suffixes=("_one", "_many"))
    ratio = ok.time_ms_median_many / ok.time_ms_median_one
    q = ratio.quantile([0.05, 0.5, 0.95])
    print(f"median time, cluster / one GPU, over {len(ok)} points: median {q[0.5]:.3f}, "
          f"5-95 % {q[0.05]:.3f} to {q[0.95]:.3f}")
    if one.variant.nunique() == 1 and one.params.nunique() > 1:  # a tuning: the winners
        for (m, n, k), _ in ok.groupby(["m", "n", "k"]):
            at = ok[(ok.m == m) & (ok.n == n) & (ok.k == k)]
            best_one = at.loc[at.time_ms_median_one.idxmin()]
            best_many = at.loc[at.time_ms_median_many.idxmin()]
            same = best_one.params == best_many.params
            print(f"{m}x{n}x{k}: one GPU's best {best_one.time_ms_median_one:.4f} ms; cluster's best "
                  f"{'the same configuration' if same else 'another configuration'}, "
                  f"{best_many.time_ms_median_one / best_one.time_ms_median_one:.3f}x the best's time on one GPU"
                  f" ({best_many.time_ms_median_many:.4f} ms on the cluster)")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 5):
        sys.exit(__doc__)
    main(Path(sys.argv[1]), Path(sys.argv[2]), [float(a) for a in sys.argv[3:]])
