// CUDA-1IL (Zosa 2017, Algorithm 2 and section 2.8): double-buffered shared-memory tiles. The
// next tile's global loads are issued before the current tile's arithmetic, so they overlap
// it, and one barrier per tile suffices. Tunable: BLOCK.

extern "C" __global__ void __launch_bounds__(BLOCK * BLOCK)
interleaved(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
            int M, int N, int K)
{
    __shared__ float As[2][BLOCK][BLOCK];
    __shared__ float Bs[2][BLOCK][BLOCK];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * BLOCK + ty;
    const int col = blockIdx.x * BLOCK + tx;
    const int tiles = (K + BLOCK - 1) / BLOCK;

    As[0][ty][tx] = (row < M && tx < K) ? A[row * K + tx] : 0.0f;
    Bs[0][ty][tx] = (ty < K && col < N) ? B[ty * N + col] : 0.0f;
    __syncthreads();

    float acc = 0.0f;
    for (int t = 0; t < tiles; ++t) {
        const int cur = t & 1;
        const int ka = (t + 1) * BLOCK + tx;
        const int kb = (t + 1) * BLOCK + ty;
        // Past the last tile these read nothing and fill the spare buffer with zeros.
        const float a_next = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
        const float b_next = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
#pragma unroll
        for (int kk = 0; kk < BLOCK; ++kk)
            acc += As[cur][ty][kk] * Bs[cur][kk][tx];
        // Safe without a barrier before it: buffer cur^1 was last read in trip t-1, which
        // ended with a barrier.
        As[cur ^ 1][ty][tx] = a_next;
        Bs[cur ^ 1][ty][tx] = b_next;
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
