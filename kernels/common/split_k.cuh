// Split-K (dbuf, multistage): the grid has SPLITK layers (blockIdx.z); layer z sums its share of
// the k-tiles, shared out as evenly as they go, and adds its partial tile into C (zeroed by the
// harness first) with atomics. Needs BK and SPLITK defined.
#pragma once

// [begin, end) of k this block's layer sums: whole k-tiles; a layer past the last is empty.
__device__ __forceinline__ void layer_k_range(int K, int& kbegin, int& kend)
{
    const int per_layer = ((K + BK - 1) / BK + SPLITK - 1) / SPLITK * BK;
    kbegin = blockIdx.z * per_layer;
    kend = min(K, kbegin + per_layer);
}

// C gets four outputs, or (add: split-K layers, stream-K shares) adds them into C.
__device__ __forceinline__ void put4(float* p, float4 v, bool add)
{
    if (!add) {
        *reinterpret_cast<float4*>(p) = v;
    } else {
#if __CUDA_ARCH__ >= 900
        atomicAdd(reinterpret_cast<float4*>(p), v);  // one 16-byte reduction (sm_90)
#else
        atomicAdd(p, v.x); atomicAdd(p + 1, v.y); atomicAdd(p + 2, v.z); atomicAdd(p + 3, v.w);
#endif
    }
}

__device__ __forceinline__ void put1(float* p, float v, bool add)
{
    if (add)
        atomicAdd(p, v);
    else
        *p = v;
}
