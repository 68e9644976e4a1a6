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
// out (n x m) = in (m x n)^T, row-major, any m and n. Typed (common/types.cuh): elements of 1, 2,
// 4 or 8 bytes (move_t, float at fp32), VEC of them a vector (float2 and float4 at fp32).
#include "common/block_order.cuh"
#include "common/types.cuh"

// VEC elements of move_t as one load: a vector type of their bytes (two 16-byte loads above 16)
template <int BYTES> struct BytesOf;
template <> struct BytesOf<1> { typedef unsigned char T; };
template <> struct BytesOf<2> { typedef unsigned short T; };
template <> struct BytesOf<4> { typedef unsigned int T; };
template <> struct BytesOf<8> { typedef uint2 T; };
template <> struct BytesOf<16> { typedef uint4 T; };
struct __align__(16) Uint4x2 { uint4 lo, hi; };
template <> struct BytesOf<32> { typedef Uint4x2 T; };
template <int V> struct VecOf { typedef typename BytesOf<V * sizeof(move_t)>::T T; };
#if DTYPE == MMB_FP32
template <> struct VecOf<1> { typedef float T; };
template <> struct VecOf<2> { typedef float2 T; };
template <> struct VecOf<4> { typedef float4 T; };
#endif
typedef VecOf<VEC>::T vec_t;

#if STREAM
#define LOAD(p) __ldcs(p)
#define STORE(p, v) __stcs(p, v)
// 32 bytes (VEC 4 of 8-byte elements) as two 16-byte streaming loads and stores
__device__ __forceinline__ Uint4x2 __ldcs(const Uint4x2* p) { return {__ldcs(&p->lo), __ldcs(&p->hi)}; }
__device__ __forceinline__ void __stcs(Uint4x2* p, Uint4x2 v) { __stcs(&p->lo, v.lo); __stcs(&p->hi, v.hi); }
#else
#define LOAD(p) (*(p))
#define STORE(p, v) (*(p) = (v))
#endif

extern "C" __global__ void __launch_bounds__(TC / VEC * ROWS)
transpose_vec(const move_t* __restrict__ in, move_t* __restrict__ out, int m, int n)
{
    __shared__ move_t tile[TR][TC + PAD];
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
            const move_t* f = reinterpret_cast<const move_t*>(&v);
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
            move_t* f = reinterpret_cast<move_t*>(&v);
#pragma unroll
            for (int e = 0; e < VEC; ++e) f[e] = tile[e0 + e][q];
            STORE(reinterpret_cast<vec_t*>(out + (size_t)orow * m + oc), v);
        } else {
            for (int e = 0; e < VEC && oc + e < m; ++e) out[(size_t)orow * m + oc + e] = tile[e0 + e][q];
        }
    }
}
