// An SGEMM with cuBLAS's argument list, as many published kernels have it: the sizes, float alpha,
// A, B, float beta, C, every matrix row-major. C = alpha * A . B + beta * C; beta 0 leaves C unread,
// as BLAS does, so a C that holds anything (mmbench poisons it with NaN) is overwritten.
// TILE x TILE threads a block, each one output, A's and B's tiles through shared memory; border
// checks, so any shape works.
extern "C" __global__ void sgemm(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                                 float* C) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE + 1];  // +1: the column reads of the inner loop hit distinct banks
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float sum = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[threadIdx.y][threadIdx.x] = row < M && k0 + threadIdx.x < K ? A[(size_t)row * K + k0 + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = col < N && k0 + threadIdx.y < K ? B[(size_t)(k0 + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) sum += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) {
        const size_t at = (size_t)row * N + col;
        C[at] = beta == 0.0f ? alpha * sum : alpha * sum + beta * C[at];
    }
}
