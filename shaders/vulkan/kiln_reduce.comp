#version 460
// kiln_reduce_sum_f32(u32 *slots, const float *x, float *result,
// u32 *tickets, u32 n) and kiln_dot_f32(u32 *slots, const float *x,
// const float *y, float *result, u32 *tickets, u32 n), one text built once
// per kernel with KILN_REDUCE_SUM or KILN_REDUCE_DOT defined (meson.build).
// One launch: block b writes to slot b the sum of the terms it visited
// (x[i], or x[i] * y[i]), and the last block to finish writes the sum of
// the slots to *result (see the end of main). Trees in shared memory rather
// than subgroup arithmetic: their order of additions is the same on every
// device, whatever its subgroup size.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_KHR_memory_scope_semantics : require

#if !defined(KILN_REDUCE_SUM) && !defined(KILN_REDUCE_DOT)
#error define KILN_REDUCE_SUM or KILN_REDUCE_DOT
#endif

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer F32 {
  float v;
};
// The slots and the ticket counter, which other workgroups read and write
// while this one runs.
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer
    U32 {
  uint v;
};
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer
    F32R {
  float v;
};
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer
    V4R {
  vec4 v;
};

layout(push_constant, std430) uniform Args {
  U32 slots;
  F32R x;
#if defined(KILN_REDUCE_DOT)
  F32R y;
#endif
  F32 result;
  U32 tickets;
  uint n;
} args;

shared float sums[gl_WorkGroupSize.x];
shared bool last;

// The term that element i adds to the sum.
float term(uint64_t i) {
  const float u = F32R(uint64_t(args.x) + (i << 2)).v;
#if defined(KILN_REDUCE_DOT)
  return u * F32R(uint64_t(args.y) + (i << 2)).v;
#else
  return u;
#endif
}

// The terms of the four elements at byte offset `at` past x4 (and y4),
// added two into s0 and two into s1.
void add_terms4(inout float s0, inout float s1, uint64_t x4, uint64_t y4,
                uint64_t at) {
  const vec4 u = V4R(x4 + at).v;
#if defined(KILN_REDUCE_DOT)
  const vec4 w = V4R(y4 + at).v;
  s0 = fma(u.y, w.y, fma(u.x, w.x, s0));
  s1 = fma(u.w, w.w, fma(u.z, w.z, s1));
#else
  s0 += u.x + u.y;
  s1 += u.z + u.w;
#endif
}

// The sum of the terms this invocation visits in grid-stride order, as
// shaders/cuda/reduce.cu's kiln_thread_terms walks them: where x (and y,
// the same distance past a 16-byte boundary) allow it, the 0 to 3 elements
// before x's first boundary go one to an invocation, then vec4s, two in
// flight, then the 0 to 3 left; otherwise four elements at a time into
// four sums. Either way the order of additions depends on n, the launch
// and where x lies from a 16-byte boundary, never on timing, as on CUDA
// and HIP. (On the H100 at kiln's launch the vec4s gain nothing measurable
// over floats, the dispatch and its barrier being what a reduction of 1
// to 8 MiB waits on; with 128 workgroups 4 MiB takes 6.1 us against 6.7.)
float thread_terms(uint64_t n, uint64_t t, uint64_t stride) {
  const uint64_t x = uint64_t(args.x);
#if defined(KILN_REDUCE_DOT)
  const uint64_t y = uint64_t(args.y);
#else
  const uint64_t y = x;
#endif
  const uint64_t skew = x & 15ul;
  float acc0 = 0.0, acc1 = 0.0, acc2 = 0.0, acc3 = 0.0;
  if (skew == (y & 15ul)) {
    // kiln passes 4-byte aligned vectors (offsets are multiples of 4).
    const uint64_t head = min(((16ul - skew) & 15ul) >> 2, n);
    if (t < head) acc0 += term(t);
    const uint64_t x4 = x + (head << 2), y4 = y + (head << 2);
    const uint64_t n4 = (n - head) >> 2;
    uint64_t j = t;
    for (; j + stride < n4; j += 2ul * stride) {
      add_terms4(acc0, acc1, x4, y4, j << 4);
      add_terms4(acc2, acc3, x4, y4, (j + stride) << 4);
    }
    if (j < n4) add_terms4(acc0, acc1, x4, y4, j << 4);
    const uint64_t rest = head + 4ul * n4;
    if (t < n - rest) acc2 += term(rest + t);
  } else {
    uint64_t i = t;
    for (; i + 3ul * stride < n; i += 4ul * stride) {
      acc0 += term(i);
      acc1 += term(i + stride);
      acc2 += term(i + 2ul * stride);
      acc3 += term(i + 3ul * stride);
    }
    for (; i < n; i += stride) acc0 += term(i);
  }
  return (acc0 + acc1) + (acc2 + acc3);
}

