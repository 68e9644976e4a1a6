// The tuner's GEMV kernel: KERNEL chooses the design among the three the mesh tuning explores, as
// Sørensen's tuner chooses among its 3 implementations (0: the versatile kernel of Fig. 2d, which
// contains Fig. 2a-c; 1: several threads, several columns, Fig. 2e; 2: wide without atomics, partial
// sums in the workspace W added by the last block of each row of blocks, in one launch), with
// BLOCKSIZE, WORKSIZE_M and WORKSIZE_N. Its own file, so a configuration compiles only this entry
// (1536 of them are built for a mesh). Typed (common/types.cuh): at fp16 and bf16, designs 0 and 1
// add their partial sums into W's first m float32 words instead of y, and gemv_tuned_store rounds
// them into y once.

#ifndef KERNEL
#define KERNEL 0
#endif

#include "common/gemv.cuh"

extern "C" __global__ void __launch_bounds__(BLOCKSIZE) gemv_tuned(GEMV_WORK_ARGS)
{
#if KERNEL == 2
    wide_onepass(A, x, y, W, m, n);
#elif NARROW
    if (gridDim.y > 1) {  // partial sums: added up in float32
        if (KERNEL == 0) versatile(A, x, W, m, n); else columns(A, x, W, m, n);
    } else {
        if (KERNEL == 0) versatile(A, x, y, m, n); else columns(A, x, y, m, n);
    }
#elif KERNEL == 0
    versatile(A, x, y, m, n);
#else
    columns(A, x, y, m, n);
#endif
}

#if NARROW
extern "C" __global__ void __launch_bounds__(BLOCKSIZE) gemv_tuned_store(const acc_t* __restrict__ W,
                                                                         elem_t* __restrict__ y, int m)
{
    reduce_parts(W, y, m, 1);
}
#endif
