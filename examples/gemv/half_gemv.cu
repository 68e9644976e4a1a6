// An FP16 GEMV of your own: y (m) = A (m x n) . x (n), A, x, y float16, A column-major (element
// (i, j) at A[i + j * m]), sums in float32, each y rounded to float16 once. A block is 32 x COLS
// threads over 32 (PAIR: 64) rows: thread x takes a row (PAIR: two adjacent rows by one 4-byte
// __half2 load, where m is even so every column's pairs are aligned), thread y every COLS-th
// column, so a warp reads consecutive halves of a column (coalesced) and the block's columns are
// read at once; the COLS partial sums of a row are added in shared memory, in a fixed order, and
// the row written once (nothing is added into y in float16, which would round at every add).
#include <cuda_fp16.h>

constexpr int ROWS = PAIR ? 64 : 32;

extern "C" __global__ void __launch_bounds__(32 * COLS)
half_gemv(const __half* __restrict__ A, const __half* __restrict__ x, __half* __restrict__ y, int m, int n) {
    __shared__ float part[COLS][ROWS];
    const int r = blockIdx.x * ROWS + (PAIR ? 2 : 1) * threadIdx.x;  // this thread's (first) row
    const bool pairs = PAIR && m % 2 == 0 && r + 1 < m;
    float s0 = 0.0f, s1 = 0.0f;
    if (r < m) {
#pragma unroll 4
        for (int j = threadIdx.y; j < n; j += COLS) {
            const float xj = __half2float(__ldg(x + j));
            const __half* a = A + (size_t)j * m + r;
            if (pairs) {
                const float2 v = __half22float2(*reinterpret_cast<const __half2*>(a));
                s0 = fmaf(v.x, xj, s0);
                s1 = fmaf(v.y, xj, s1);
            } else {
                s0 = fmaf(__half2float(a[0]), xj, s0);
                if (PAIR && r + 1 < m) s1 = fmaf(__half2float(a[1]), xj, s1);
            }
        }
    }
    part[threadIdx.y][(PAIR ? 2 : 1) * threadIdx.x] = s0;
    if (PAIR) part[threadIdx.y][2 * threadIdx.x + 1] = s1;
    __syncthreads();
    if (threadIdx.y == 0) {
        for (int e = 0; e < (PAIR ? 2 : 1); ++e) {
            if (r + e >= m) break;
            float sum = 0.0f;
            for (int c = 0; c < COLS; ++c) sum += part[c][(PAIR ? 2 : 1) * threadIdx.x + e];
            y[r + e] = __float2half_rn(sum);
        }
    }
}
