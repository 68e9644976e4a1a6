"""Zosa 2017's numbers: the sizes of its Table 1 and Figure 1, what its text says in numbers (Table 1's
own values are the config's [reference]) and its GPU's (the GK210's) limits. Read by the claims, the
figures and the report."""

from __future__ import annotations

TABLE1_SIZES = [256, 512, 768, 1023, 1024, 1025, 2047, 2048, 2049]
FIG1_SIZES = (256, 512, 1024, 2048)  # the paper's block-size comparison (section 2.10)


# What the paper says in numbers that are not in its Table 1 (the config's [reference] holds those).
PAPER = {"peak_gflops": 480, "target_gflops": 360,  # abstract
         "shared_over_naive": 2.0, "shared_gflops": 200,  # section 3.3.1: "more than double the naive version"
         "unroll_gain_gflops": 20,  # sections 3 and 3.3.4: C_Unroll "about 20 Gflops/s" over CUDA-1
         "best_over_interleaved": 2.0,  # section 3.3.6: "another doubling of performance (about 480)"
         "uncoalesced_crossover_n": 512,  # section 3: 1u "overtaken by multi-core BLAS for matrices greater than 512"
         "unroll_global_loads": 0.5, "four_output_global_loads": 0.25,  # sections 2.7.1, 2.7.2: "halve", "quarter"
         "four_output_shared_loads": 0.5,  # section 2.7.2: each output's loads "from 2n to n"
         "registers": 55, "occupancy": 1.0, "shared_bytes_per_thread": 32,  # section 2.9, ptxas on the K80
         "default_shared_per_block": 48 * 1024}  # section 3.2's "maximum default shared memory limit" (CUDA's 48 KB)
GK210 = {"registers": 128 * 1024, "registers_per_block": 64 * 1024, "shared": 112 * 1024, "threads": 2048}  # section 2.9
