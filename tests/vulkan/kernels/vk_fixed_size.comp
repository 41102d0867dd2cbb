#version 460
// A block size fixed in the shader (no local_size_x_id), and arguments used
// only inside a helper function: reflection must follow the call.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x = 64, local_size_y = 2) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 {
  uint v;
};

layout(push_constant, std430) uniform Args {
  U32 out_words;
  uint n;
} args;

void store(uint i) {
  if (i < args.n) U32(uint64_t(args.out_words) + uint64_t(i) * 4ul).v = i;
}

void main() {
  store(gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u +
        gl_GlobalInvocationID.x);
}
