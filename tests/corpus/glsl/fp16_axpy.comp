#version 460
// fp16_axpy.cu in GLSL: y = a x + y on pairs of halves, with half
// arithmetic (GL_EXT_shader_explicit_arithmetic_types_float16) and a half
// argument in the push constants (16-bit storage).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require

layout(local_size_x_id = 0) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Half2s {
  f16vec2 v[];
};

layout(push_constant, std430) uniform Args {
  Half2s y;
  Half2s x;
  float16_t a;
  uint pairs;
} args;

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i < args.pairs)
    args.y.v[i] = fma(f16vec2(args.a), args.x.v[i], args.y.v[i]);
}
