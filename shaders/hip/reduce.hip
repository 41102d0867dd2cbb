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

extern "C" __global__ void kiln_reduce_sum_f32(float *partial,
                                               const float *__restrict__ x,
                                               unsigned int n) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long i =
      (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  // Four elements of the grid-stride walk at a time, into four sums: four
  // independent loads in flight per thread instead of one dependent chain
  // keep enough bytes moving to reach the memory's bandwidth.
  float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
  for (; i + 3 * stride < n; i += 4 * stride) {
    a0 += x[i];
    a1 += x[i + stride];
    a2 += x[i + 2 * stride];
    a3 += x[i + 3 * stride];
  }
  for (; i < n; i += stride) {
    a0 += x[i];
  }
  float sum = kiln_block_sum((a0 + a1) + (a2 + a3));
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = sum;
  }
}

extern "C" __global__ void kiln_dot_f32(float *partial,
                                        const float *__restrict__ x,
                                        const float *__restrict__ y,
                                        unsigned int n) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long i =
      (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
  for (; i + 3 * stride < n; i += 4 * stride) {
    a0 = fmaf(x[i], y[i], a0);
    a1 = fmaf(x[i + stride], y[i + stride], a1);
    a2 = fmaf(x[i + 2 * stride], y[i + 2 * stride], a2);
    a3 = fmaf(x[i + 3 * stride], y[i + 3 * stride], a3);
  }
  for (; i < n; i += stride) {
    a0 = fmaf(x[i], y[i], a0);
  }
  float sum = kiln_block_sum((a0 + a1) + (a2 + a3));
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = sum;
  }
}
