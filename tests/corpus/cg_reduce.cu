// A sum with cooperative groups: each 32-thread tile of the block reduces
// with cg::reduce, and one thread per tile adds its sum into the result.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

extern "C" __global__ void cg_sum(const int *x, int *out, unsigned n) {
  const cg::thread_block block = cg::this_thread_block();
  const cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  const unsigned stride = gridDim.x * block.size();
  int v = 0;
  for (unsigned i = blockIdx.x * block.size() + block.thread_rank(); i < n;
       i += stride)
    v += x[i];
  const int sum = cg::reduce(tile, v, cg::plus<int>());
  if (tile.thread_rank() == 0) atomicAdd(out, sum);
}
