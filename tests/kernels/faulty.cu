// Deliberately wrong GEMM kernels: the GPU tests check that the harness reports them `wrong`.

// Leaves out the last product of every dot product: close to right, and still wrong.
extern "C" __global__ void drops_last_k(const float* A, const float* B, float* C, int M, int N, int K)
{
    const int col = blockIdx.x * BLOCK + threadIdx.x;
    const int row = blockIdx.y * BLOCK + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K - 1; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}

// Never writes the last row of C.
extern "C" __global__ void skips_last_row(const float* A, const float* B, float* C, int M, int N, int K)
{
    const int col = blockIdx.x * BLOCK + threadIdx.x;
    const int row = blockIdx.y * BLOCK + threadIdx.y;
    if (row >= M - 1 || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
