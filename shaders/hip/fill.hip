// kiln_fill (docs/kernels.md): writes byte (p - start) % 8 of `pattern` to
// every byte position p in [start, end) counted from `words`. Each thread
// owns whole 32-bit words; a word the range covers only in part is merged
// with atomics, so the bytes outside the range keep whatever any other work
// writes to them.
extern "C" __global__ void kiln_fill(unsigned int *words,
                                     unsigned long long start,
                                     unsigned long long end,
                                     unsigned long long pattern) {
  unsigned long long last = (end + 3) / 4;
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long w = start / 4 +
                              (unsigned long long)blockIdx.x * blockDim.x +
                              threadIdx.x;
       w < last; w += stride) {
    unsigned int value = 0u, mask = 0u;
    for (unsigned int b = 0; b < 4u; b++) {
      unsigned long long p = w * 4 + b;
      if (p >= start && p < end) {
        unsigned int byte =
            (unsigned int)(pattern >> (8u * ((p - start) & 7u))) & 0xffu;
        value |= byte << (8u * b);
        mask |= 0xffu << (8u * b);
      }
    }
    if (mask == 0xffffffffu) {
      words[w] = value;
    } else {
      atomicAnd(&words[w], ~mask);
      atomicOr(&words[w], value);
    }
  }
}
