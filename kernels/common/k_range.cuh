// A layer's k range for kernels whose GEMM function takes no split-K arguments at SPLITK = 1 (multistage,
// kmajor; multistage's code is then what it was before it had split-K). K_RANGE_PARAMS and
// K_RANGE_ARGS carry the range into the function, WHOLE_K_RANGE gives it all of k without split-K, and
// LAYER_OR_RETURN takes the block's layer in the kernel (a layer with no k-tiles adds nothing: it returns,
// uniformly across the block). Include after common/split_k.cuh.
#pragma once

#if SPLITK > 1
#define K_RANGE_PARAMS , int kbegin, int kend
#define K_RANGE_ARGS , kbegin, kend
#define WHOLE_K_RANGE
#define LAYER_OR_RETURN            \
    int kbegin, kend;              \
    layer_k_range(K, kbegin, kend); \
    if (kbegin >= kend) return;
#else
#define K_RANGE_PARAMS
#define K_RANGE_ARGS
#define WHOLE_K_RANGE const int kbegin = 0, kend = K;
#define LAYER_OR_RETURN
#endif
