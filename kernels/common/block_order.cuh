// Which tile a block works on. With GROUP = 1, the launch grid's own order (x fastest: the blocks
// resident at one time read a few whole bands of rows of in, and write thin slivers of every row
// of out). With GROUP = G, consecutive blocks go down G tile rows before moving one tile column
// right, so the blocks resident together cover a squarer region, and the reads and the writes
// both come in longer runs per row (grouped ordering, as in Triton's matmul tutorial).
#pragma once

__device__ __forceinline__ void tile_of_block(int& by, int& bx)
{
#if GROUP > 1
    const int linear = blockIdx.y * gridDim.x + blockIdx.x;
    const int per_group = GROUP * gridDim.x;
    const int first = linear / per_group * GROUP;
    const int rows = min((int)gridDim.y - first, GROUP);  // the last group may be shorter
    by = first + linear % per_group % rows;
    bx = linear % per_group / rows;
#else
    by = blockIdx.y;
    bx = blockIdx.x;
#endif
}
