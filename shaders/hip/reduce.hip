// kiln_reduce_sum_f32 and kiln_dot_f32 (docs/kernels.md): block b writes
// partial[b], the sum over the elements it visits in grid-stride order. No
// atomics, so the order of additions is fixed for a given n, grid and block
// and the result is the same run to run.

// The sum of `v` over the block, valid in thread 0. blockDim.x is a power of
// two from 32 to 1024. Every step is a shared-memory tree step closed by
// __syncthreads, with no warp-synchronous shortcut, so the result does not
// depend on the width of a warp (32) or of a wavefront (64, or 32 on RDNA).
__device__ static float kiln_block_sum(float v) {
  __shared__ float sums[1024];
  unsigned int t = threadIdx.x;
  sums[t] = v;
  __syncthreads();
  for (unsigned int half = blockDim.x / 2; half > 0; half /= 2) {
    if (t < half) {
      sums[t] += sums[t + half];
    }
    __syncthreads();
  }
  return sums[0];
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
    sum += x[i] * y[i];
  }
  sum = kiln_block_sum(sum);
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = sum;
  }
}
