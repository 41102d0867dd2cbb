// kiln_reduce_sum_f32 and kiln_dot_f32 (docs/kernels.md): block b writes
// partial[b], the sum over the elements it visits in grid-stride order. No
// atomics, so the order of additions is fixed for a given n, grid and block
// and the result is the same run to run.

// The sum of `v` over the block, valid in thread 0. blockDim.x is a power of
// two from 32 to 1024: whole warps, at most 32 of them.
__device__ static float kiln_block_sum(float v) {
  __shared__ float warp_sums[32];
  unsigned int lane = threadIdx.x & 31u;
  unsigned int warp = threadIdx.x >> 5;
  for (unsigned int offset = 16; offset > 0; offset >>= 1) {
    v += __shfl_down_sync(0xffffffffu, v, offset);
  }
  if (lane == 0) {
    warp_sums[warp] = v;
  }
  __syncthreads();
  v = 0.0f;
  if (warp == 0) {
    if (lane < (blockDim.x >> 5)) {
      v = warp_sums[lane];
    }
    for (unsigned int offset = 16; offset > 0; offset >>= 1) {
      v += __shfl_down_sync(0xffffffffu, v, offset);
    }
  }
  return v;
}

extern "C" __global__ void kiln_reduce_sum_f32(float *partial, const float *x,
                                               unsigned int n) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  float sum = 0.0f;
  for (unsigned long long i =
           (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    sum += x[i];
  }
  sum = kiln_block_sum(sum);
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = sum;
  }
}

extern "C" __global__ void kiln_dot_f32(float *partial, const float *x,
                                        const float *y, unsigned int n) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  float sum = 0.0f;
  for (unsigned long long i =
           (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    sum = fmaf(x[i], y[i], sum);
  }
  sum = kiln_block_sum(sum);
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = sum;
  }
}
