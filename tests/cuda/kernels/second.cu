// Test kernels for tests/cuda/test_modules.c: the twin of first.cu's
// kiln_test_which, one of its own, and one declared without extern "C",
// whose name C++ mangles (to _Z17kiln_test_mangledPj).
extern "C" __global__ void kiln_test_which(unsigned *out) { *out = 2; }

extern "C" __global__ void kiln_test_second(unsigned *out) { *out = 22; }

__global__ void kiln_test_mangled(unsigned *out) { *out = 33; }
