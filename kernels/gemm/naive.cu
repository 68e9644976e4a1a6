// CUDA-Naive (Zosa 2017, section 2.10): one thread per output element, every operand read
// straight from global memory. Row-major C (M x N) = A (M x K) . B (K x N).
// Tunable: BLOCK (the thread block is BLOCK x BLOCK).

extern "C" __global__ void __launch_bounds__(BLOCK * BLOCK)
naive(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
      int M, int N, int K)
{
    const int col = blockIdx.x * BLOCK + threadIdx.x;
    const int row = blockIdx.y * BLOCK + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    // Neighbouring threads read neighbouring B elements (coalesced) and the same A element
    // (a broadcast), which is why this beats CUDA-1u: the caches do some of the tiling.
    for (int k = 0; k < K; ++k)
        acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
