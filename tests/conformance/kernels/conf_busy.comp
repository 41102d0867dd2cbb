#version 460
// conf_busy(u32 *data, u32 n, u32 rounds): see conformance.cu.
#extension GL_EXT_buffer_reference : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 {
  uint v[];
};

layout(push_constant, std430) uniform Args {
  U32 data;
  uint n;
  uint rounds;
} args;

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < args.n; i += stride) {
    uint v = args.data.v[i];
    for (uint r = 0u; r < args.rounds; r++) v = v * 1664525u + 1013904223u;
    args.data.v[i] = v;
  }
}
