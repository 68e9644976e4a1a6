// Ladder steps 3 and 4: warp tiling, then a multi-stage cp.async pipeline.
//
// A block of THREADS threads computes a BM x BN tile of C. Each warp owns a WM x WN piece of it,
// walked as WMITER x WNITER sub-tiles of WSUBM x WSUBN; inside a sub-tile each lane holds a
// TM x TN register tile. A warp's lanes thus read a compact patch of shared memory (few bank
// conflicts, good reuse) and each lane's loads feed TM*TN*WMITER*WNITER FMAs per k.
// A is stored transposed (As[k][m]) so lanes read A, like B, as float4s.
//
// warptile loads each k-tile synchronously (float4 global loads when K and N are multiples of 4).
// pipelined keeps STAGES k-tiles in flight with cp.async: while the warps compute tile t, the
// copy engine fills the stages of tiles t+1 .. t+STAGES-1, with one barrier per tile.
// Tunable: BM, BN, BK, WM, WN, WNITER, TM, TN, THREADS (and STAGES for pipelined).
#include "common/unpack.cuh"

#ifndef STAGES
#define STAGES 1
#endif
#define WMITER ((WM * WN) / (32 * TM * TN * WNITER))
#define WSUBM (WM / WMITER)
#define WSUBN (WN / WNITER)

// One k-tile's products for this lane: As is BK x BM, Bs is BK x BN.
__device__ __forceinline__ void warp_tile_mma(const float (*As)[BM], const float (*Bs)[BN],
                                              float acc[WMITER * TM][WNITER * TN], int warp_row, int warp_col,
                                              int lane_row, int lane_col)
{
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
        float ra[WMITER * TM], rb[WNITER * TN];
        // Unpacked by value: taking a register array's address can send it to local memory.
#pragma unroll
        for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                UNPACK4(ra, wm * TM + i, &As[kk][warp_row * WM + wm * WSUBM + lane_row * TM + i]);
            }
#pragma unroll
        for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                UNPACK4(rb, wn * TN + j, &Bs[kk][warp_col * WN + wn * WSUBN + lane_col * TN + j]);
            }
#pragma unroll
        for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
            for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
}

template <bool VEC>
__device__ __forceinline__ void warp_tile_store(float* __restrict__ C, const float acc[WMITER * TM][WNITER * TN],
                                                int M, int N, int row0, int col0, bool inside, int warp_row,
                                                int warp_col, int lane_row, int lane_col)
{
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int r = row0 + warp_row * WM + wm * WSUBM + lane_row * TM + i;
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn) {
                const int c = col0 + warp_col * WN + wn * WSUBN + lane_col * TN;
                const int a = wm * TM + i, b = wn * TN;
                if (VEC && inside) {
#pragma unroll
                    for (int j = 0; j < TN; j += 4)
                        *reinterpret_cast<float4*>(&C[r * N + c + j]) =
                            make_float4(acc[a][b + j], acc[a][b + j + 1], acc[a][b + j + 2], acc[a][b + j + 3]);
                } else {
#pragma unroll
                    for (int j = 0; j < TN; ++j)
                        if (r < M && c + j < N) C[r * N + c + j] = acc[a][b + j];
                }
            }
        }
}

// ---- warptile: synchronous loads ------------------------------------------------------------
template <bool VEC, bool GUARD>
__device__ __forceinline__ void sync_load(const float* __restrict__ A, const float* __restrict__ B,
                                          float (*As)[BM], float (*Bs)[BN], int row0, int col0, int k0,
                                          int M, int N, int K)
{
#pragma unroll
    for (int j = 0; j < BM * BK / 4 / THREADS; ++j) {
        const int i = threadIdx.x + j * THREADS, r = i / (BK / 4), c = (i % (BK / 4)) * 4;
        const int gr = row0 + r, gc = k0 + c;
        float4 v;
        if (VEC && (!GUARD || (gr < M && gc < K))) {
            v = *reinterpret_cast<const float4*>(&A[gr * K + gc]);
        } else {
            v.x = (!GUARD || (gr < M && gc + 0 < K)) ? A[gr * K + gc + 0] : 0.0f;
            v.y = (!GUARD || (gr < M && gc + 1 < K)) ? A[gr * K + gc + 1] : 0.0f;
            v.z = (!GUARD || (gr < M && gc + 2 < K)) ? A[gr * K + gc + 2] : 0.0f;
            v.w = (!GUARD || (gr < M && gc + 3 < K)) ? A[gr * K + gc + 3] : 0.0f;
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
        if (VEC && (!GUARD || (gr < K && gc < N))) {
            v = *reinterpret_cast<const float4*>(&B[gr * N + gc]);
        } else {
            v.x = (!GUARD || (gr < K && gc + 0 < N)) ? B[gr * N + gc + 0] : 0.0f;
            v.y = (!GUARD || (gr < K && gc + 1 < N)) ? B[gr * N + gc + 1] : 0.0f;
            v.z = (!GUARD || (gr < K && gc + 2 < N)) ? B[gr * N + gc + 2] : 0.0f;
            v.w = (!GUARD || (gr < K && gc + 3 < N)) ? B[gr * N + gc + 3] : 0.0f;
        }
        *reinterpret_cast<float4*>(&Bs[r][c]) = v;
    }
}

// Not inlined: with both alignment paths inlined into one kernel, ptxas spills registers.
template <bool VEC>
__device__ __noinline__ void warptile_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                              float* __restrict__ C, int M, int N, int K, float (*As)[BM],
                                              float (*Bs)[BN])
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = warp / (BN / WN), warp_col = warp % (BN / WN);
    const int lane_row = lane / (WSUBN / TN), lane_col = lane % (WSUBN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const bool inside = row0 + BM <= M && col0 + BN <= N;
    float acc[WMITER * TM][WNITER * TN] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        if (inside && k0 + BK <= K)
            sync_load<VEC, false>(A, B, As, Bs, row0, col0, k0, M, N, K);
        else
            sync_load<VEC, true>(A, B, As, Bs, row0, col0, k0, M, N, K);
        __syncthreads();
        warp_tile_mma(As, Bs, acc, warp_row, warp_col, lane_row, lane_col);
        __syncthreads();
    }
    warp_tile_store<VEC>(C, acc, M, N, row0, col0, inside, warp_row, warp_col, lane_row, lane_col);
}

