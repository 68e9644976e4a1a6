// CUDA-C_Unroll (Zosa 2017, sections 2.7.1 and 3.3.4): two consecutive k-tiles are loaded at
// once, so each trip needs half the barriers of CUDA-1, and two accumulators give the
// scheduler two independent FMA chains. Tunable: BLOCK.

extern "C" __global__ void __launch_bounds__(BLOCK * BLOCK)
unroll_k2(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
          int M, int N, int K)
{
    __shared__ float As[2][BLOCK][BLOCK];
    __shared__ float Bs[2][BLOCK][BLOCK];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * BLOCK + ty;
    const int col = blockIdx.x * BLOCK + tx;
    float acc0 = 0.0f, acc1 = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 2 * BLOCK) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int ka = k0 + h * BLOCK + tx;
            const int kb = k0 + h * BLOCK + ty;
            As[h][ty][tx] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
            Bs[h][ty][tx] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BLOCK; ++kk) {
            acc0 += As[0][ty][kk] * Bs[0][kk][tx];
            acc1 += As[1][ty][kk] * Bs[1][kk][tx];
        }
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc0 + acc1;
}
