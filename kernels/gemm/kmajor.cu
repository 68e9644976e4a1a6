// kmajor: the shape of CUTLASS's SIMT kernel that cuBLAS runs from 1951 to 2048 on Hopper
// (cutlass_80_simt_sgemm_256x128_8x4_..._align1): every operand element copied by cp.async, A transposed
// on the way (As[k][m], so a lane reads its rows of one k as float4s, as it reads B's columns), STAGES
// k-tiles in flight, and the fragments of the next k read while this k's products run, one float4 every few
// products, across the k-tile's barrier too (the next k-tile's first fragments are read before its last products).
//  * A lane's TM x TN tile is blocks of 4 x 4: its rows lie in TM / 4 groups of 4, 4 * LANE_ROWS rows apart,
//    its columns in TN / 4 groups 4 * LANE_COLS apart, so the lanes of a warp read distinct float4s of
//    a k-row of each operand in one pass (no bank conflicts).
//  * A's elements come 4 bytes at a time whatever its alignment (a warp copies BK-long runs of 32 / BK rows;
//    As rows are padded to BM + 4 floats, so at BK = 8 they fall in 32 distinct banks, at 16 two ways); B's
//    16 bytes at a time where its rows are 16-byte aligned (N a multiple of 4), else 4. What the unaligned
//    path costs, measured: docs/studies.md.
//  * Where B's rows are unaligned, C's tile goes out through shared memory (store_staged), a row segment of
//    32 floats a warp-wide store.
// Borders: a cp.async with source size 0 writes zeros. Split-K (common/split_k.cuh) as multistage's.
// Tunable: BM, BN, BK, WM, WN, TM, TN, THREADS, STAGES, SPLITK, MINB, COPY_AT.
#define LANE_ROWS (WM / TM)  // lanes along m in a warp; LANE_ROWS * LANE_COLS == 32
#define LANE_COLS (WN / TN)
#define AS_LD (BM + 4)  // As rows: a warp's copies of BK-long runs of 32 / BK rows fall in distinct banks at BK = 8
#define A_STAGE (BK * AS_LD)
#define B_STAGE (BK * BN)

#include "common/cp_async.cuh"
#include "common/split_k.cuh"
#include "common/k_range.cuh"

// A thread's copies of every k-tile: its A elements are rows tid / BK + j * A_PASS (j < A_COPIES) at column
// tid % BK; its B chunks (VEC: 4 floats) or elements lie B_ROWS(j) rows and B_COLS(j) floats past its
// first (down one column where a row has at most THREADS copies, else along rows too). The
// pointers, the offsets in shared memory and which rows and columns lie inside C are worked out once;
// a k-tile then costs a pointer step a copy, and the bounds are tested only in a block on C's edge or in
// the last k-tile. Which path a k-tile's copies take is the block's (not the thread's) choice: a warp
// whose threads parted there would run both, and the barrier would hold every warp to it.
#define A_COPIES (BM * BK / THREADS)
#define A_PASS (THREADS / BK)                        // rows between a thread's A elements
#define B_WIDTH (VEC ? 4 : 1)                        // floats a B copy
#define B_COPIES (BK * BN / B_WIDTH / THREADS)
#define B_PER_ROW (BN / B_WIDTH)                     // copies along a row of B's tile
#define B_PASS (THREADS >= B_PER_ROW ? THREADS / B_PER_ROW : 0)  // rows between a thread's copies (0: see below)
#define B_ALONG (B_PASS ? 1 : B_PER_ROW / THREADS)   // a thread's copies along a row
#define B_ROWS(j) (B_PASS ? (j) * B_PASS : (j) / B_ALONG)
#define B_COLS(j) (B_PASS ? 0 : (j) % B_ALONG * THREADS * B_WIDTH)
template <bool VEC>
struct TileCopies {
    const float* a;     // A at this thread's first element of the next k-tile
    const float* b;     // B likewise
    int a_step;         // elements between a thread's copies in A
    int a_col, b_row;   // its column of A's k-tile and first row of B's
    int a_dst, b_dst;   // its first destination in a stage (floats)
    bool edge;          // the block's tile reaches past C (the same for every thread)
    unsigned a_rows;    // bit j: A's row of copy j inside C
    unsigned b_cols;    // bit j: B's column of copy j inside C

