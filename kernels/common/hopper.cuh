// Hopper (sm_90a) building blocks of the tensor-core ladder: TMA tensor maps taken by value,
// mbarriers, TMA loads into shared memory, warpgroup MMAs (wgmma) on 128-byte-swizzled K-major
// tiles, register reallocation between warpgroups, and the store of a wgmma accumulator.
// PTX ISA 8.x names each instruction used here; the shapes follow its "Asynchronous warpgroup level
// matrix" chapter. Include after common/types.cuh (elem_t: fp16 or bf16).
#pragma once
#include "common/tensor_core.cuh"

// A CUtensorMap's 128 bytes as the host encoded them (mmbench/launch_ex.py), a kernel argument
// declared `const __grid_constant__ tensor_map_t` so that TMA reads it where the launch put it.
struct __align__(64) tensor_map_t { unsigned long long bits[16]; };

// A TMA box row of 128 bytes is one 128-byte swizzle row, the k a stage covers: 64 16-bit elements,
// 128 FP8 ones; a wgmma takes MMA_K of them (32 bytes).
constexpr int TC_BK = 128 / sizeof(elem_t);

// Dynamic shared memory rounded up to 1024 bytes: a 128-byte swizzle repeats every 8 rows of 128
// bytes, and both TMA and wgmma compute it from the address, so a tile starts on such a boundary.
__device__ __forceinline__ elem_t* aligned_tiles(unsigned char* raw)
{
    return reinterpret_cast<elem_t*>(raw + ((1024 - (smem_addr(raw) & 1023)) & 1023));
}

// -- mbarriers ---------------------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(uint64_t* bar, unsigned arrivals)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(arrivals));
}

// After the inits, before any other thread or the TMA unit uses the barriers.
__device__ __forceinline__ void mbar_init_fence()
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// One arrival that also tells the barrier how many bytes the TMA copies of this phase bring.
__device__ __forceinline__ void mbar_expect_bytes(uint64_t* bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}

// Wait until the barrier's phase of this parity has completed (a fresh barrier is in phase 0, so
// waiting on parity 1 returns at once: the first pass over a ring of free slots).
__device__ __forceinline__ void mbar_wait(uint64_t* bar, unsigned parity)
{
    asm volatile(
        "{\n"
        ".reg .pred ready;\n"
        "WAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 ready, [%0], %1;\n"
        "@!ready bra WAIT;\n"
        "}\n" ::"r"(smem_addr(bar)),
        "r"(parity)
        : "memory");
}

// -- TMA -----------------------------------------------------------------------------------------------
// The box at (column col, row row) of a 2-D tensor map into shared memory; the barrier counts its
// bytes (the whole box: what lies outside the matrix arrives as zeros).
__device__ __forceinline__ void tma_load(elem_t* dst, const tensor_map_t* map, uint64_t* bar, int col, int row)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
            smem_addr(dst)),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_addr(bar)), "r"(col), "r"(row)
        : "memory");
}

// The same box written into the same place of the shared memory of every block of the cluster in
// `blocks` (a bit each), each block's barrier at this one's offset counting the bytes it receives.
__device__ __forceinline__ void tma_load_multicast(elem_t* dst, const tensor_map_t* map, uint64_t* bar, int col,
                                                   int row, unsigned short blocks)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(smem_addr(dst)),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_addr(bar)), "r"(col), "r"(row), "h"(blocks)
        : "memory");
}

// A box of shared memory out to global memory at (column col, row row); what lies outside the
// matrix is not written. Reads of shared memory by earlier stores end at tma_store_wait_read.
__device__ __forceinline__ void tma_store(const tensor_map_t* map, const out_t* src, int col, int row)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                     reinterpret_cast<uint64_t>(map)),
                 "r"(smem_addr(src)), "r"(col), "r"(row)
                 : "memory");
}
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void tma_store_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
__device__ __forceinline__ void tma_store_wait() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
// Writes of shared memory by the threads made visible to the TMA unit (another proxy) before it reads them.
__device__ __forceinline__ void async_proxy_fence() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// -- clusters --------------------------------------------------------------------------------------------
__device__ __forceinline__ unsigned cluster_rank()
{
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
    return rank;
}

// Every thread of every block of the cluster arrives and waits: after the barriers' inits (a peer may
// signal them) and before a block exits (a peer may still write into its shared memory).
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

// An arrival on the barrier at this offset in block `block` of the cluster (this block's own too).
__device__ __forceinline__ void mbar_arrive_in(uint64_t* bar, unsigned block)
{
    asm volatile(
        "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(smem_addr(bar)),
        "r"(block)
        : "memory");
}

