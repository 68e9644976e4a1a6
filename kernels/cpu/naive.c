/* The CPU naive baselines of Lab 3, single-threaded C compiled at first use (mmbench/native.py),
   so that they run at the speed of compiled loops, not of Python or of a BLAS.
   Row-major float32, any sizes. */

/* out (n x m) = in (m x n)^T, row by row of in. */
void transpose_naive(const float* in, float* out, int m, int n)
{
    for (int r = 0; r < m; ++r)
        for (int c = 0; c < n; ++c) out[(long)c * m + r] = in[(long)r * n + c];
}

/* C (m x n) = A (m x k) . B (k x n), the ijk triple loop: the inner loop walks a column of B. */
void matmul_ijk(const float* a, const float* b, float* c, int m, int n, int k)
{
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            float sum = 0.0f;
            for (int p = 0; p < k; ++p) sum += a[(long)i * k + p] * b[(long)p * n + j];
            c[(long)i * n + j] = sum;
        }
}
