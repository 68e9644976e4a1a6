// Ladder step 5: warp tiles fed through two shared-memory buffers, and split-K.
//
// The warp tiling of warptile.cu (a block computes BM x BN of C, each warp WM x WN of it as
// WMITER x WNITER sub-tiles, each lane a TM x TN register tile; A transposed in shared memory so
// lanes read A and B as float4s) with two changes:
//  * Double buffering. While the warps multiply k-tile t out of one shared buffer, each thread's
//    global loads of tile t+1 are already in flight into registers; after the products it writes
//    them to the other buffer. One barrier per k-tile instead of two, and the global-load latency
//    hides behind a whole tile of FMAs.
//  * Split-K. The grid has SPLITK layers (blockIdx.z); layer z sums its share of the k-tiles and
//    adds its partial tile into C with atomics, so small or awkward sizes, whose few tiles would
//    leave SMs idle or run a mostly empty last wave, still fill the GPU. With SPLITK > 1 the
//    harness zeroes C before every launch, inside the timed region.
//  * Thin remainders (STRIP). When C has at most STRIP rows (columns) past the last whole tile,
//    the harness launches the tiled kernel on the whole tiles only and computes the leftover strip
//    with dbuf_row_strip (dbuf_col_strip): a tile row that is 1 row full would cost as much as a
//    full one, and at 2049 it makes a 17 x 17 grid that leaves a second wave almost empty.
//  * Stream-K (SK = 1). A persistent grid of MINB blocks per SM shares the whole product's
//    (tile, k-tile) iterations out evenly, so the last wave of tiles leaves no SM idle (see the
//    kernel). The harness zeroes C first, as for split-K.
// Tunable: BM, BN, BK, WM, WN, WNITER, TM, TN, THREADS, SPLITK, SK; MINB, the blocks per SM the
// register allocation must leave room for (__launch_bounds__); VEC4, how global loads go (fetch,
// fetch_b_async);
// STAGE, how edge tiles store C; STRIP, the widest remainder sent to the strip kernels (0: none);
// ORDER, the loop order of the products' FFMAs (products).
#include "common/cp_async.cuh"
#include "common/split_k.cuh"
#include "common/unpack.cuh"

#define WMITER ((WM * WN) / (32 * TM * TN * WNITER))
#define WSUBM (WM / WMITER)
#define WSUBN (WN / WNITER)
#define A_CHUNKS (BM * BK / 4 / THREADS)  // float4s of the A tile each thread copies
#define B_CHUNKS (BK * BN / 4 / THREADS)
// Padded A rows: lanes that store different k columns of the transposed tile hit different banks.
#define AS_LD (BM + 4)

// VEC4 = 2: B goes by cp.async straight into shared memory, not through registers (A as VEC4 = 1).
// Where B's rows are unaligned, consecutive lanes copy consecutive 4-byte columns: each copy
// instruction of the warp is one coalesced row segment, and no register staging, no shared store
// and no extra load instruction per float4 crowd the load/store pipe the products use.
#define B_ASYNC (VEC4 == 2)

// One k-tile of A and B on its way from global to shared memory, held in registers.
struct Staged {
    float4 a[A_CHUNKS];
#if !B_ASYNC
    float4 b[B_CHUNKS];
#endif
};

__device__ __forceinline__ void set_lane(float4& v, int q, float x)
{
    if (q == 0) v.x = x; else if (q == 1) v.y = x; else if (q == 2) v.z = x; else v.w = x;
}

__device__ __forceinline__ float lane_of(const float4& v, int q)
{
    return q == 0 ? v.x : q == 1 ? v.y : q == 2 ? v.z : v.w;
}

// The single-float layout (VEC4 = 0): element j of a thread is element threadIdx.x + j * THREADS
// of the tile, row-major. Written out so that each thread needs one base address.
#define A_STEP (THREADS / BK)

#define B_PER_ROW (BN > THREADS ? BN / THREADS : 1)
#define B_STEP (BN > THREADS ? 1 : THREADS / BN)

