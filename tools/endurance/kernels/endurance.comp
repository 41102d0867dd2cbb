#version 460
// kiln_endurance_add(u32 *data, u32 n, u32 value): kiln-endurance's kernel.
// data[i] += value for i < n, so that the program can check, after any
// number of launches, that every one of them ran.
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
  uint i = gl_GlobalInvocationID.x;
  if (i < args.n) args.data.v[i] += args.value;
}
