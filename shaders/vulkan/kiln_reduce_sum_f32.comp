#version 460
// kiln_reduce_sum_f32(float *partial, const float *x, u32 n): block b writes
// to partial[b] the sum of the x[i] it visited. A tree in shared memory
// rather than subgroup operations: its order of additions is the same on
// every device, and it works for any subgroup size.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer F32 {
  float v;
};
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer
    F32R {
  float v;
};

layout(push_constant, std430) uniform Args {
  F32 partial;
  F32R x;
  uint n;
} args;

shared float sums[gl_WorkGroupSize.x];

// The term that element i adds to the sum.
float term(uint64_t i) { return F32R(uint64_t(args.x) + (i << 2)).v; }

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
  if (t == 0u)
    F32(uint64_t(args.partial) + (uint64_t(gl_WorkGroupID.x) << 2)).v =
        sums[0];
}
