// The kernel of tests/hip/test_bounded_waits.c: spins until *flag is not 0,
// then stores it in *done. An atomic read goes to memory every time, where
// the test's write from the host lands.
extern "C" __global__ void kiln_test_spin(unsigned *flag, unsigned *done) {
  unsigned seen;
  while ((seen = atomicAdd(flag, 0u)) == 0u) {
  }
  *done = seen;
}
