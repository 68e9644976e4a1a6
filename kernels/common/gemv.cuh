// Sørensen 2012's matrix-vector device code, shared by kernels/gemv/sorensen.cu (the paper's
// kernels one by one) and kernels/gemv/tuned.cu (the tuner's kernel): y = A x, A column-major
// m x n (element (i, j) at A[i + j * m]), float32, 1D blocks of BLOCKSIZE threads. Typed (common/
// types.cuh): A, x, y of elem_t, sums in acc_t (float32; float64 at fp64), a workspace of acc_t; Out,
// the type a sum is written as, is elem_t, or acc_t where a narrow y's partial sums are added up first.
#pragma once

#include "common/types.cuh"

#ifndef WORKSIZE_M
#define WORKSIZE_M 1
#endif
#ifndef WORKSIZE_N
#define WORKSIZE_N 1
#endif

// A partial sum added into y: atomically, in the sum's own type (a narrow y's partial sums go into
// a float32 buffer first: the host never has a kernel add into a narrow y).
__device__ __forceinline__ void add_sum(float* y, float s) { atomicAdd(y, s); }
__device__ __forceinline__ void add_sum(double* y, double s) { atomicAdd(y, s); }
template <typename T> __device__ __forceinline__ void add_sum(T* y, acc_t s) { atomicAdd(y, from_acc<T>(s)); }

// Rows r0 + threadIdx.x + w * BLOCKSIZE (w < WM) of y, over columns [c0, c1). Column by column, a
// thread's WM rows are WM independent sums (loads in flight together); rows past m are guarded, not
// left by a break (a break makes acc[] an indexed array in local memory).
template <int WM, typename Out>
__device__ __forceinline__ void gemv_part(const elem_t* __restrict__ A, const elem_t* __restrict__ x,
                                          Out* __restrict__ y, int m, int r0, int c0, int c1, bool add)
{
    __shared__ acc_t xs[BLOCKSIZE];
    acc_t acc[WM];
    bool live[WM];
#pragma unroll
    for (int w = 0; w < WM; ++w) {
        acc[w] = 0;
        live[w] = r0 + threadIdx.x + w * BLOCKSIZE < m;
    }
    const elem_t* a = A + r0 + threadIdx.x;
    for (int c = c0; c < c1; c += BLOCKSIZE) {
        const int len = min(BLOCKSIZE, c1 - c);
        __syncthreads();  // the previous chunk's reads of xs are done
        if (threadIdx.x < len) xs[threadIdx.x] = to_acc(x[c + threadIdx.x]);
        __syncthreads();
        if (len == BLOCKSIZE) {  // the fully tiled part (the paper's device kernel 1)
#pragma unroll 8
            for (int k = 0; k < BLOCKSIZE; ++k) {
                const acc_t xv = xs[k];
                const elem_t* col = a + (size_t)(c + k) * m;
#pragma unroll
                for (int w = 0; w < WM; ++w)
                    if (live[w]) acc[w] = fma_acc(to_acc(col[w * BLOCKSIZE]), xv, acc[w]);
            }
        } else {  // the right rest (device kernel 2)
            for (int k = 0; k < len; ++k) {
                const acc_t xv = xs[k];
                const elem_t* col = a + (size_t)(c + k) * m;
#pragma unroll
                for (int w = 0; w < WM; ++w)
                    if (live[w]) acc[w] = fma_acc(to_acc(col[w * BLOCKSIZE]), xv, acc[w]);
            }
        }
    }
#pragma unroll
    for (int w = 0; w < WM; ++w) {
        if (!live[w]) continue;
        const int r = r0 + threadIdx.x + w * BLOCKSIZE;
        if (add)
            add_sum(&y[r], acc[w]);
        else
            y[r] = from_acc<Out>(acc[w]);
    }
}

// Fig. 2d: WORKSIZE_M rows a thread, WORKSIZE_N x BLOCKSIZE columns a block; adds into y when the
// grid has more than one column of blocks.
template <typename Out>
__device__ __forceinline__ void versatile(const elem_t* __restrict__ A, const elem_t* __restrict__ x,
                                          Out* __restrict__ y, int m, int n)
{
    const int c0 = blockIdx.y * (BLOCKSIZE * WORKSIZE_N);
    gemv_part<WORKSIZE_M>(A, x, y, m, blockIdx.x * (BLOCKSIZE * WORKSIZE_M), c0,
                          min(n, c0 + BLOCKSIZE * WORKSIZE_N), gridDim.y > 1);
}

