// The element type of a typed kernel, from its DTYPE #define: the harness defines DTYPE for a
// built-in variant that takes several precisions, at every precision but fp32 (mmbench/precisions.py,
// DTYPE_CODES, numbers the precisions as the MMB_ names below do). Without DTYPE a kernel is float32,
// so its fp32 code is what it was before it was typed.
//   elem_t   the storage of its buffers        acc_t   what it sums in
//   move_t   a type of elem_t's width that moves its bits unchanged (a transpose's element)
//   to_acc(e), from_acc(a)   conversions, rounding to nearest
#pragma once

#define MMB_FP64 1
#define MMB_FP32 2
#define MMB_TF32 3
#define MMB_FP16 4
#define MMB_BF16 5
#define MMB_FP8E4M3 6
#define MMB_FP8E5M2 7

#ifndef DTYPE
#define DTYPE MMB_FP32
#endif

#if DTYPE == MMB_FP64
typedef double elem_t;
typedef double acc_t;
typedef double move_t;
#define NARROW 0
#elif DTYPE == MMB_FP32 || DTYPE == MMB_TF32
typedef float elem_t;
typedef float acc_t;
typedef float move_t;
#define NARROW 0
#elif DTYPE == MMB_FP16
#include <cuda_fp16.h>
typedef __half elem_t;
typedef float acc_t;
typedef unsigned short move_t;
#define NARROW 1
#elif DTYPE == MMB_BF16
#include <cuda_bf16.h>
typedef __nv_bfloat16 elem_t;
typedef float acc_t;
typedef unsigned short move_t;
#define NARROW 1
#elif DTYPE == MMB_FP8E4M3
#include <cuda_fp8.h>
typedef __nv_fp8_e4m3 elem_t;
typedef float acc_t;
typedef unsigned char move_t;
#define NARROW 1
#elif DTYPE == MMB_FP8E5M2
#include <cuda_fp8.h>
typedef __nv_fp8_e5m2 elem_t;
typedef float acc_t;
typedef unsigned char move_t;
#define NARROW 1
#else
#error "DTYPE names no precision of common/types.cuh"
#endif

// NARROW: elements narrower than float32. A narrow output is rounded once, from the whole sum: a
// kernel that adds partial sums into its output adds them into a float32 buffer instead, which one
// more pass rounds (each add rounded to 16 bits would lose what the check allows).

__device__ __forceinline__ float fma_acc(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double fma_acc(double a, double b, double c) { return fma(a, b, c); }

__device__ __forceinline__ acc_t to_acc(float v) { return v; }
__device__ __forceinline__ acc_t to_acc(double v) { return (acc_t)v; }
__device__ __forceinline__ float from_acc_to(float, acc_t v) { return (float)v; }
__device__ __forceinline__ double from_acc_to(double, acc_t v) { return (double)v; }
#if DTYPE == MMB_FP16
__device__ __forceinline__ float to_acc(__half v) { return __half2float(v); }
__device__ __forceinline__ __half from_acc_to(__half, float v) { return __float2half_rn(v); }
#elif DTYPE == MMB_BF16
__device__ __forceinline__ float to_acc(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ __nv_bfloat16 from_acc_to(__nv_bfloat16, float v) { return __float2bfloat16_rn(v); }
#elif DTYPE == MMB_FP8E4M3 || DTYPE == MMB_FP8E5M2
// FP8: rounded to nearest even (saturating at the largest finite value, which inputs never reach)
__device__ __forceinline__ float to_acc(elem_t v) { return float(v); }
__device__ __forceinline__ elem_t from_acc_to(elem_t, float v) { return elem_t(v); }
#endif

// The output element of a sum: from_acc<T>(sum) rounds it to T (float32 stays float32).
template <typename T> __device__ __forceinline__ T from_acc(acc_t v) { return from_acc_to(T(), v); }
