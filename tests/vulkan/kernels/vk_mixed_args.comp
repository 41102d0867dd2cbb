#version 460
// Every scalar width of the argument ABI, with the padding natural
// alignment puts between them: the block spans 40 bytes.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 {
  uint v[6];
};

layout(push_constant, std430) uniform Args {
  U32 out_words; // 0
  float f;       // 8
  int64_t i64;   // 16
  uint u;        // 24
  uint64_t u64;  // 32
} args;

void main() {
  if (gl_GlobalInvocationID.x != 0u) return;
  args.out_words.v[0] = floatBitsToUint(args.f);
  args.out_words.v[1] = uint(uint64_t(args.i64) & 0xfffffffful);
  args.out_words.v[2] = uint(uint64_t(args.i64) >> 32);
  args.out_words.v[3] = args.u;
  args.out_words.v[4] = uint(args.u64 & 0xfffffffful);
  args.out_words.v[5] = uint(args.u64 >> 32);
}
