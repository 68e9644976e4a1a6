// transpose_vec: transpose_tiled with vector loads and stores and a rectangular tile, so that a
// warp moves longer runs of memory per instruction.
//   TR x TC  the tile: TR rows and TC columns of in (TR consecutive floats of each row of out)
//   VEC      floats a load or store moves (1, 2 or 4: float, float2, float4); a vector that would
//            cross the matrix's edge, or rows not a multiple of VEC floats long, go float by float
//   ROWS     threads along y: a block has TC / VEC x ROWS threads
//   PAD      floats added to a row of the tile in shared memory
//   GROUP    tile rows a column of blocks goes down before the next (common/block_order.cuh)
//   STREAM   1: vector loads and stores with the evict-first hint (__ldcs, __stcs): every byte is
//            touched once, so it need not stay in L2
// out (n x m) = in (m x n)^T, row-major, any m and n.
#include "common/block_order.cuh"

template <int V> struct VecOf;
template <> struct VecOf<1> { typedef float T; };
template <> struct VecOf<2> { typedef float2 T; };
template <> struct VecOf<4> { typedef float4 T; };
typedef VecOf<VEC>::T vec_t;

#if STREAM
#define LOAD(p) __ldcs(p)
#define STORE(p, v) __stcs(p, v)
#else
#define LOAD(p) (*(p))
#define STORE(p, v) (*(p) = (v))
#endif

extern "C" __global__ void __launch_bounds__(TC / VEC * ROWS)
transpose_vec(const float* __restrict__ in, float* __restrict__ out, int m, int n)
{
    __shared__ float tile[TR][TC + PAD];
    int by, bx;
    tile_of_block(by, bx);
    const int r0 = by * TR, c0 = bx * TC;
    const int threads = TC / VEC * ROWS, t = threadIdx.y * (TC / VEC) + threadIdx.x;

    // Rows of in into the tile: thread x takes VEC floats of each of its rows.
    const int c = c0 + VEC * threadIdx.x;
    const bool whole_in = n % VEC == 0 && c + VEC <= n;
#pragma unroll
    for (int j = threadIdx.y; j < TR; j += ROWS) {
        const int r = r0 + j;
        if (r >= m) break;
        if (whole_in) {
            const vec_t v = LOAD(reinterpret_cast<const vec_t*>(in + (size_t)r * n + c));
            const float* f = reinterpret_cast<const float*>(&v);
#pragma unroll
            for (int e = 0; e < VEC; ++e) tile[j][VEC * threadIdx.x + e] = f[e];
        } else {
            for (int e = 0; e < VEC && c + e < n; ++e) tile[j][VEC * threadIdx.x + e] = in[(size_t)r * n + c + e];
        }
    }
    __syncthreads();

    // Rows of out (columns of the tile): thread t takes VEC consecutive floats of a row.
    constexpr int per_row = TR / VEC;
    const int e0 = VEC * (t % per_row), oc = r0 + e0;
    const bool whole_out = m % VEC == 0 && oc + VEC <= m;
#pragma unroll
    for (int q = t / per_row; q < TC; q += threads / per_row) {
        const int orow = c0 + q;
        if (orow >= n) break;
        if (whole_out) {
            vec_t v;
            float* f = reinterpret_cast<float*>(&v);
#pragma unroll
            for (int e = 0; e < VEC; ++e) f[e] = tile[e0 + e][q];
            STORE(reinterpret_cast<vec_t*>(out + (size_t)orow * m + oc), v);
        } else {
            for (int e = 0; e < VEC && oc + e < m; ++e) out[(size_t)orow * m + oc + e] = tile[e0 + e][q];
        }
    }
}
