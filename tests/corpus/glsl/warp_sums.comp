#version 460
// warp_sums.cu in GLSL: the sum of each 32 consecutive elements. The sums
// of 8 neighbours come from subgroup shuffles, the same tree as the CUDA
// kernel's __shfl_down_sync (a subgroup holds 8 invocations or a multiple:
// 8 on lavapipe, 32 on NVIDIA, 64 on AMD), and four of them meet in shared
// memory; workgroups are at most 256 invocations.
#extension GL_EXT_buffer_reference : require
#extension GL_KHR_shader_subgroup_shuffle_relative : require

layout(local_size_x_id = 0) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Uints {
  uint v[];
};

layout(push_constant, std430) uniform Args {
  Uints x;
  Uints out_sums;
} args;

shared uint eighths[32];

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint i = gl_GlobalInvocationID.x;
  uint v = args.x.v[i];
  for (uint d = 4; d > 0; d >>= 1) v += subgroupShuffleDown(v, d);
  if (t % 8 == 0) eighths[t / 8] = v;
  barrier();
  if (t % 32 == 0)
    args.out_sums.v[i / 32] = eighths[t / 8] + eighths[t / 8 + 1] +
                              eighths[t / 8 + 2] + eighths[t / 8 + 3];
}
