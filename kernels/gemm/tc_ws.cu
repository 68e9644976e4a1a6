// tc_ws: the tensor-core ladder's steps (c) to (g), one source whose switches are the steps. C (m x n)
// = A (m x k, row-major) . B (stored n x k; layout "nt"), fp16 or bf16 in, float accumulation.
// (c) Warp specialization: warpgroup 0 produces (one thread issues the TMA copies, the warpgroup gives
//     its registers back), CONSUMERS warpgroups consume (take the registers; each runs the wgmmas of its
//     WM x 64 rows of the TILE_M x BN tile). A ring of STAGES slots, two mbarriers a slot: `full`
//     completes when a slot's bytes have arrived, `empty` when every consumer warp is done reading it.
// (d) WALK = 1: a persistent grid (a block an SM) whose blocks walk C's tiles in turn; the producer
//     runs on into the next tile while the consumers store the last.
// (e) OVERLAP = 1: a consumer keeps one k-tile's wgmmas in flight while it issues the next and frees a
//     slot as soon as the wgmmas that read it have ended (wait_group 1), not after each k-tile's.
// (f) CLUSTER = 2 (with WALK): the blocks of a cluster take vertically adjacent tiles, which share B's
//     box: each loads its share of the box once and TMA multicasts it into every block of the cluster;
//     a slot is free when the consumers of every block have released it (remote mbarrier arrivals).
// (g) ORDER = G: the walk goes down G rows of tiles (of clusters) before it moves right, so the tiles
//     in flight share A's and B's boxes in L2; TMA_STORE = 1: a consumer stages its accumulator in
//     shared memory (swizzled, conflict-free) and one thread stores it by TMA, which takes n % 8 == 0.
// STREAMK = 1 (with WALK): where the clusters' tiles end in a partial last wave, that wave's tiles are
//     shared out by k-tiles instead (stream-K): each cluster walks its whole tiles, then an even share of
//     the last wave's k-tiles; a block whose share begins inside a tile leaves its float sums in a
//     workspace (the launch's last argument), and the block that began the tile adds them and stores it.
// At fp8e4m3 (the best step's FP8 form) C is bfloat16, scaled by scale_a scale_b (device scalars).
// Any m and n (TMA zero-fills past A's and B's edges; stores are checked or clipped); k's rows 16-byte
// aligned (k a multiple of 8 at 16 bits, of 16 at FP8).
#include "common/types.cuh"
#include "common/hopper.cuh"

#ifndef WALK
#define WALK 0
#endif
#ifndef OVERLAP
#define OVERLAP 0
#endif
#ifndef CLUSTER
#define CLUSTER 1
#endif
#ifndef ORDER
#define ORDER 0
#endif
#ifndef TMA_STORE
#define TMA_STORE 0
#endif
#ifndef STREAMK
#define STREAMK 0
#endif

constexpr int ROWS = 64 * WM;                 // a consumer's rows of the tile
constexpr int TILE_M = ROWS * CONSUMERS, TILE_N = BN;
// A block's share of B's box is whole 8-row swizzle atoms (where it lands must be 1024-byte aligned): at
// 168 columns in a cluster of two each loads 88 rows, the second 8 past the tile (unused, or zeros).
constexpr int SHARE_ROWS = (TILE_N / CLUSTER + 7) / 8 * 8;
constexpr int A_SLOT = TILE_M * TC_BK, B_SLOT = SHARE_ROWS * CLUSTER * TC_BK, B_SHARE = SHARE_ROWS * TC_BK;
constexpr int CONSUMER_WARPS = 4 * CONSUMERS, THREADS = 128 * (CONSUMERS + 1);
// TMA stores C in boxes of 64 x 64: a tile of 144 to 176 columns stores its last 16 to 48 directly.
constexpr int BOXED = BN / 64 * 64;
// The producer keeps 40 registers; the consumers share what is left of the SM's 64 Ki (multiples of 8).
constexpr int PRODUCER_REGISTERS = 40;
constexpr int CONSUMER_REGISTERS = CONSUMERS == 1 ? 256 : 232;

// The tile (row, column of tiles) a block takes at step `unit` of its walk: units count clusters'
// tiles (CLUSTER tiles one above the other), in rows, or in groups of ORDER rows walked column by column.
__device__ __forceinline__ void place(int unit, int tiles_n, int cluster_rows, int& tm, int& tn)
{
    int rows_of = unit / tiles_n, col = unit % tiles_n;
    if (ORDER > 0) {
        const int group = unit / (ORDER * tiles_n), in_group = unit % (ORDER * tiles_n);
        const int height = min(ORDER, cluster_rows - group * ORDER);
        rows_of = group * ORDER + in_group % height, col = in_group / height;
    }
    tm = rows_of * CLUSTER + (CLUSTER > 1 ? static_cast<int>(cluster_rank()) : 0), tn = col;
}

