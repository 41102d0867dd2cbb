#version 460
// kiln_axpy_f32(float *y, const float *x, float a, u32 n):
// y[i] = a * x[i] + y[i] for i < n.
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
  F32 y;
  F32R x;
  float a;
  uint n;
} args;

void main() {
  // 64-bit indices and addresses: an index of 2^31 or more must not be read
  // as negative, nor grid * block wrap around.
  uint64_t stride = uint64_t(gl_NumWorkGroups.x) * gl_WorkGroupSize.x;
  uint64_t i = uint64_t(gl_WorkGroupID.x) * gl_WorkGroupSize.x +
               gl_LocalInvocationID.x;
  for (; i < uint64_t(args.n); i += stride) {
    F32 y = F32(uint64_t(args.y) + (i << 2));
    y.v = args.a * F32R(uint64_t(args.x) + (i << 2)).v + y.v;
  }
}
