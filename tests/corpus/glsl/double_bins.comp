#version 460
// double_bins.cu in GLSL: atomic adds of doubles into 8 bins
// (GL_EXT_shader_atomic_float's shaderBufferFloat64AtomicAdd).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_atomic_float : require

layout(local_size_x_id = 0) in;

layout(buffer_reference, std430, buffer_reference_align = 8) buffer Doubles {
  double v[];
};

layout(push_constant, std430) uniform Args {
  Doubles x;
  Doubles bins;
  uint n;
} args;

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i < args.n) atomicAdd(args.bins.v[i % 8], args.x.v[i]);
}
