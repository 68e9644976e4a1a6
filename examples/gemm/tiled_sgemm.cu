// A tiled SGEMM written as many published examples are: the matrix sizes are baked in at compile
// time (M_ROWS, N_COLS, K_DEPTH) and the kernel takes only the three pointers, output first.
// C (M_ROWS x N_COLS) = A (M_ROWS x K_DEPTH) . B (K_DEPTH x N_COLS), float32, row-major.
// Each TILE x TILE block computes a TILE x TILE tile of C from TILE-wide slabs of A and B in
// shared memory; each thread computes TM consecutive rows of one column (TILE / TM x TILE threads).

__global__ void sgemm_tiled(float *C, const float *A, const float *B) {
    __shared__ float As[TILE][TILE + 1];  // +1: no bank conflicts reading a column
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int col = blockIdx.x * TILE + tx;
    const int row0 = blockIdx.y * TILE + ty * TM;
    float acc[TM];
    for (int i = 0; i < TM; ++i) acc[i] = 0.0f;
    for (int k0 = 0; k0 < K_DEPTH; k0 += TILE) {
        for (int i = 0; i < TM; ++i) {  // TILE / TM rows of threads load TILE rows
            const int r = ty * TM + i, a_row = blockIdx.y * TILE + r, b_row = k0 + r;
            As[r][tx] = (a_row < M_ROWS && k0 + tx < K_DEPTH) ? A[(size_t)a_row * K_DEPTH + k0 + tx] : 0.0f;
            Bs[r][tx] = (b_row < K_DEPTH && col < N_COLS) ? B[(size_t)b_row * N_COLS + col] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TILE; ++kk) {
            const float b = Bs[kk][tx];
            for (int i = 0; i < TM; ++i) acc[i] += As[ty * TM + i][kk] * b;
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i)
        if (row0 + i < M_ROWS && col < N_COLS) C[(size_t)(row0 + i) * N_COLS + col] = acc[i];
}