#if B_ASYNC
// B's k-tile (rows k0 to k0 + BK) by cp.async into Bs, committed as one group (b_landed waits for
// it). Aligned rows: 16-byte copies in stash's layout. Unaligned: 4-byte copies, element e of the
// tile (row e / BN, column e % BN) by thread e % THREADS. Columns past N (EDGE) and rows past kend
// (KPART) are zero-filled, reading nothing: clamped to one address instead, as the register path
// does, the copies of an edge tile queue on it (at 1951, 97 of 128 columns: 80 % of cuBLAS
// against 92 % at 2047, H100).
template <bool EDGE, bool KPART>
__device__ __forceinline__ void fetch_b_async(bool vec_b, const float* __restrict__ B, float (*Bs)[BN], int col0,
                                              int k0, int N, int kend)
{
    if (vec_b) {
#pragma unroll
        for (int j = 0; j < B_CHUNKS; ++j) {
            const int i = threadIdx.x + j * THREADS, r = i / (BN / 4), c = (i % (BN / 4)) * 4;
            const int gr = k0 + r, gc = col0 + c;
            const bool ok = (!KPART || gr < kend) && (!EDGE || gc < N);  // a chunk is wholly in or out
            cp_async16(&Bs[r][c], ok ? &B[gr * N + gc] : B, ok);
        }
    } else {
        // VEC4 = 0's layout: element j of a thread is row rb + j / B_PER_ROW * B_STEP, column
        // cb + (j % B_PER_ROW) * THREADS; one base address, the rows' offsets a multiple of N.
        const int rb = BN > THREADS ? 0 : threadIdx.x / BN, cb = BN > THREADS ? threadIdx.x : threadIdx.x % BN;
        const float* p = B + (k0 + rb) * N;
#pragma unroll
        for (int j = 0; j < 4 * B_CHUNKS; ++j) {
            const int r = j / B_PER_ROW * B_STEP, c = cb + (j % B_PER_ROW) * THREADS;
            const bool ok = (!KPART || k0 + rb + r < kend) && (!EDGE || col0 + c < N);
            cp_async4(&Bs[rb + r][c], ok ? p + r * N + col0 + c : B, ok);
        }
    }
    cp_async_commit();
}
#endif

// Wait for this thread's copies of B (VEC4 = 2) before the barrier that publishes the buffer.
__device__ __forceinline__ void b_landed()
{
#if B_ASYNC
    cp_async_wait<0>();
#endif
}

