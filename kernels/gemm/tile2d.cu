// Ladder step 1 beyond the paper: 2D block tiling with per-thread register tiles. A block of
// (BM/TM)*(BN/TN) threads computes a BM x BN tile of C; each thread a TM x TN sub-tile held in
// registers, so each value it reads from shared memory feeds TN (or TM) FMAs, against two for
// CUDA-Best. Tunable: BM, BN, BK, TM, TN.
#define THREADS ((BM / TM) * (BN / TN))

// Interior tiles load without bounds tests; only border tiles pay for them.
template <bool GUARD>
__device__ __forceinline__ void tile2d_load(const float* __restrict__ A, const float* __restrict__ B,
                                            float (*As)[BK], float (*Bs)[BN],
                                            int row0, int col0, int k0, int M, int N, int K)
{
#pragma unroll
    for (int j = 0; j < BM * BK / THREADS; ++j) {
        const int i = threadIdx.x + j * THREADS, r = i / BK, c = i % BK;
        As[r][c] = (!GUARD || (row0 + r < M && k0 + c < K)) ? A[(row0 + r) * K + k0 + c] : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < BK * BN / THREADS; ++j) {
        const int i = threadIdx.x + j * THREADS, r = i / BN, c = i % BN;
        Bs[r][c] = (!GUARD || (k0 + r < K && col0 + c < N)) ? B[(k0 + r) * N + col0 + c] : 0.0f;
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
tile2d(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    const int ty = threadIdx.x / (BN / TN), tx = threadIdx.x % (BN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const bool inside = row0 + BM <= M && col0 + BN <= N;
    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        if (inside && k0 + BK <= K)
            tile2d_load<false>(A, B, As, Bs, row0, col0, k0, M, N, K);
        else
            tile2d_load<true>(A, B, As, Bs, row0, col0, k0, M, N, K);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float ra[TM], rb[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) ra[i] = As[ty * TM + i][kk];
#pragma unroll
            for (int j = 0; j < TN; ++j) rb[j] = Bs[kk][tx * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int r = row0 + ty * TM + i, c = col0 + tx * TN + j;
            if (inside || (r < M && c < N)) C[r * N + c] = acc[i][j];
        }
}
