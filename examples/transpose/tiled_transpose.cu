// A transpose of your own: out (cols x rows) = in (rows x cols) transposed, float32, row-major.
// A TILE x TILE tile goes through shared memory (one padding column against bank conflicts);
// TILE x ROWS threads, each moving TILE / ROWS elements, reads and writes coalesced.

extern "C" __global__ void tiled_transpose(float *out, const float *in, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    const int x = blockIdx.x * TILE + threadIdx.x;
    const int y0 = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < cols && y0 + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y0 + j) * cols + x];
    __syncthreads();
    const int ox = blockIdx.y * TILE + threadIdx.x;  // a column of out is a row of in
    const int oy0 = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (ox < rows && oy0 + j < cols) out[(size_t)(oy0 + j) * rows + ox] = tile[threadIdx.x][threadIdx.y + j];
}