// Global -> registers. k runs to kend (this layer's end), never past it: another layer owns
// the rest, so the k-tile that crosses kend (KPART) reads zeros there. In a block that crosses
// the edge of C (EDGE), rows of A past M and columns of B past N are clamped to the last one
// instead of tested element by element: they only feed outputs that are never stored.
// vec_a, vec_b: rows of A (K % 4 == 0), of B (N % 4 == 0) are 16-byte aligned.
// VEC4 = 1 builds take float4s where rows are aligned and the same four floats one by one where
// they are not. VEC4 = 0 builds take single floats, consecutive lanes along a row, so that every
// load instruction of the warp stays coalesced. (A build parameter, not a runtime branch: both
// paths in one kernel spill registers.) VEC4 = 2 builds load A as VEC4 = 1 and B by fetch_b_async.
template <bool EDGE, bool KPART>
__device__ __forceinline__ void fetch(bool vec_a, bool vec_b, const float* __restrict__ A,
                                      const float* __restrict__ B, Staged& s, float (*Bs)[BN], int row0, int col0,
                                      int k0, int M, int N, int K, int kend)
{
    // Opaque copies in edge blocks: their clamps and offsets are recomputed in each k-tile
    // instead of being hoisted out of the main loop to sit in registers (ptxas would spill).
    if (EDGE) asm volatile("" : "+r"(M), "+r"(N), "+r"(K));
#if VEC4
#pragma unroll
    for (int j = 0; j < A_CHUNKS; ++j) {
        const int i = threadIdx.x + j * THREADS, r = i / (BK / 4), c = (i % (BK / 4)) * 4;
        const int gr = EDGE ? min(row0 + r, M - 1) : row0 + r, gc = k0 + c;
        const float* p = &A[gr * K + gc];
        if (vec_a && (!KPART || gc < kend)) {  // kend is then a multiple of 4
            s.a[j] = *reinterpret_cast<const float4*>(p);
        } else {
            s.a[j].x = !KPART || gc + 0 < kend ? p[0] : 0.0f;
            s.a[j].y = !KPART || gc + 1 < kend ? p[1] : 0.0f;
            s.a[j].z = !KPART || gc + 2 < kend ? p[2] : 0.0f;
            s.a[j].w = !KPART || gc + 3 < kend ? p[3] : 0.0f;
        }
    }
#if B_ASYNC
    fetch_b_async<EDGE, KPART>(vec_b, B, Bs, col0, k0, N, kend);
#else
#pragma unroll
    for (int j = 0; j < B_CHUNKS; ++j) {
        const int i = threadIdx.x + j * THREADS, r = i / (BN / 4), c = (i % (BN / 4)) * 4;
        const int gr = k0 + r, gc = col0 + c;
        const bool ok = !KPART || gr < kend;
        if (vec_b) {  // a chunk lies wholly inside or wholly outside C's columns
            const float* p = &B[gr * N + (EDGE ? min(gc, N - 4) : gc)];
            s.b[j] = ok ? *reinterpret_cast<const float4*>(p) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        } else {
            const float* p = &B[gr * N];
            s.b[j].x = ok ? p[EDGE ? min(gc + 0, N - 1) : gc + 0] : 0.0f;
            s.b[j].y = ok ? p[EDGE ? min(gc + 1, N - 1) : gc + 1] : 0.0f;
            s.b[j].z = ok ? p[EDGE ? min(gc + 2, N - 1) : gc + 2] : 0.0f;
            s.b[j].w = ok ? p[EDGE ? min(gc + 3, N - 1) : gc + 3] : 0.0f;
        }
    }
#endif
#else
    constexpr bool GUARD = EDGE || KPART;
    // Element j of this thread: A row ra + j * A_STEP, column ca; B row rb + j / B_PER_ROW * B_STEP,
    // column cb + (j % B_PER_ROW) * THREADS (the layout i = threadIdx.x + j * THREADS gives).
    const int ra = threadIdx.x / BK, ca = threadIdx.x % BK;  // unsigned division: shifts
    const int rb = BN > THREADS ? 0 : threadIdx.x / BN, cb = BN > THREADS ? threadIdx.x : threadIdx.x % BN;
    const float* pa = A + (row0 + ra) * K + k0 + ca;
    const float* pb = B + (k0 + rb) * N + col0 + cb;
#pragma unroll
    for (int j = 0; j < 4 * A_CHUNKS; ++j) {
        const bool ok = !GUARD || (row0 + ra + j * A_STEP < M && k0 + ca < kend);
        set_lane(s.a[j / 4], j % 4, ok ? pa[j * A_STEP * K] : 0.0f);
    }
#pragma unroll
    for (int j = 0; j < 4 * B_CHUNKS; ++j) {
        const int r = j / B_PER_ROW * B_STEP, c = (j % B_PER_ROW) * THREADS;
        const bool ok = !GUARD || (k0 + rb + r < kend && col0 + cb + c < N);
        set_lane(s.b[j / 4], j % 4, ok ? pb[r * N + c] : 0.0f);
    }
#endif
}

// Registers -> shared memory, A transposed, in the layout fetch used.
__device__ __forceinline__ void stash(const Staged& s, float (*As)[AS_LD], float (*Bs)[BN])
{
#if VEC4
#pragma unroll
    for (int j = 0; j < A_CHUNKS; ++j) {
        const int i = threadIdx.x + j * THREADS, r = i / (BK / 4), c = (i % (BK / 4)) * 4;
        As[c + 0][r] = s.a[j].x;
        As[c + 1][r] = s.a[j].y;
        As[c + 2][r] = s.a[j].z;
        As[c + 3][r] = s.a[j].w;
    }
#if !B_ASYNC
#pragma unroll
    for (int j = 0; j < B_CHUNKS; ++j) {
        const int i = threadIdx.x + j * THREADS, r = i / (BN / 4), c = (i % (BN / 4)) * 4;
        *reinterpret_cast<float4*>(&Bs[r][c]) = s.b[j];
    }
#endif
#else
    // fetch's element layout; one base address each, the offsets fold into the stores
    float* a = &As[threadIdx.x % BK][threadIdx.x / BK];
    float* b = BN > THREADS ? &Bs[0][threadIdx.x] : &Bs[threadIdx.x / BN][threadIdx.x % BN];
#pragma unroll
    for (int j = 0; j < 4 * A_CHUNKS; ++j) a[j * A_STEP] = lane_of(s.a[j / 4], j % 4);
#pragma unroll
    for (int j = 0; j < 4 * B_CHUNKS; ++j)
        b[j / B_PER_ROW * B_STEP * BN + (j % B_PER_ROW) * THREADS] = lane_of(s.b[j / 4], j % 4);
#endif
}