// Shared memory is declared here, once: declared inside the two instantiations it would double.
extern "C" __global__ void __launch_bounds__(THREADS)
warptile(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    __shared__ __align__(16) float As[BK][BM];
    __shared__ __align__(16) float Bs[BK][BN];
    if (((K | N) & 3) == 0)
        warptile_gemm<true>(A, B, C, M, N, K, As, Bs);
    else
        warptile_gemm<false>(A, B, C, M, N, K, As, Bs);
}

// ---- pipelined: cp.async stages -------------------------------------------------------------
#include "common/cp_async.cuh"

// A goes element by element (the copy engine cannot transpose 16-byte chunks); consecutive
// lanes take consecutive rows so the shared-memory writes hit distinct banks. B goes in 16-byte
// chunks when its rows are 16-byte aligned.
template <bool VEC>
__device__ __forceinline__ void async_load(const float* __restrict__ A, const float* __restrict__ B,
                                           float (*As)[BM], float (*Bs)[BN], int row0, int col0, int k0,
                                           int M, int N, int K)
{
#pragma unroll
    for (int j = 0; j < BM * BK / THREADS; ++j) {
        const int i = threadIdx.x + j * THREADS, r = i % BM, c = i / BM;
        const bool ok = row0 + r < M && k0 + c < K;
        cp_async4(&As[c][r], ok ? &A[(row0 + r) * K + k0 + c] : A, ok);
    }
#pragma unroll
    for (int j = 0; j < BK * BN / 4 / THREADS; ++j) {
        const int i = threadIdx.x + j * THREADS, r = i / (BN / 4), c = (i % (BN / 4)) * 4;
        const int gr = k0 + r, gc = col0 + c;
        if (VEC) {
            const bool ok = gr < K && gc < N;
            cp_async16(&Bs[r][c], ok ? &B[gr * N + gc] : B, ok);
        } else {
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const bool ok = gr < K && gc + q < N;
                cp_async4(&Bs[r][c + q], ok ? &B[gr * N + gc + q] : B, ok);
            }
        }
    }
}

// Not inlined: with both alignment paths inlined into one kernel, ptxas spills registers.
template <bool VEC>
__device__ __noinline__ void pipelined_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                               float* __restrict__ C, int M, int N, int K,
                                               float (*As)[BK][BM], float (*Bs)[BK][BN])
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = warp / (BN / WN), warp_col = warp % (BN / WN);
    const int lane_row = lane / (WSUBN / TN), lane_col = lane % (WSUBN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int tiles = (K + BK - 1) / BK;
    float acc[WMITER * TM][WNITER * TN] = {};

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) async_load<VEC>(A, B, As[s], Bs[s], row0, col0, s * BK, M, N, K);
        cp_async_commit();  // empty groups keep the count uniform
    }
    for (int t = 0; t < tiles; ++t) {
        cp_async_wait<STAGES - 2>();
        // Tile t has landed for every thread, and every thread is done with tile t-1's stage,
        // which the load below refills.
        __syncthreads();
        const int next = t + STAGES - 1;
        if (next < tiles) async_load<VEC>(A, B, As[next % STAGES], Bs[next % STAGES], row0, col0, next * BK, M, N, K);
        cp_async_commit();
        warp_tile_mma(As[t % STAGES], Bs[t % STAGES], acc, warp_row, warp_col, lane_row, lane_col);
    }
    const bool inside = row0 + BM <= M && col0 + BN <= N;
    warp_tile_store<VEC>(C, acc, M, N, row0, col0, inside, warp_row, warp_col, lane_row, lane_col);
}

extern "C" __global__ void __launch_bounds__(THREADS)
pipelined(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    __shared__ __align__(16) float As[STAGES][BK][BM];
    __shared__ __align__(16) float Bs[STAGES][BK][BN];
    if (((K | N) & 3) == 0)
        pipelined_gemm<true>(A, B, C, M, N, K, As, Bs);
    else
        pipelined_gemm<false>(A, B, C, M, N, K, As, Bs);
}
