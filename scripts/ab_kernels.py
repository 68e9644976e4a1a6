"""Versions of a kernel side by side on the GPU, in one process: the tree's kernels/ and each
folder given (holding its own <family>.cu, e.g. DIR/gemm/dbuf.cu), at the same parameter points and shapes, with
cuBLAS, in interleaved rounds so that drift of clocks or temperature hits every version alike.

Every point is verified first, at the timed shapes and at CHECK shapes (awkward sizes, run once);
then timed. Writes every row to OUT/ab.csv (with `source` and `round`) and prints median TFLOP/s
over the rounds and the ratio to cuBLAS.

    python3 scripts/ab_kernels.py -v dbuf -s 4096,2048 -p "BK=16,...,WNITER=2" exp/a exp/b
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

import pandas as pd

from mmbench import environment, source
from mmbench.results import write_metadata
from mmbench.sizes import parse_sizes
from mmbench.sweep import Point, Runner, Settings
from mmbench.variants import get_variant, parse_params

CHECK = "1,7,31,65,129,2049,1000x37x2049,37x1000x65,260x132x4100"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-v", "--variant", required=True)
    ap.add_argument("-s", "--sizes", required=True)
    ap.add_argument("-p", "--params", action="append", required=True, help="a full parameter point (repeatable)")
    ap.add_argument("--check", default=CHECK, help=f"shapes verified once (default {CHECK})")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("-o", "--output", default=os.path.join(os.environ.get("OUT", "."), "ab.csv"))
    ap.add_argument("folders", nargs="*", type=Path)
    args = ap.parse_args()

    base = get_variant(args.variant)
    sources = {"tree": base} | {f.name: dataclasses.replace(base, source_dir=f.resolve()) for f in args.folders}
    points = [parse_params(p) for p in args.params]
    cublas = get_variant("cublas")
    rows: list[dict] = []

    def collect(tag: dict):
        def on_row(row: dict) -> None:
            rows.append({**row, **tag})
            print(f"{tag}: {row['variant']} {row['m']}x{row['n']}x{row['k']} {row['status']} "
                  f"{row.get('gflops_median', float('nan')) / 1000:.2f} {row['reason']}", flush=True)
        return on_row

    # One runner (one GPU context, one cuBLAS handle): first the checks, run once, then the timing.
    runner = Runner(Settings(runs=1, warmup=0), [Point(cublas, (), parse_sizes("1")[0], "cold")])
    gpu = runner.gpu
    kernels = {}  # source -> its compiled points' registers, shared memory, spills
    for name, v in sources.items():
        gpu.precompile(v, points, jobs=16)
        for i, p in enumerate(points, 1):
            runner.run([Point(v, p, s, "cold") for s in parse_sizes(args.check)],
                       collect({"source": name, "point": i, "round": -1}))
        kernels[name], runner.kernels = runner.kernels, {}
    runner.settings = Settings(runs=args.runs)
    for r in range(args.rounds):
        for s in parse_sizes(args.sizes):  # one shape at a time: its inputs and reference are shared
            order = [({"source": "cublas", "point": 0, "round": r}, Point(cublas, (), s, "cold"))]
            order += [({"source": name, "point": i, "round": r}, Point(v, p, s, "cold"))
                      for name, v in sources.items() for i, p in enumerate(points, 1)]
            seq = order if r % 2 == 0 else order[::-1]
            tags = iter(tag for tag, _ in seq)
            runner.run([p for _, p in seq], lambda row: collect(next(tags))(row))
    runner.close()

    df = pd.DataFrame(rows)
    df.to_csv(args.output, index=False)
    write_metadata(Path(args.output), {"command": sys.argv, "sources": {n: source.source_hash(v) for n, v in sources.items()},
                                       "settings": {"runs": args.runs, "rounds": args.rounds, "cache": "cold"},
                                       "kernels": kernels, **environment.collect(gpu)})
    for i, p in enumerate(args.params, 1):
        print(f"#{i}: {p}")
    bad = df[df.status != "ok"]
    print("not ok:", "none" if bad.empty else "\n" + bad[["source", "point", "m", "n", "k", "status", "reason"]]
          .to_string(index=False))
    t = df[(df["round"] >= 0) & (df.status == "ok")].copy()
    t["shape"] = t.m.astype(str) + "x" + t.n.astype(str) + "x" + t.k.astype(str)
    t["tflops"] = t.gflops_median / 1000
    table = t.pivot_table(index=["source", "point"], columns="shape", values="tflops", aggfunc="median")
    spread = t.pivot_table(index=["source", "point"], columns="shape", values="tflops",
                           aggfunc=lambda x: x.max() - x.min())
    print("median TFLOP/s over rounds\n" + table.round(2).to_string())
    print("spread between rounds (TFLOP/s)\n" + spread.round(2).to_string())
    print("% of cuBLAS\n" + (100 * table / table.loc[("cublas", 0)]).round(1).to_string())


if __name__ == "__main__":
    main()
