// The fault tests' kernels for CUDA (test_faults.c). faults.hip holds the
// same text for HIP and conf_fault_*.comp the same kernels in GLSL, with the
// same parameter lists.

// Spins until *flag is non-zero, which the test never makes it, or until
// `cycles` clock cycles have passed: a kernel that outlasts any wait the
// test makes, yet frees the GPU by itself within seconds should the
// driver not stop it (HIP cannot). The volatile load is re-read on every
// turn, so the compiler can neither hoist it nor drop the loop.
extern "C" __global__ void conf_fault_spin(const unsigned *flag,
                                           unsigned long long cycles) {
  const volatile unsigned *f = flag;
  long long start = clock64();
  while (*f == 0 && (unsigned long long)(clock64() - start) < cycles) {
  }
}

// Writes `value` `offset` bytes past the start of `data`, wherever that is.
extern "C" __global__ void conf_fault_scatter(unsigned *data,
                                              unsigned long long offset,
                                              unsigned value) {
  *(volatile unsigned *)((char *)data + offset) = value;
}
