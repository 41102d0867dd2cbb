#version 460
// conf_fault_scatter(u32 *data, u64 offset, u32 value): see faults.cu.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(buffer_reference, std430, buffer_reference_align = 4) volatile buffer
    U32 {
  uint v;
};

layout(push_constant, std430) uniform Args {
  U32 data;
  uint64_t offset;
  uint value;
} args;

void main() {
  U32 target = U32(uint64_t(args.data) + args.offset);
  target.v = args.value;
}