// A consumer warp is done with a slot: it tells the producer of every block of the cluster (each may
// multicast into this block's slot), its own by a local arrival.
__device__ __forceinline__ void release(uint64_t* empty_slot)
{
#if CLUSTER == 1
    mbar_arrive(empty_slot);
#else
    for (int b = 0; b < CLUSTER; ++b) mbar_arrive_in(empty_slot, b);
#endif
}

// A block's work: a unit (a cluster's tiles) from k-tile kb to ke.
struct Piece { int unit, kb, ke; };

#if STREAMK
// The last wave's units are shared over at most SPLIT_MAX clusters each (a share is a quarter of a
// unit's k-tiles or more, and at least 2; a unit's k-tiles may still fall to 5 blocks where the shares
// do not line up with it): a tile split finer spends more on adding the parts than the wave saves.
constexpr int SPLIT_MAX = 4;
// A last wave more than half full stays whole: its parts (a float tile a block, written and read
// back) cost more than the SMs it leaves idle (on an H100: 2048 at 128 x 256 tiles, 64 units on 66
// clusters, ran 23 % slower split).
__device__ __forceinline__ bool worth_splitting(int rest, int clusters) { return rest != 0 && 2 * rest <= clusters; }

// The cluster `c` of `clusters` walks the data-parallel units c, c + clusters, ... below `dp` whole,
// then its share [begin(c), begin(c + 1)) of the stream-K iterations: the last (partial) wave's units
// times their k-tiles, shared out evenly over sk_clusters clusters in unit order (after Osama et al.,
// Stream-K, PPoPP 2023: the block that sums a tile's first k-tiles adds the others' parts).
struct StreamK {
    int k_tiles, clusters, dp, sk_clusters;
    long long sk_iters;
    __device__ StreamK(int units, int k_tiles_, int clusters_) : k_tiles(k_tiles_), clusters(clusters_)
    {
        const int rest = units % clusters;
        const bool split = worth_splitting(rest, clusters) && k_tiles >= 2 * SPLIT_MAX;
        dp = split ? units - rest : units;
        sk_clusters = split ? min(clusters, rest * SPLIT_MAX) : 0;
        sk_iters = static_cast<long long>(units - dp) * k_tiles;
    }
    __device__ long long begin(int c) const { return sk_iters * c / max(sk_clusters, 1); }
};

// The pieces of one cluster's walk, in order (the producer and the consumers walk the same).
struct Walk {
    const StreamK& s;
    int unit;
    long long it, end;
    __device__ Walk(const StreamK& s_, int c)
        : s(s_), unit(c), it(c < s_.sk_clusters ? s_.begin(c) : 0), end(c < s_.sk_clusters ? s_.begin(c + 1) : 0) {}
    __device__ bool next(Piece& p)
    {
        if (unit < s.dp) {
            p = {unit, 0, s.k_tiles};
            unit += s.clusters;
            return true;
        }
        if (it >= end) return false;
        p.unit = s.dp + static_cast<int>(it / s.k_tiles);
        p.kb = static_cast<int>(it % s.k_tiles);
        p.ke = static_cast<int>(min(static_cast<long long>(s.k_tiles), p.kb + (end - it)));
        it += p.ke - p.kb;
        return true;
    }
};

// The workspace: a flag per block and consumer, then a consumer's float sums (its accumulator, in
// register order, thread-minor: coalesced) per block and consumer.
__device__ __forceinline__ int* part_flag(void* workspace, int block, int consumer)
{
    return static_cast<int*>(workspace) + block * CONSUMERS + consumer;
}
__device__ __forceinline__ float* part_sums(void* workspace, int block, int consumer)
{
    const int flags_bytes = (gridDim.x * CONSUMERS * 4 + 255) / 256 * 256;
    return reinterpret_cast<float*>(static_cast<char*>(workspace) + flags_bytes) +
           static_cast<long long>(block * CONSUMERS + consumer) * ROWS * BN;
}

// A consumer's part of a tile whose first k-tiles another block sums (this block's first piece): its
// sums out, then its flag raised (release, GPU scope).
__device__ __forceinline__ void leave_part(void* workspace, int consumer, float (&d)[WM][BN / 2])
{
    float* sums = part_sums(workspace, blockIdx.x, consumer);
    const int t = threadIdx.x % 128;
#pragma unroll
    for (int i = 0; i < WM; ++i)
#pragma unroll
        for (int j = 0; j < BN / 2; ++j) __stcg(sums + (i * (BN / 2) + j) * 128 + t, d[i][j]);
    named_barrier(1 + consumer, 128);
    if (t == 0) {
        __threadfence();
        asm volatile("st.release.gpu.global.b32 [%0], 1;\n" ::"l"(part_flag(workspace, blockIdx.x, consumer)) : "memory");
    }
}