    __device__ TileCopies(const float* A, const float* B, int row0, int col0, int kbegin, int M, int N, int K)
    {
        const int t = threadIdx.x;
        a_col = t % BK;
        const int a_row = t / BK;
        a = A + (row0 + a_row) * K + kbegin + a_col;
        a_step = A_PASS * K;
        a_dst = a_col * AS_LD + a_row;
        a_rows = 0;
#pragma unroll
        for (int j = 0; j < A_COPIES; ++j) a_rows |= unsigned(row0 + a_row + j * A_PASS < M) << j;
        b_row = B_PASS ? t / B_PER_ROW : 0;
        const int b_col = (B_PASS ? t % B_PER_ROW : t) * B_WIDTH;
        b = B + (kbegin + b_row) * N + col0 + b_col;
        b_dst = b_row * BN + b_col;
        b_cols = 0;
#pragma unroll
        for (int j = 0; j < B_COPIES; ++j) b_cols |= unsigned(col0 + b_col + B_COLS(j) < N) << j;
        edge = row0 + BM > M || col0 + BN > N;
    }

    // The next k-tile (whose first k is k0, this layer's k ending at kend) into a stage; the pointers step on
    // first, so that the copies read the old ones: rewriting a register an issued copy has yet to read waits
    // for it (the profile showed that wait as long-scoreboard stalls on the pointer steps).
    __device__ __forceinline__ void load(float* As, float* Bs, int k0, int kend, int N)
    {
        const float* a0 = a;
        const float* b0 = b;
        a += BK;
        b += BK * N;
        const bool whole_k = k0 + BK <= kend;
        if (!edge && whole_k) {
#pragma unroll
            for (int j = 0; j < A_COPIES; ++j) cp_async4(As + a_dst + j * A_PASS, a0 + j * a_step, true);
#pragma unroll
            for (int j = 0; j < B_COPIES; ++j)
                copy_b(Bs + b_dst + B_ROWS(j) * BN + B_COLS(j), b0 + B_ROWS(j) * N + B_COLS(j), true);
        } else {
            // A copy outside C or past kend reads nothing (source size 0), so its address may lie past the
            // matrix, as CUTLASS's zero-filling copies' do: no select of a safe address on this path.
            const bool a_k = whole_k || k0 + a_col < kend;
#pragma unroll
            for (int j = 0; j < A_COPIES; ++j)
                cp_async4(As + a_dst + j * A_PASS, a0 + j * a_step, a_k && (a_rows >> j & 1));
#pragma unroll
            for (int j = 0; j < B_COPIES; ++j) {
                const bool ok = (whole_k || k0 + b_row + B_ROWS(j) < kend) && (b_cols >> j & 1);
                copy_b(Bs + b_dst + B_ROWS(j) * BN + B_COLS(j), b0 + B_ROWS(j) * N + B_COLS(j), ok);
            }
        }
    }

    __device__ __forceinline__ static void copy_b(float* dst, const float* src, bool ok)
    {
        if (VEC)
            cp_async16(dst, src, ok);
        else
            cp_async4(dst, src, ok);
    }
};

// The q-th of a lane's READS float4 reads of one k's fragments (its TM rows of A first, then its TN columns of B).
#define READS (TM / 4 + TN / 4)
__device__ __forceinline__ void read_fragment(const float* As, const float* Bs, int kk, int am, int bn, int q,
                                              float a[TM], float b[TN])
{
    if (q < TM / 4) {
        const float4 v = *reinterpret_cast<const float4*>(&As[kk * AS_LD + am + 4 * q * LANE_ROWS]);
        a[4 * q] = v.x, a[4 * q + 1] = v.y, a[4 * q + 2] = v.z, a[4 * q + 3] = v.w;
    } else {
        const int j = 4 * (q - TM / 4);
        const float4 v = *reinterpret_cast<const float4*>(&Bs[kk * BN + bn + j * LANE_COLS]);
        b[j] = v.x, b[j + 1] = v.y, b[j + 2] = v.z, b[j + 3] = v.w;
    }
}

// C's tile through shared memory where rows are unaligned: a lane's columns lie 4 apart from the next lane's,
// so its own 4-byte stores would touch four times the sectors they fill. One row of a lane's tile at a time,
// a warp puts its LANE_ROWS rows into its own region (float4s) and stores them back a row segment of 32
// floats an instruction. Where a quarter-warp's float4s span several region rows, the rows are padded so
// that those lanes write distinct banks. Staged where the pipeline's stages hold every warp's region.
#define C_PITCH (WN + (LANE_COLS < 8 ? 4 * LANE_COLS : 0))  // WN is a multiple of 32: rows 4 * LANE_COLS banks apart
#define C_REGION (LANE_ROWS * C_PITCH)
#define STAGE_C ((THREADS / 32) * C_REGION <= STAGES * (A_STAGE + B_STAGE))
__device__ __forceinline__ void store_staged(const float (&acc)[TM][TN], float* C, float* region, int r0, int c0,
                                             int M, int N, int lane)
{
    const int lr = lane / LANE_COLS, lc = (lane % LANE_COLS) * 4;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; j += 4)
            *reinterpret_cast<float4*>(&region[lr * C_PITCH + lc + j * LANE_COLS]) =
                make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
        __syncwarp();
        const int rows = r0 + (i / 4) * 4 * LANE_ROWS + i % 4;  // region row x lies 4 x rows below
