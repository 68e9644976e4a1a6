// Deliberately broken GEMM kernels: the GPU isolation tests check that each becomes its own row
// (failed, failed, wrong) and that the sweep goes on around it.

// Writes a terabyte past the end of C: an illegal address, which loses the process's CUDA context.
extern "C" __global__ void oob_write(const float* A, const float* B, float* C, int M, int N, int K)
{
    const int col = blockIdx.x * BLOCK + threadIdx.x;
    const int row = blockIdx.y * BLOCK + threadIdx.y;
    if (row >= M || col >= N) return;
    C[(size_t)row * N + col + ((size_t)1 << 38)] = 1.0f;
}

// Never ends: spins on its own output, poisoned with NaN, which never equals 1e30 (the read is
// volatile, so the compiler cannot drop the loop).
extern "C" __global__ void endless(const float* A, const float* B, float* C, int M, int N, int K)
{
    volatile float* c = C;
    while (c[0] != 1.0e30f) {
    }
}

// Writes nothing: C keeps its NaN poison, so the check finds it not finite.
extern "C" __global__ void writes_nothing(const float* A, const float* B, float* C, int M, int N, int K)
{
}
