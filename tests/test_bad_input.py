"""Every bad input: one line naming the bad value (and the choices where there are some), exit
status 2, no traceback, and no file in the working folder created or changed."""

import csv
import hashlib
import io
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from mmbench.engine import batched_local
from mmbench.cli import main
from mmbench.environment import own_cpus
from mmbench.results import write_metadata

ZOSA = str(Path(__file__).resolve().parent.parent / "configs" / "zosa2017.toml")
LIMITS = str(Path(__file__).resolve().parent.parent / "configs" / "limits.toml")  # tuned variants: notes to hold back
CORES = own_cpus()
SWEEP = '[[sweep]]\nname = "s"\nvariants = ["blas"]\nsizes = "32"\n'
CONFIGS = {  # what the workdir's small configs say, beyond one sweep of blas at 32
    "scopes.toml": '[[sweep]]\nname = "s"\nvariants = ["best", "blas"]\nsizes = "32"\nscopes = ["kernel", "device"]\n',
    "padded.toml": '[[sweep]]\nname = "s"\nvariants = ["cublas"]\nsizes = "32"\npad = true\n',
    "paper.toml": 'paper = "nope"\n' + SWEEP,
    "escape.toml": 'name = "../escape"\n' + SWEEP,
    "runlist.toml": "run = [1]\n" + SWEEP,
    "samples.toml": "[run]\nruns = 5000\n" + SWEEP,
    "threads.toml": f"[run]\nthreads = {CORES + 1}\n" + SWEEP,
    "cached.toml": '[run]\ncache = "hot"\n' + SWEEP,
}