// Several threads, several columns (Fig. 2e): for short A (m < BLOCKSIZE) the block's threads lie
// along the column-major storage, BLOCKSIZE / m whole columns at a time, so none idles; a block
// takes BLOCKSIZE * WORKSIZE_N columns. Threads of one row add in shared memory, then once per
// block into y. Taller A (m > BLOCKSIZE) falls back to a thread per row over the block's columns.
template <typename Out>
__device__ __forceinline__ void columns(const elem_t* __restrict__ A, const elem_t* __restrict__ x,
                                        Out* __restrict__ y, int m, int n)
{
    __shared__ acc_t xs[BLOCKSIZE * WORKSIZE_N];  // the block's part of x
    __shared__ acc_t ys[BLOCKSIZE];               // a row's sum over the block's threads
    const int c0 = blockIdx.y * (BLOCKSIZE * WORKSIZE_N), c1 = min(n, c0 + BLOCKSIZE * WORKSIZE_N);
    const bool add = gridDim.y > 1;
    for (int i = threadIdx.x; i < c1 - c0; i += BLOCKSIZE) xs[i] = to_acc(x[c0 + i]);
    if (m <= BLOCKSIZE) {
        const int per_step = BLOCKSIZE / m;  // whole columns the block reads at once
        const int q = threadIdx.x / m, r = threadIdx.x % m;
        if (threadIdx.x < m) ys[threadIdx.x] = 0;
        __syncthreads();
        if (q < per_step) {
            acc_t s = 0;  // consecutive threads read consecutive elements of A
            for (int c = c0 + q; c < c1; c += per_step) s = fma_acc(to_acc(A[(size_t)c * m + r]), xs[c - c0], s);
            atomicAdd(&ys[r], s);
        }
        __syncthreads();
        if (threadIdx.x < m) {
            if (add)
                add_sum(&y[threadIdx.x], ys[threadIdx.x]);
            else
                y[threadIdx.x] = from_acc<Out>(ys[threadIdx.x]);
        }
    } else {
        __syncthreads();
        for (int r = threadIdx.x; r < m; r += BLOCKSIZE) {
            acc_t s = 0;
            for (int c = c0; c < c1; ++c) s = fma_acc(to_acc(A[(size_t)c * m + r]), xs[c - c0], s);
            if (add)
                add_sum(&y[r], s);
            else
                y[r] = from_acc<Out>(s);
        }
    }
}

// Beyond the paper, for wide A without atomics: each column of blocks writes its partial sums of
// y into its own row of a workspace W (gridDim.y x m), then the reduction adds W's rows in a
// fixed order, so the result is the same from run to run.
__device__ __forceinline__ void wide(const elem_t* __restrict__ A, const elem_t* __restrict__ x,
                                     acc_t* __restrict__ W, int m, int n)
{
    const int c0 = blockIdx.y * (BLOCKSIZE * WORKSIZE_N);
    gemv_part<WORKSIZE_M>(A, x, W + (size_t)blockIdx.y * m, m, blockIdx.x * (BLOCKSIZE * WORKSIZE_M), c0,
                          min(n, c0 + BLOCKSIZE * WORKSIZE_N), false);
}

__device__ __forceinline__ void reduce_parts(const acc_t* __restrict__ W, elem_t* __restrict__ y, int m, int parts)
{
    const int r = blockIdx.x * BLOCKSIZE + threadIdx.x;
    if (r >= m) return;
    acc_t s = 0;
    for (int p = 0; p < parts; ++p) s += W[(size_t)p * m + r];
    y[r] = from_acc<elem_t>(s);
}

// Beyond the paper, in one launch: as wide(), each column of blocks writes its partial sums into its
// row of the workspace W; then the last block of each row of blocks to finish (an arrival count per
// row of blocks) adds W's rows in a fixed order into y and sets its count back to zero for the next
// launch (CUDA's threadFenceReduction pattern). No atomics on y, so nothing is zeroed inside the
// timed launch, and the result is the same from run to run. The counts sit past the most rows W can
// have (ceil(n / 32): a block covers at least 32 columns), so every configuration finds them at the
// same place; the host zeroes the workspace once.
__device__ __forceinline__ void wide_onepass(const elem_t* __restrict__ A, const elem_t* __restrict__ x,
                                             elem_t* __restrict__ y, acc_t* __restrict__ W, int m, int n)
{
    const int r0 = blockIdx.x * (BLOCKSIZE * WORKSIZE_M), c0 = blockIdx.y * (BLOCKSIZE * WORKSIZE_N);
    const int c1 = min(n, c0 + BLOCKSIZE * WORKSIZE_N);
    if (gridDim.y == 1) {  // one column of blocks: its sums are y
        gemv_part<WORKSIZE_M>(A, x, y, m, r0, c0, c1, false);
        return;
    }
    gemv_part<WORKSIZE_M>(A, x, W + (size_t)blockIdx.y * m, m, r0, c0, c1, false);
    unsigned* arrived = reinterpret_cast<unsigned*>(W + (size_t)m * ((n + 31) / 32)) + blockIdx.x;
    __shared__ bool last;
    __threadfence();  // this block's partial sums are visible to every block before its arrival counts
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(arrived, 1u) == gridDim.y - 1;
    __syncthreads();
    if (!last) return;
#pragma unroll
    for (int w = 0; w < WORKSIZE_M; ++w) {
        const int r = r0 + threadIdx.x + w * BLOCKSIZE;
        if (r >= m) continue;
        acc_t s = 0;
        for (int p = 0; p < gridDim.y; ++p) s += __ldcg(W + (size_t)p * m + r);  // L2: written by other SMs
        y[r] = from_acc<elem_t>(s);
    }
    if (threadIdx.x == 0) *arrived = 0;
}

// The entries' parameters (y is the workspace for the two-launch wide kernel; W the one-pass one's)
#define GEMV_ARGS const elem_t* __restrict__ A, const elem_t* __restrict__ x, elem_t* __restrict__ y, int m, int n
#define REDUCE_ARGS const acc_t* __restrict__ W, elem_t* __restrict__ y, int m, int parts
#define GEMV_WORK_ARGS GEMV_ARGS, acc_t* __restrict__ W
