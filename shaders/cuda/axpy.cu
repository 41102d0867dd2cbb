// kiln_axpy_f32: y[i] = a * x[i] + y[i] for i < n (docs/kernels.md).

extern "C" __global__ void kiln_axpy_f32(float *y, const float *x, float a,
                                         unsigned int n) {
  // 64-bit indices: i + stride must not wrap around for n near 2^32.
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i =
           (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    // One rounding, written out so the result does not depend on whether
    // the compiler contracts a * x + y.
    y[i] = fmaf(a, x[i], y[i]);
  }
}
