// tc_ws: the tensor-core ladder's steps (c) to (e), one source whose switches are the steps. C (m x n)
// = A (m x k, row-major) . B (stored n x k; layout "nt"), fp16 or bf16 in, float accumulation.
// (c) Warp specialization: warpgroup 0 produces (one thread issues the TMA copies, the warpgroup gives
//     its registers back), CONSUMERS warpgroups consume (take the registers; each runs the wgmmas of its
//     WM x 64 rows of the BM x BN tile). A ring of STAGES slots, two mbarriers a slot: `full` completes
//     when a slot's bytes have arrived, `empty` when every consumer warp is done reading it.
// (d) WALK = 1: a persistent grid (a block or so an SM) whose blocks walk C's tiles in turn; the
//     producer runs on into the next tile while the consumers store the last.
// (e) OVERLAP = 1: a consumer keeps one k-tile's wgmmas in flight while it issues the next and frees a
//     slot as soon as the wgmmas that read it have ended (wait_group 1), not after each k-tile's.
// Any m and n (TMA zero-fills past A's and B's edges; stores are checked); k a multiple of 8.
#include "common/types.cuh"
#include "common/hopper.cuh"

#ifndef WALK
#define WALK 0
#endif
#ifndef OVERLAP
#define OVERLAP 0
#endif

constexpr int ROWS = 64 * WM;                 // a consumer's rows of the tile
constexpr int TILE_M = ROWS * CONSUMERS, TILE_N = BN;
constexpr int A_SLOT = TILE_M * TC_BK, B_SLOT = TILE_N * TC_BK;
constexpr int CONSUMER_WARPS = 4 * CONSUMERS, THREADS = 128 * (CONSUMERS + 1);
// The producer keeps 40 registers; the consumers share what is left of the SM's 64 Ki (multiples of 8).
constexpr int PRODUCER_REGISTERS = 40;
constexpr int CONSUMER_REGISTERS = CONSUMERS == 1 ? 256 : 232;

extern "C" __global__ void __launch_bounds__(THREADS, 1)
tc_ws(const __grid_constant__ tensor_map_t map_a, const __grid_constant__ tensor_map_t map_b,
      const elem_t* __restrict__ A, const elem_t* __restrict__ B, elem_t* __restrict__ C, int m, int n, int k)
{
    extern __shared__ unsigned char raw[];
    elem_t* as = aligned_tiles(raw);
    elem_t* bs = as + STAGES * A_SLOT;
    __shared__ uint64_t full[STAGES], empty[STAGES];
    const int tiles_n = (n + TILE_N - 1) / TILE_N, tiles = tiles_n * ((m + TILE_M - 1) / TILE_M);
    const int k_tiles = (k + TC_BK - 1) / TC_BK;
#if WALK
    const int first = blockIdx.x, step = gridDim.x;
#else
    const int first = blockIdx.y * tiles_n + blockIdx.x, step = tiles;
#endif

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], CONSUMER_WARPS);
        }
        mbar_init_fence();
    }
    __syncthreads();
    const int group = threadIdx.x / 128;

    if (group == 0) {  // the producer
        registers_down<PRODUCER_REGISTERS>();
        if (threadIdx.x != 0) return;
        int use = 0;  // k-tiles loaded so far, over all of this block's tiles: the ring's position
        for (int tile = first; tile < tiles; tile += step) {
            const int row0 = tile / tiles_n * TILE_M, col0 = tile % tiles_n * TILE_N;
            for (int t = 0; t < k_tiles; ++t, ++use) {
                const int slot = use % STAGES;
                mbar_wait(&empty[slot], ((use / STAGES) & 1) ^ 1);  // the first pass finds every slot free
                mbar_expect_bytes(&full[slot], (A_SLOT + B_SLOT) * sizeof(elem_t));
                tma_load(as + slot * A_SLOT, &map_a, &full[slot], t * TC_BK, row0);
                tma_load(bs + slot * B_SLOT, &map_b, &full[slot], t * TC_BK, col0);
            }
        }
        return;
    }

    registers_up<CONSUMER_REGISTERS>();
    const int consumer = group - 1, lane = threadIdx.x % 32;
    float d[WM][BN / 2];
    int use = 0;
    for (int tile = first; tile < tiles; tile += step) {
        const int row0 = tile / tiles_n * TILE_M + consumer * ROWS, col0 = tile % tiles_n * TILE_N;
#pragma unroll
        for (int i = 0; i < WM; ++i)
#pragma unroll
            for (int j = 0; j < BN / 2; ++j) d[i][j] = 0.0f;
#if OVERLAP
        int held = -1;  // the slot whose wgmmas may still be running
#endif
        for (int t = 0; t < k_tiles; ++t, ++use) {
            const int slot = use % STAGES;
            mbar_wait(&full[slot], (use / STAGES) & 1);
#pragma unroll
            for (int i = 0; i < WM; ++i) hold_registers<BN / 2>(d[i]);
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < TC_BK / 16; ++kk)
#pragma unroll
                for (int i = 0; i < WM; ++i)
                    wgmma_tile<BN>(d[i], wgmma_desc(as + slot * A_SLOT + (consumer * ROWS + i * 64) * TC_BK + kk * 16),
                                   wgmma_desc(bs + slot * B_SLOT + kk * 16), 1);
            wgmma_commit();
#if OVERLAP
            wgmma_wait<1>();  // the k-tile before this one is done: its slot is free
            if (held >= 0 && lane == 0) mbar_arrive(&empty[held]);
            held = slot;
#else
            wgmma_wait<0>();
            if (lane == 0) mbar_arrive(&empty[slot]);
#endif
#pragma unroll
            for (int i = 0; i < WM; ++i) hold_registers<BN / 2>(d[i]);
        }
#if OVERLAP
        wgmma_wait<0>();
        if (held >= 0 && lane == 0) mbar_arrive(&empty[held]);
#pragma unroll
        for (int i = 0; i < WM; ++i) hold_registers<BN / 2>(d[i]);
#endif
#pragma unroll
        for (int i = 0; i < WM; ++i) store_accumulator<BN>(C, m, n, row0 + i * 64, col0, d[i]);
    }
}
