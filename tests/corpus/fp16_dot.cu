// A dot product of half pairs summed in float: __half22float2 for each
// pair, a block's sum in shared memory, one atomicAdd per block.
#include <cuda_fp16.h>

extern "C" __global__ void fp16_dot(const __half2 *x, const __half2 *y,
                                    float *out, unsigned pairs) {
  __shared__ float sums[256];
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = 0.0f;
  if (i < pairs) {
    const float2 a = __half22float2(x[i]), b = __half22float2(y[i]);
    v = a.x * b.x + a.y * b.y;
  }
  sums[threadIdx.x] = v;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, sums[0]);
}
