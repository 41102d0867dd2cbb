#version 460
// cg_reduce.cu in GLSL: a grid-stride sum, each subgroup's total (what the
// cooperative groups' tile reduce gives in CUDA) added to *out.
#extension GL_EXT_buffer_reference : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(local_size_x_id = 0) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Ints {
  int v[];
};

layout(push_constant, std430) uniform Args {
  Ints x;
  Ints out_sum;
  uint n;
} args;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  int v = 0;
  for (uint i = gl_GlobalInvocationID.x; i < args.n; i += stride)
    v += args.x.v[i];
  const int sum = subgroupAdd(v);
  if (subgroupElect()) atomicAdd(args.out_sum.v[0], sum);
}
