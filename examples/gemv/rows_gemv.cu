// A GEMV of your own: y (m) = A (m x n) . x (n), A column-major (element (i, j) at A[i + j * m]).
// One thread a row of A: threads of a warp read consecutive elements of a column (coalesced).
// The arguments are in this kernel's own order: the sizes first, then x, A and y.

extern "C" __global__ void rows_gemv(int m, int n, const float *x, const float *A, float *y) {
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i >= m) return;
    float sum = 0.0f;
#pragma unroll 4
    for (int j = 0; j < n; ++j) sum += A[i + (size_t)j * m] * x[j];
    y[i] = sum;
}
