#version 460
// conf_scalars(u64 *out, i32 a, const u32 *src, u32 b, f32 c, i64 d, u64 e,
//              f64 f, u32 *dst): see conformance.cu.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(buffer_reference, std430, buffer_reference_align = 8) buffer U64 {
  uint64_t v[];
};
layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 {
  uint v[];
};

layout(push_constant, std430) uniform Args {
  U64 out_;
  int a;
  U32 src;
  uint b;
  float c;
  int64_t d;
  uint64_t e;
  double f;
  U32 dst;
} args;

uint64_t bits(double x) {
  uvec2 w = unpackDouble2x32(x);
  return uint64_t(w.x) | (uint64_t(w.y) << 32);
}

void main() {
  if (gl_GlobalInvocationID != uvec3(0)) return;
  args.out_.v[0] = uint64_t(int64_t(args.a));
  args.out_.v[1] = uint64_t(args.b);
  args.out_.v[2] = uint64_t(floatBitsToUint(args.c));
  args.out_.v[3] = uint64_t(args.d);
  args.out_.v[4] = args.e;
  args.out_.v[5] = bits(args.f);
  args.out_.v[6] = uint64_t(args.d) * 3ul + args.e;
  args.out_.v[7] = bits(args.f * 2.0lf + double(args.c));
  for (int i = 0; i < 4; i++) args.dst.v[i] = args.src.v[i] + args.b;
}
