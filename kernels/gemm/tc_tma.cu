// tc_tma: the tensor-core ladder's step (b), TMA loads and wgmma with one warpgroup. C (m x n) =
// A (m x k, row-major) . B (stored n x k: both operands K-major, layout "nt"), fp16 or bf16 in,
// float accumulation, C rounded once. A block of 128 threads computes a BM x BN tile of C:
//   BM      64 or 128 rows: one or two m64 wgmmas a k-step
//   BN      64, 128 or 256 columns: the wgmma's N
//   STAGES  k-tiles of 64 in flight: thread 0 issues TMA copies of A's and B's boxes into a ring of
//           STAGES slots, each with an mbarrier that completes when its bytes have arrived
// Every thread waits for a slot, the warpgroup runs 4 x BM/64 wgmmas on it and waits for them, the
// block synchronises and thread 0 refills the slot. Loads overlap the MMAs; the MMAs do not overlap
// each other or the refill (the later steps' business). TMA zero-fills what lies outside A and B, so
// any m and n; k a multiple of 8 (TMA's 16-byte rows).
#include "common/types.cuh"
#include "common/hopper.cuh"

constexpr int A_SLOT = BM * TC_BK, B_SLOT = BN * TC_BK;  // elements of a slot's A and B boxes

extern "C" __global__ void __launch_bounds__(128)
tc_tma(const __grid_constant__ tensor_map_t map_a, const __grid_constant__ tensor_map_t map_b,
       const elem_t* __restrict__ A, const elem_t* __restrict__ B, out_t* __restrict__ C, int m, int n, int k)
{
    extern __shared__ unsigned char raw[];
    elem_t* as = aligned_tiles(raw);  // STAGES slots of A (BM x 64), then STAGES of B (BN x 64)
    elem_t* bs = as + STAGES * A_SLOT;
    __shared__ uint64_t full[STAGES];
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN, tiles = (k + TC_BK - 1) / TC_BK;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) mbar_init(&full[s], 1);
        mbar_init_fence();
    }
    __syncthreads();
    auto refill = [&](int slot, int tile) {
        mbar_expect_bytes(&full[slot], (A_SLOT + B_SLOT) * sizeof(elem_t));
        tma_load(as + slot * A_SLOT, &map_a, &full[slot], tile * TC_BK, row0);
        tma_load(bs + slot * B_SLOT, &map_b, &full[slot], tile * TC_BK, col0);
    };
    if (threadIdx.x == 0)
        for (int s = 0; s < STAGES && s < tiles; ++s) refill(s, s);

    float d[BM / 64][BN / 2];
#pragma unroll
    for (int i = 0; i < BM / 64; ++i)
#pragma unroll
        for (int j = 0; j < BN / 2; ++j) d[i][j] = 0.0f;

    for (int t = 0; t < tiles; ++t) {
        const int slot = t % STAGES;
        mbar_wait(&full[slot], (t / STAGES) & 1);
#pragma unroll
        for (int i = 0; i < BM / 64; ++i) hold_registers<BN / 2>(d[i]);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < TC_BK / MMA_K; ++kk)
#pragma unroll
            for (int i = 0; i < BM / 64; ++i)
                wgmma_tile<BN>(d[i], wgmma_desc(as + slot * A_SLOT + i * 64 * TC_BK + kk * MMA_K),
                               wgmma_desc(bs + slot * B_SLOT + kk * MMA_K), 1);
        wgmma_commit();
        wgmma_wait<0>();
#pragma unroll
        for (int i = 0; i < BM / 64; ++i) hold_registers<BN / 2>(d[i]);
        __syncthreads();  // every warp is done with the slot before it is refilled
        if (threadIdx.x == 0 && t + STAGES < tiles) refill(slot, t + STAGES);
    }
#pragma unroll
    for (int i = 0; i < BM / 64; ++i) store_accumulator<BN>(C, m, n, row0 + i * 64, col0, d[i]);
}
