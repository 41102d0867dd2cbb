#version 460
// conf_fault_spin(const u32 *flag, u64 cycles): see faults.cu. Vulkan gives
// kernels no clock unless the device enables one, so this spins until *flag
// is non-zero or it has turned cycles / 1024 times: one turn, an atomic
// read of memory, takes about 1 us on a GPU, so that the kernel outlasts
// every wait of the test by seconds (as on CUDA) yet ends by itself, and
// the process can exit cleanly. llvmpipe (lavapipe) ends an invocation's
// loops after 65535 turns in all (LP_MAX_TGSI_LOOP_ITERATIONS), so there
// the test launches a grid that takes hours instead. The flag is read with
// an atomic, a side effect, on every turn: compilers may assume that a loop
// without one ends, and drop it (Mesa's does, volatile or not).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Flag {
  uint v;
};

layout(push_constant, std430) uniform Args {
  Flag flag;
  uint64_t cycles;
} args;

void main() {
  for (uint64_t turn = 0; turn < (args.cycles >> 10) &&
                          atomicAdd(args.flag.v, 0u) == 0u;
       turn++) {
  }
}
