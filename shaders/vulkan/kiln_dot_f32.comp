#version 460
// kiln_dot_f32(float *partial, const float *x, const float *y,
// float *result, u32 *tickets, u32 n): as kiln_reduce_sum_f32, summing
// x[i] * y[i].
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer F32 {
  float v;
};
// The partial sums and the ticket counter, which other workgroups read and
// write while this one runs.
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer
    F32C {
  float v;
};
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer
    U32 {
  uint v;
};
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer
    F32R {
  float v;
};

layout(push_constant, std430) uniform Args {
  F32 partial;
  F32R x;
  F32R y;
  F32 result;
  U32 tickets;
  uint n;
} args;

shared float sums[gl_WorkGroupSize.x];
shared bool last;

// The term that element i adds to the sum.
float term(uint64_t i) {
  return F32R(uint64_t(args.x) + (i << 2)).v *
         F32R(uint64_t(args.y) + (i << 2)).v;
}

void main() {
  uint t = gl_LocalInvocationID.x;
  uint64_t n = uint64_t(args.n);
  uint64_t stride = uint64_t(gl_NumWorkGroups.x) * gl_WorkGroupSize.x;
  uint64_t i = uint64_t(gl_WorkGroupID.x) * gl_WorkGroupSize.x + t;
  // Four elements of the grid-stride walk at a time, into four sums: four
  // loads in flight per invocation instead of one keep the memory busy.
  float acc0 = 0.0, acc1 = 0.0, acc2 = 0.0, acc3 = 0.0;
  for (; i + 3ul * stride < n; i += 4ul * stride) {
    acc0 += term(i);
    acc1 += term(i + stride);
    acc2 += term(i + 2ul * stride);
    acc3 += term(i + 3ul * stride);
  }
  for (; i < n; i += stride) acc0 += term(i);
  sums[t] = (acc0 + acc1) + (acc2 + acc3);
  // The block size is a power of two (32 to 1024).
  for (uint half_size = gl_WorkGroupSize.x >> 1; half_size > 0u;
       half_size >>= 1) {
    barrier();
    if (t < half_size) sums[t] += sums[t + half_size];
  }
  // Block b's sum in partial[b], then a ticket; the block that takes the
  // last one adds the partial sums up in a fixed order, writes the result
  // and puts the counter back to 0 for the stream's next reduction.
  if (t == 0u) {
    F32C(uint64_t(args.partial) + (uint64_t(gl_WorkGroupID.x) << 2)).v =
        sums[0];
    // The partial sum is seen by every workgroup before the ticket is,
    // and the last ticket's holder sees every partial sum after taking it.
    memoryBarrierBuffer();
    last = atomicAdd(U32(args.tickets).v, 1u) == gl_NumWorkGroups.x - 1u;
    memoryBarrierBuffer();
  }
  barrier();
  if (!last) return;
  float acc = 0.0;
  for (uint b = t; b < gl_NumWorkGroups.x; b += gl_WorkGroupSize.x)
    acc += F32C(uint64_t(args.partial) + (uint64_t(b) << 2)).v;
  sums[t] = acc;
  for (uint half_size = gl_WorkGroupSize.x >> 1; half_size > 0u;
       half_size >>= 1) {
    barrier();
    if (t < half_size) sums[t] += sums[t + half_size];
  }
  if (t == 0u) {
    F32(args.result).v = sums[0];
    U32(args.tickets).v = 0u;
  }
}
