// Ladder step 6: the shape of cuBLAS's own FP32 kernel on sm_80/sm_90 (Nsight Compute names it
// sm80_xmma_gemm_f32f32_..._tilesize256x128x8_stage3_warpsize4x2x1_ffma): STAGES k-tiles in flight
// with cp.async, straight from global to shared memory, with no transposes and no registers on
// the way, so a thread can afford a larger register tile.
//  * A stays as it is in memory (As[m][k], rows padded to BK + 4 floats). A lane reads four
//    consecutive k of one row as a float4 and uses them over four k-steps; B (Bs[k][n]) is read as
//    float4s along n, as in the earlier steps. Both operands come in 16-byte shared loads.
//  * A lane's TM rows are WM / TM apart, so the 8 lanes that read A at once read 8 consecutive rows:
//    with the padding they fall in distinct banks. Its TN columns are TN / 4 float4s, 4 * WN / TN apart.
//  * Shared memory is dynamic (STAGES * (BM * (BK + 4) + BK * BN) floats): three stages of a
//    256 x 128 x 8 tile need 48 KiB and more.
// Borders: cp.async with a source size of 0 writes zeros and reads nothing. Rows that are not
// 16-byte aligned (K or N not a multiple of 4) go element by element (4-byte cp.async).
//  * Split-K (common/split_k.cuh): with SPLITK > 1 the grid has SPLITK layers, each summing its share
//    of the k-tiles and adding its tile into C with atomics, for the sizes whose few tiles leave SMs
//    idle. SPLITK = 1 compiles to the kernel without it.
// Tunable: BM, BN, BK, WM, WN, TM, TN, THREADS, STAGES, SPLITK, MINB (blocks per SM for __launch_bounds__).
#include "common/unpack.cuh"

#define AS_LD (BK + 4)
#define LANE_ROWS (WM / TM)  // lanes along m in a warp; LANE_ROWS * LANE_COLS == 32
#define LANE_COLS (WN / TN)
#define A_STAGE (BM * AS_LD)  // floats of one stage
#define B_STAGE (BK * BN)

#include "common/cp_async.cuh"
#include "common/split_k.cuh"
#include "common/k_range.cuh"

// One k-tile into one stage: 16-byte chunks along k for A and along n for B, consecutive threads
// on consecutive chunks (coalesced), or the same chunks element by element when rows are unaligned.
// K is the rows' length, kend where this layer's k ends (K without split-K).
template <bool VEC>
__device__ __forceinline__ void load_tile(const float* __restrict__ A, const float* __restrict__ B, float* As,
                                          float* Bs, int row0, int col0, int k0, int M, int N, int K, int kend)
{
#pragma unroll
    for (int j = 0; j < BM * BK / 4 / THREADS; ++j) {
        const int i = threadIdx.x + j * THREADS, r = i / (BK / 4), c = (i % (BK / 4)) * 4;
        const int gr = row0 + r, gc = k0 + c;
        if (VEC) {
            const bool ok = gr < M && gc < kend;
            cp_async16(&As[r * AS_LD + c], ok ? &A[gr * K + gc] : A, ok);
        } else {
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const bool ok = gr < M && gc + q < kend;
                cp_async4(&As[r * AS_LD + c + q], ok ? &A[gr * K + gc + q] : A, ok);
            }
        }
    }
#pragma unroll
    for (int j = 0; j < BK * BN / 4 / THREADS; ++j) {
        const int i = threadIdx.x + j * THREADS, r = i / (BN / 4), c = (i % (BN / 4)) * 4;
        const int gr = k0 + r, gc = col0 + c;
        if (VEC) {
            const bool ok = gr < kend && gc < N;
            cp_async16(&Bs[r * BN + c], ok ? &B[gr * N + gc] : B, ok);
        } else {
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const bool ok = gr < kend && gc + q < N;
                cp_async4(&Bs[r * BN + c + q], ok ? &B[gr * N + gc + q] : B, ok);
            }
        }
    }
}

// One k-tile's products for this lane: per group of four k, TM float4s of A (one per row, four k
// each) and, per k, TN / 4 float4s of B.
__device__ __forceinline__ void products(const float* As, const float* Bs, float acc[TM][TN], int am, int bn)
{
#pragma unroll
    for (int kq = 0; kq < BK; kq += 4) {
        float4 a[TM];
#pragma unroll
        for (int i = 0; i < TM; ++i) a[i] = *reinterpret_cast<const float4*>(&As[(am + i * LANE_ROWS) * AS_LD + kq]);
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
            float b[TN];
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                UNPACK4(b, j, &Bs[(kq + kk) * BN + bn + j * LANE_COLS]);
            }
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                const float x = kk == 0 ? a[i].x : kk == 1 ? a[i].y : kk == 2 ? a[i].z : a[i].w;
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(x, b[j], acc[i][j]);
            }
        }
    }
}

// Not inlined: with both alignment paths inlined into one kernel, ptxas spills registers.
template <bool VEC>
__device__ __noinline__ void multistage_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                             float* __restrict__ C, int M, int N, int K K_RANGE_PARAMS, float* smem)
{
    WHOLE_K_RANGE
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = warp / (BN / WN), warp_col = warp % (BN / WN);
    const int am = warp_row * WM + lane / LANE_COLS, bn = warp_col * WN + (lane % LANE_COLS) * 4;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int tiles = (kend - kbegin + BK - 1) / BK;
    float* As = smem;
    float* Bs = smem + STAGES * A_STAGE;
    float acc[TM][TN] = {};

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles)
            load_tile<VEC>(A, B, As + s * A_STAGE, Bs + s * B_STAGE, row0, col0, kbegin + s * BK, M, N, K, kend);
        cp_async_commit();  // empty groups keep the count uniform
    }
    for (int t = 0; t < tiles; ++t) {
        cp_async_wait<STAGES - 2>();
        // Tile t has landed for every thread, and every thread is done with tile t-1's stage,
        // which the load below refills.
        __syncthreads();
        const int next = t + STAGES - 1, s = next % STAGES;
        if (next < tiles)
            load_tile<VEC>(A, B, As + s * A_STAGE, Bs + s * B_STAGE, row0, col0, kbegin + next * BK, M, N, K, kend);
        cp_async_commit();
        products(As + (t % STAGES) * A_STAGE, Bs + (t % STAGES) * B_STAGE, acc, am, bn);
    }
    const bool fast = VEC && row0 + BM <= M && col0 + BN <= N;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = row0 + am + i * LANE_ROWS;
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            const int c = col0 + bn + j * LANE_COLS;
            if (fast) {
                put4(&C[r * N + c], make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]), SPLITK > 1);
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    if (r < M && c + q < N) put1(&C[r * N + c + q], acc[i][j + q], SPLITK > 1);
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
multistage(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    extern __shared__ __align__(16) float smem[];
    LAYER_OR_RETURN
    if (((K | N) & 3) == 0)
        multistage_gemm<true>(A, B, C, M, N, K K_RANGE_ARGS, smem);
    else
        multistage_gemm<false>(A, B, C, M, N, K K_RANGE_ARGS, smem);
}
