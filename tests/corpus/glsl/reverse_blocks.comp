#version 460
// reverse_blocks.cu in GLSL: each workgroup reverses its slice through
// shared memory sized by the launch (constant 3: shared_memory_bytes).
#extension GL_EXT_buffer_reference : require

layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint SHARED_BYTES = 4;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Uints {
  uint v[];
};

layout(push_constant, std430) uniform Args {
  Uints in_words;
  Uints out_words;
} args;

shared uint slice[SHARED_BYTES / 4];

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint base = gl_WorkGroupID.x * gl_WorkGroupSize.x;
  slice[t] = args.in_words.v[base + t];
  barrier();
  args.out_words.v[base + t] = slice[gl_WorkGroupSize.x - 1 - t];
}
