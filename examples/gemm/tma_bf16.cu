// A BF16 GEMM whose tiles arrive by TMA: mmbench makes the tensor maps the variant file declares
// (tensor_maps) and passes them by value where its arguments name them (map_A, map_B); the blocks
// run in clusters of CLUSTER along x, as the file's `cluster` asks (here only to show the launch: the
// blocks of a cluster share nothing). A block of 4 warps computes a 64 x 64 tile of C with WMMA;
// one thread issues the two TMA copies of each 64-deep k-tile, an mbarrier counts their bytes.
// C = A . B with A m x k, B stored n x k (layout nt), C m x n, float accumulation, C rounded once.
#include <mma.h>
#include <cuda_bf16.h>
#include <cstdint>

using namespace nvcuda;

struct __align__(64) tensor_map { unsigned long long bits[16]; };  // a CUtensorMap's 128 bytes

constexpr int TILE = 64;  // C's tile, and the k a copy brings (64 bfloat16: 128-byte rows)

__device__ __forceinline__ unsigned shared_address(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

extern "C" __global__ void __launch_bounds__(128)
gemm_bf16_tma(const __grid_constant__ tensor_map map_a, const __grid_constant__ tensor_map map_b,
              __nv_bfloat16* C, int m, int n, int k)
{
    __shared__ __align__(128) __nv_bfloat16 as[TILE * TILE], bs[TILE * TILE];  // as[row][k], bs[col][k]
    __shared__ __align__(32) float staged[4][16 * 16];
    __shared__ __align__(8) uint64_t arrived;
    const int warp = threadIdx.x / 32, wm = warp / 2, wn = warp % 2;  // a warp: 32 x 32 of the tile
    const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;

    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(shared_address(&arrived)));
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int t = 0, k0 = 0; k0 < k; ++t, k0 += TILE) {
        if (threadIdx.x == 0) {  // both boxes; TMA fills what lies past A's or B's edge with zeros
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(shared_address(&arrived)),
                         "r"(2 * TILE * TILE * 2)
                         : "memory");
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(shared_address(as)),
                         "l"(reinterpret_cast<uint64_t>(&map_a)), "r"(shared_address(&arrived)), "r"(k0), "r"(row0)
                         : "memory");
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(shared_address(bs)),
                         "l"(reinterpret_cast<uint64_t>(&map_b)), "r"(shared_address(&arrived)), "r"(k0), "r"(col0)
                         : "memory");
        }
        asm volatile("{\n.reg .pred ready;\nWAIT:\nmbarrier.try_wait.parity.shared::cta.b64 ready, [%0], %1;\n"
                     "@!ready bra WAIT;\n}\n" ::"r"(shared_address(&arrived)), "r"(t & 1)
                     : "memory");
        for (int kk = 0; kk < TILE; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b[2];
            for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], as + (wm * 32 + i * 16) * TILE + kk, TILE);
            for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], bs + (wn * 32 + j * 16) * TILE + kk, TILE);
            for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        // Every warp is done reading the tiles before thread 0 brings the next. WMMA read them as plain
        // shared loads and TMA writes them from another proxy: the fence orders the two.
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
    }
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {
            wmma::store_matrix_sync(staged[warp], acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            for (int e = threadIdx.x % 32; e < 256; e += 32) {
                const int r = row0 + wm * 32 + i * 16 + e / 16, c = col0 + wn * 32 + j * 16 + e % 16;
                if (r < m && c < n) C[static_cast<size_t>(r) * n + c] = __float2bfloat16_rn(staged[warp][e]);
            }
            __syncwarp();
        }
}