// One k-tile's products for this lane. ORDER = 1 runs the columns of B outside and the rows of A
// inside, 0 the reverse. The arithmetic is the same, but ptxas assigns registers differently: with
// rows outside, in the 4096 configuration 8 % of the FFMAs read all three operands from one
// register bank (scripts/ffma_banks.py), none with columns outside, which runs 4 % faster
// (results/dbuf-order).
__device__ __forceinline__ void products(const float (*As)[AS_LD], const float (*Bs)[BN],
                                         float acc[WMITER * TM][WNITER * TN], int am, int bn)
{
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
        float ra[WMITER * TM], rb[WNITER * TN];
        // Unpacked by value: taking a register array's address can send it to local memory.
#pragma unroll
        for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                UNPACK4(ra, wm * TM + i, &As[kk][am + wm * WSUBM + i]);
            }
#pragma unroll
        for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                UNPACK4(rb, wn * TN + j, &Bs[kk][bn + wn * WSUBN + j]);
            }
#if ORDER
#pragma unroll
        for (int j = 0; j < WNITER * TN; ++j)
#pragma unroll
            for (int i = 0; i < WMITER * TM; ++i) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
#else
#pragma unroll
        for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
            for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
#endif
    }
}

// Aligned rows, a tile inside C: each lane stores its register tile as float4s.
__device__ __forceinline__ void write_tile(float* __restrict__ C, const float acc[WMITER * TM][WNITER * TN], int N,
                                           int r0, int c0, bool add)
{
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int r = r0 + wm * WSUBM + i;
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn) {
                const int c = c0 + wn * WSUBN, a = wm * TM + i, b = wn * TN;
#pragma unroll
                for (int j = 0; j < TN; j += 4)
                    put4(&C[r * N + c + j],
                         make_float4(acc[a][b + j], acc[a][b + j + 1], acc[a][b + j + 2], acc[a][b + j + 3]), add);
            }
        }
}

#if STAGE
// Unaligned rows, or a tile that crosses C's edge: single floats. Stored straight from registers,
// each store instruction of the warp touches 8 rows at a 16-byte stride; with split-K those are
// scattered atomics. So the warp passes each row slab of its tile through shared memory (stage,
// 32 * TN floats) and writes C with consecutive lanes on consecutive columns. The code costs the
// aligned path registers even where it never runs (4096 fell 6 % with it), hence the switch.
__device__ __forceinline__ void write_edge(float* __restrict__ C, const float acc[WMITER * TM][WNITER * TN],
                                           int M, int N, int wr0, int wc0, int lane_row, int lane_col, float* stage, bool add)
{
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn) {
                const int a = wm * TM + i, b = wn * TN;
                __syncwarp();  // the previous slab has been read
#pragma unroll
                for (int j = 0; j < TN; j += 4)
                    *reinterpret_cast<float4*>(&stage[lane_row * WSUBN + lane_col * TN + j]) =
                        make_float4(acc[a][b + j], acc[a][b + j + 1], acc[a][b + j + 2], acc[a][b + j + 3]);
                __syncwarp();
#pragma unroll
                for (int e = 0; e < TN; ++e) {  // slab row rho holds C row wr0 + wm * WSUBM + rho * TM + i
                    const int idx = e * 32 + lane, rho = idx / WSUBN, col = idx % WSUBN;
                    const int r = wr0 + wm * WSUBM + rho * TM + i, c = wc0 + wn * WSUBN + col;
                    if (r < M && c < N) put1(&C[r * N + c], stage[idx], add);
                }
            }
}
#else
// Unaligned rows, or a tile that crosses C's edge: each lane stores its own outputs one by one.
__device__ __forceinline__ void write_edge(float* __restrict__ C, const float acc[WMITER * TM][WNITER * TN],
                                           int M, int N, int wr0, int wc0, int lane_row, int lane_col, float*, bool add)
{
    const int r0 = wr0 + lane_row * TM, c0 = wc0 + lane_col * TN;
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < TN; ++j) {
                    const int r = r0 + wm * WSUBM + i, c = c0 + wn * WSUBN + j;
                    if (r < M && c < N) put1(&C[r * N + c], acc[wm * TM + i][wn * TN + j], add);
                }
}
#endif