CASES = [
    # compare: where its figure goes, and what it reads
    (["compare", "r.csv", "r.csv", "--plot", "afile/x.png"], "--plot afile/x.png: afile is not a folder"),
    (["compare", "r.csv", "r.csv", "--plot", ""], "--plot '': expected a file name ending in .png"),
    (["compare", "r.csv", "r.csv", "--plot", "ratios.csv"], "--plot 'ratios.csv': expected a file name ending in .png"),
    (["compare", "r.csv", "r.csv", "--plot", "folder/.png"], "--plot 'folder/.png': expected a file name ending in .png"),
    (["compare", "r.csv", "r.csv", "--plot", "fake.png"], "fake.png exists and is not a figure mmbench drew; pass --force"),
    (["compare", "r.csv", "badmeta.csv"], "badmeta.meta.json is not mmbench metadata (bad JSON"),
    (["check", "own.toml", "--compile-only", "-o", "x.csv"], "--output x.csv: it holds the rows of the awkward-shape runs, "
                                                             "and --compile-only runs none"),
    (["compare", "r.csv", "r.csv", "--clock", "kernel"], "--clock kernel: the runs have no kernel-clock samples"),
    (["compare", "r.csv", "r.csv", "--min-compared", "40%"], "--min-compared 40%: it is the share a gate needs compared, "
                                                            "and no --fail-slower gate is given"),
    # run: what to run
    (["run", "-v", "bset", "-s", "32"], "unknown variant 'bset'; choose from: best_const, best"),
    (["run", "-v", "", "-s", "32"], "--variant '' names no variant; choose from: best_const"),
    (["run", "-v", ",", "-s", "32"], "--variant ',' names no variant"),
    (["run", "-v", "blas", "-s", ""], "empty size spec; accepted forms: N, A:B"),
    (["run", "-v", "blas", "-s", "abc"], "malformed size spec 'abc'; accepted forms"),
    (["run", "-v", "blas", "-s", "10:5"], "size spec '10:5': start 10 is after end 5"),
    (["run", "-v", "blas", "-s", "0"], "size spec '0': sizes must be positive"),
    (["run", "-v", "blas", "-s", "5x5"], "malformed size spec '5x5'"),
    (["run", "-v", "blas", "-s", "1:3000000"], "size spec '1:3000000' selects about 281253 sizes, more than 100000"),
    (["run", "-s", "32", "--block", "0"], "--block '0': expected comma-separated positive integers"),
    (["run", "-s", "32", "--block", "x"], "--block 'x': expected comma-separated positive integers"),
    (["run", "-s", "32", "--block", ""], "--block '': expected comma-separated positive integers"),
    (["run", "-s", "32", "--params", "TILE=4"], "parameter 'TILE' belongs to none of best; their parameters: BLOCK"),
    (["run", "-s", "32", "--params", "BLOCK"], "--params 'BLOCK': expected NAME=V[/V...] pairs"),
    (["run", "-s", "32", "--params", ""], "--params '': expected NAME=V[/V...] pairs"),
    (["run", "-v", "warptile", "-s", "32", "--params", "BM=0"], "parameter BM=[0] for 'warptile': values must be positive"),
    (["run", "-v", "best", "-s", "32", "--block", "64"], "best BLOCK=64: 4096 threads per block exceed CUDA's limit of 1024"),
    (["run", "-v", "dbuf", "-s", "32", "--params", "BM=7"], "dbuf BK=16,BM=7,BN=128,MINB=2,ORDER=1,SK=0,SPLITK=1,STAGE=0,STRIP=4,"
     "THREADS=256,TM=8,TN=4,VEC4=1,WM=64,WN=32,WNITER=2: constraint 'THREADS == (BM // WM) * (BN // WN) * 32' does not hold"),
    (["run", "-v", "dbuf", "-s", "32", "--params", "SK=1,SPLITK=2"], "constraint 'SK == 0 or SPLITK == 1' does not hold"),
    # run: how to measure
    (["run", "-v", "blas", "-s", "32", "--cache", "warm"], "'--cache': 'warm' is not one of 'cold', 'hot'"),
    (["run", "-v", "blas", "-s", "32", "--runs", "0"], "'--runs': 0 is not in the range 1<=x<=1000"),
    (["run", "-v", "blas", "-s", "32", "--warmup", "-1"], "'--warmup': -1 is not in the range 0<=x<=1000"),
    (["run", "-v", "blas", "-s", "32", "--threads", "0"], "'--threads': 0 is not in the range x>=1"),
    (["run", "-v", "blas", "-s", "32", "--seed", "x"], "'--seed': 'x' is not a valid integer"),
    (["run", "-v", "blas", "-s", "32", "--bogus"], "No such option '--bogus'"),
    (["run", "-v", "shared", "-s", "33", "--scope", "bogus"], "--scope 'bogus'; choose from: kernel, device, end_to_end"),
    (["run", "-v", "shared", "-s", "33", "--scope", ","], "--scope ',' names no scope; choose from: kernel"),
    (["run", "-v", "transpose_naive", "-s", "33", "--scope", "device"],
     "--scope device: transpose_naive is a transpose, timed only as kernel"),
    (["run", "-v", "gemv_row", "-s", "33", "--pad"], "--pad: gemv_row is a gemv, which has no padding"),
    # run: precisions and layouts
    (["run", "-v", "cublas", "-s", "32", "--dtype", "fp12"],
     "--dtype: unknown precision 'fp12'; choose from: fp64, fp32, tf32, fp16, bf16, fp8e4m3, fp8e5m2"),
    (["run", "-v", "cublas", "-s", "32", "--dtype", ","], "--dtype ',' names none; choose from: fp64, fp32"),
    (["run", "-v", "best", "-s", "32", "--dtype", "bf16"], "--dtype bf16: best takes fp32 at layout nn; none of these"),
    (["run", "-v", "best,cublas", "-s", "32", "--dtype", "fp16,bf16"],
     "--dtype fp16,bf16: best takes fp32 at layout nn; none of these"),
    (["run", "-v", "cublas", "-s", "32", "--layout", "nx"], "--layout: unknown layout 'nx'; choose from: nn, nt, tn, tt"),
    (["run", "-v", "dbuf", "-s", "32", "--layout", "nt"], "--dtype fp32 --layout nt: dbuf takes fp32 at layout nn; "
     "none of these"),
    (["run", "-v", "transpose_naive", "-s", "32", "--dtype", "fp16"], "transpose_naive takes fp32 at layout nn"),
    (["run", "-v", "cublas", "-s", "32", "--dtype", "bf16", "--scope", "end_to_end"],
     "--scope/--pad: end_to_end is timed at fp32, layout nn only; not at bf16"),
    (["tune", "-v", "shared_padded", "-s", "64", "--engine", "batched", "--strategy", "brute"],
     "shared_padded has no border checks and runs only on padded inputs, which the batched engine does not make"),
    (["run", "--config", ZOSA, "--pad"], "do not combine it with --variant, --sizes, --block, --params, --scope, --pad, "
     "--dtype or --layout"),
    (["run", "--config", ZOSA, "--dtype", "bf16"], "do not combine it with --variant"),
    (["run", "--config", ZOSA, "--variant", "best"], "do not combine it with --variant"),
    (["run", "--config", "nope.toml"], "nope.toml: no such config file"),
    (["run", "--config", "bad.toml"], "bad.toml: not valid TOML"),
    # run: where to write
    (["run", "-v", "blas", "-s", "32", "--resume"], "--resume needs --output"),
    (["run", "-v", "blas", "-s", "32", "-o", "/proc/nope/x.csv"], "/proc/nope/x.csv"),
    (["run", "-v", "blas", "-s", "32", "-o", "r.csv"], "r.csv already exists; pass --resume"),
    (["run", "-v", "blas", "-s", "32", "-o", "folder"], "'--output' / '-o': 'folder' is a folder; expected a file"),
    (["run", "-v", "blas", "-s", "32", "-o", "x.txt"], "--output x.txt: a results file ends in .csv"),
    (["run", "-v", "blas", "-s", "32", "-o", "foreign.csv", "--resume"],
     "foreign.csv cannot be resumed: foreign.csv is not an mmbench results CSV: it has no column variant"),
    (["run", "-v", "blas", "-s", "32", "-o", "binary.csv", "--resume"], "binary.csv is not an mmbench results CSV (a binary file)"),
    (["run", "-v", "blas", "-s", "32,64", "-o", "r.csv", "--resume", "--runs", "5"],
     "r.csv was measured with runs=1; this resume asks for runs=5"),
    (["run", "-v", "blas", "-s", "32,64", "-o", "r.csv", "--resume", "--cache", "hot", "--seed", "3"],
     "r.csv was measured with cache=cold, seed=2017; this resume asks for cache=hot, seed=3"),
    # figures
    (["plot", "gflops", "binary.csv"], "binary.csv is not an mmbench results CSV (a binary file)"),
    (["plot", "gflops", "foreign.csv"], "foreign.csv is not an mmbench results CSV: it has no column variant"),
    (["plot", "gflops", "missing.csv"], "no results file at missing.csv"),
    (["plot", "speedup", "r.csv"], "fig5-speedup not drawn: the results have no CUDA-Best ('best') rows"),
    (["plot", "nothing"], "No such command 'nothing'"),
    (["table", "r.csv", "--sizes", "abc"], "malformed size spec 'abc'"),
    (["report", "--config", "nope.toml", "r.csv"], "nope.toml: no such config file"),
    # list and tune
    (["list", "-v", "nope"], "unknown variant 'nope'; choose from"),
    (["tune", "-v", "nope"], "unknown variant 'nope'; choose from"),
    (["tune", "-v", "blas", "--dry-run"], "variant 'blas' has no tuning space"),
    (["tune", "-v", "pipelined", "--strategy", "annealing"], "'--strategy': 'annealing' is not one of 'auto', 'brute', 'random'"),
    (["tune", "-v", "pipelined", "-s", "0", "--dry-run"], "size spec '0': sizes must be positive"),
    (["tune", "-v", "pipelined", "--params", "BLOCK=8", "--dry-run"], "'pipelined' has no parameter BLOCK"),
    (["tune", "-v", "pipelined", "--strategy", "brute", "--prune", "0.5", "--dry-run"],
     "--prune 0.5 is for the batched engine (this tuning uses --engine points)"),
    (["tune", "-v", "gemv_tuned", "--prune", "1"], "'--prune': 1.0 is not in the range 0<=x<1"),
    (["tune", "-v", "gemv_tuned", "-s", "cell:3x3", "--strategy", "brute", "-o", "t.csv", "--resume"],
     "t.csv was measured with prune=0; this resume asks for prune=0.5 (one file, one rule)"),
    (["tune", "-v", "gemv_tuned", "-s", "cell:3x3", "--strategy", "brute", "-o", "t.csv", "--resume", "--prune", "0",
      "--cache", "hot"], "t.csv was measured with cache=cold; this resume asks for cache=hot"),
    (["tune", "-v", "gemv_tuned", "-s", "cell:3x3", "--strategy", "brute", "-o", "t.csv", "--resume", "--prune", "0"],
     "t.csv was measured with the kernel at a source it does not record; the kernel is now at "),
    (["tune", "-v", "gemv_tuned", "-s", "cell:3x3", "--strategy", "brute", "-o", "r.csv", "--resume"],
     "r.csv is not a batched tuning file of this mmbench (other columns)"),
    (["tune", "-v", "gemv_tuned", "-s", "cell:3x3", "--strategy", "brute", "-o", "bare.csv", "--resume"],
     "bare.csv has no metadata beside it: how it was measured is unknown"),
    # an option of one value given twice: Click kept the last without a word
    (["run", "-v", "blas", "-s", "64", "-s", "128"], "--sizes is given 2 times ('64', '128'): it takes one value"),
    (["run", "-v", "blas", "-s", "32", "--runs", "1", "--runs=2"], "--runs is given 2 times ('1', '2')"),
    (["run", "-v", "best", "--sizes=32", "-s32", "--cache", "hot"], "--sizes is given 2 times ('32', '32')"),
    (["tune", "-v", "pipelined", "-v", "dbuf", "--dry-run"], "--variant is given 2 times ('pipelined', 'dbuf')"),
    (["plot", "gflops", "r.csv", "--out", "a", "--out", "b"], "--out is given 2 times"),
    (["table", "r.csv", "--sizes", "32", "--sizes", "64"], "--sizes is given 2 times ('32', '64')"),
    (["report", "--config", ZOSA, "--config", ZOSA, "r.csv"], "--config is given 2 times"),
    (["verify-timing", "-o", "a.csv", "-o", "b.csv"], "--output is given 2 times"),
    (["profile", "--config", ZOSA, "--points", "256", "--points", "512"], "--points is given 2 times"),
    (["ceilings", "--results", "r.csv", "--results", "r.csv"], "--results is given 2 times"),
    # parameters set twice
    (["run", "-s", "32", "--block", "16", "--params", "BLOCK=32"], "--block 16 and --params BLOCK=32 both set BLOCK"),
    (["run", "-s", "32", "--params", "BLOCK=16,BLOCK=32"], "--params sets BLOCK twice (BLOCK=16 and BLOCK=32); "
     "give each parameter once (BLOCK=16/32 sweeps both)"),
    (["run", "-s", "32", "--params", "BLOCK=16", "--params", "BLOCK=8/32"], "--params sets BLOCK twice"),
    (["tune", "-v", "pipelined", "--params", "BM=128,BM=64", "--dry-run"], "--params sets BM twice"),
    # scopes and padding a variant cannot take: refused for every variant, never dropped
    (["run", "-v", "blas", "-s", "33", "--scope", "device"],
     "--scope device: blas runs on the CPU: it is timed as its own call (kernel), never padded"),
    (["run", "-v", "blas", "-s", "33", "--pad"], "--pad: blas runs on the CPU"),
    (["run", "-v", "best,blas", "-s", "33", "--pad"], "--pad: blas runs on the CPU"),
    (["run", "-v", "best,cpu_naive_matmul", "-s", "33", "--scope", "kernel,end_to_end"],
     "--scope end_to_end: cpu_naive_matmul runs on the CPU"),
    (["run", "-v", "cublas", "-s", "33", "--pad"], "--pad: cublas has no tile over C to pad to"),
    (["run", "-v", "gemv_row", "-s", "33", "--scope", "end_to_end"], "--scope end_to_end: gemv_row is a gemv, timed only as kernel"),
    (["run", "-v", "best", "-s", "33", "--scope", ""], "--scope '' names no scope; choose from: kernel, device, end_to_end"),
    (["run", "--config", "scopes.toml"], "scopes.toml: sweep[0].scopes: blas runs on the CPU"),
    (["run", "--config", "padded.toml"], "padded.toml: sweep[0].pad: cublas has no tile over C to pad to"),
    # numbers that mean nothing
    (["run", "-v", "best", "-s", "33", "--max-noise", "nan"], "'--max-noise': 'nan' is not a finite number"),
    (["run", "-v", "best", "-s", "33", "--max-noise", "inf"], "'--max-noise': inf is not in the range 0<x<1"),
    (["run", "-v", "best", "-s", "33", "--max-noise", "1"], "'--max-noise': 1.0 is not in the range 0<x<1"),
    (["run", "-v", "best", "-s", "33", "--max-noise", "0"], "'--max-noise': 0.0 is not in the range 0<x<1"),
    (["run", "-v", "best", "-s", "33", "--max-noise", "few"], "'--max-noise': 'few' is not a valid float"),
    (["run", "-v", "best", "-s", "33", "--max-noise", "0.1", "--time-budget", "inf"],
     "'--time-budget': 'inf' is not a finite number"),
    (["run", "-v", "best", "-s", "33", "--max-noise", "0.1", "--time-budget", "nan"],
     "'--time-budget': 'nan' is not a finite number"),
    (["run", "-v", "best", "-s", "33", "--max-noise", "0.1", "--time-budget", "-1"], "'--time-budget': -1.0 is not in the range x>0"),
    (["run", "-v", "cpu_naive_matmul", "-s", "33", "--cpu-budget", "nan"], "'--cpu-budget': 'nan' is not a finite number"),
    (["run", "-v", "cpu_naive_matmul", "-s", "33", "--cpu-budget", "inf"], "'--cpu-budget': 'inf' is not a finite number"),
    (["run", "-v", "cpu_naive_matmul", "-s", "33", "--cpu-budget", "0"], "'--cpu-budget': 0.0 is not in the range x>0"),
    (["tune", "-v", "gemv_tuned", "--prune", "nan"], "'--prune': 'nan' is not a finite number"),
    (["tune", "-v", "gemv_tuned", "--prune", "-inf"], "'--prune': -inf is not in the range 0<=x<1"),
    (["run", "-v", "blas", "-s", "64", "--seed", "-1"], "'--seed': -1 is not in the range 0<=x<=4294967295"),
    (["run", "-v", "blas", "-s", "64", "--seed", str(2**32)], "'--seed': 4294967296 is not in the range 0<=x<=4294967295"),
    (["tune", "-v", "pipelined", "--budget", "3", "--seed", "-1", "--dry-run"], "'--seed': -1 is not in the range"),
    (["run", "-v", "blas", "-s", "64", "--runs", "1001"], "'--runs': 1001 is not in the range 1<=x<=1000"),
    (["run", "-v", "blas", "-s", "64", "--warmup", "99999999999"], "'--warmup': 99999999999 is not in the range 0<=x<=1000"),
    (["tune", "-v", "pipelined", "--runs", "5000", "--dry-run"], "'--runs': 5000 is not in the range 1<=x<=1000"),
    (["verify-timing", "-o", "v.csv", "--runs", "0"], "'--runs': 0 is not in the range 1<=x<=1000"),
    (["run", "--config", "samples.toml"], "samples.toml: run.runs: 5000 is more than 1000"),
    (["run", "-v", "blas", "-s", "33", "--threads", str(CORES + 1)],
     f"--threads {CORES + 1}: this process may use {CORES} cores"),
    (["run", "--config", "threads.toml"], f"threads.toml: run.threads = {CORES + 1}: this process may use {CORES} cores"),
    # settings no variant of the run uses
    (["run", "-v", "best", "-s", "33", "--time-budget", "5", "--max-interval", "off"],
     "--time-budget 5.0: it applies to a sampling target (--max-noise or --max-interval), which this run does not set"),
    (["run", "-v", "best", "-s", "33", "--noise-clock", "kernel", "--max-interval", "off"],
     "--noise-clock kernel: it applies to a sampling target"),
    (["run", "-v", "best", "-s", "33", "--max-interval", "0"], "'--max-interval': 0.0 is not in the range 0<x<1"),
    (["tune", "-v", "pipelined", "-s", "1024", "--strategy", "tpe"],
     "--strategy tpe needs --budget N: the configurations it may measure"),
    (["tune", "-v", "pipelined", "-s", "1024", "--strategy", "ga", "--budget", "5", "--params", "BK=8"],
     "--strategy ga searches the whole space; --params and --candidates narrow it for brute and random"),
    (["tune", "-v", "gemv_tuned", "-s", "1024", "--strategy", "tpe", "--budget", "5", "--engine", "batched"],
     "--strategy tpe measures configurations as it chooses them, a batch at a time: it runs on --engine points"),
    (["run", "-v", "best", "-s", "33", "--max-interval", "often"], "'--max-interval': 'often' is not a valid fraction or off"),
    (["run", "-v", "best", "-s", "33", "--max-interval", "0.01", "--max-noise", "0.01"],
     "--max-noise 0.01 and --max-interval 0.01: a noise target and an interval target: choose one"),
    (["run", "-v", "blas", "-s", "33", "--max-interval", "0.01"],
     "--max-interval 0.01: no variant of this run runs on the GPU"),
    (["run", "-v", "blas", "-s", "33", "--cpu-budget", "5"], "--cpu-budget 5.0: no variant of this run is a compiled CPU loop"),
    (["run", "-v", "best", "-s", "33", "--threads", "1"], "--threads 1: no variant of this run runs on the CPU"),
    (["run", "-v", "blas", "-s", "33", "--cache", "cold"], "--cache cold: no variant of this run runs on the GPU"),
    (["run", "-v", "blas", "-s", "33", "--max-noise", "0.1"], "--max-noise 0.1: no variant of this run runs on the GPU"),
    (["run", "--config", "cached.toml"], "cached.toml: run.cache = hot: no variant of this run runs on the GPU"),
    (["tune", "-v", "pipelined", "--strategy", "brute", "--top", "2", "--dry-run"],
     "--top 2: it counts the fastest configurations of --candidates files, and none is given"),
    (["tune", "-v", "pipelined", "--strategy", "brute", "--pool-gpus", "--dry-run"],
     "--pool-gpus pools the timings of GPUs of different models on a cluster"),
    (["tune", "-v", "gemv_tuned", "-s", "cell:3x3", "--strategy", "brute", "--pool-gpus", "--cluster", "local", "--dry-run"],
     "this tuning uses --engine batched"),
    (["tune", "--plan", "ladder", "--pool-gpus", "--dry-run"], "--pool-gpus pools the timings of GPUs of different "
     "models on a cluster (--cluster or --scheduler) into one cache entry; this plan runs on one machine"),
    (["tune", "-v", "pipelined", "--strategy", "brute", "--replay", "r.csv", "--runs", "3"],
     "--runs 3: a replay (--replay r.csv) runs nothing: it takes the variant, --strategy, --budget, --seed and --tuning-cache only"),
    (["tune", "-v", "pipelined", "--strategy", "brute", "--replay", "r.csv", "--dry-run"], "--dry-run: a replay (--replay r.csv)"),
    (["tune", "-v", "pipelined", "--strategy", "brute", "--replay", "r.csv", "-s", "64"], "--sizes 64: a replay"),
    (["list", "--wide", "-v", "best"], "--wide widens the table of every variant; -v shows variants in full"),
    # an option of one plot family given to another
    (["plot", "gflops", "r.csv", "--size", "5"], "--size 5: an option of plot roofline only; plot gflops does not take it"),
    (["plot", "speedup", "r.csv", "--size", "5"], "plot speedup does not take it"),
    (["plot", "vs-cublas", "r.csv", "--size", "5"], "plot vs-cublas does not take it"),
    (["plot", "gemv-mesh", "r.csv", "--size", "5"], "plot gemv-mesh does not take it"),
    # configs refused where they are run, in one line
    (["run", "--config", "latin.toml"], "latin.toml: not UTF-8 text (byte 0), so not a TOML config"),
    (["report", "--config", "latin.toml", "r.csv"], "latin.toml: not UTF-8 text"),
    (["profile", "--config", "latin.toml"], "latin.toml: not UTF-8 text"),
    (["run", "--config", "paper.toml"], "paper.toml: paper 'nope': no study knows it; known: amd-tiling, lab3"),
    (["run", "--config", "escape.toml"], "escape.toml: name '../escape': a run's name names its folder and files"),
    (["run", "--config", "runlist.toml"], "runlist.toml: run: expected a table"),
    # what used to be a traceback
    (["table", "dup.csv"], "dup.csv: lines 2 and 3 are the same point (blas at 32x32x32); a results file holds each "
                           "point once: remove one of them"),
    (["compare", "r.csv", "dup.csv"], "dup.csv: lines 2 and 3 are the same point (blas at 32x32x32)"),
    (["run", "-v", "blas", "-s", "32,64", "--runs", "1", "-o", "dup.csv", "--resume"],
     "dup.csv cannot be resumed: dup.csv: lines 2 and 3 are the same point"),
    (["run", "-v", "blas", "-s", "32", "--point-timeout", "5"], "--point-timeout 5: no variant of this run runs on the GPU"),
    (["run", "-v", "blas", "-s", "32", "--isolation", "none"], "--isolation none: no variant of this run runs on the GPU"),
    (["tune", "-v", "tile2d", "-s", "64", "--strategy", "brute", "--budget", "5000"],
     "brute force tries all 48 configurations of 'tile2d'; --budget 5000 is for --strategy random"),
    (["run", "-v", "blas_gemv", "-s", "32,64", "--runs", "1", "-o", "gemvrows.csv", "--resume"],
     "gemvrows.csv cannot be resumed: its rows are of gemv, but gemvrows.meta.json records a run of gemm"),
    # a folder where a file is wanted, and back: what was given, and what was expected
    (["run", "-v", "blas", "-s", "32", "--tuning-cache", "folder"], "--tuning-cache 'folder': a folder; name an existing "
                                                                   "tuning cache (a .json file)"),
    (["tune", "-v", "tile2d", "-s", "32", "--tuning-cache", "folder"], "'folder' is a folder; expected a file"),
    (["plot", "rate", "r.csv", "--out", "afile"], "'afile' is a file; expected a folder"),
    (["-f", "folder", "list"], "folder: a folder; expected a variant file (a TOML file"),
    # rows whose fields parse but cannot be measurements (edited by hand)
    (["plot", "rate", "nanok.csv"], "nanok.csv: line 2 is not a complete row (status ok with a median time of ''"),
    (["plot", "rate", "negrate.csv"], "negrate.csv: line 2 is not a complete row (gflops_median -5.0 is negative)"),
    (["run", "-v", "blas", "-s", "32,64", "--runs", "1", "-o", "zerodim.csv", "--resume"],
     "zerodim.csv: line 2 is not a complete row (k = 0: a gemm dimension is at least 1)"),
    (["plot", "gflops", "r.csv", "--out", "afile/sub"], "--out afile/sub: afile is not a folder"),
    (["table", "r.csv", "--out", "afile/sub"], "--out afile/sub: afile is not a folder"),
    (["report", "--config", ZOSA, "r.csv", "--out", "afile/sub"], "--out afile/sub: afile is not a folder"),
    (["run", "-v", "blas", "-s", "32", "-o", "afile/x.csv"], "--output afile/x.csv: afile is not a folder"),
    (["verify-timing", "-o", "afile/sub/x.csv"], "--output afile/sub/x.csv: afile is not a folder"),
    (["tune", "-v", "pipelined", "--strategy", "brute", "-o", "afile/x.csv", "--dry-run"],
     "--output afile/x.csv: afile is not a folder"),
    (["tune", "-v", "pipelined", "--strategy", "brute", "-o", "x.txt", "--dry-run"], "--output x.txt: a results file ends in .csv"),
    # empty, missing or foreign where a file or a list is wanted
    (["plot", "gflops", "r.csv", "--out", ""], "'--out': an empty path names nothing"),
    (["table", "r.csv", "--out", " "], "'--out': an empty path names nothing"),
    (["plot", "gflops", ""], "'[RESULTS]': an empty path names nothing"),
    (["run", "-v", "blas", "-s", "32", "-o", ""], "an empty path names nothing"),
    (["run", "--config", ""], "'--config': an empty path names nothing"),
    (["tune", "-v", "pipelined", "--strategy", "brute", "--replay", ""], "'--replay': an empty path names nothing"),
    (["table", "r.csv", "--sizes", ""], "empty size spec"),
    (["table", "r.csv", "--sizes", "32,5x6x7"], "--sizes 32,5x6x7: Table 1's rows are square sizes n (n x n x n); 5x6x7 is not square"),
    (["profile", "--config", ZOSA, "-v", ""], "--variant '' names no variant"),
    (["ceilings", "--results", "missing.csv"], "no results file at missing.csv"),
    (["ceilings", "--results", "foreign.csv"], "foreign.csv is not an mmbench results CSV"),
    (["ceilings", "--results", "binary.csv"], "binary.csv is not an mmbench results CSV (a binary file)"),
    (["run", "-v", "blas", "-s", "32", "--scheduler", "nonsense"],
     "--scheduler 'nonsense': expected an address such as tcp://HOST:8786 (a host and its port)"),
    (["run", "-v", "blas", "-s", "32", "--scheduler", "tcp://host"], "--scheduler 'tcp://host': expected an address"),
    # variants and workers a command would leave out without a word
    (["verify-timing", "-o", "v.csv", "-v", "best,blas"],
     "--variant blas: it runs on the CPU; verify-timing checks GPU variants against Nsight Compute"),
    (["profile", "--config", ZOSA, "-v", "best,blas"], "--variant blas: not a GPU series of "),
    (["profile", "--config", ZOSA, "-v", "dbuf"], "--variant dbuf: not a GPU series of "),
    (["profile", "--config", LIMITS, "-v", "nosuch"], "unknown variant 'nosuch'"),
    (["profile", "--config", LIMITS, "--points", "0"], "size spec '0': sizes must be positive"),
    (["run", "-v", "best", "-s", "32", "--cluster", "local", "--workers", "2"],
     "--workers 2 sizes a local cluster of CPU processes; these points need a GPU"),
    (["tune", "-v", "pipelined", "--strategy", "brute", "--cluster", "local", "--workers", "2", "--dry-run"],
     "--workers 2 sizes a local cluster of CPU processes"),
    # files beside the results that are not what their names say
    (["plot", "roofline", "profiled.csv"], "profiled.profile.csv is not an mmbench profile: it has no column variant"),
    (["plot", "gflops", "foldered.csv"], "foldered.meta.json cannot be read: Is a directory"),
    (["tune", "-v", "pipelined", "--strategy", "brute", "--replay", "foldered.csv"],
     "foldered.meta.json cannot be read: Is a directory"),
    (["run", "-v", "blas", "-s", "32", "-o", "foldered.csv", "--resume"],
     "--output foldered.csv: its metadata goes to foldered.meta.json, which is a folder"),
    (["run", "-v", "blas", "-s", "32", "-o", "fresh.csv"], "--output fresh.csv: its metadata goes to fresh.meta.json, which is a folder"),
    (["tune", "-v", "pipelined", "--strategy", "brute", "--tuning-cache", "afile/c.json", "--dry-run"],
     "tuning cache afile/c.json cannot be created: afile is not a folder"),
    (["report", "--config", "own.toml", "r.csv"], "own.toml: no study for paper ''"),
]