// The block that sums a tile's first k-tiles stores it (its last piece, so it waits at the end of its
// work, while the blocks that share the rest left their parts at the start of theirs): it adds the
// parts of the clusters after it whose share begins inside the tile, each waited for, taken, and its
// flag lowered for the next launch. Those parts never wait, so no cluster waits on one that waits.
__device__ __forceinline__ void add_parts(void* workspace, const StreamK& s, int cluster, int unit, int consumer,
                                          float (&d)[WM][BN / 2])
{
    const long long tile_end = static_cast<long long>(unit - s.dp + 1) * s.k_tiles;
    const int t = threadIdx.x % 128, rank = CLUSTER > 1 ? static_cast<int>(cluster_rank()) : 0;
    for (int c = cluster + 1; c < s.sk_clusters && s.begin(c) < tile_end; ++c) {
        const int block = c * CLUSTER + rank;
        int* flag = part_flag(workspace, block, consumer);
        if (t == 0) {
            int up = 0;
            do asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(up) : "l"(flag) : "memory");
            while (up == 0);
        }
        named_barrier(1 + consumer, 128);
        const float* sums = part_sums(workspace, block, consumer);
#pragma unroll
        for (int i = 0; i < WM; ++i)
#pragma unroll
            for (int j = 0; j < BN / 2; ++j) d[i][j] += __ldcg(sums + (i * (BN / 2) + j) * 128 + t);
        if (t == 0) *flag = 0;
    }
}
#endif

