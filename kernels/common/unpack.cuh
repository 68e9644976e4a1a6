// Four consecutive floats of shared memory (16-byte aligned) into four elements of a register
// array, as one 128-bit load. A macro, so the elements are assigned by value: passing the array's
// address to a function can send it to local memory.
#pragma once

#define UNPACK4(dst, at, src)                                                         \
    do {                                                                              \
        const float4 unpack4_ = *reinterpret_cast<const float4*>(src);                \
        (dst)[(at)] = unpack4_.x;                                                     \
        (dst)[(at) + 1] = unpack4_.y;                                                 \
        (dst)[(at) + 2] = unpack4_.z;                                                 \
        (dst)[(at) + 3] = unpack4_.w;                                                 \
    } while (0)
