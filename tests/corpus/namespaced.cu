// A kernel in a namespace, with a device function beside it, found by its
// C++ name through the name expression "corpus::saxpy".
namespace corpus {
namespace detail {
__device__ float twice(float v) { return 2.0f * v; }
} // namespace detail

__global__ void saxpy(float *y, const float *x, float a, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = detail::twice(a) * x[i] + y[i];
}
} // namespace corpus