#pragma unroll
        for (int s = 0; s < TN; ++s) {
            const int x = (s * 32 + lane) / WN, c = (s * 32 + lane) % WN;
            const int r = rows + 4 * x;
            if (r < M && c0 + c < N) put1(&C[static_cast<long long>(r) * N + c0 + c], region[x * C_PITCH + c], SPLITK > 1);
        }
        __syncwarp();
    }
}

// Not inlined: both alignment paths inlined into one kernel would share (and overrun) its registers.
template <bool VEC>
__device__ __noinline__ void kmajor_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                         float* __restrict__ C, int M, int N, int K K_RANGE_PARAMS, float* smem)
{
    WHOLE_K_RANGE
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

    TileCopies<VEC> copies(A, B, row0, col0, kbegin, M, N, K);
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) copies.load(As + s * A_STAGE, Bs + s * B_STAGE, kbegin + s * BK, kend, N);
        cp_async_commit();  // empty groups keep the count uniform
    }
    cp_async_wait<STAGES - 2>();
    __syncthreads();
#pragma unroll
    for (int q = 0; q < READS; ++q) read_fragment(As, Bs, 0, am, bn, q, a[0], b[0]);

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
            // The stage of tile t - 1 (which every thread has read: the barrier at its last k) refilled, before
            // this k's products (COPY_AT 0) or after their first row (1): the copies and the shared reads share
            // a queue, and which order lets the reads through first is ptxas's schedule's, so it is tuned.
            const auto refill = [&]() {
                const int fill = t + STAGES - 1, s = fill % STAGES;
                if (fill < tiles) copies.load(As + s * A_STAGE, Bs + s * B_STAGE, kbegin + fill * BK, kend, N);
                cp_async_commit();
            };
            if (kk == 0 && COPY_AT == 0) refill();
            // this k's products in half-rows, the next k's fragments read one float4 at a time among them (as
            // ptxas orders CUTLASS's kernel: a shared read every few FFMAs, not a burst of them)
            constexpr int HALVES = 2 * TM;
#pragma unroll
            for (int h = 0; h < HALVES; ++h) {
#pragma unroll
                for (int q = 0; q < READS; ++q)
                    if (q * HALVES / READS == h) read_fragment(nas, nbs, next, am, bn, q, a[(kk + 1) % 2], b[(kk + 1) % 2]);
                const int i = h / 2;
#pragma unroll
                for (int j = (h % 2) * TN / 2; j < (h % 2 + 1) * TN / 2; ++j)
                    acc[i][j] = fmaf(a[kk % 2][i], b[kk % 2][j], acc[i][j]);
                if (kk == 0 && COPY_AT == 1 && h == 1) refill();
            }
        }
    }

    if (STAGE_C && !VEC) {
        cp_async_wait<0>();  // only empty groups are left; every warp has read its last fragments after the barrier
        __syncthreads();
        store_staged(acc, C, smem + warp * C_REGION, row0 + warp_row * WM, col0 + warp_col * WN, M, N, lane);
    } else {
        // with rows 16-byte aligned (VEC) a lane's four columns lie inside C whole or not at all
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int r = row0 + am + (i / 4) * 4 * LANE_ROWS + i % 4;
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const int c = col0 + bn + j * LANE_COLS;
                float* out = &C[static_cast<long long>(r) * N + c];
                if (VEC) {
                    if (r < M && c < N)
                        put4(out, make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]), SPLITK > 1);
                } else {
#pragma unroll
                    for (int q = 0; q < 4; ++q)
                        if (r < M && c + q < N) put1(out + q, acc[i][j + q], SPLITK > 1);
                }
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
kmajor(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    extern __shared__ __align__(16) float smem[];
    LAYER_OR_RETURN
    if ((N & 3) == 0)
        kmajor_gemm<true>(A, B, C, M, N, K K_RANGE_ARGS, smem);
    else
        kmajor_gemm<false>(A, B, C, M, N, K K_RANGE_ARGS, smem);
}
