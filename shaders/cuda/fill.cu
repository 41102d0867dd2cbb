// kiln_fill: the byte-pattern fill behind kiln_buffer_fill for the patterns
// the copy engine cannot write (8-byte patterns, see backends/cuda/buffer.c).
// The parameter list is the one in docs/kernels.md, shared by every backend.

// Byte k of the result is byte (r + k) % 8 of `pattern`, little-endian.
__device__ static unsigned int kiln_pattern_word(unsigned long long pattern,
                                                 unsigned int r) {
  unsigned int shift = 8u * r;
  unsigned long long rotated =
      shift == 0 ? pattern : (pattern >> shift) | (pattern << (64u - shift));
  return (unsigned int)rotated;
}

// Each thread owns whole 32-bit words, so full words are plain stores. The
// first and last word may hold bytes outside [start, end) that other work
// may be writing at the same time; those two words are merged with atomics
// so the bytes outside the range are never rewritten.
extern "C" __global__ void kiln_fill(unsigned int *words,
                                     unsigned long long start,
                                     unsigned long long end,
                                     unsigned long long pattern) {
  unsigned long long first = start / 4u;
  unsigned long long count = (end + 3u) / 4u - first;
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i =
           (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
       i < count; i += stride) {
    unsigned long long w = first + i;
    unsigned long long byte = w * 4u;
    // (byte - start) mod 8, well defined in unsigned arithmetic.
    unsigned int value =
        kiln_pattern_word(pattern, (unsigned int)((byte - start) & 7u));
    if (byte >= start && byte + 4u <= end) {
      words[w] = value;
      continue;
    }
    unsigned int mask = 0;
    for (unsigned int k = 0; k < 4u; ++k) {
      if (byte + k >= start && byte + k < end) {
        mask |= 0xffu << (8u * k);
      }
    }
    atomicAnd(&words[w], ~mask);
    atomicOr(&words[w], value & mask);
  }
}
