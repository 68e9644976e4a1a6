// Lab 3's transposes: out (n x m) = in (m x n)^T, both row-major, for any m and n.
//
// transpose_naive is the lab's given kernel: a block moves a 64 x 64 submatrix with 64 x 16
// threads, each thread a 1 x 4 strip (one column of in, four rows). Reads run along the rows of
// in (coalesced); writes run down the columns of out, m floats apart (one transaction each); no
// shared memory.

extern "C" __global__ void transpose_naive(const float* __restrict__ in, float* __restrict__ out, int m, int n)
{
    const int c = blockIdx.x * 64 + threadIdx.x;
    const int r0 = blockIdx.y * 64 + 4 * threadIdx.y;
    if (c >= n) return;
    for (int r = r0; r < r0 + 4 && r < m; ++r)
        out[(size_t)c * m + r] = in[(size_t)r * n + c];
}

// The shared-memory versions: a block of 32 x 8 threads moves a 32 x 32 tile through shared
// memory, each thread four rows (the lab's 1 x 4 strips), so that both the reads of in and the
// writes of out run along rows. Reading the tile back by columns hits one bank 32 times when a
// row of the tile is 32 floats (transpose_shmem_unpadded, the conflict the lab names); a 33-float
// row puts each element of a column in another bank (transpose_shmem). transpose_optimized is
// transpose_shmem with its loops unrolled by pragma, as the lab's optimized version.

template <int Pad>
struct Tile {
    float v[32][32 + Pad];
};

template <int Pad>
__device__ __forceinline__ void load_row(Tile<Pad>& t, const float* in, int m, int n, int j)
{
    const int r = blockIdx.y * 32 + threadIdx.y + j, c = blockIdx.x * 32 + threadIdx.x;
    if (r < m && c < n) t.v[threadIdx.y + j][threadIdx.x] = in[(size_t)r * n + c];
}

template <int Pad>
__device__ __forceinline__ void store_row(const Tile<Pad>& t, float* out, int m, int n, int j)
{
    const int r = blockIdx.x * 32 + threadIdx.y + j, c = blockIdx.y * 32 + threadIdx.x;  // a row of out
    if (r < n && c < m) out[(size_t)r * m + c] = t.v[threadIdx.x][threadIdx.y + j];
}

template <int Pad, bool UNROLLED>
__device__ __forceinline__ void tile_transpose(const float* in, float* out, int m, int n)
{
    __shared__ Tile<Pad> t;
    if (UNROLLED) {
#pragma unroll
        for (int j = 0; j < 32; j += 8) load_row(t, in, m, n, j);
    } else {
        for (int j = 0; j < 32; j += 8) load_row(t, in, m, n, j);
    }
    __syncthreads();
    if (UNROLLED) {
#pragma unroll
        for (int j = 0; j < 32; j += 8) store_row(t, out, m, n, j);
    } else {
        for (int j = 0; j < 32; j += 8) store_row(t, out, m, n, j);
    }
}

extern "C" __global__ void transpose_shmem(const float* __restrict__ in, float* __restrict__ out, int m, int n)
{
    tile_transpose<1, false>(in, out, m, n);
}

extern "C" __global__ void transpose_shmem_unpadded(const float* __restrict__ in, float* __restrict__ out, int m, int n)
{
    tile_transpose<0, false>(in, out, m, n);
}

extern "C" __global__ void transpose_optimized(const float* __restrict__ in, float* __restrict__ out, int m, int n)
{
    tile_transpose<1, true>(in, out, m, n);
}
