// Lab 3's cache-friendly matrix multiplications (its naive one is the `naive` variant, its shared one
// matmul_shared in lab3_shared.cu):
// C (m x n) = A (m x k) . B (k x n), row-major, any m, n, k.
//
// matmul_cache: a thread per element of A, a block of 32 x 8 threads over a 32 x 8 patch of A.
// Thread (p, i) multiplies A[i][p] into row p of B and adds the products into row i of C,
// walking both rows from left to right (the cache-friendly order of the lab). Every element of C
// gets k additions from k threads, so they go through atomicAdd (C is zeroed first); the 32
// threads of a warp add into the same element of C at once, which serializes them.
extern "C" __global__ void matmul_cache(const float* __restrict__ a, const float* __restrict__ b, float* c,
                                        int m, int n, int k)
{
    const int p = blockIdx.x * 32 + threadIdx.x, i = blockIdx.y * 8 + threadIdx.y;
    if (i >= m || p >= k) return;
    const float x = a[(size_t)i * k + p];
    const float* brow = b + (size_t)p * n;
    float* crow = c + (size_t)i * n;
    for (int j = 0; j < n; ++j) atomicAdd(crow + j, x * brow[j]);
}

// matmul_shared_cache: matmul_cache with row p of B staged in shared memory, 32 columns at a
// time, by the block's threads together (the lab shared B only: C would need atomics there too).
extern "C" __global__ void matmul_shared_cache(const float* __restrict__ a, const float* __restrict__ b, float* c,
                                               int m, int n, int k)
{
    __shared__ float bs[32][33];  // 32 rows of B (one per threadIdx.x) x 32 columns, padded
    const int p = blockIdx.x * 32 + threadIdx.x, i = blockIdx.y * 8 + threadIdx.y;
    const float x = (i < m && p < k) ? a[(size_t)i * k + p] : 0.0f;
    for (int j0 = 0; j0 < n; j0 += 32) {
        for (int r = threadIdx.y; r < 32; r += 8) {  // rows p0 + r of B, columns j0 .. j0 + 31
            const int row = blockIdx.x * 32 + r, col = j0 + threadIdx.x;
            bs[r][threadIdx.x] = (row < k && col < n) ? b[(size_t)row * n + col] : 0.0f;
        }
        __syncthreads();
        if (i < m && p < k)
            for (int jj = 0; jj < 32 && j0 + jj < n; ++jj) atomicAdd(c + (size_t)i * n + j0 + jj, x * bs[threadIdx.x][jj]);
        __syncthreads();
    }
}
