"""The memory-hierarchy section every study's report builds with common.hierarchy_section, pinned
on a hand-made profile: the heading, the study's paragraphs, its level tables (which kernels, at
which shapes, in its words) and other blocks as given, and one line where the profile cannot serve."""

import pytest

from mmbench.results import ResultsError
from mmbench.studies.common import HIERARCHY_HEADING, LevelTable, hierarchy_section
from test_hierarchy import a_profile

# two kernels past a 4096 shape and one at 1024 (times in ns, FLOPs, then bytes at shared, L1, L2, DRAM)
PROFILE = a_profile(("best", "BLOCK=32", 4096, 4096, 1e6, 32e9, 8e9, 6.4e9, 16e9, 1e9),
                    ("naive", "BLOCK=32", 4096, 4096, 4e6, 32e9, 0.0, 64e9, 16e9, 4e9),
                    ("best", "BLOCK=32", 1024, 1024, 1e5, 2e9, 2.4e9, 1e9, 1e8, 1.2e7))
COLUMNS = ("GFLOP/s | shared memory: intensity, % of peak | L1 (global, local): intensity, % of peak | "
           "L2: intensity, % of peak | DRAM: intensity, % of peak | closest roof |")


def test_the_section_is_the_heading_then_each_part_and_a_blank_line():
    def parts(table):
        past = table[table.m == 4096]
        return [f"{len(past)} kernels at 4096; the closest roof of the first: {past.bound.iloc[0]}.",
                LevelTable("**At 4096:**", [(4096, 4096, 4096)], name=lambda row, label: f"{row.variant}: {label}"),
                LevelTable("CUDA-Best at both sizes:", [(1024, 1024, 1024), (4096, 4096, 4096)], ["best"],
                           name=lambda row, label: f"{row.m}: {label}", column="size: kernel"),
                ["| another | table |", "|---|---|"]]

    assert hierarchy_section(PROFILE, parts, "`mmbench profile`") == [
        HIERARCHY_HEADING, "",
        "2 kernels at 4096; the closest roof of the first: l2.", "",
        "**At 4096:**", "",
        f"| kernel | {COLUMNS}", "|---|---|---|---|---|---|---|",
        "| best: CUDA-Best (32x32) | 32,000 | 4.0 FLOP/B, 25 % | 5.0 FLOP/B, 20 % | 2.0 FLOP/B, 100 % | "
        "32.0 FLOP/B, 25 % | L2 |",
        "| naive: CUDA-Naive (32x32) | 8,000 | - | 0.5 FLOP/B, 50 % | 2.0 FLOP/B, 25 % | 8.0 FLOP/B, 25 % | "
        "L1 (global, local) |", "",
        "CUDA-Best at both sizes:", "",
        f"| size: kernel | {COLUMNS}", "|---|---|---|---|---|---|---|",
        "| 1024: CUDA-Best (32x32) | 20,000 | 0.8 FLOP/B, 75 % | 2.0 FLOP/B, 31 % | 20.0 FLOP/B, 6 % | "
        "166.7 FLOP/B, 3 % | shared memory |",
        "| 4096: CUDA-Best (32x32) | 32,000 | 4.0 FLOP/B, 25 % | 5.0 FLOP/B, 20 % | 2.0 FLOP/B, 100 % | "
        "32.0 FLOP/B, 25 % | L2 |", "",
        "| another | table |", "|---|---|", ""]


@pytest.mark.parametrize("profile, why", [
    (None, "no Nsight Compute profile beside these results (`mmbench profile`)"),
    (PROFILE.drop(columns="l2_bytes"), "the profile beside these results predates the hierarchical counts (no "
                                       "l2_bytes): `mmbench profile` again")])
def test_without_a_usable_profile_one_line_says_why_and_what_would_take_one(profile, why):
    assert hierarchy_section(profile, lambda table: ["never said"], "`mmbench profile --points 4096`") == [
        HIERARCHY_HEADING, "", f"No hierarchy: {why}. It takes `mmbench profile --points 4096`.", ""]


def test_parts_that_find_the_profile_lacks_their_kernels_say_so_in_that_line():
    def parts(table):
        raise ResultsError("the profile beside this run has no gemv_tuned")

    assert hierarchy_section(PROFILE, parts, "`mmbench profile -v gemv_tuned`")[2] == (
        "No hierarchy: the profile beside this run has no gemv_tuned. It takes `mmbench profile -v gemv_tuned`.")
