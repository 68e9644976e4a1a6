// transpose_tiled: beyond the lab, the tile and the work a thread does are parameters.
//   TILE  the tile's side (a block moves TILE x TILE floats through shared memory)
//   ROWS  threads along y: a block has TILE x ROWS threads, each moving TILE / ROWS rows
//   PAD   floats added to a row of the tile (1: no bank conflicts when it is read by columns)
// More floats a thread (TILE / ROWS) keep more loads in flight, which is what a copy at full
// bandwidth needs; out (n x m) = in (m x n)^T, row-major, any m and n. Typed (common/types.cuh):
// elements of 1, 2, 4 or 8 bytes, moved as move_t (float at fp32).
#include "common/types.cuh"

extern "C" __global__ void __launch_bounds__(TILE * ROWS)
transpose_tiled(const move_t* __restrict__ in, move_t* __restrict__ out, int m, int n)
{
    __shared__ move_t tile[TILE][TILE + PAD];
    const int r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;
    const int c = c0 + threadIdx.x;
#pragma unroll
    for (int j = threadIdx.y; j < TILE; j += ROWS) {
        const int r = r0 + j;
        if (r < m && c < n) tile[j][threadIdx.x] = in[(size_t)r * n + c];
    }
    __syncthreads();
    const int oc = r0 + threadIdx.x;  // a column of out is a row of in
#pragma unroll
    for (int j = threadIdx.y; j < TILE; j += ROWS) {
        const int orow = c0 + j;
        if (orow < n && oc < m) out[(size_t)orow * m + oc] = tile[threadIdx.x][j];
    }
}
