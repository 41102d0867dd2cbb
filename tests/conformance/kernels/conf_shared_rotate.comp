#version 460
// conf_shared_rotate(u32 *out, const u32 *in, u32 words): see
// conformance.cu. The dynamic shared memory is sized by constant 3, which
// kiln sets to the launch's shared_memory_bytes.
#extension GL_EXT_buffer_reference : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(constant_id = 3) const uint SHARED_BYTES = 4;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 {
  uint v[];
};

layout(push_constant, std430) uniform Args {
  U32 out_;
  U32 in_;
  uint words;
} args;

shared uint s[SHARED_BYTES / 4];

void main() {
  uint base = gl_WorkGroupID.x * args.words;
  for (uint i = gl_LocalInvocationID.x; i < args.words; i += gl_WorkGroupSize.x)
    s[i] = args.in_.v[base + i];
  barrier();
  for (uint i = gl_LocalInvocationID.x; i < args.words; i += gl_WorkGroupSize.x)
    args.out_.v[base + i] = s[(i + 1u) % args.words];
}
