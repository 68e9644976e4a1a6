// Sørensen 2012's matrix-vector kernels: y = A x, A column-major m x n (element (i, j) at
// A[i + j * m]), float32. Every kernel is a 1D block of BLOCKSIZE threads, each thread owning
// rows of A (consecutive threads on consecutive rows, so every read of A is coalesced), with x
// staged through shared memory in chunks of BLOCKSIZE (read once a block, used by all its rows).
//   gemv_row        one thread per row, all columns (paper Fig. 2a); 1D grid
//   gemv_split      several threads per row: a block does WORKSIZE_N chunks of BLOCKSIZE columns,
//                   partial sums added with atomicAdd (Fig. 2b); 2D grid
//   gemv_rows       several rows per thread: WORKSIZE_M rows BLOCKSIZE apart, all columns (Fig. 2c)
//   gemv_versatile  both at once (Fig. 2d): it is gemv_row at WORKSIZE_M = WORKSIZE_N = 1 on a grid
//                   of one column of blocks, gemv_split at WORKSIZE_M = 1, gemv_rows with one column
//   gemv_columns    several threads, several columns: threads along the storage for short A (Fig. 2e)
//   gemv_wide       beyond the paper: partial sums into a workspace, then gemv_wide_reduce, no atomics
// The fully tiled part of a chunk and its right rest are separate paths (the paper's device
// kernels 1 and 2); rows past m are guarded. With more than one column of blocks (gridDim.y > 1)
// the kernels add into y, which the harness zeroes first inside the timed launch.

#include "common/gemv.cuh"

extern "C" __global__ void __launch_bounds__(BLOCKSIZE) gemv_row(GEMV_ARGS)
{
    gemv_part<1>(A, x, y, m, blockIdx.x * BLOCKSIZE, 0, n, false);
}

extern "C" __global__ void __launch_bounds__(BLOCKSIZE) gemv_split(GEMV_ARGS)
{
    const int c0 = blockIdx.y * (BLOCKSIZE * WORKSIZE_N);
    gemv_part<1>(A, x, y, m, blockIdx.x * BLOCKSIZE, c0, min(n, c0 + BLOCKSIZE * WORKSIZE_N), gridDim.y > 1);
}

extern "C" __global__ void __launch_bounds__(BLOCKSIZE) gemv_rows(GEMV_ARGS)
{
    gemv_part<WORKSIZE_M>(A, x, y, m, blockIdx.x * (BLOCKSIZE * WORKSIZE_M), 0, n, false);
}

extern "C" __global__ void __launch_bounds__(BLOCKSIZE) gemv_versatile(GEMV_ARGS) { versatile(A, x, y, m, n); }

extern "C" __global__ void __launch_bounds__(BLOCKSIZE) gemv_columns(GEMV_ARGS) { columns(A, x, y, m, n); }

extern "C" __global__ void __launch_bounds__(BLOCKSIZE) gemv_wide(GEMV_ARGS) { wide(A, x, y, m, n); }

extern "C" __global__ void __launch_bounds__(BLOCKSIZE) gemv_wide_reduce(REDUCE_ARGS) { reduce_parts(W, y, m, parts); }
