// kiln_axpy_f32 (docs/kernels.md): y[i] = a * x[i] + y[i] for i < n,
// grid-stride.
extern "C" __global__ void kiln_axpy_f32(float *y, const float *x, float a,
                                         unsigned int n) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i =
           (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    y[i] = a * x[i] + y[i];
  }
}
