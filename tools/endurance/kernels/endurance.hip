// kiln_endurance_add(u32 *data, u32 n, u32 value): kiln-endurance's kernel.
// data[i] += value for i < n, so that the program can check, after any
// number of launches, that every one of them ran.
extern "C" __global__ void kiln_endurance_add(unsigned int *data,
                                              unsigned int n,
                                              unsigned int value) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    data[i] += value;
  }
}
