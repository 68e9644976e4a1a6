// Kernels with one defect each, planted for the GPU tests of precisions (tests/test_gpu_precisions.py):
// each declares a precision its arithmetic does not honour, and the check of that precision must
// call it wrong. One thread an output, C (m x n) row-major; A m x k row-major; B as each says.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

// BF16 inputs, the sum kept in bfloat16 (rounded after every addition), where the precision promises
// float accumulation. B stored n x k (layout nt).
extern "C" __global__ void bf16_sum_in_bf16(int m, int n, int k, const __nv_bfloat16* A, const __nv_bfloat16* B,
                                            __nv_bfloat16* C) {
    const int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m || j >= n) return;
    __nv_bfloat16 sum = __float2bfloat16(0.0f);
    for (int p = 0; p < k; ++p)
        sum = __float2bfloat16(__bfloat162float(sum)
                               + __bfloat162float(A[(size_t)i * k + p]) * __bfloat162float(B[(size_t)j * k + p]));
    C[(size_t)i * n + j] = sum;
}

// float32 rounded to TF32 (10 explicit significand bits, to nearest, ties away: cvt.rna.tf32.f32) before
// each product, exact float sums: a TF32 product. Declared fp32 it is a reduced-precision path the fp32
// check must catch; declared tf32 it must pass. B k x n (layout nn).
__device__ float tf32(float x) { return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xFFFFE000u); }

extern "C" __global__ void tf32_products(int m, int n, int k, const float* A, const float* B, float* C) {
    const int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m || j >= n) return;
    float sum = 0.0f;
    for (int p = 0; p < k; ++p) sum = fmaf(tf32(A[(size_t)i * k + p]), tf32(B[(size_t)p * n + j]), sum);
    C[(size_t)i * n + j] = sum;
}

// FP8 e4m3 with its scales, B stored n x k (layout nt), bfloat16 out; the scale of A ignored.
extern "C" __global__ void fp8_without_scale_a(int m, int n, int k, float scale_a, float scale_b,
                                               const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, __nv_bfloat16* C) {
    const int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m || j >= n) return;
    float sum = 0.0f;
    for (int p = 0; p < k; ++p) sum += float(A[(size_t)i * k + p]) * float(B[(size_t)j * k + p]);
    C[(size_t)i * n + j] = __float2bfloat16(sum * scale_b);  // should be scale_a * scale_b * sum
}

// float32, declared to take B stored n x k (layout nt), reading it as k x n (layout nn).
extern "C" __global__ void b_read_as_nn(int m, int n, int k, const float* A, const float* B, float* C) {
    const int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m || j >= n) return;
    float sum = 0.0f;
    for (int p = 0; p < k; ++p) sum = fmaf(A[(size_t)i * k + p], B[(size_t)p * n + j], sum);
    C[(size_t)i * n + j] = sum;
}
