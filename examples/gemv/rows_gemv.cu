// A GEMV of your own: y (m) = A (m x n) . x (n), A column-major (element (i, j) at A[i + j * m]).
// One thread a row of A within a chunk of `chunk` columns: the threads of a warp read consecutive
// elements of a column (coalesced). A grid of row blocks x SPLIT column chunks keeps every SM busy
// when m is small; each chunk adds its partial sums into y with atomicAdd (so y is zeroed before
// each launch: zero_output in the variant file). The arguments are in this kernel's own order.

extern "C" __global__ void rows_gemv(int m, int n, int chunk, const float *x, const float *A, float *y) {
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    const int j0 = blockIdx.y * chunk;
    const int j1 = min(n, j0 + chunk);
    if (i >= m || j0 >= j1) return;
    float sum = 0.0f;
#pragma unroll 4
    for (int j = j0; j < j1; ++j) sum += A[i + (size_t)j * m] * x[j];
    if (SPLIT == 1) y[i] = sum;
    else atomicAdd(&y[i], sum);
}
