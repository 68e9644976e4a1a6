// kmajor: the shape of CUTLASS's SIMT kernel that cuBLAS runs from 1951 to 2048 on Hopper
// (cutlass_80_simt_sgemm_256x128_8x4_..._align1): every operand element copied by cp.async, A transposed
// on the way (As[k][m], so a lane reads its rows of one k as float4s, as it reads B's columns), STAGES
// k-tiles in flight, and the fragments of the next k read while this k's products run, across the k-tile's
// barrier too (the next k-tile's first fragments are read before its last products).
//  * A lane's TM x TN tile is blocks of 4 x 4: its rows lie in TM / 4 groups of 4, 4 * LANE_ROWS rows apart,
//    its columns in TN / 4 groups 4 * LANE_COLS apart, so the lanes of a warp read distinct float4s of
//    a k-row of each operand in one pass (no bank conflicts).
//  * A's elements come 4 bytes at a time whatever its alignment (a warp copies BK-long runs of 32 / BK rows
//    into 32 distinct banks: As rows are padded to BM + 4 floats); B's 16 bytes at a time where its rows
//    are 16-byte aligned (N a multiple of 4), else 4. So an unaligned shape costs only B's and C's wider
//    traffic (cuBLAS's kernel loses 1.2 % from 2048 to 2047).
// Borders: a cp.async with source size 0 writes zeros. Split-K (common/split_k.cuh) as multistage's.
// Tunable: BM, BN, BK, WM, WN, TM, TN, THREADS, STAGES, SPLITK, MINB.
#define LANE_ROWS (WM / TM)  // lanes along m in a warp; LANE_ROWS * LANE_COLS == 32
#define LANE_COLS (WN / TN)
#define AS_LD (BM + 4)
#define A_STAGE (BK * AS_LD)
#define B_STAGE (BK * BN)

#include "common/cp_async.cuh"
#include "common/split_k.cuh"

// One k-tile into one stage. A: element e of the tile is row e / BK, k e % BK (a warp reads whole runs
// of k); B: 16-byte chunks along n (VEC), or elements.
template <bool VEC>
__device__ __forceinline__ void load_tile(const float* __restrict__ A, const float* __restrict__ B, float* As,
                                          float* Bs, int row0, int col0, int k0, int M, int N, int K, int kend)
{
#pragma unroll
    for (int j = 0; j < BM * BK / THREADS; ++j) {
        const int e = threadIdx.x + j * THREADS, r = e / BK, c = e % BK;
        const int gr = row0 + r, gk = k0 + c;
        const bool ok = gr < M && gk < kend;
        cp_async4(&As[c * AS_LD + r], ok ? &A[static_cast<long long>(gr) * K + gk] : A, ok);
    }
    if (VEC) {
#pragma unroll
        for (int j = 0; j < BK * BN / 4 / THREADS; ++j) {
            const int e = threadIdx.x + j * THREADS, r = e / (BN / 4), c = (e % (BN / 4)) * 4;
            const int gk = k0 + r, gc = col0 + c;
            const bool ok = gk < kend && gc < N;
            cp_async16(&Bs[r * BN + c], ok ? &B[static_cast<long long>(gk) * N + gc] : B, ok);
        }
    } else {
#pragma unroll
        for (int j = 0; j < BK * BN / THREADS; ++j) {
            const int e = threadIdx.x + j * THREADS, r = e / BN, c = e % BN;
            const int gk = k0 + r, gc = col0 + c;
            const bool ok = gk < kend && gc < N;
            cp_async4(&Bs[r * BN + c], ok ? &B[static_cast<long long>(gk) * N + gc] : B, ok);
        }
    }
}

// A lane's fragments of one k: its TM rows of A and TN columns of B, float4 by float4.
__device__ __forceinline__ void read_fragments(const float* As, const float* Bs, int kk, int am, int bn,
                                               float a[TM], float b[TN])
{
#pragma unroll
    for (int i = 0; i < TM; i += 4) {
        const float4 v = *reinterpret_cast<const float4*>(&As[kk * AS_LD + am + i * LANE_ROWS]);
        a[i] = v.x, a[i + 1] = v.y, a[i + 2] = v.z, a[i + 3] = v.w;
    }
#pragma unroll
    for (int j = 0; j < TN; j += 4) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[kk * BN + bn + j * LANE_COLS]);
        b[j] = v.x, b[j + 1] = v.y, b[j + 2] = v.z, b[j + 3] = v.w;
    }
}

