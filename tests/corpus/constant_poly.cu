// A cubic whose coefficients sit in __constant__ memory, which the host
// writes through kiln_module_get_global before the launch.
__constant__ float coeffs[4];

extern "C" __global__ void poly(const float *x, float *y, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float v = x[i];
    y[i] = ((coeffs[3] * v + coeffs[2]) * v + coeffs[1]) * v + coeffs[0];
  }
}