// Where a block's tile lies, which k it sums (kbegin to kend) and whether it adds into C. A
// data-parallel block holds them as plain values (derived from blockIdx, which the compiler
// recomputes where needed); a stream-K block reads each from shared memory where it is used, so
// that none holds a register through the k-loop (stream-K's values kept in registers spill).
struct GridTile {
    int row0_, col0_, kbegin_, kend_;
    __device__ int row0() const { return row0_; }
    __device__ int col0() const { return col0_; }
    __device__ int kbegin() const { return kbegin_; }
    __device__ int kend() const { return kend_; }
    __device__ bool add() const { return SPLITK > 1; }
};

struct SharedTile {
    const volatile int* v;  // row0, col0, kbegin, kend, add
    __device__ int row0() const { return v[0]; }
    __device__ int col0() const { return v[1]; }
    __device__ int kbegin() const { return v[2]; }
    __device__ int kend() const { return v[3]; }
    __device__ bool add() const { return v[4]; }
};

// The steady k-loop over whole k-tiles k0, k0 + BK, ..., kend - BK: load tile t + 1 into registers,
// multiply tile t out of one shared buffer, store tile t + 1 into the other, one barrier. EDGE is a
// template parameter so that the loop holds a single fetch. Returns the buffer of the last tile,
// which is left for the caller to multiply.
template <bool EDGE, class Tile>
__device__ __forceinline__ int steady(bool vec_a, bool vec_b, const float* __restrict__ A, const float* __restrict__ B,
                                      Staged& s, float (*As)[BK][AS_LD], float (*Bs)[BK][BN],
                                      float acc[WMITER * TM][WNITER * TN], int am, int bn, const Tile& t, int k0,
                                      int M, int N, int K)
{
    int buf = 0;
    for (; k0 < t.kend(); k0 += BK) {
        // The other buffer was last read before the previous iteration's barrier: free to fill.
        fetch<EDGE, false>(vec_a, vec_b, A, B, s, Bs[buf ^ 1], t.row0(), t.col0(), k0, M, N, K,
                           t.kend());  // in flight during the products
        products(As[buf], Bs[buf], acc, am, bn);
        stash(s, As[buf ^ 1], Bs[buf ^ 1]);
        b_landed();
        __syncthreads();
        buf ^= 1;
    }
    return buf;
}

// One block's share of one tile of C (t): the products of k in [kbegin, kend), stored into C, or
// added into it (another block adds to the same tile).
template <class Tile>
__device__ __forceinline__ void tile_product(const float* __restrict__ A, const float* __restrict__ B,
                                             float* __restrict__ C, int M, int N, int K, const Tile& t,
                                             float (*As)[BK][AS_LD], float (*Bs)[BK][BN])
{
    const bool vec_a = (K & 3) == 0, vec_b = (N & 3) == 0;  // rows 16-byte aligned: float4 loads, stores
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = warp / (BN / WN), warp_col = warp % (BN / WN);
    const int lane_row = lane / (WSUBN / TN), lane_col = lane % (WSUBN / TN);
    const int am = warp_row * WM + lane_row * TM, bn = warp_col * WN + lane_col * TN;
    const bool inside = t.row0() + BM <= M && t.col0() + BN <= N;

    float acc[WMITER * TM][WNITER * TN] = {};
    Staged s;
    // The k-tile that is not whole (the k count mod BK) goes first, so that every tile the steady
    // loop loads is whole and the loop needs no k guard and no branch.
    const int kbegin = t.kbegin(), ragged = (t.kend() - kbegin) % BK;
    if (ragged)
        fetch<true, true>(vec_a, vec_b, A, B, s, Bs[0], t.row0(), t.col0(), kbegin, M, N, K, kbegin + ragged);
    else if (inside)
        fetch<false, false>(vec_a, vec_b, A, B, s, Bs[0], t.row0(), t.col0(), kbegin, M, N, K, t.kend());
    else
        fetch<true, false>(vec_a, vec_b, A, B, s, Bs[0], t.row0(), t.col0(), kbegin, M, N, K, t.kend());
    stash(s, As[0], Bs[0]);
    b_landed();
    __syncthreads();
    const int k1 = kbegin + (ragged ? ragged : BK);
    const int buf = inside ? steady<false>(vec_a, vec_b, A, B, s, As, Bs, acc, am, bn, t, k1, M, N, K)
                           : steady<true>(vec_a, vec_b, A, B, s, As, Bs, acc, am, bn, t, k1, M, N, K);
    products(As[buf], Bs[buf], acc, am, bn);  // the last k-tile
    __syncthreads();  // every warp is done with the buffers: STAGE stages through them, the next tile refills them
    if (vec_b && inside)
        write_tile(C, acc, N, t.row0() + am, t.col0() + bn, t.add());
    else  // with STAGE, each warp stages its tile through its share of the A buffers
        write_edge(C, acc, M, N, t.row0() + warp_row * WM, t.col0() + warp_col * WN, lane_row, lane_col,
                   &As[0][0][0] + warp * 32 * TN, t.add());
}

