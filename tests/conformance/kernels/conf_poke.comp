#version 460
// conf_poke(u32 *words, i32 first, u32 count, u32 value): see conformance.cu.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 {
  uint v;
};

layout(push_constant, std430) uniform Args {
  U32 words;
  int first;
  uint count;
  uint value;
} args;

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= args.count) return;
  // Signed, so that a negative `first` reaches below the buffer's start.
  int64_t word = int64_t(args.first) + int64_t(i);
  U32 p = U32(uint64_t(args.words) + uint64_t(word * 4l));
  p.v = args.value + i;
}
