// Test kernels for tests/hip/test_modules.c. This image and second.hip's
// both have kiln_test_which, each storing its own number, so that a test
// can tell which image a kernel came from; each also has one of its own.
extern "C" __global__ void kiln_test_which(unsigned *out) { *out = 1; }

extern "C" __global__ void kiln_test_first(unsigned *out) { *out = 11; }