#if SPLITK > 1
#define K_RANGE_PARAMS , int kbegin, int kend
#define K_RANGE_ARGS , kbegin, kend
#else
#define K_RANGE_PARAMS
#define K_RANGE_ARGS
#endif

// Not inlined: both alignment paths inlined into one kernel would share (and overrun) its registers.
template <bool VEC>
__device__ __noinline__ void kmajor_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                         float* __restrict__ C, int M, int N, int K K_RANGE_PARAMS, float* smem)
{
#if SPLITK == 1
    const int kbegin = 0, kend = K;
#endif
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = warp / (BN / WN), warp_col = warp % (BN / WN);
    // a lane's first row and column: its 4 x 4 blocks then step 4 * LANE_ROWS rows and 4 * LANE_COLS columns
    const int am = warp_row * WM + (lane / LANE_COLS) * 4, bn = warp_col * WN + (lane % LANE_COLS) * 4;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int tiles = (kend - kbegin + BK - 1) / BK;
    float* As = smem;
    float* Bs = smem + STAGES * A_STAGE;
    float acc[TM][TN] = {};
    float a[2][TM], b[2][TN];

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles)
            load_tile<VEC>(A, B, As + s * A_STAGE, Bs + s * B_STAGE, row0, col0, kbegin + s * BK, M, N, K, kend);
        cp_async_commit();  // empty groups keep the count uniform
    }
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    read_fragments(As, Bs, 0, am, bn, a[0], b[0]);

    for (int t = 0; t < tiles; ++t) {
        const float* as = As + (t % STAGES) * A_STAGE;
        const float* bs = Bs + (t % STAGES) * B_STAGE;
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            if (kk == BK - 1) {
                // tile t + 1 has landed for every thread, and every thread has read tile t - 1's stage
                // (refilled at kk == 0 of the next tile) and all of tile t's fragments but this k's
                cp_async_wait<STAGES - 2>();
                __syncthreads();
            }
            const int next = (kk + 1) % BK;
            const float* nas = kk == BK - 1 ? As + ((t + 1) % STAGES) * A_STAGE : as;
            const float* nbs = kk == BK - 1 ? Bs + ((t + 1) % STAGES) * B_STAGE : bs;
            read_fragments(nas, nbs, next, am, bn, a[(kk + 1) % 2], b[(kk + 1) % 2]);
            if (kk == 0) {
                // the stage of tile t - 1, which every thread has read (the barrier at its last k)
                const int fill = t + STAGES - 1, s = fill % STAGES;
                if (fill < tiles)
                    load_tile<VEC>(A, B, As + s * A_STAGE, Bs + s * B_STAGE, row0, col0, kbegin + fill * BK, M, N,
                                   K, kend);
                cp_async_commit();
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[kk % 2][i], b[kk % 2][j], acc[i][j]);
        }
    }

    const bool fast = VEC && row0 + BM <= M && col0 + BN <= N;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = row0 + am + (i / 4) * 4 * LANE_ROWS + i % 4;
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            const int c = col0 + bn + j * LANE_COLS;
            if (fast) {
                put4(&C[static_cast<long long>(r) * N + c],
                     make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]), SPLITK > 1);
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    if (r < M && c + q < N) put1(&C[static_cast<long long>(r) * N + c + q], acc[i][j + q], SPLITK > 1);
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
kmajor(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    extern __shared__ __align__(16) float smem[];
#if SPLITK > 1
    int kbegin, kend;
    layer_k_range(K, kbegin, kend);
    if (kbegin >= kend) return;  // a layer with no k-tiles adds nothing (uniform across the block)
#endif
    if ((N & 3) == 0)
        kmajor_gemm<true>(A, B, C, M, N, K K_RANGE_ARGS, smem);
    else
        kmajor_gemm<false>(A, B, C, M, N, K K_RANGE_ARGS, smem);
}
