// CUDA-1 and CUDA-1u (Zosa 2017, Algorithm 1 and section 3.1.1): BLOCK x BLOCK tiles of A and B
// staged in shared memory, one output per thread. The two differ only in how the tiles are
// loaded from global memory. Tunable: BLOCK.
// shared is also Lameski 2013's approach 2 (border checks: tiles zero-filled past the edges,
// stores guarded) and, at BLOCK = 16, the AMD tutorial's LDS tiling kernel; shared_padded is the
// same kernel without any border check, Lameski's approach 1, which the harness runs only on
// inputs zero-padded to multiples of BLOCK.

template <bool COALESCED, bool BORDERS = true>
__device__ __forceinline__ void shared_tiles(const float* __restrict__ A,
                                             const float* __restrict__ B,
                                             float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[BLOCK][BLOCK];
    __shared__ float Bs[BLOCK][BLOCK];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * BLOCK + ty;
    const int col = blockIdx.x * BLOCK + tx;
    // CUDA-1u swaps tx and ty in the loads: neighbouring threads of a warp then read
    // addresses a whole matrix row apart, so no load coalesces.
    const int lr = COALESCED ? ty : tx;
    const int lc = COALESCED ? tx : ty;
    const int a_row = blockIdx.y * BLOCK + lr;
    const int b_col = blockIdx.x * BLOCK + lc;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BLOCK) {
        // Zero-fill past the borders so the inner loop needs no bounds test.
        As[lr][lc] = (!BORDERS || (a_row < M && k0 + lc < K)) ? A[a_row * K + k0 + lc] : 0.0f;
        Bs[lr][lc] = (!BORDERS || (k0 + lr < K && b_col < N)) ? B[(k0 + lr) * N + b_col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BLOCK; ++kk)
            acc += As[ty][kk] * Bs[kk][tx];
        __syncthreads();
    }
    if (!BORDERS || (row < M && col < N)) C[row * N + col] = acc;
}

extern "C" __global__ void __launch_bounds__(BLOCK * BLOCK)
shared(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
       int M, int N, int K)
{
    shared_tiles<true>(A, B, C, M, N, K);
}

extern "C" __global__ void __launch_bounds__(BLOCK * BLOCK)
shared_uncoalesced(const float* __restrict__ A, const float* __restrict__ B,
                   float* __restrict__ C, int M, int N, int K)
{
    shared_tiles<false>(A, B, C, M, N, K);
}

extern "C" __global__ void __launch_bounds__(BLOCK * BLOCK)
shared_padded(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
              int M, int N, int K)
{
    shared_tiles<true, false>(A, B, C, M, N, K);
}
