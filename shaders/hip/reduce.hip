// kiln_reduce_sum_f32 and kiln_dot_f32 (docs/kernels.md), one launch: block
// b writes its sum over the elements it visits in grid-stride order to slot
// b, then takes a ticket; the block that takes the last ticket adds the
// slots up in a fixed order (thread t the slots t, t + blockDim.x, ..., then
// the block's tree), writes the result and empties the slots; the counter
// wraps back to 0 at the last ticket, for the stream's next reduction.
// Which block finishes last changes nothing: the result is the same run to
// run.

// The sum of `v` over the block, valid in thread 0. blockDim.x is a power of
// two from 32 to 1024. Every step is a shared-memory tree step closed by
// __syncthreads, with no warp-synchronous shortcut, so the result does not
// depend on the width of a warp (32) or of a wavefront (64, or 32 on RDNA).
__device__ static float kiln_block_sum(float v) {
  __shared__ float sums[1024];
  unsigned int t = threadIdx.x;
  sums[t] = v;
  __syncthreads();
  for (unsigned int half = blockDim.x / 2; half > 0; half /= 2) {
    if (t < half) {
      sums[t] += sums[t + half];
    }
    __syncthreads();
  }
  return sums[0];
}

// The word a block's sum is kept as in its slot: the complement of the
// sum's bits, so that 0 can mean "not written yet". The one sum whose word
// would be 0, the NaN of all-ones bits (x86 and AMD keep NaN payloads), is
// kept as the quiet NaN instead.
__device__ static __forceinline__ unsigned int kiln_slot_word(float sum) {
  const unsigned int bits = __float_as_uint(sum);
  return bits == 0xffffffffu ? ~0x7fc00000u : ~bits;
}

// How many times the last block reads a slot that is still 0 before it
// takes it for a NaN: a second or two at most. Only a launch that breaks the
// kernel's rules (a slot another launch emptied, a grid that is not 1-D)
// leaves a slot unwritten; this makes it a NaN instead of a hung GPU.
#define KILN_SLOT_READS (1u << 21)

// Thread 0 of each block has its block's sum; the last block to finish
// writes the sum of all of them to *result. The slots (0 at the launch, and
// again after it) are how the sums reach the last block: it waits for each
// to be written rather than every block fencing its sum before its ticket.
// Fences wait for the write to be visible device-wide, one after another in
// each block; the last block's waits overlap (on the H100, through CUDA: a
// reduction of 4 MiB back to back takes 3.0 us instead of 4.0).
__device__ static void kiln_finish(float sum, unsigned int *slots,
                                   unsigned int *tickets, float *result) {
  __shared__ bool last;
  if (threadIdx.x == 0) {
    atomicExch(&slots[blockIdx.x], kiln_slot_word(sum));
    // atomicInc wraps the counter to 0 at the last ticket: ready for the
    // stream's next reduction.
    last = atomicInc(tickets, gridDim.x - 1) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) {
    return;
  }
  // Every block issued its slot's write before taking its ticket, so each
  // wait ends once that write is visible; volatile reads go to memory each
  // time, past this SM's cache.
  volatile unsigned int *words = slots;
  float v = 0.0f;
  for (unsigned int b = threadIdx.x; b < gridDim.x; b += blockDim.x) {
    unsigned int w = words[b];
    for (unsigned int reads = 1; w == 0u && reads < KILN_SLOT_READS;
         reads++) {
      w = words[b];
    }
    words[b] = 0u;
    v += __uint_as_float(w == 0u ? 0x7fc00000u : ~w);
  }
  v = kiln_block_sum(v);
  if (threadIdx.x == 0) {
    *result = v;
  }
}

// Element i's term added to s: x[i], or x[i] * y[i] for a dot product.
template <bool DOT>
__device__ static __forceinline__ float kiln_add_term(
    float s, const float *__restrict__ x, const float *__restrict__ y,
    unsigned long long i) {
  return DOT ? fmaf(x[i], y[i], s) : s + x[i];
}

