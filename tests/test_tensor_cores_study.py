"""The tensor-cores study's judgements from the committed H100 run, and its profile section."""

from pathlib import Path

import numpy as np
import pandas as pd

from mmbench import analysis
from mmbench.results import read_results
from mmbench.studies import tensor_cores as tc

RUN = Path(__file__).resolve().parent.parent / tc.REFERENCE_RUN


def _pct():
    return tc.compared(analysis.ok_rows(read_results(RUN)))


def test_the_bf16_targets_are_the_fastest_of_ours_over_cublaslt_at_multiples_of_128_from_2048():
    pct = _pct()
    best = tc.fastest(pct, "bf16")
    judged = tc._target_sizes(best)
    assert len(judged) == 57 and judged.index.min() == 2048 and (judged.index % 128 == 0).all()
    # the row's percent is the fastest step's median GFLOP/s over cuBLASLt's, same shape, same run
    row = pct[(pct.m == 8192) & (pct.n == 8192) & (pct.k == 8192) & (pct.dtype == "bf16")]
    assert best.percent[8192] == row.percent.max()
    rows = {r[0][:20]: r for r in tc.target_rows(pct)}
    assert rows["BF16, each size of t"][1:] == ["worst 85.5 % at 2560; 48 of 57 sizes", "not met"]
    geo = float(np.exp(np.log(judged.percent / 100).mean()))
    assert rows["BF16, geometric mean"][1:] == [f"{geo:.3f}", "not met"] and f"{geo:.3f}" == "0.977"
    assert rows["BF16 at 8192: >= 100"][1:] == ["100.1 % (tc_tiles)", "met"]
    assert rows["FP8 e4m3, 4096 to 16"][1:] == ["worst 97.0 % at 5120", "met"]


def test_where_each_step_loses_reads_the_larger_tensor_pipe_and_the_two_worst_stalls():
    profile = pd.DataFrame([
        {"variant": "tc_tiles", "m": 8192, "n": 8192, "k": 8192, "tensor_hmma_pct": 0.0, "tensor_gmma_pct": 91.25,
         "conflicts_per_shared_ld": np.nan, "long_scoreboard_stall_per_issue": 0.5, "wait_stall_per_issue": 2.0,
         "sleeping_stall_per_issue": 1.0},
        {"variant": "tc_mma", "m": 8192, "n": 8192, "k": 8192, "tensor_hmma_pct": 40.0, "tensor_gmma_pct": 0.0,
         "conflicts_per_shared_ld": 0.125, "barrier_stall_per_issue": 3.0, "long_scoreboard_stall_per_issue": 1.5},
        {"variant": "cublas", "m": 8192, "n": 8192, "k": 8192, "tensor_gmma_pct": 95.0},
    ])
    assert tc.loss_rows(profile) == [
        ["tc_mma", "8192x8192x8192", "40.0 %", "0.12", "barrier 3.00, memory 1.50"],
        ["tc_tiles", "8192x8192x8192", "91.2 %", "-", "fixed latency 2.00, sleeping 1.00"]]
    assert tc.loss_rows(None) == [] and tc.loss_rows(profile.drop(columns="tensor_gmma_pct")) == []
    assert "mmbench profile --config configs/tensor-cores.toml --points 8192" in tc.loss_lines(None, RUN)[0]


def test_an_awkward_shape_says_what_ran_as_given_and_what_ran_padded():
    """4095 at BF16 in the committed run: every step skips it as given (k % 8), runs it padded (device
    scope, the padding timed); the fastest of ours is a padded one, its GFLOP/s (of the shape as given)
    over cuBLASLt's on the shape as given."""
    df = read_results(RUN)
    rows = {(r[0], r[1]): r for r in tc.awkward_rows(df, _pct())}
    row = rows[("4095x4095x4095", "bf16")]
    assert row[2:4] == ["none (each requires k % 8 == 0)", "7 of 7"]
    at = df[(df.m == 4095) & (df.dtype == "bf16") & (df.status == "ok")]
    ours = at[(at.pad == 1)].set_index("variant").gflops_median
    library = at[(at.variant == "cublas") & (at.scope == "kernel")].gflops_median.iloc[0]
    assert row[4] == f"{100 * ours.max() / library:.1f} % ({ours.idxmax()} padded)" and row[5] == "met"
    # FP8: cuBLASLt takes none of the awkward shapes, so a padded step has nothing to be judged against
    assert rows[("4095x4095x4095", "fp8e4m3")][3:] == ["1 of 1", "-", "-"]
    # a run without padded rows keeps the column, empty
    plain = df[df.pad == 0]
    assert {(r[0], r[1]): r for r in tc.awkward_rows(plain, _pct())}[("4095x4095x4095", "bf16")][3:] == ["-", "-", "-"]
