#!/usr/bin/env bash
# Nsight Compute on the GPU machine: cuBLAS and each dbuf parameter point at one square size, one
# launch each (python3 -m mmbench.launch_once), with the issue, stall, pipe and shared-memory
# metrics of results/tuning/dbuf-frag. Clocks are left alone (--clock-control none).
#   usage: bash scripts/ncu_compare.sh N PARAMS [PARAMS ...]
set -euo pipefail
n=${1:?usage: ncu_compare.sh N PARAMS ...}; shift
metrics=(
  gpu__time_duration.sum
  l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
  l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
  launch__block_size
  launch__grid_size
  launch__occupancy_limit_registers
  launch__occupancy_limit_shared_mem
  launch__registers_per_thread
  launch__shared_mem_per_block_dynamic
  launch__shared_mem_per_block_static
  sm__cycles_elapsed.avg.per_second
  sm__inst_executed_pipe_fma.sum
  sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active
  sm__warps_active.avg.per_cycle_active
  smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio
  smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio
  smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio
  smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio
  smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
  smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio
  smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio
  smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio
  smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio
  smsp__average_warps_issue_stalled_selected_per_issue_active.ratio
  smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio
  smsp__average_warps_issue_stalled_wait_per_issue_active.ratio
  smsp__inst_executed.sum
  smsp__inst_executed_op_global_ld.sum
  smsp__inst_executed_op_shared_ld.sum
  smsp__inst_executed_op_shared_st.sum
  smsp__issue_active.avg.pct_of_peak_sustained_active
)
points=(cublas - "${n}x${n}x${n}")
for p in "$@"; do points+=(dbuf "$p" "${n}x${n}x${n}"); done
ncu --clock-control none --metrics "$(IFS=,; echo "${metrics[*]}")" python3 -m mmbench.launch_once "${points[@]}"