// The terms of four neighbouring elements, u = x[4j..4j + 3] (y4 + j for a
// dot product), added two into s0 and two into s1.
template <bool DOT>
__device__ static __forceinline__ void kiln_add_terms4(
    float &s0, float &s1, float4 u, const float4 *__restrict__ y4,
    unsigned long long j) {
  if (DOT) {
    const float4 v = y4[j];
    s0 = fmaf(u.y, v.y, fmaf(u.x, v.x, s0));
    s1 = fmaf(u.w, v.w, fmaf(u.z, v.z, s1));
  } else {
    s0 += u.x + u.y;
    s1 += u.z + u.w;
  }
}

// The sum of the terms this thread visits in grid-stride order. Where x
// (and y, the same distance past a 16-byte boundary) allow it, the walk
// moves float4s: the 0 to 3 elements before x's first boundary go one to a
// thread, then float4s, then the 0 to 3 left. Loads of 16 bytes are a
// quarter of the load instructions, which small arrays wait on. Either way
// the order of additions depends on n, the launch and where x lies from a
// 16-byte boundary, never on timing.
template <bool DOT>
__device__ static float kiln_thread_terms(const float *__restrict__ x,
                                          const float *__restrict__ y,
                                          unsigned int n) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  const unsigned long long t =
      (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long skew = (unsigned long long)x & 15u;
  float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
  if (!DOT || skew == ((unsigned long long)y & 15u)) {
    // kiln passes 4-byte aligned vectors (offsets are multiples of 4).
    unsigned long long head = ((16u - skew) & 15u) >> 2;
    if (head > n) {
      head = n;
    }
    if (t < head) {
      a0 = kiln_add_term<DOT>(a0, x, y, t);
    }
    const float4 *x4 = (const float4 *)(x + head);
    const float4 *y4 = DOT ? (const float4 *)(y + head) : nullptr;
    const unsigned long long n4 = (n - head) >> 2;
    unsigned long long j = t;
    // Two float4s in flight per thread, into four sums.
    for (; j + stride < n4; j += 2 * stride) {
      kiln_add_terms4<DOT>(a0, a1, x4[j], y4, j);
      kiln_add_terms4<DOT>(a2, a3, x4[j + stride], y4, j + stride);
    }
    if (j < n4) {
      kiln_add_terms4<DOT>(a0, a1, x4[j], y4, j);
    }
    const unsigned long long rest = head + 4 * n4;
    if (t < n - rest) {
      a2 = kiln_add_term<DOT>(a2, x, y, rest + t);
    }
  } else {
    // Four elements of the walk at a time, into four sums: four independent
    // loads in flight per thread instead of one dependent chain.
    unsigned long long i = t;
    for (; i + 3 * stride < n; i += 4 * stride) {
      a0 = kiln_add_term<DOT>(a0, x, y, i);
      a1 = kiln_add_term<DOT>(a1, x, y, i + stride);
      a2 = kiln_add_term<DOT>(a2, x, y, i + 2 * stride);
      a3 = kiln_add_term<DOT>(a3, x, y, i + 3 * stride);
    }
    for (; i < n; i += stride) {
      a0 = kiln_add_term<DOT>(a0, x, y, i);
    }
  }
  return (a0 + a1) + (a2 + a3);
}

extern "C" __global__ void kiln_reduce_sum_f32(unsigned int *slots,
                                               const float *__restrict__ x,
                                               float *result,
                                               unsigned int *tickets,
                                               unsigned int n) {
  float sum = kiln_block_sum(kiln_thread_terms<false>(x, nullptr, n));
  kiln_finish(sum, slots, tickets, result);
}

extern "C" __global__ void kiln_dot_f32(unsigned int *slots,
                                        const float *__restrict__ x,
                                        const float *__restrict__ y,
                                        float *result, unsigned int *tickets,
                                        unsigned int n) {
  float sum = kiln_block_sum(kiln_thread_terms<true>(x, y, n));
  kiln_finish(sum, slots, tickets, result);
}
