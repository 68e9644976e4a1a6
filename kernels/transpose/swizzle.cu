// transpose_swizzle: every shared-memory access 16 bytes wide and free of bank conflicts.
//   The tile (TR rows x TC columns of in) is kept as 16-byte granules (float4). Loading, thread x
//   puts the float4 at columns 4x..4x+3 of a row of in into granule x of that tile row. Storing, a
//   thread takes a 4 x 4 block (4 tile rows, one granule each), transposes it in registers, and
//   writes 4 float4s, one into each of 4 rows of out.
//   Granule g of tile row r is kept at g ^ ((r / 4) mod (TC / 4)) (an XOR swizzle, no padding):
//   8 consecutive lanes (one phase of a 128-bit access) then reach 8 different 16-byte bank
//   groups both when they load 8 granules of one row and when they read granule g of 8 blocks
//   down a column.
//   TR x TC  the tile (TR, TC multiples of 32; TC / 4 a power of two)
//   ROWS     threads along y: a block has TC / 4 x ROWS threads
//   GROUP    tile rows a column of blocks goes down before the next (common/block_order.cuh)
// Rows of in that are not a multiple of 4 floats long, and the matrix's last partial granules,
// go float by float. out (n x m) = in (m x n)^T, row-major, any m and n.
#include "common/block_order.cuh"

#define GRANULES (TC / 4)
#define SWIZZLE(r) (((r) >> 2) & (GRANULES - 1))

extern "C" __global__ void __launch_bounds__(GRANULES * ROWS)
transpose_swizzle(const float* __restrict__ in, float* __restrict__ out, int m, int n)
{
    __shared__ float4 tile[TR][GRANULES];
    int by, bx;
    tile_of_block(by, bx);
    const int r0 = by * TR, c0 = bx * TC;

    const int c = c0 + 4 * threadIdx.x;
    const bool whole_in = n % 4 == 0 && c + 4 <= n;
#pragma unroll
    for (int j = threadIdx.y; j < TR; j += ROWS) {
        const int r = r0 + j;
        if (r >= m) break;
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (whole_in) {
            v = *reinterpret_cast<const float4*>(in + (size_t)r * n + c);
        } else {
            float* f = reinterpret_cast<float*>(&v);
            for (int e = 0; e < 4 && c + e < n; ++e) f[e] = in[(size_t)r * n + c + e];
        }
        tile[j][threadIdx.x ^ SWIZZLE(j)] = v;
    }
    __syncthreads();

    // Block b: tile rows 4i..4i+3, granule g; consecutive threads take consecutive i, so a warp
    // writes 16-byte pieces of one row of out side by side.
    const int t = threadIdx.y * GRANULES + threadIdx.x;
    const bool whole_out = m % 4 == 0;
#pragma unroll
    for (int b = t; b < (TR / 4) * GRANULES; b += GRANULES * ROWS) {
        const int i = b % (TR / 4), g = b / (TR / 4);
        const int oc = r0 + 4 * i;  // out's columns oc .. oc + 3 are in's rows
        if (oc >= m || c0 + 4 * g >= n) continue;
        float4 a[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) a[e] = tile[4 * i + e][g ^ SWIZZLE(4 * i + e)];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const int orow = c0 + 4 * g + k;  // a row of out is a column of in
            if (orow >= n) break;
            const float4 w = k == 0 ? make_float4(a[0].x, a[1].x, a[2].x, a[3].x)
                           : k == 1 ? make_float4(a[0].y, a[1].y, a[2].y, a[3].y)
                           : k == 2 ? make_float4(a[0].z, a[1].z, a[2].z, a[3].z)
                                    : make_float4(a[0].w, a[1].w, a[2].w, a[3].w);
            float* dst = out + (size_t)orow * m + oc;
            if (whole_out && oc + 4 <= m) {
                *reinterpret_cast<float4*>(dst) = w;
            } else {
                const float* f = reinterpret_cast<const float*>(&w);
                for (int e = 0; e < 4 && oc + e < m; ++e) dst[e] = f[e];
            }
        }
    }
}