// A barrier of `threads` threads (a warpgroup's 128) other than __syncthreads' (id 0).
__device__ __forceinline__ void named_barrier(int id, int threads)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// -- warpgroup MMA -------------------------------------------------------------------------------------
// The shared-memory descriptor of a K-major tile written by TMA with the 128-byte swizzle: start
// address, leading offset unused (1), 1024 bytes between groups of 8 rows, swizzle mode 1 (128 B).
// A step of 16 k inside the 64-wide row is 32 bytes added to the start address.
__device__ __forceinline__ uint64_t wgmma_desc(const elem_t* tile)
{
    return uint64_t((smem_addr(tile) & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) |
           (uint64_t(1) << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int PENDING> __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}

// Keep the compiler from moving reads or writes of the accumulators across the asynchronous MMAs.
template <int COUNT> __device__ __forceinline__ void hold_registers(float* d)
{
#pragma unroll
    for (int i = 0; i < COUNT; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// The accumulator registers of a wgmma as asm operands, read and written: d[i] ... d[i + 3] (+ 7, 31, 63).
#define MMA_ACC4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define MMA_ACC8(i) MMA_ACC4(i), MMA_ACC4(i + 4)
#define MMA_ACC32(i) MMA_ACC8(i), MMA_ACC8(i + 8), MMA_ACC8(i + 16), MMA_ACC8(i + 24)
#define MMA_ACC64(i) MMA_ACC32(i), MMA_ACC32(i + 32)

// The accumulators' operand numbers as asm text, eight at a time ("%0, ... %7" to "%120, ... %127"), sixteen to a
// group, groups joined by ",": MMA_LISTn lists "%0" to "%(n - 1)".
#define MMA_R8_0 "%0, %1, %2, %3, %4, %5, %6, %7"
#define MMA_R8_1 "%8, %9, %10, %11, %12, %13, %14, %15"
#define MMA_R8_2 "%16, %17, %18, %19, %20, %21, %22, %23"
#define MMA_R8_3 "%24, %25, %26, %27, %28, %29, %30, %31"
#define MMA_R8_4 "%32, %33, %34, %35, %36, %37, %38, %39"
#define MMA_R8_5 "%40, %41, %42, %43, %44, %45, %46, %47"
#define MMA_R8_6 "%48, %49, %50, %51, %52, %53, %54, %55"
#define MMA_R8_7 "%56, %57, %58, %59, %60, %61, %62, %63"
#define MMA_R8_8 "%64, %65, %66, %67, %68, %69, %70, %71"
#define MMA_R8_9 "%72, %73, %74, %75, %76, %77, %78, %79"
#define MMA_R8_10 "%80, %81, %82, %83, %84, %85, %86, %87"
#define MMA_R8_11 "%88, %89, %90, %91, %92, %93, %94, %95"
#define MMA_R8_12 "%96, %97, %98, %99, %100, %101, %102, %103"
#define MMA_R8_13 "%104, %105, %106, %107, %108, %109, %110, %111"
#define MMA_R8_14 "%112, %113, %114, %115, %116, %117, %118, %119"
#define MMA_R8_15 "%120, %121, %122, %123, %124, %125, %126, %127"
#define MMA_R16(a, b) MMA_R8_##a ", " MMA_R8_##b
#define MMA_LIST32 MMA_R16(0, 1) "," MMA_R16(2, 3)
#define MMA_LIST64 MMA_LIST32 "," MMA_R16(4, 5) "," MMA_R16(6, 7)
#define MMA_LIST72 MMA_LIST64 "," MMA_R8_8
#define MMA_LIST80 MMA_LIST64 "," MMA_R16(8, 9)
#define MMA_LIST84 MMA_LIST80 ", %80, %81, %82, %83"
#define MMA_LIST88 MMA_LIST80 "," MMA_R8_10
#define MMA_LIST96 MMA_LIST80 "," MMA_R16(10, 11)
#define MMA_LIST128 MMA_LIST96 "," MMA_R16(12, 13) "," MMA_R16(14, 15)

// D (64 x N, float, N / 2 registers a thread) += A (64 x 16) . B (16 x N), both K-major in shared
// memory (descriptors); scale_d = 0 ignores D's old value.
template <int N> __device__ __forceinline__ void wgmma_tile(float* d, uint64_t da, uint64_t db, int scale_d);

// One wgmma_tile<N>: the accumulators are operands %0 to %(N / 2 - 1) (LIST, the operands ACC...), A's and B's
// descriptors %A and %B, scale_d %P.
#define WGMMA_TILE(N, LIST, A, B, P, ...)                                                                  \
    template <> __device__ __forceinline__ void wgmma_tile<N>(float* d, uint64_t da, uint64_t db, int scale_d) \
    {                                                                                                      \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #P ", 0;\n"                                     \
                     "wgmma.mma_async.sync.aligned.m64n" #N MMA_KSTR ".f32" MMA_AB " {" LIST "}, %" #A ", %" #B \
                     ", p, 1, 1" MMA_TRANS ";\n}\n"                                                         \
                     : __VA_ARGS__                                                                         \
                     : "l"(da), "l"(db), "r"(scale_d));                                                    \
    }

WGMMA_TILE(64, MMA_LIST32, 32, 33, 34, MMA_ACC32(0))
WGMMA_TILE(128, MMA_LIST64, 64, 65, 66, MMA_ACC64(0))
// Tiles of 144, 160, 168 and 176 columns (cuBLASLt's few-wave tiles are of such widths): more tiles
// across the SMs where 128, 192 or 256 columns leave a last wave nearly empty.
WGMMA_TILE(144, MMA_LIST72, 72, 73, 74, MMA_ACC64(0), MMA_ACC8(64))
WGMMA_TILE(160, MMA_LIST80, 80, 81, 82, MMA_ACC64(0), MMA_ACC8(64), MMA_ACC8(72))
WGMMA_TILE(168, MMA_LIST84, 84, 85, 86, MMA_ACC64(0), MMA_ACC8(64), MMA_ACC8(72), MMA_ACC4(80))
WGMMA_TILE(176, MMA_LIST88, 88, 89, 90, MMA_ACC64(0), MMA_ACC8(64), MMA_ACC8(72), MMA_ACC8(80))
WGMMA_TILE(192, MMA_LIST96, 96, 97, 98, MMA_ACC64(0), MMA_ACC32(64))
WGMMA_TILE(256, MMA_LIST128, 128, 129, 130, MMA_ACC64(0), MMA_ACC64(64))

// -- warpgroup roles -------------------------------------------------------------------------------------
// Register reallocation: a warpgroup that only issues copies gives registers back, one that holds
// accumulators takes them (the counts a multiple of 8, 24 to 256; every warp of the warpgroup calls it).
template <int REGISTERS> __device__ __forceinline__ void registers_down()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGISTERS));
}
template <int REGISTERS> __device__ __forceinline__ void registers_up()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGISTERS));
}

