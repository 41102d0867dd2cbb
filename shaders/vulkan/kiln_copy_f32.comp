#version 460
// kiln_copy_f32(float *dst, const float *src, u32 n): dst[i] = src[i] for
// i < n (BabelStream copy).
//
// Bound by memory bandwidth: when every address is 16-byte aligned (whole
// buffers always are) each access moves a vec4 and the last n % 4 elements
// go to the first invocations; otherwise one float at a time. Grid-stride
// over 64-bit indices, so any grid is correct for any n.
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
layout(buffer_reference, std430, buffer_reference_align = 16) buffer V4 {
  vec4 v;
};
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer
    V4R {
  vec4 v;
};

layout(push_constant, std430) uniform Args {
  F32 dst;
  F32R src;
  uint n;
} args;

// Element i of the float array at `base`, or its vec4 number i.
float load1(uint64_t base, uint64_t i) { return F32R(base + (i << 2)).v; }
vec4 load4(uint64_t base, uint64_t i) { return V4R(base + (i << 4)).v; }

// dst[i], and the vec4 of dst[4i .. 4i+3].
float value1(uint64_t i) { return load1(uint64_t(args.src), i); }
vec4 value4(uint64_t i) { return load4(uint64_t(args.src), i); }

void main() {
  uint64_t dst = uint64_t(args.dst);
  uint64_t n = uint64_t(args.n);
  uint64_t stride = uint64_t(gl_NumWorkGroups.x) * gl_WorkGroupSize.x;
  uint64_t first = uint64_t(gl_WorkGroupID.x) * gl_WorkGroupSize.x +
                   gl_LocalInvocationID.x;
  if (((dst | uint64_t(args.src)) & 15ul) != 0ul) {
    for (uint64_t i = first; i < n; i += stride)
      F32(dst + (i << 2)).v = value1(i);
    return;
  }
  uint64_t n4 = n >> 2;
  for (uint64_t i = first; i < n4; i += stride)
    V4(dst + (i << 4)).v = value4(i);
  uint64_t tail = (n4 << 2) + first;
  if (tail < n) F32(dst + (tail << 2)).v = value1(tail);
}