#if SK
// Stream-K: a persistent grid (MINB blocks per SM, launched by the harness) shares out the
// (tile, k-tile) iterations of the whole product evenly, tile after tile in row-major order. A
// block whose share starts or ends inside a tile adds its part into C (zeroed by the harness); the
// others store whole tiles. The last wave of tiles then no longer leaves SMs idle: at 4096, 1024
// tiles on 264 block slots are 3.88 waves, run as 3.88 waves' time instead of 4.
// N0: the columns the tiles cover (the rest, if any, is the column strip's).
extern "C" __global__ void __launch_bounds__(THREADS, MINB)
dbuf(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K, int N0)
{
    __shared__ __align__(16) float As[2][BK][AS_LD];
    __shared__ __align__(16) float Bs[2][BK][BN];
    __shared__ int where[5];  // the current tile's SharedTile values
    const long long total = (long long)((M + BM - 1) / BM) * ((N0 + BN - 1) / BN) * ((K + BK - 1) / BK);
    const int end = (int)(total * (blockIdx.x + 1) / gridDim.x);
    for (int it = (int)(total * blockIdx.x / gridDim.x); it < end;) {
        const int tiles_n = (N0 + BN - 1) / BN, k_tiles = (K + BK - 1) / BK;
        const int tile = it / k_tiles, kb = it % k_tiles, ke = min(k_tiles, kb + (end - it));
        if (threadIdx.x == 0) {
            where[0] = tile / tiles_n * BM;
            where[1] = tile % tiles_n * BN;
            where[2] = kb * BK;
            where[3] = min(K, ke * BK);
            where[4] = kb > 0 || ke < k_tiles;
        }
        __syncthreads();  // where is written; the previous tile's epilogue is done with the buffers
        tile_product(A, B, C, M, N, K, SharedTile{where}, As, Bs);
        it += ke - kb;
        __syncthreads();  // every thread has read where
    }
}
#else
// One block per tile of C and per split-K layer (blockIdx.z): a layer sums its share of the
// k-tiles, shared out as evenly as they go, and adds its partial tile into C.
extern "C" __global__ void __launch_bounds__(THREADS, MINB)
dbuf(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    __shared__ __align__(16) float As[2][BK][AS_LD];
    __shared__ __align__(16) float Bs[2][BK][BN];
    int kbegin, kend;
    layer_k_range(K, kbegin, kend);
    const GridTile t{(int)blockIdx.y * BM, (int)blockIdx.x * BN, kbegin, kend};
    if (kbegin >= kend) return;  // a layer with no k-tiles adds nothing (uniform across the block)
    tile_product(A, B, C, M, N, K, t, As, Bs);
}
#endif

#if STRIP
// The strips: memory-bound products of a few rows (columns) of C, each reading a whole operand.
// Latency bounds them, so each lane first issues STRIP_U independent loads per operand, then uses
// them. The harness runs them on a second stream beside the tiled kernel, in the SMs its grid
// leaves free. Both take any grid: a block moves on by the grid's width until its strip is done.
#define STRIP_U 8

