// Each warp's sum with shuffles (__shfl_down_sync), written by its first
// lane: the warp-level idiom of hand-written reductions.
extern "C" __global__ void warp_sums(const unsigned *x, unsigned *out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned v = x[i];
  for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
  if ((threadIdx.x & 31u) == 0) out[i / 32] = v;
}
