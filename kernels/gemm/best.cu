// CUDA-Best (Zosa 2017, Algorithm 3 and section 2.7.2): each thread computes four outputs a
// block apart, (r, c), (r, c+BLOCK), (r+BLOCK, c), (r+BLOCK, c+BLOCK), so every operand it
// reads from shared memory feeds two FMAs instead of one. A thread block covers a
// 2*BLOCK x 2*BLOCK tile of C. Tunable: BLOCK.
//
// best keeps the paper's robust tile bound min(blockDim.x, BLOCK) (section 2.5), a run-time
// value the compiler cannot unroll over; best_const is the paper's final version, which
// assumes blockDim == BLOCK and drops the min().

template <bool ROBUST>
__device__ __forceinline__ void best_tiles(const float* __restrict__ A,
                                           const float* __restrict__ B,
                                           float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[2][BLOCK][BLOCK];
    __shared__ float Bs[2][BLOCK][BLOCK];
    const int tile = ROBUST ? min((int)blockDim.x, BLOCK) : BLOCK;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row0 = blockIdx.y * 2 * tile + ty, row1 = row0 + tile;
    const int col0 = blockIdx.x * 2 * tile + tx, col1 = col0 + tile;
    float c00 = 0.0f, c01 = 0.0f, c10 = 0.0f, c11 = 0.0f;
    for (int k0 = 0; k0 < K; k0 += tile) {
        const int ka = k0 + tx, kb = k0 + ty;
        As[0][ty][tx] = (row0 < M && ka < K) ? A[row0 * K + ka] : 0.0f;
        As[1][ty][tx] = (row1 < M && ka < K) ? A[row1 * K + ka] : 0.0f;
        Bs[0][ty][tx] = (kb < K && col0 < N) ? B[kb * N + col0] : 0.0f;
        Bs[1][ty][tx] = (kb < K && col1 < N) ? B[kb * N + col1] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < tile; ++kk) {
            const float a0 = As[0][ty][kk], a1 = As[1][ty][kk];
            const float b0 = Bs[0][kk][tx], b1 = Bs[1][kk][tx];
            c00 += a0 * b0;
            c01 += a0 * b1;
            c10 += a1 * b0;
            c11 += a1 * b1;
        }
        __syncthreads();
    }
    if (row0 < M && col0 < N) C[row0 * N + col0] = c00;
    if (row0 < M && col1 < N) C[row0 * N + col1] = c01;
    if (row1 < M && col0 < N) C[row1 * N + col0] = c10;
    if (row1 < M && col1 < N) C[row1 * N + col1] = c11;
}

extern "C" __global__ void __launch_bounds__(BLOCK * BLOCK)
best(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
     int M, int N, int K)
{
    best_tiles<true>(A, B, C, M, N, K);
}

extern "C" __global__ void __launch_bounds__(BLOCK * BLOCK)
best_const(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
           int M, int N, int K)
{
    best_tiles<false>(A, B, C, M, N, K);
}
