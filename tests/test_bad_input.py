"""Every bad input: one line naming the bad value (and the choices where there are some), exit
status 2, no traceback, and no file in the working folder created or changed."""

import hashlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from mmbench import batched
from mmbench.cli import main
from mmbench.results import write_metadata

ZOSA = str(Path(__file__).resolve().parent.parent / "configs" / "zosa2017.toml")

CASES = [
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
    (["run", "-v", "blas", "-s", "32", "--runs", "0"], "'--runs': 0 is not in the range x>=1"),
    (["run", "-v", "blas", "-s", "32", "--warmup", "-1"], "'--warmup': -1 is not in the range x>=0"),
    (["run", "-v", "blas", "-s", "32", "--threads", "0"], "'--threads': 0 is not in the range x>=1"),
    (["run", "-v", "blas", "-s", "32", "--seed", "x"], "'--seed': 'x' is not a valid integer"),
    (["run", "-v", "blas", "-s", "32", "--bogus"], "No such option '--bogus'"),
    (["run", "-v", "shared", "-s", "33", "--scope", "bogus"], "--scope 'bogus'; choose from: kernel, device, end_to_end"),
    (["run", "-v", "shared", "-s", "33", "--scope", ","], "--scope ',' names no scope; choose from: kernel"),
    (["run", "-v", "transpose_naive", "-s", "33", "--scope", "device"],
     "--scope device: transpose_naive is a transpose, timed only as kernel"),
    (["run", "-v", "gemv_row", "-s", "33", "--pad"], "--pad: gemv_row is a gemv, which has no padding (only GEMM kernels pad)"),
    (["tune", "-v", "shared_padded", "-s", "64", "--engine", "batched", "--strategy", "brute"],
     "shared_padded has no border checks and runs only on padded inputs, which the batched engine does not make"),
    (["run", "--config", ZOSA, "--pad"], "do not combine it with --variant, --sizes, --block, --params, --scope or --pad"),
    (["run", "--config", ZOSA, "--variant", "best"], "do not combine it with --variant"),
    (["run", "--config", "nope.toml"], "nope.toml: no such config file"),
    (["run", "--config", "bad.toml"], "bad.toml: not valid TOML"),
    # run: where to write
    (["run", "-v", "blas", "-s", "32", "--resume"], "--resume needs --output"),
    (["run", "-v", "blas", "-s", "32", "-o", "/proc/nope/x.csv"], "/proc/nope/x.csv"),
    (["run", "-v", "blas", "-s", "32", "-o", "r.csv"], "r.csv already exists; pass --resume"),
    (["run", "-v", "blas", "-s", "32", "-o", "folder"], "'--output' / '-o': File 'folder' is a directory"),
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
    (["tune", "-v", "pipelined", "--strategy", "annealing"], "'--strategy': 'annealing' is not one of 'brute', 'random'"),
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
        Path("t.csv").write_text(",".join(batched.COLUMNS) + "\n")  # a batched tuning from before pruning
        Path("bare.csv").write_text(",".join(batched.COLUMNS) + "\n")  # one whose metadata is lost
        write_metadata(Path("t.csv"), {"settings": {"runs": 1, "warmup": 0, "cache": "cold", "seed": 0},
                                       "tuning": {"tried": 1536}})
        return Path(here)


def test_there_are_at_least_thirty_cases():
    assert len(CASES) >= 30


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
