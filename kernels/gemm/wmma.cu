// wmma_gemm: the simple tensor-core GEMM of the 16-bit types, C = A . B with A, B, C of elem_t
// (fp16 or bf16, common/types.cuh) and float accumulation: WMMA (mma.sync underneath) on 16 x 16 x 16
// fragments. Any m, n, k and any layout: a block stages a BK-deep slice of A and B in shared memory
// as they are stored (TRANS_A: A stored k x m; TRANS_B: B stored n x k), zero past the matrix's
// edges, and each warp reads its fragments from there in the matching row- or column-major form.
//   WARPS_M x WARPS_N  warps a block; each computes FRAG_M x FRAG_N fragments of C
//   BK                 k a stage covers (a multiple of 16)
// Not the fast path (the tensor-core ladder is another study): no pipelining, one stage in flight.
#include <mma.h>
#include <type_traits>
#include "common/types.cuh"

#ifndef TRANS_A
#define TRANS_A 0
#endif
#ifndef TRANS_B
#define TRANS_B 0
#endif

using namespace nvcuda;

constexpr int BM = 16 * WARPS_M * FRAG_M, BN = 16 * WARPS_N * FRAG_N, PAD = 8;  // PAD: rows 16-byte aligned
constexpr int THREADS = 32 * WARPS_M * WARPS_N;
typedef typename std::conditional<TRANS_A, wmma::col_major, wmma::row_major>::type a_order;
typedef typename std::conditional<TRANS_B, wmma::col_major, wmma::row_major>::type b_order;

extern "C" __global__ void __launch_bounds__(THREADS)
wmma_gemm(const elem_t* __restrict__ A, const elem_t* __restrict__ B, elem_t* __restrict__ C, int m, int n, int k)
{
    // A's slice: BM x BK as stored (row-major), or BK x BM (A stored k x m); B's: BK x BN, or BN x BK.
    __shared__ __align__(32) elem_t as[TRANS_A ? BK * (BM + PAD) : BM * (BK + PAD)];
    __shared__ __align__(32) elem_t bs[TRANS_B ? BN * (BK + PAD) : BK * (BN + PAD)];
    __shared__ __align__(32) float staged[WARPS_M * WARPS_N][16 * 16];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const elem_t zero = from_acc<elem_t>(0.0f);

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FRAG_M][FRAG_N];
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < k; k0 += BK) {
        // Stage the slices, consecutive threads along each stored row (coalesced), zeros past the edges.
        for (int e = threadIdx.x; e < BM * BK; e += THREADS) {
            if (TRANS_A) {  // stored k x m: row kk of the slice is BM elements of A's row k0 + kk
                const int kk = e / BM, r = e % BM, gk = k0 + kk, gr = row0 + r;
                as[kk * (BM + PAD) + r] = gk < k && gr < m ? A[(size_t)gk * m + gr] : zero;
            } else {
                const int r = e / BK, kk = e % BK, gr = row0 + r, gk = k0 + kk;
                as[r * (BK + PAD) + kk] = gr < m && gk < k ? A[(size_t)gr * k + gk] : zero;
            }
        }
        for (int e = threadIdx.x; e < BK * BN; e += THREADS) {
            if (TRANS_B) {  // stored n x k
                const int c = e / BK, kk = e % BK, gc = col0 + c, gk = k0 + kk;
                bs[c * (BK + PAD) + kk] = gc < n && gk < k ? B[(size_t)gc * k + gk] : zero;
            } else {
                const int kk = e / BN, c = e % BN, gk = k0 + kk, gc = col0 + c;
                bs[kk * (BN + PAD) + c] = gk < k && gc < n ? B[(size_t)gk * n + gc] : zero;
            }
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, elem_t, a_order> a[FRAG_M];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, elem_t, b_order> b[FRAG_N];
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i) {
                const int r = (wm * FRAG_M + i) * 16;
                wmma::load_matrix_sync(a[i], TRANS_A ? &as[kk * (BM + PAD) + r] : &as[r * (BK + PAD) + kk],
                                       TRANS_A ? BM + PAD : BK + PAD);
            }
#pragma unroll
            for (int j = 0; j < FRAG_N; ++j) {
                const int c = (wn * FRAG_N + j) * 16;
                wmma::load_matrix_sync(b[j], TRANS_B ? &bs[c * (BK + PAD) + kk] : &bs[kk * (BN + PAD) + c],
                                       TRANS_B ? BK + PAD : BN + PAD);
            }
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
                for (int j = 0; j < FRAG_N; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    // Each fragment through the warp's 16 x 16 float tile (a fragment's layout is opaque), rounded
    // to elem_t once, written where it falls inside C.
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) {
            wmma::store_matrix_sync(staged[warp], acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            const int r0 = row0 + (wm * FRAG_M + i) * 16, c0 = col0 + (wn * FRAG_N + j) * 16;
            for (int e = lane; e < 16 * 16; e += 32) {
                const int r = r0 + e / 16, c = c0 + e % 16;
                if (r < m && c < n) C[(size_t)r * n + c] = from_acc<elem_t>(staged[warp][e]);
            }
            __syncwarp();
        }
}
