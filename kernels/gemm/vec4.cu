// Ladder step 2: step 1 plus 16-byte accesses. The A tile is stored transposed in shared memory
// (As[k][m]) so a thread reads its TM values of A, like its TN values of B, as float4s; global
// loads are float4 too when every row starts 16-byte aligned (K and N multiples of 4), else
// scalar. Interior tiles skip bounds tests. Tunable: BM, BN, BK, TM, TN (TM, TN multiples of 4).
#include "common/unpack.cuh"
#define THREADS ((BM / TM) * (BN / TN))

template <bool VEC, bool GUARD>
__device__ __forceinline__ void vec4_load(const float* __restrict__ A, const float* __restrict__ B,
                                          float (*As)[BM], float (*Bs)[BN],
                                          int row0, int col0, int k0, int M, int N, int K)
{
#pragma unroll
    for (int j = 0; j < BM * BK / 4 / THREADS; ++j) {
        const int i = threadIdx.x + j * THREADS, r = i / (BK / 4), c = (i % (BK / 4)) * 4;
        const int gr = row0 + r, gc = k0 + c;
        float4 v;
        if (VEC) {  // K % 4 == 0: a float4 lies wholly inside or wholly outside the matrix
            v = (!GUARD || (gr < M && gc < K)) ? *reinterpret_cast<const float4*>(&A[gr * K + gc])
                                               : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        } else {
            const bool row_ok = !GUARD || gr < M;
            v.x = (row_ok && (!GUARD || gc + 0 < K)) ? A[gr * K + gc + 0] : 0.0f;
            v.y = (row_ok && (!GUARD || gc + 1 < K)) ? A[gr * K + gc + 1] : 0.0f;
            v.z = (row_ok && (!GUARD || gc + 2 < K)) ? A[gr * K + gc + 2] : 0.0f;
            v.w = (row_ok && (!GUARD || gc + 3 < K)) ? A[gr * K + gc + 3] : 0.0f;
        }
        As[c + 0][r] = v.x;
        As[c + 1][r] = v.y;
        As[c + 2][r] = v.z;
        As[c + 3][r] = v.w;
    }
#pragma unroll
    for (int j = 0; j < BK * BN / 4 / THREADS; ++j) {
        const int i = threadIdx.x + j * THREADS, r = i / (BN / 4), c = (i % (BN / 4)) * 4;
        const int gr = k0 + r, gc = col0 + c;
        float4 v;
        if (VEC) {
            v = (!GUARD || (gr < K && gc < N)) ? *reinterpret_cast<const float4*>(&B[gr * N + gc])
                                               : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        } else {
            const bool row_ok = !GUARD || gr < K;
            v.x = (row_ok && (!GUARD || gc + 0 < N)) ? B[gr * N + gc + 0] : 0.0f;
            v.y = (row_ok && (!GUARD || gc + 1 < N)) ? B[gr * N + gc + 1] : 0.0f;
            v.z = (row_ok && (!GUARD || gc + 2 < N)) ? B[gr * N + gc + 2] : 0.0f;
            v.w = (row_ok && (!GUARD || gc + 3 < N)) ? B[gr * N + gc + 3] : 0.0f;
        }
        *reinterpret_cast<float4*>(&Bs[r][c]) = v;
    }
}

// Not inlined: with both alignment paths inlined into one kernel, ptxas spills registers.
template <bool VEC>
__device__ __noinline__ void vec4_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                          float* __restrict__ C, int M, int N, int K, float (*As)[BM],
                                          float (*Bs)[BN])
{
    const int ty = threadIdx.x / (BN / TN), tx = threadIdx.x % (BN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const bool inside = row0 + BM <= M && col0 + BN <= N;
    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        if (inside && k0 + BK <= K)
            vec4_load<VEC, false>(A, B, As, Bs, row0, col0, k0, M, N, K);
        else
            vec4_load<VEC, true>(A, B, As, Bs, row0, col0, k0, M, N, K);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float ra[TM], rb[TN];
            // Unpacked by value: taking a register array's address can send it to local memory.
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                UNPACK4(ra, i, &As[kk][ty * TM + i]);
            }
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                UNPACK4(rb, j, &Bs[kk][tx * TN + j]);
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = row0 + ty * TM + i, c = col0 + tx * TN;
        if (VEC && inside) {
#pragma unroll
            for (int j = 0; j < TN; j += 4)
                *reinterpret_cast<float4*>(&C[r * N + c + j]) = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
        } else {
#pragma unroll
            for (int j = 0; j < TN; ++j)
                if (r < M && c + j < N) C[r * N + c + j] = acc[i][j];
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
vec4(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    // Declared once here (inside both instantiations it would double); the branch is uniform
    // across the grid.
    __shared__ __align__(16) float As[BK][BM];
    __shared__ __align__(16) float Bs[BK][BN];
    if (((K | N) & 3) == 0)
        vec4_gemm<true>(A, B, C, M, N, K, As, Bs);
    else
        vec4_gemm<false>(A, B, C, M, N, K, As, Bs);
}