// -- the accumulator out to C ------------------------------------------------------------------------------
// A 64 x N accumulator of one warpgroup (thread t of it: warp w = t / 32 holds rows 16 w + t % 32 / 4
// and 8 below, two neighbouring columns in each 8-column block) rounded once into C (row-major,
// m x n elements), at rows row0.. and columns col0..; what lies outside C is not written.
template <int N>
__device__ __forceinline__ void store_accumulator(out_t* C, int m, int n, int row0, int col0, const float* d,
                                                  float scale = 1.0f)
{
    const int t = threadIdx.x % 128, row = row0 + (t / 32) * 16 + (t % 32) / 4;
#pragma unroll
    for (int j = 0; j < N / 8; ++j) {
        const int col = col0 + j * 8 + (t % 4) * 2;
        store_pair(C, m, n, row, col, scale * d[4 * j], scale * d[4 * j + 1]);
        store_pair(C, m, n, row + 8, col, scale * d[4 * j + 2], scale * d[4 * j + 3]);
    }
}

// A 64 x N accumulator into a staging tile of shared memory laid out as TMA reads a 64 x 64 box with
// the 128-byte swizzle (N / 64 boxes of 8 KiB, one after the other): the 16-byte chunk c of row r sits
// at chunk c ^ (r % 8), so the eight rows a warp writes at once fall in distinct banks.
template <int N> __device__ __forceinline__ void stage_accumulator(out_t* staging, const float* d, float scale = 1.0f)
{
    const int t = threadIdx.x % 128, row = (t / 32) * 16 + (t % 32) / 4;
#pragma unroll
    for (int j = 0; j < N / 8; ++j) {
        const int col = j % 8 * 8 + (t % 4) * 2;  // within box j / 8
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int r = row + 8 * half;
            out_t* out = staging + j / 8 * 64 * 64 + r * 64 + ((col / 8) ^ (r % 8)) * 8 + col % 8;
            const out_t two[2] = {from_acc<out_t>(scale * d[4 * j + 2 * half]),
                                  from_acc<out_t>(scale * d[4 * j + 2 * half + 1])};
            *reinterpret_cast<unsigned*>(out) = *reinterpret_cast<const unsigned*>(two);
        }
    }
}
