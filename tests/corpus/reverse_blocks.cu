// Dynamic shared memory (extern __shared__, sized by the launch): each
// block reverses its slice of the input through it.
extern "C" __global__ void reverse_blocks(const unsigned *in, unsigned *out) {
  extern __shared__ unsigned slice[];
  const unsigned base = blockIdx.x * blockDim.x;
  slice[threadIdx.x] = in[base + threadIdx.x];
  __syncthreads();
  out[base + threadIdx.x] = slice[blockDim.x - 1 - threadIdx.x];
}
