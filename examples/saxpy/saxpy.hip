// y = a * x + y, written against kiln's one argument ABI: the parameters are
// the ordered list the program passes to kiln_launch, buffers as device
// pointers. extern "C" keeps the name kiln_module_get_kernel looks up.
extern "C" __global__ void saxpy(float *y, const float *x, float a,
                                 unsigned n) {
  // Grid-stride, so any grid covers any n.
  unsigned stride = gridDim.x * blockDim.x;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    y[i] = a * x[i] + y[i];
  }
}
