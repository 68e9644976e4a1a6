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