def _snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A folder with a finished CPU run (r.csv, made with --runs 1), a foreign CSV, a binary file
    named .csv, a folder and a broken config."""
    root = tmp_path_factory.mktemp("bad-input")
    runner = CliRunner()
    with runner.isolated_filesystem(temp_dir=root) as here:
        done = runner.invoke(main, ["run", "-v", "blas", "-s", "32", "--runs", "1", "-o", "r.csv"])
        assert done.exit_code == 0, done.output
        Path("foreign.csv").write_text("a,b\n1,2\n")
        Path("binary.csv").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
        Path("folder").mkdir()
        Path("bad.toml").write_text("name = [unclosed\n")
        Path("t.csv").write_text(",".join(batched_local.COLUMNS) + "\n")  # a batched tuning from before pruning
        Path("bare.csv").write_text(",".join(batched_local.COLUMNS) + "\n")  # one whose metadata is lost
        write_metadata(Path("t.csv"), {"settings": {"runs": 1, "warmup": 0, "cache": "cold", "seed": 0},
                                       "tuning": {"tried": 1536}})
        Path("afile").write_text("")  # a file where a folder is wanted
        Path("latin.toml").write_bytes(b"\xff\xfename = 'x'\n")
        for name, text in CONFIGS.items():
            Path(name).write_text(text)
        lines = Path("r.csv").read_text().splitlines(keepends=True)
        Path("dup.csv").write_text("".join(lines + lines[1:]))  # its one row appended again
        Path("dup.meta.json").write_bytes(Path("r.meta.json").read_bytes())
        for name in ("profiled", "foldered"):
            Path(f"{name}.csv").write_bytes(Path("r.csv").read_bytes())
        Path("profiled.meta.json").write_bytes(Path("r.meta.json").read_bytes())
        Path("profiled.profile.csv").write_text("a,b\n1,2\n")
        Path("foldered.meta.json").mkdir()  # a folder where a file is wanted
        Path("fresh.meta.json").mkdir()
        Path("own.toml").write_text(SWEEP)  # an experiment of one's own: no paper
        gemv = runner.invoke(main, ["run", "-v", "blas_gemv", "-s", "32", "--runs", "1", "-o", "gemvrows.csv"])
        assert gemv.exit_code == 0, gemv.output
        Path("gemvrows.meta.json").write_bytes(Path("r.meta.json").read_bytes())  # another run's metadata
        Path("fake.png").write_bytes(b"\x89PNG\r\n\x1a\n")  # an image mmbench did not draw
        for name, column, value in (("nanok", "time_ms_median", ""), ("negrate", "gflops_median", "-5.0"),
                                    ("zerodim", "k", "0")):  # r.csv's row edited by hand, a second row after it
            header, first = Path("r.csv").read_text().splitlines()[:2]
            fields = next(csv.reader([first]))
            fields[header.split(",").index(column)] = value
            edited = io.StringIO()
            csv.writer(edited, lineterminator="\n").writerow(fields)
            Path(f"{name}.csv").write_text(header + "\n" + edited.getvalue() + first.replace(",32,32,32,", ",64,64,64,")
                                           + "\n")
            Path(f"{name}.meta.json").write_bytes(Path("r.meta.json").read_bytes())
        Path("badmeta.csv").write_bytes(Path("r.csv").read_bytes())
        Path("badmeta.meta.json").write_text("{not json")
        return Path(here)


def test_there_are_at_least_120_cases():
    assert len(CASES) >= 120


@pytest.mark.parametrize("args,needle", CASES, ids=[" ".join(a) or "-" for a, _ in CASES])
def test_bad_input_is_one_line_exit_2_and_touches_nothing(workdir, monkeypatch, args, needle):
    monkeypatch.chdir(workdir)
    before = _snapshot(workdir)
    result = CliRunner().invoke(main, args)
    lines = result.output.rstrip("\n").splitlines()  # nothing before the error line, a blank line included
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert needle in lines[0], lines[0]
    assert "Traceback" not in result.output
    assert _snapshot(workdir) == before


def test_every_command_refuses_an_option_given_twice():
    """A command made with click.command rather than cli.common.command would let Click keep the
    last of two values without a word."""
    from mmbench.cli.common import OneValueEach

    ctx = click.Context(main)
    every = [main.get_command(ctx, name) for name in main.list_commands(ctx)]
    plot = main.get_command(ctx, "plot")
    commands = [c for c in every if not isinstance(c, click.Group)]
    commands += [plot.get_command(ctx, name) for name in plot.list_commands(ctx)]
    assert len(commands) > 12 and all(isinstance(c, OneValueEach) for c in commands)


@pytest.mark.parametrize("args", [
    # each setting applies to one variant of the run at least: taken, not refused
    ["-v", "best,blas,cpu_naive_matmul", "--cache", "hot", "--threads", "1", "--max-noise", "0.1", "--noise-clock",
     "kernel", "--time-budget", "3", "--cpu-budget", "9", "--seed", str(2**32 - 1), "--runs", "1000", "--warmup", "1000"],
    ["-v", "best,cublas", "--scope", "kernel,device,end_to_end"],
    ["-v", "dbuf,shared,shared_padded", "--pad", "--scope", "device"],
    ["-v", "blas", "--threads", str(CORES), "--scheduler", "tcp://[::1]:8786"],
])
def test_what_applies_is_taken(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["run", "-s", "33", "-o", "x.csv", "--dry-run", *args])
    assert result.exit_code == 0, result.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", [
    ["plot", "gflops", "r.csv", "--out", "figures"],
    ["table", "r.csv", "--out", "figures"],
    ["report", "--config", ZOSA, "r.csv", "--out", "figures"],
    ["run", "-v", "blas", "-s", "32", "-o", "new.csv"],
    ["ceilings", "--results", "r.csv"],
])
def test_a_folder_this_user_may_not_write_is_refused_before_anything_runs(workdir, monkeypatch, args):
    """As a read-only folder is to anyone but root (these tests may run as root, whom the
    permissions do not stop): refused in one line before anything is drawn, run or measured."""
    from types import SimpleNamespace

    from mmbench.engine import refusals

    monkeypatch.chdir(workdir)
    monkeypatch.setattr(refusals, "os", SimpleNamespace(access=lambda path, mode: False, W_OK=2))
    before = _snapshot(workdir)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
    assert "cannot be written: no write permission in " in result.output
    assert _snapshot(workdir) == before


@pytest.mark.parametrize("config", sorted((Path(ZOSA).parent).glob("*.toml")), ids=lambda p: p.name)
def test_every_shipped_config_passes_the_checks(tmp_path, monkeypatch, config):
    """What the refusals must never catch: the studies' own configs, as the README runs them."""
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["run", "--config", str(config), "-o", "x.csv", "--dry-run"])
    assert result.exit_code == 0, result.output
