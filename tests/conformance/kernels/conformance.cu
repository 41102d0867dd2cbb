// The conformance suite's test kernels for CUDA. conformance.hip holds the
// same text for HIP and kernels/conf_*.comp the same kernels in GLSL, with
// the same parameter lists (the one argument ABI of kiln.h).

// out[4i..4i+3] = x, y, z of element i's thread, and that thread's linear
// number (block number * threads per block + number within the block), for
// every element of an nx * ny * nz grid; threads past its edges do nothing.
extern "C" __global__ void conf_index3d(unsigned *out, unsigned nx,
                                        unsigned ny, unsigned nz) {
  unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
  unsigned z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x >= nx || y >= ny || z >= nz) return;
  unsigned block =
      (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  unsigned local =
      (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  unsigned long long i = ((unsigned long long)z * ny + y) * nx + x;
  out[4 * i + 0] = x;
  out[4 * i + 1] = y;
  out[4 * i + 2] = z;
  out[4 * i + 3] = block * (blockDim.x * blockDim.y * blockDim.z) + local;
}

// Every scalar type between buffers at offsets: out[] gets the bits of each
// argument and two results of 64-bit arithmetic; dst[i] = src[i] + b, i < 4.
extern "C" __global__ void conf_scalars(unsigned long long *out, int a,
                                        const unsigned *src, unsigned b,
                                        float c, long long d,
                                        unsigned long long e, double f,
                                        unsigned *dst) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  union { float f; unsigned u; } cb;
  union { double f; unsigned long long u; } fb, gb;
  cb.f = c;
  fb.f = f;
  gb.f = f * 2.0 + (double)c;
  out[0] = (unsigned long long)(long long)a;
  out[1] = b;
  out[2] = cb.u;
  out[3] = (unsigned long long)d;
  out[4] = e;
  out[5] = fb.u;
  out[6] = (unsigned long long)d * 3ull + e;
  out[7] = gb.u;
  for (int i = 0; i < 4; i++) dst[i] = src[i] + b;
}

// Block k rotates words [k * words, (k + 1) * words) of `in` by one through
// dynamic shared memory of `words` 32-bit words: out[j] = in[j + 1], the
// last one getting the first.
extern "C" __global__ void conf_shared_rotate(unsigned *out,
                                              const unsigned *in,
                                              unsigned words) {
  extern __shared__ unsigned s[];
  unsigned long long base = (unsigned long long)blockIdx.x * words;
  for (unsigned i = threadIdx.x; i < words; i += blockDim.x)
    s[i] = in[base + i];
  __syncthreads();
  for (unsigned i = threadIdx.x; i < words; i += blockDim.x)
    out[base + i] = s[(i + 1) % words];
}

// data[i] += value for i < n, grid-stride.
extern "C" __global__ void conf_add_u32(unsigned *data, unsigned n,
                                        unsigned value) {
  unsigned stride = gridDim.x * blockDim.x;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    data[i] += value;
}

// Work that takes time: data[i] goes through `rounds` steps of an LCG.
extern "C" __global__ void conf_busy(unsigned *data, unsigned n,
                                     unsigned rounds) {
  unsigned stride = gridDim.x * blockDim.x;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    unsigned v = data[i];
    for (unsigned r = 0; r < rounds; r++) v = v * 1664525u + 1013904223u;
    data[i] = v;
  }
}

// Two launches that can only both succeed if they run at once, CUDA and
// HIP only (Vulkan promises no overlap of commands): each raises
// flags[me], then polls flags[1 - me] at most `polls` times, and leaves
// in flags[2 + me] whether it saw it raised. One block, one thread.
extern "C" __global__ void conf_handshake(unsigned *flags, unsigned me,
                                          unsigned polls) {
  volatile unsigned *f = flags;
  atomicExch(&flags[me], 1u);
  __threadfence();
  unsigned seen = 0;
  for (unsigned i = 0; i < polls && !seen; i++) seen = f[1 - me];
  flags[2 + me] = seen;
}

// Module globals (kiln_module_get_global), CUDA and HIP only: the host
// writes and reads them through kiln's buffer calls. At file scope, so
// their names are not mangled. nvcc and hipcc lay them out in this order,
// which puts conf_global_bytes at an odd address after the one-byte flag:
// kiln's fills must cope (the test is right wherever it lands).
__device__ unsigned conf_global_words[4];
__constant__ unsigned conf_constant_words[4];
__device__ unsigned char conf_global_flag;
__device__ unsigned char conf_global_bytes[13];

// out[i] = conf_global_words[i] + conf_constant_words[i] + add, then
// conf_global_words[i] = 3 * conf_global_words[i] + 1, for i < 4.
extern "C" __global__ void conf_globals(unsigned *out, unsigned add) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= 4) return;
  unsigned g = conf_global_words[i];
  out[i] = g + conf_constant_words[i] + add;
  conf_global_words[i] = 3u * g + 1u;
}

// out[0] = the sum of conf_global_bytes and out[1] = conf_global_flag, as
// the device sees them.
extern "C" __global__ void conf_global_bytes_sum(unsigned *out) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  unsigned sum = 0;
  for (unsigned i = 0; i < sizeof conf_global_bytes; i++)
    sum += conf_global_bytes[i];
  out[0] = sum;
  out[1] = conf_global_flag;
}

// words[first + i] = value + i for i < count, with no check of any range:
// the overrunning kernel of test_guard.c, which points it just past the end
// of a buffer or (first < 0) just before its start.
extern "C" __global__ void conf_poke(unsigned *words, int first,
                                     unsigned count, unsigned value) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) words[(long long)first + i] = value + i;
}

// A kernel that cannot be given its memory: CONF_LOCAL_HOG_WORDS 32-bit
// words of local memory per thread (500 KiB, just under the 512 KiB a thread
// may have). The driver reserves a kernel's local memory for every thread
// the device can hold at once, not for those launched, so on a large GPU
// (an H100: 132 SMs x 2048 threads x 500 KiB = 138 GB) the launch itself
// runs out of device memory. The array is volatile and indexed by an
// argument, so the compiler can neither drop it nor keep it in registers.
#define CONF_LOCAL_HOG_WORDS 128000u
extern "C" __global__ void conf_local_hog(unsigned *data, unsigned index) {
  volatile unsigned scratch[CONF_LOCAL_HOG_WORDS];
  scratch[index % CONF_LOCAL_HOG_WORDS] = data[0];
  data[0] = scratch[(index * 7u) % CONF_LOCAL_HOG_WORDS];
}