extern "C" __global__ void __launch_bounds__(THREADS, 1)
tc_ws(const __grid_constant__ tensor_map_t map_a, const __grid_constant__ tensor_map_t map_b,
#if TMA_STORE
      const __grid_constant__ tensor_map_t map_c,
#endif
      const elem_t* __restrict__ A, const elem_t* __restrict__ B, out_t* __restrict__ C, int m, int n, int k
#if SCALED
      , const float* __restrict__ scale_a, const float* __restrict__ scale_b
#endif
#if STREAMK
      , void* __restrict__ workspace
#endif
      )
{
    extern __shared__ unsigned char raw[];
    elem_t* as = aligned_tiles(raw);
    elem_t* bs = as + STAGES * A_SLOT;
    __shared__ uint64_t full[STAGES], empty[STAGES];
    const int tiles_n = (n + TILE_N - 1) / TILE_N, cluster_rows = ((m + TILE_M - 1) / TILE_M + CLUSTER - 1) / CLUSTER;
    const int units = tiles_n * cluster_rows, k_tiles = (k + TC_BK - 1) / TC_BK;
#if WALK
    const int first = blockIdx.x / CLUSTER, step = gridDim.x / CLUSTER;
#else
    const int first = blockIdx.y * tiles_n + blockIdx.x, step = units;
#endif
    // The pieces a block walks: whole tiles, and with STREAMK its share of the last wave's k-tiles.
#if STREAMK
    const StreamK sk(units, k_tiles, step);
#define FOR_EACH_PIECE(p) Walk walk(sk, first); for (Piece p; walk.next(p);)
#else
#define FOR_EACH_PIECE(p) for (Piece p = {first, 0, k_tiles}; p.unit < units; p.unit += step)
#endif

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], CONSUMER_WARPS * CLUSTER);
        }
        mbar_init_fence();
    }
    if (CLUSTER > 1)
        cluster_sync();
    else
        __syncthreads();
    const int group = threadIdx.x / 128;

    if (group == 0) {  // the producer
        registers_down<PRODUCER_REGISTERS>();
        if (threadIdx.x == 0) {
            const unsigned rank = CLUSTER > 1 ? cluster_rank() : 0;
            int use = 0;  // k-tiles loaded so far, over all of this block's tiles: the ring's position
            FOR_EACH_PIECE(p) {
                int tm, tn;
                place(p.unit, tiles_n, cluster_rows, tm, tn);
                for (int t = p.kb; t < p.ke; ++t, ++use) {
                    const int slot = use % STAGES;
                    mbar_wait(&empty[slot], ((use / STAGES) & 1) ^ 1);  // the first pass finds every slot free
                    mbar_expect_bytes(&full[slot], (A_SLOT + B_SLOT) * sizeof(elem_t));
                    tma_load(as + slot * A_SLOT, &map_a, &full[slot], t * TC_BK, tm * TILE_M);
                    if (CLUSTER == 1)
                        tma_load(bs + slot * B_SLOT, &map_b, &full[slot], t * TC_BK, tn * TILE_N);
                    else
                        tma_load_multicast(bs + slot * B_SLOT + rank * B_SHARE, &map_b, &full[slot], t * TC_BK,
                                           tn * TILE_N + rank * SHARE_ROWS, (1 << CLUSTER) - 1);
                }
            }
        }
    } else {
        registers_up<CONSUMER_REGISTERS>();
        const int consumer = group - 1, lane = threadIdx.x % 32;
#if TMA_STORE
        out_t* staging = reinterpret_cast<out_t*>(bs + STAGES * B_SLOT) + consumer * ROWS * BN;
#endif
#if SCALED
        const float scale = *scale_a * *scale_b;  // C = scale_a scale_b (A . B)
#else
        const float scale = 1.0f;
#endif
        float d[WM][BN / 2];
        int use = 0;
        FOR_EACH_PIECE(p) {
            int tm, tn;
            place(p.unit, tiles_n, cluster_rows, tm, tn);
            const int row0 = tm * TILE_M + consumer * ROWS, col0 = tn * TILE_N;
#pragma unroll
            for (int i = 0; i < WM; ++i)
#pragma unroll
                for (int j = 0; j < BN / 2; ++j) d[i][j] = 0.0f;
#if OVERLAP
            int held = -1;  // the slot whose wgmmas may still be running
#endif
            for (int t = p.kb; t < p.ke; ++t, ++use) {
                const int slot = use % STAGES;
                mbar_wait(&full[slot], (use / STAGES) & 1);
#pragma unroll
                for (int i = 0; i < WM; ++i) hold_registers<BN / 2>(d[i]);
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < TC_BK / MMA_K; ++kk)
#pragma unroll
                    for (int i = 0; i < WM; ++i)
                        wgmma_tile<BN>(d[i], wgmma_desc(as + slot * A_SLOT + (consumer * ROWS + i * 64) * TC_BK + kk * MMA_K),
                                       wgmma_desc(bs + slot * B_SLOT + kk * MMA_K), 1);
                wgmma_commit();
#if OVERLAP
                wgmma_wait<1>();  // the k-tile before this one is done: its slot is free
                const int done = held;
                held = slot;
#else
                wgmma_wait<0>();
                const int done = slot;
#endif
                if (done >= 0 && lane == 0) release(&empty[done]);
#pragma unroll
                for (int i = 0; i < WM; ++i) hold_registers<BN / 2>(d[i]);
            }
#if OVERLAP
            wgmma_wait<0>();
            if (held >= 0 && lane == 0) release(&empty[held]);
#pragma unroll
            for (int i = 0; i < WM; ++i) hold_registers<BN / 2>(d[i]);
#endif
#if STREAMK
            if (p.kb > 0) {  // a share that begins inside the tile: its sums are the tile's first block's to add
                leave_part(workspace, consumer, d);
                continue;
            }
            if (p.ke < k_tiles) add_parts(workspace, sk, first, p.unit, consumer, d);
#endif
#if TMA_STORE
            if (threadIdx.x % 128 == 0) tma_store_wait_read();  // the last tile's stores have read the staging
            named_barrier(1 + consumer, 128);
#pragma unroll
            for (int i = 0; i < WM; ++i) stage_accumulator<BOXED>(staging + i * 64 * BN, d[i], scale);
            async_proxy_fence();
            named_barrier(1 + consumer, 128);
            if (threadIdx.x % 128 == 0) {
                for (int i = 0; i < WM; ++i)
                    for (int box = 0; box < BN / 64; ++box)
                        tma_store(&map_c, staging + i * 64 * BN + box * 64 * 64, col0 + box * 64, row0 + i * 64);
                tma_store_commit();
            }
            if constexpr (BOXED < BN) {  // the columns past the last whole box: stored as step (f) stores them
#pragma unroll
                for (int i = 0; i < WM; ++i)
                    store_accumulator<BN - BOXED>(C, m, n, row0 + i * 64, col0 + BOXED, d[i] + BOXED / 2, scale);
            }
#else
#pragma unroll
            for (int i = 0; i < WM; ++i) store_accumulator<BN>(C, m, n, row0 + i * 64, col0, d[i], scale);
#endif
        }
#if TMA_STORE
        if (threadIdx.x % 128 == 0) tma_store_wait();
#endif
    }
    if (CLUSTER > 1) cluster_sync();  // no block leaves while a peer may still signal or fill its slots
}
