#version 460
// mix64.cu in GLSL: splitmix64's finaliser on 64-bit words
// (GL_EXT_shader_explicit_arithmetic_types_int64).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x_id = 0) in;

layout(buffer_reference, std430, buffer_reference_align = 8) buffer Words {
  uint64_t v[];
};

layout(push_constant, std430) uniform Args {
  Words words;
  uint n;
} args;

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= args.n) return;
  uint64_t z = args.words.v[i] + 0x9e3779b97f4a7c15ul;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ul;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebul;
  args.words.v[i] = z ^ (z >> 31);
}
