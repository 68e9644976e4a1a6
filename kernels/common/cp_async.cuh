// cp.async (sm_80 and later): global memory straight into shared memory, the copy in flight
// while the threads compute. A source size of 0 makes cp.async write zeros and read nothing:
// that is the border handling of the kernels that use it (pipelined, multistage).
#pragma once

__device__ __forceinline__ void cp_async4(float* dst, const float* src, bool ok)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src), "r"(ok ? 4 : 0));
}

__device__ __forceinline__ void cp_async16(float* dst, const float* src, bool ok)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(ok ? 16 : 0));
}

// Close the group of copies issued since the last commit (an empty group counts too).
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Wait until at most PENDING committed groups are still in flight.
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING)); }
