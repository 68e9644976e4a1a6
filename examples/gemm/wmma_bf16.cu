// A BF16 GEMM on the tensor cores, written for mmbench's examples: C (M x N, row-major, bf16) =
// alpha * A . B + beta * C, A M x K row-major and B stored N x K (K-major: layout nt), float
// accumulation. Each warp computes a 16 x 16 tile of C with WMMA (mma.sync underneath), loading its
// fragments straight from global memory; a block is WARPS_M x WARPS_N warps. It takes only shapes
// that are multiples of its tiles (M of 16 WARPS_M, N of 16 WARPS_N, K of 16): its variant file says
// so in `requires`, and mmbench skips other shapes instead of calling them wrong.
#include <cuda_bf16.h>
#include <mma.h>

using namespace nvcuda;

extern "C" __global__ void gemm_bf16_wmma(int M, int N, int K, float alpha, const __nv_bfloat16* A,
                                          const __nv_bfloat16* B, float beta, __nv_bfloat16* C) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row = (blockIdx.y * WARPS_M + warp / WARPS_N) * 16;
    const int col = (blockIdx.x * WARPS_N + warp % WARPS_N) * 16;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;  // B^T row-major is B col-major
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + (size_t)row * K + k, K);
        wmma::load_matrix_sync(b, B + (size_t)col * K + k, K);
        wmma::mma_sync(acc, a, b, acc);
    }
    // alpha, beta and the rounding to bf16 through shared memory: a fragment's layout is opaque
    __shared__ float tile[WARPS_M * WARPS_N][16 * 16];
    wmma::store_matrix_sync(tile[warp], acc, 16, wmma::mem_row_major);
    __syncwarp();
    for (int i = lane; i < 16 * 16; i += 32) {
        const size_t at = (size_t)(row + i / 16) * N + col + i % 16;
        float value = alpha * tile[warp][i];
        if (beta != 0.0f) value += beta * __bfloat162float(C[at]);  // beta 0: C is not read (it may hold NaN)
        C[at] = __float2bfloat16(value);
    }
}
