// Kernels with known parameter lists for test_image_params.c, which reads
// them back from what nvcc (CUDA) and hipcc (HIP) make of this one text.
// It includes no header, so that both compilers take it as it is; hipcc
// gets the HIP runtime header from its command line.

// One parameter of each kind kiln packs.
extern "C" __global__ void k(float *a, const int *b, float s, unsigned n,
                             double d, long long q) {
#if defined(__HIP_DEVICE_COMPILE__)
  // Reading the implicit arguments makes the code object's metadata list
  // the hidden arguments the runtime appends, which are not parameters.
  n += *(const unsigned *)__builtin_amdgcn_implicitarg_ptr();
#endif
  a[n] = s + (float)b[n] + (float)d + (float)q;
}

extern "C" __global__ void none() {}

// C++ names it _Z7mangledsPic; parameters of 2 and 1 bytes.
__global__ void mangled(short h, int *out, char c) { out[0] = h + c; }

// A struct by value, which no kiln_arg fills: 16 bytes aligned to 8.
struct pair {
  int i;
  double d;
};

extern "C" __global__ void aggregate(int *out, pair p, unsigned n) {
  out[n] = p.i + (int)p.d;
}

#if defined(__gfx90a__)
// Only in the gfx90a code object of a bundle: tells which one was read.
extern "C" __global__ void gfx90a_only(int *out) { out[0] = 90; }
#endif
