// Lab 3's shared matrix multiply: C (m x n) = A (m x k) . B (k x n), row-major, any m, n, k.
// 32 x 32 tiles of A and B in shared memory, loaded along rows (coalesced), one output a thread.
// Thread (x, y) computes C[i0 + x][j0 + y], so in the products the 32 threads of a warp read a
// column of A's tile: with an unpadded [32][32] tile (PAD = 0) all 32 reads hit one bank, the
// conflict the lab found; PAD = 1 gives the tile 33 columns and removes it (the lab measured the
// padded version slower). B's tile is read along a row by a warp (one broadcast).
extern "C" __global__ void matmul_shared(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                                         int m, int n, int k)
{
    __shared__ float as[32][32 + PAD];
    __shared__ float bs[32][32];
    const int x = threadIdx.x, y = threadIdx.y;
    const int i0 = blockIdx.y * 32, j0 = blockIdx.x * 32;
    float sum = 0.0f;
    for (int p0 = 0; p0 < k; p0 += 32) {
        as[y][x] = (i0 + y < m && p0 + x < k) ? a[(size_t)(i0 + y) * k + p0 + x] : 0.0f;
        bs[y][x] = (p0 + y < k && j0 + x < n) ? b[(size_t)(p0 + y) * n + j0 + x] : 0.0f;
        __syncthreads();
        for (int q = 0; q < 32; ++q) sum += as[x][q] * bs[q][y];
        __syncthreads();
    }
    if (i0 + x < m && j0 + y < n) c[(size_t)(i0 + x) * n + j0 + y] = sum;
}
