#version 460
// Subgroup operations (GroupNonUniform, GroupNonUniformArithmetic): out[i]
// is the sum of the subgroup's invocation indices, written by every
// invocation i < n. kiln once took capability 61 for an OpenCL-only one and
// refused every kernel that used subgroups.
#extension GL_EXT_buffer_reference : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 {
  uint v[];
};

layout(push_constant, std430) uniform Args {
  U32 out_;
  uint n;
} args;

void main() {
  const uint i = gl_GlobalInvocationID.x;
  const uint sum = subgroupAdd(gl_SubgroupInvocationID);
  if (i < args.n) args.out_.v[i] = sum;
}
