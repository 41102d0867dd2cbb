// A block-level primitive of CUB (the toolkit's CCCL): each block of 128
// threads writes the inclusive prefix sums of its 128 integers.
#include <cub/block/block_scan.cuh>

extern "C" __global__ void block_prefix_sums(const int *in, int *out) {
  using Scan = cub::BlockScan<int, 128>;
  __shared__ typename Scan::TempStorage temp;
  const unsigned i = blockIdx.x * 128 + threadIdx.x;
  int v = in[i];
  Scan(temp).InclusiveSum(v, v);
  out[i] = v;
}