// Adds sums[0 .. workgroup size) up into sums[0], a tree in the same
// order on every device; the workgroup size is a power of two (32 to
// 1024). Every invocation t of the workgroup calls it.
void workgroup_sum(uint t) {
  for (uint half_size = gl_WorkGroupSize.x >> 1; half_size > 0u;
       half_size >>= 1) {
    barrier();
    if (t < half_size) sums[t] += sums[t + half_size];
  }
}

// The word a workgroup's sum is kept as in its slot: the complement of the
// sum's bits, so that 0 can mean "not written yet". The one sum whose word
// would be 0, the NaN of all-ones bits (x86 and AMD keep NaN payloads), is
// kept as the quiet NaN instead.
uint slot_word(float sum) {
  const uint bits = floatBitsToUint(sum);
  return bits == 0xffffffffu ? ~0x7fc00000u : ~bits;
}

// How many times the last workgroup reads a slot that is still 0 before it
// takes it for a NaN: a second or two at most. Only a launch that breaks the
// kernel's rules (a slot another launch emptied, a grid that is not 1-D)
// leaves a slot unwritten; this makes it a NaN instead of a hung GPU.
const uint SLOT_READS = 1u << 21;

void main() {
  uint t = gl_LocalInvocationID.x;
  uint64_t stride = uint64_t(gl_NumWorkGroups.x) * gl_WorkGroupSize.x;
  sums[t] = thread_terms(uint64_t(args.n),
                         uint64_t(gl_WorkGroupID.x) * gl_WorkGroupSize.x + t,
                         stride);
  // Workgroup b's sum in slot b, then a ticket; the workgroup that takes
  // the last one adds the slots up in a fixed order, writes the result and
  // empties the slots and the counter for the stream's next reduction. The
  // slots (0 at the launch, and again after it) are how the sums reach the
  // last workgroup: it waits for each to be written, rather than every
  // workgroup fencing its sum before its ticket (memoryBarrierBuffer): on
  // the H100, 1.13 to 1.16 times the reductions a second at 1 to 8 MiB.
  workgroup_sum(t);
  if (t == 0u) {
    atomicStore(U32(uint64_t(args.slots) + (uint64_t(gl_WorkGroupID.x) << 2)).v,
                slot_word(sums[0]), gl_ScopeDevice, gl_StorageSemanticsBuffer,
                gl_SemanticsRelaxed);
    last = atomicAdd(U32(args.tickets).v, 1u) == gl_NumWorkGroups.x - 1u;
  }
  barrier();
  if (!last) return;
  // Every workgroup issued its slot's write before taking its ticket, so
  // each wait ends once that write is visible.
  float acc = 0.0;
  for (uint b = t; b < gl_NumWorkGroups.x; b += gl_WorkGroupSize.x) {
    U32 slot = U32(uint64_t(args.slots) + (uint64_t(b) << 2));
    uint word = 0u;
    for (uint reads = 0u; word == 0u && reads < SLOT_READS; reads++)
      word = atomicLoad(slot.v, gl_ScopeDevice, gl_StorageSemanticsBuffer,
                        gl_SemanticsRelaxed);
    atomicStore(slot.v, 0u, gl_ScopeDevice, gl_StorageSemanticsBuffer,
                gl_SemanticsRelaxed);
    acc += uintBitsToFloat(word == 0u ? 0x7fc00000u : ~word);
  }
  sums[t] = acc;
  workgroup_sum(t);
  if (t == 0u) {
    F32(args.result).v = sums[0];
    U32(args.tickets).v = 0u;
  }
}