// C[m0:M, 0:N], r = M - m0 <= STRIP rows. A block of 32 x (up to 16) threads owns 32 columns:
// warp w takes k = w, w + blockDim.y, ..., each lane one column (B read coalesced, A's few values
// broadcast), and the warps' partial sums meet in shared memory.
extern "C" __global__ void __launch_bounds__(512)
dbuf_row_strip(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K,
               int m0)
{
    __shared__ float part[16][STRIP][33];  // warp x row x lane, padded: the final sums read across warps
    const int lane = threadIdx.x, warp = threadIdx.y, warps = blockDim.y, r = M - m0;
    const float* a = A + m0 * K;
    for (int c = blockIdx.x * blockDim.x + lane; c - lane < N; c += gridDim.x * blockDim.x) {
        const float* b = B + min(c, N - 1);  // lanes past N compute a copy that is never stored
        float acc[STRIP] = {};
        for (int k0 = warp; k0 < K; k0 += STRIP_U * warps) {
            float x[STRIP_U], y[STRIP_U][STRIP];
#pragma unroll
            for (int u = 0; u < STRIP_U; ++u) {
                const int k = k0 + u * warps;
                x[u] = k < K ? b[k * N] : 0.0f;
#pragma unroll
                for (int i = 0; i < STRIP; ++i) y[u][i] = i < r && k < K ? a[i * K + k] : 0.0f;
            }
#pragma unroll
            for (int u = 0; u < STRIP_U; ++u)
#pragma unroll
                for (int i = 0; i < STRIP; ++i) acc[i] = fmaf(y[u][i], x[u], acc[i]);
        }
        __syncthreads();  // the previous columns' sums have been read
#pragma unroll
        for (int i = 0; i < STRIP; ++i) part[warp][i][lane] = acc[i];
        __syncthreads();
        if (warp < r && c < N) {  // warp i sums row i
            float sum = 0.0f;
            for (int w = 0; w < warps; ++w) sum += part[w][warp][lane];
            C[(m0 + warp) * N + c] = sum;
        }
    }
}

// C[0:M0, n0:N], r = N - n0 <= STRIP columns. Each warp owns COL_STRIP_ROWS rows, its lanes take
// every 32nd k of them (A read coalesced) and the warp sums by shuffles. B's few columns, a chunk of
// k at a time, are first gathered into shared memory, to be read there with consecutive k.
#define COL_STRIP_ROWS 2
#define COL_STRIP_KC 2048
extern "C" __global__ void __launch_bounds__(256)
dbuf_col_strip(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M0, int N, int K,
               int n0)
{
    __shared__ float bs[STRIP][COL_STRIP_KC];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, r = N - n0;
    const int span = blockDim.x / 32 * COL_STRIP_ROWS;  // rows a block covers at a time
    for (int base = blockIdx.x * span; base < M0; base += gridDim.x * span) {
        const int row0 = base + warp * COL_STRIP_ROWS;
        const float* a[COL_STRIP_ROWS];
#pragma unroll
        for (int q = 0; q < COL_STRIP_ROWS; ++q) a[q] = A + min(row0 + q, M0 - 1) * K;  // clamped, never stored
        float acc[COL_STRIP_ROWS][STRIP] = {};
        for (int kc = 0; kc < K; kc += COL_STRIP_KC) {
            const int kn = min(COL_STRIP_KC, K - kc), count = r * kn;
            __syncthreads();  // the previous chunk has been read
            for (int e0 = threadIdx.x; e0 < count; e0 += STRIP_U * blockDim.x) {
                float v[STRIP_U];
#pragma unroll
                for (int u = 0; u < STRIP_U; ++u) {
                    const int e = e0 + u * blockDim.x;
                    v[u] = e < count ? B[(kc + e / r) * N + n0 + e % r] : 0.0f;
                }
#pragma unroll
                for (int u = 0; u < STRIP_U; ++u) {
                    const int e = e0 + u * blockDim.x;
                    if (e < count) bs[e % r][e / r] = v[u];
                }
            }
            __syncthreads();
            for (int k0 = lane; k0 < kn; k0 += 32 * STRIP_U) {
                float x[COL_STRIP_ROWS][STRIP_U];
#pragma unroll
                for (int u = 0; u < STRIP_U; ++u)
#pragma unroll
                    for (int q = 0; q < COL_STRIP_ROWS; ++q) x[q][u] = k0 + 32 * u < kn ? a[q][kc + k0 + 32 * u] : 0.0f;
#pragma unroll
                for (int u = 0; u < STRIP_U; ++u) {
                    const int k = min(k0 + 32 * u, kn - 1);  // past kn, x is 0
#pragma unroll
                    for (int i = 0; i < STRIP; ++i)
                        if (i < r) {
                            const float y = bs[i][k];
#pragma unroll
                            for (int q = 0; q < COL_STRIP_ROWS; ++q) acc[q][i] = fmaf(x[q][u], y, acc[q][i]);
                        }
                }
            }
        }
#pragma unroll
        for (int q = 0; q < COL_STRIP_ROWS; ++q)
#pragma unroll
            for (int i = 0; i < STRIP; ++i)
                if (i < r) {
                    float v = acc[q][i];
#pragma unroll
                    for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
                    if (lane == 0 && row0 + q < M0) C[(row0 + q) * N + n0 + i] = v;
                }
    }
}
#endif
