#version 460
// fp16_dot.cu in GLSL: the dot product of two arrays of half pairs, summed
// in floats through shared memory, each workgroup's sum added to *out
// with a float atomic (GL_EXT_shader_atomic_float).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_atomic_float : require

layout(local_size_x_id = 0) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Half2s {
  f16vec2 v[];
};
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats {
  float v[];
};

layout(push_constant, std430) uniform Args {
  Half2s x;
  Half2s y;
  Floats out_sum;
  uint pairs;
} args;

shared float sums[256];

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint i = gl_GlobalInvocationID.x;
  float v = 0.0;
  if (i < args.pairs) {
    const vec2 a = vec2(args.x.v[i]), b = vec2(args.y.v[i]);
    v = a.x * b.x + a.y * b.y;
  }
  sums[t] = v;
  barrier();
  for (uint half_size = gl_WorkGroupSize.x / 2; half_size > 0; half_size /= 2) {
    if (t < half_size) sums[t] += sums[t + half_size];
    barrier();
  }
  if (t == 0) atomicAdd(args.out_sum.v[0], sums[0]);
}
