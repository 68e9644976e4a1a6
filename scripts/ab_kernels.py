"""Versions of a kernel side by side on the GPU, in one process: the tree's kernels/ and each
folder given (holding its own <op>/<family>.cu, e.g. DIR/gemm/dbuf.cu), at the same parameter
points and shapes, with cuBLAS, in interleaved rounds so that drift of clocks or temperature hits
every version alike. Every point is verified first, at the timed shapes and at CHECK shapes
(awkward sizes, run once); then timed.

Each version and round is an ordinary results file written by mmbench's own workflow
(mmbench/runs.py: rows whole as they finish, metadata with the GPU, software and kernels):
OUT/ab/SOURCE-check.csv and OUT/ab/SOURCE-rR.csv, SOURCE being `tree`, each folder's name and
`cublas`. Prints median TFLOP/s over the rounds and the ratio to cuBLAS.
    python3 scripts/ab_kernels.py -v dbuf -s 4096,2048 -p "BK=16,...,WNITER=2" exp/a exp/b
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

import pandas as pd

from mmbench import runs
from mmbench.results import read_results
from mmbench.sizes import parse_sizes
from mmbench.sweep import Point, Settings
from mmbench.variants import format_params, get_variant, parse_params

CHECK = "1,7,31,65,129,2049,1000x37x2049,37x1000x65,260x132x4100"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-v", "--variant", required=True)
    ap.add_argument("-s", "--sizes", required=True)
    ap.add_argument("-p", "--params", action="append", required=True, help="a full parameter point (repeatable)")
    ap.add_argument("--check", default=CHECK, help=f"shapes verified once (default {CHECK})")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("-o", "--output", type=Path, default=Path(os.environ.get("OUT", ".")) / "ab",
                    help="folder for the results files (default $OUT/ab)")
    ap.add_argument("folders", nargs="*", type=Path)
    args = ap.parse_args()

    base = get_variant(args.variant)
    sources = {"tree": base} | {f.name: dataclasses.replace(base, source_dir=f.resolve()) for f in args.folders}
    points = [parse_params(p) for p in args.params]
    cublas = get_variant("cublas")
    sizes, checks = parse_sizes(args.sizes), parse_sizes(args.check)
    if args.output.exists() and any(args.output.glob("*.csv")):
        sys.exit(f"error: {args.output} already holds results files; choose another -o folder")
    args.output.mkdir(parents=True, exist_ok=True)
    about = {"name": "ab", "ab": {"variant": base.name, "sources": {n: str(v.source_dir or "kernels/") for n, v in sources.items()},
                                  "points": [format_params(p) for p in points], "rounds": args.rounds}}

    def say(text: str) -> None:
        print(text, flush=True)

    def show(row: dict) -> None:
        say(f"{row['variant']} {row['params']} {row['m']}x{row['n']}x{row['k']} {row['status']} "
            f"{(row.get('gflops_median') or float('nan')) / 1000:.2f} {row['reason']}")

    # One runner (one GPU context, one cuBLAS handle) shared by every file.
    check_settings, timed = Settings(runs=1, warmup=0), Settings(runs=args.runs)
    runner = runs.open_runner(check_settings, [Point(cublas, (), checks[0], "cold")])
    sessions: dict[str, runs.Session] = {}

    def session(name: str, settings: Settings, planned: int) -> runs.Session:
        if name not in sessions:
            sessions[name] = runs.Session(args.output / f"{name}.csv", settings, about, sys.argv, runner,
                                          points_planned=planned, say=say)
        return sessions[name]

    state = "failed"
    try:
        for name, v in sources.items():
            runner.gpu.precompile(v, points, jobs=16)
            session(f"{name}-check", check_settings, len(points) * len(checks)).run(
                [Point(v, p, s, "cold") for p in points for s in checks], show)
        for r in range(args.rounds):
            for s in sizes:  # one shape at a time across versions (its inputs and reference shared); the order flips every round
                order = [(session(f"cublas-r{r}", timed, len(sizes)), Point(cublas, (), s, "cold"))]
                order += [(session(f"{name}-r{r}", timed, len(points) * len(sizes)), Point(v, p, s, "cold"))
                          for name, v in sources.items() for p in points]
                runs.run_together(runner, order if r % 2 == 0 else order[::-1], show)
        state = "finished"
    except KeyboardInterrupt:
        state = "interrupted"
    finally:
        runner.close()
        for s in sessions.values():
            s.finish(state)
    if state != "finished":
        sys.exit(f"{state}: what finished is in {args.output}/")

    frames = []
    for name, s in sessions.items():
        df = read_results(s.output)
        source, _, tail = name.rpartition("-")
        frames.append(df.assign(source=source, round=-1 if tail == "check" else int(tail[1:])))
    df = pd.concat(frames, ignore_index=True)
    for i, p in enumerate(args.params, 1):
        print(f"#{i}: {p}")
    bad = df[df.status != "ok"]
    print("not ok:", "none" if bad.empty else "\n" + bad[["source", "params", "m", "n", "k", "status", "reason"]]
          .to_string(index=False))
    t = df[(df["round"] >= 0) & (df.status == "ok")].copy()
    t["point"] = t.params.map(lambda text: next((i for i, p in enumerate(points, 1) if format_params(p) == text), 0))
    t["shape"] = t.m.astype(str) + "x" + t.n.astype(str) + "x" + t.k.astype(str)
    t["tflops"] = t.gflops_median / 1000
    table = t.pivot_table(index=["source", "point"], columns="shape", values="tflops", aggfunc="median")
    spread = t.pivot_table(index=["source", "point"], columns="shape", values="tflops",
                           aggfunc=lambda x: x.max() - x.min())
    print("median TFLOP/s over rounds\n" + table.round(2).to_string())
    print("spread between rounds (TFLOP/s)\n" + spread.round(2).to_string())
    print("% of cuBLAS\n" + (100 * table / table.loc[("cublas", 0)]).round(1).to_string())
    print(f"results: {args.output}/")


if __name__ == "__main__":
    main()
