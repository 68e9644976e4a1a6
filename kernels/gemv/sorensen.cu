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
// The fully tiled part of a chunk and its right rest are separate paths (the paper's device
// kernels 1 and 2); rows past m are guarded. With more than one column of blocks (gridDim.y > 1)
// the kernels add into y, which the harness zeroes first inside the timed launch.

#ifndef WORKSIZE_M
#define WORKSIZE_M 1
#endif
#ifndef WORKSIZE_N
#define WORKSIZE_N 1
#endif

// Rows r0 + threadIdx.x + w * BLOCKSIZE (w < WM) of y, over columns [c0, c1).
template <int WM>
__device__ __forceinline__ void gemv_part(const float* __restrict__ A, const float* __restrict__ x,
                                          float* __restrict__ y, int m, int r0, int c0, int c1, bool add)
{
    __shared__ float xs[BLOCKSIZE];
    float acc[WM];
#pragma unroll
    for (int w = 0; w < WM; ++w) acc[w] = 0.0f;
    for (int c = c0; c < c1; c += BLOCKSIZE) {
        const int len = min(BLOCKSIZE, c1 - c);
        __syncthreads();  // the previous chunk's reads of xs are done
        if (threadIdx.x < len) xs[threadIdx.x] = x[c + threadIdx.x];
        __syncthreads();
#pragma unroll
        for (int w = 0; w < WM; ++w) {
            const int r = r0 + threadIdx.x + w * BLOCKSIZE;
            if (r >= m) break;
            const float* col = A + (size_t)c * m + r;
            float s = 0.0f;
            if (len == BLOCKSIZE) {  // the fully tiled part
#pragma unroll 8
                for (int k = 0; k < BLOCKSIZE; ++k) s = fmaf(col[(size_t)k * m], xs[k], s);
            } else {  // the right rest
                for (int k = 0; k < len; ++k) s = fmaf(col[(size_t)k * m], xs[k], s);
            }
            acc[w] += s;
        }
    }
#pragma unroll
    for (int w = 0; w < WM; ++w) {
        const int r = r0 + threadIdx.x + w * BLOCKSIZE;
        if (r >= m) break;
        if (add)
            atomicAdd(&y[r], acc[w]);
        else
            y[r] = acc[w];
    }
}

extern "C" __global__ void __launch_bounds__(BLOCKSIZE)
gemv_row(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y, int m, int n)
{
    gemv_part<1>(A, x, y, m, blockIdx.x * BLOCKSIZE, 0, n, false);
}

extern "C" __global__ void __launch_bounds__(BLOCKSIZE)
gemv_split(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y, int m, int n)
{
    const int c0 = blockIdx.y * (BLOCKSIZE * WORKSIZE_N);
    gemv_part<1>(A, x, y, m, blockIdx.x * BLOCKSIZE, c0, min(n, c0 + BLOCKSIZE * WORKSIZE_N), gridDim.y > 1);
}

extern "C" __global__ void __launch_bounds__(BLOCKSIZE)
gemv_rows(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y, int m, int n)
{
    gemv_part<WORKSIZE_M>(A, x, y, m, blockIdx.x * (BLOCKSIZE * WORKSIZE_M), 0, n, false);
}

extern "C" __global__ void __launch_bounds__(BLOCKSIZE)
gemv_versatile(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y, int m, int n)
{
    const int c0 = blockIdx.y * (BLOCKSIZE * WORKSIZE_N);
    gemv_part<WORKSIZE_M>(A, x, y, m, blockIdx.x * (BLOCKSIZE * WORKSIZE_M), c0,
                          min(n, c0 + BLOCKSIZE * WORKSIZE_N), gridDim.y > 1);
}

// Several threads, several columns (Fig. 2e): for short A (m < BLOCKSIZE) the block's threads lie
// along the column-major storage, BLOCKSIZE / m whole columns at a time, so none idles; a block
// takes BLOCKSIZE * WORKSIZE_N columns. Threads of one row add in shared memory, then once per
// block into y. Taller A (m > BLOCKSIZE) falls back to a thread per row over the block's columns.
extern "C" __global__ void __launch_bounds__(BLOCKSIZE)
gemv_columns(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y, int m, int n)
{
    __shared__ float xs[BLOCKSIZE * WORKSIZE_N];  // the block's part of x
    __shared__ float ys[BLOCKSIZE];               // a row's sum over the block's threads
    const int c0 = blockIdx.y * (BLOCKSIZE * WORKSIZE_N), c1 = min(n, c0 + BLOCKSIZE * WORKSIZE_N);
    const bool add = gridDim.y > 1;
    for (int i = threadIdx.x; i < c1 - c0; i += BLOCKSIZE) xs[i] = x[c0 + i];
    if (m <= BLOCKSIZE) {
        const int per_step = BLOCKSIZE / m;  // whole columns the block reads at once
        const int q = threadIdx.x / m, r = threadIdx.x % m;
        if (threadIdx.x < m) ys[threadIdx.x] = 0.0f;
        __syncthreads();
        if (q < per_step) {
            float s = 0.0f;  // consecutive threads read consecutive floats of A
            for (int c = c0 + q; c < c1; c += per_step) s = fmaf(A[(size_t)c * m + r], xs[c - c0], s);
            atomicAdd(&ys[r], s);
        }
        __syncthreads();
        if (threadIdx.x < m) {
            if (add)
                atomicAdd(&y[threadIdx.x], ys[threadIdx.x]);
            else
                y[threadIdx.x] = ys[threadIdx.x];
        }
    } else {
        __syncthreads();
        for (int r = threadIdx.x; r < m; r += BLOCKSIZE) {
            float s = 0.0f;
            for (int c = c0; c < c1; ++c) s = fmaf(A[(size_t)c * m + r], xs[c - c0], s);
            if (add)
                atomicAdd(&y[r], s);
            else
                y[r] = s;
        }
    }
}

// Beyond the paper, for wide A without atomics: each column of blocks writes its partial sums of
// y into its own row of a workspace W (gridDim.y x m), then gemv_wide_reduce adds W's rows in a
// fixed order, so the result is the same from run to run.
extern "C" __global__ void __launch_bounds__(BLOCKSIZE)
gemv_wide(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ W, int m, int n)
{
    const int c0 = blockIdx.y * (BLOCKSIZE * WORKSIZE_N);
    gemv_part<WORKSIZE_M>(A, x, W + (size_t)blockIdx.y * m, m, blockIdx.x * (BLOCKSIZE * WORKSIZE_M), c0,
                          min(n, c0 + BLOCKSIZE * WORKSIZE_N), false);
}

extern "C" __global__ void __launch_bounds__(BLOCKSIZE)
gemv_wide_reduce(const float* __restrict__ W, float* __restrict__ y, int m, int parts)
{
    const int r = blockIdx.x * BLOCKSIZE + threadIdx.x;
    if (r >= m) return;
    float s = 0.0f;
    for (int p = 0; p < parts; ++p) s += W[(size_t)p * m + r];
    y[r] = s;
}
