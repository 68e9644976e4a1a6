// tc_mma: the tensor-core ladder's step (a), what sm_80 offers without Hopper's TMA and wgmma. C (m x n)
// = A (m x k, row-major) . B (stored n x k; layout "nt"), fp16 or bf16 in, float accumulation, C
// rounded once. A block of WARPS_M x WARPS_N warps computes a BM x BN tile of C; each warp a
// (BM / WARPS_M) x (BN / WARPS_N) part of it with mma.sync m16n8k16, its fragments read from shared
// memory by ldmatrix. STAGES k-tiles of BK are in flight by cp.async (16 bytes a copy, zeros past the
// matrix's edges); shared rows are padded by 16 bytes, so the eight rows an ldmatrix reads fall in
// distinct banks. Any m and n; k a multiple of 8 (16-byte copies).
#include "common/types.cuh"
#include "common/tensor_core.cuh"
#include "common/cp_async.cuh"

constexpr int THREADS = 32 * WARPS_M * WARPS_N;
constexpr int WTM = BM / WARPS_M, WTN = BN / WARPS_N;  // a warp's part of the tile
constexpr int MI = WTM / 16, NI = WTN / 8;              // its m16n8 blocks
constexpr int LDS = BK + 8;                             // a shared row, padded
constexpr int A_SLOT = BM * LDS, B_SLOT = BN * LDS;
constexpr int CHUNKS = BK / 8;                          // 16-byte copies a row of a k-tile

// Rows row0.. of a row-major matrix with k columns, k-tile at k0, into a slot of `rows` padded rows.
template <int ROWS_>
__device__ __forceinline__ void load_tile(elem_t* slot, const elem_t* M, int rows, int k, int row0, int k0)
{
    for (int c = threadIdx.x; c < ROWS_ * CHUNKS; c += THREADS) {
        const int r = c / CHUNKS, kc = c % CHUNKS * 8;
        const bool ok = row0 + r < rows && k0 + kc < k;
        // 16 bytes whatever they hold: common/cp_async.cuh's copy moves 8 elements as 4 floats' bytes
        cp_async16(reinterpret_cast<float*>(slot + r * LDS + kc),
                   reinterpret_cast<const float*>(ok ? M + static_cast<size_t>(row0 + r) * k + k0 + kc : M), ok);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
tc_mma(const elem_t* __restrict__ A, const elem_t* __restrict__ B, elem_t* __restrict__ C, int m, int n, int k)
{
    extern __shared__ __align__(16) unsigned char raw[];
    elem_t* as = reinterpret_cast<elem_t*>(raw);  // STAGES slots of A (BM x LDS), then of B (BN x LDS)
    elem_t* bs = as + STAGES * A_SLOT;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN, tiles = (k + BK - 1) / BK;

    float d[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) d[i][j][e] = 0.0f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {  // a group per stage, empty past the last k-tile
        if (s < tiles) {
            load_tile<BM>(as + s * A_SLOT, A, m, k, row0, s * BK);
            load_tile<BN>(bs + s * B_SLOT, B, n, k, col0, s * BK);
        }
        cp_async_commit();
    }
    for (int t = 0; t < tiles; ++t) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();  // k-tile t has landed for every thread; every warp is done with t - 1's slot
        const int next = t + STAGES - 1;
        if (next < tiles) {
            load_tile<BM>(as + next % STAGES * A_SLOT, A, m, k, row0, next * BK);
            load_tile<BN>(bs + next % STAGES * B_SLOT, B, n, k, col0, next * BK);
        }
        cp_async_commit();
        const elem_t* a_slot = as + t % STAGES * A_SLOT + (wm * WTM) * LDS;
        const elem_t* b_slot = bs + t % STAGES * B_SLOT + (wn * WTN) * LDS;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned a[MI][4], b[NI][2];
#pragma unroll
            for (int i = 0; i < MI; ++i)  // lanes 0-15: rows 0-15 at kk; 16-31: the same rows at kk + 8
                ldmatrix_x4(a[i], a_slot + (i * 16 + lane % 16) * LDS + kk + lane / 16 * 8);
#pragma unroll
            for (int j = 0; j < NI; j += 2) {  // two n8 blocks: lanes 8-15 and 24-31 read k + 8
                unsigned r[4];
                ldmatrix_x4(r, b_slot + (j * 8 + lane % 8 + lane / 16 * 8) * LDS + kk + lane / 8 % 2 * 8);
                b[j][0] = r[0], b[j][1] = r[1], b[j + 1][0] = r[2], b[j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NI; ++j) mma_16816(d[i][j], a[i], b[j][0], b[j][1]);
        }
    }
    const int r = row0 + wm * WTM + lane / 4, c = col0 + wn * WTN + lane % 4 * 2;
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) {
            store_pair(C, m, n, r + i * 16, c + j * 8, d[i][j][0], d[i][j][1]);
            store_pair(C, m, n, r + i * 16 + 8, c + j * 8, d[i][j][2], d[i][j][3]);
        }
}
