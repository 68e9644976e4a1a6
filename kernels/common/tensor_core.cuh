// Tensor-core building blocks shared by the ladder's kernels (sm_80 and later): the operand type of
// an MMA instruction, shared-memory addresses, ldmatrix, mma.sync m16n8k16, and the store of a pair
// of neighbouring outputs. Include after common/types.cuh (elem_t: fp16 or bf16).
#pragma once
#include <cstdint>

// MMA_AB: the operand types of an MMA instruction; MMA_K and MMA_KSTR: the k of one wgmma; MMA_TRANS:
// its transpose operands (16-bit types only: FP8 operands are K-major, with none). out_t: C's element,
// bfloat16 for FP8 products (precisions.py), whose per-tensor scales (SCALED) multiply the sums.
#if DTYPE == MMB_BF16 || DTYPE == MMB_FP16
#if DTYPE == MMB_BF16
#define MMA_AB ".bf16.bf16"
#else
#define MMA_AB ".f16.f16"
#endif
#define MMA_K 16
#define MMA_KSTR "k16"
#define MMA_TRANS ", 0, 0"
#define SCALED 0
typedef elem_t out_t;
#elif DTYPE == MMB_FP8E4M3
#define MMA_AB ".e4m3.e4m3"
#define MMA_K 32
#define MMA_KSTR "k32"
#define MMA_TRANS ""
#define SCALED 1
#include <cuda_bf16.h>
typedef __nv_bfloat16 out_t;
__device__ __forceinline__ __nv_bfloat16 from_acc_to(__nv_bfloat16, float v) { return __float2bfloat16_rn(v); }
#else
#error "common/tensor_core.cuh: the tensor-core kernels take fp16, bf16 or fp8e4m3 (DTYPE)"
#endif

__device__ __forceinline__ unsigned smem_addr(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Four 8 x 8 matrices of 16-bit elements from shared memory: lane l gives the address of row l % 8
// of matrix l / 8; register i of every lane receives its part of matrix i (mma.sync's fragments).
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const elem_t* row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(row)));
}

// D (16 x 8, float) += A (16 x 16, row) . B (16 x 8, col): one warp's tensor-core step.
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32" MMA_AB ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The outputs at (row, col) and (row, col + 1) of C (row-major m x n), rounded once; what lies outside
// C is not written. Both accumulator layouts (mma.sync's and wgmma's) hold such pairs, col even.
__device__ __forceinline__ void store_pair(out_t* C, int m, int n, int row, int col, float v0, float v1)
{
    if (row >= m) return;
    out_t* out = C + static_cast<size_t>(row) * n + col;
    if (n % 2 == 0 && col + 1 < n) {  // every row 4-byte aligned: one store
        const out_t two[2] = {from_acc<out_t>(v0), from_acc<out_t>(v1)};
        *reinterpret_cast<unsigned*>(out) = *reinterpret_cast<const unsigned*>(two);
    } else {
        if (col < n) out[0] = from_acc<out_t>(v0);
        if (col + 1 < n) out[1] = from_acc<out_t>(v1);
    }
}
