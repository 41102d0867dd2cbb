#version 460
// conf_add_u32(u32 *data, u32 n, u32 value): see conformance.cu.
#extension GL_EXT_buffer_reference : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 {
  uint v[];
};

layout(push_constant, std430) uniform Args {
  U32 data;
  uint n;
  uint value;
} args;

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < args.n; i += stride)
    args.data.v[i] += args.value;
}
