#version 460
// y = a * x + y, written against kiln's one argument ABI: the push-constant
// block lists the kernel's parameters in order, buffers as 64-bit device
// addresses (buffer_reference), scalars with their natural alignment.
#extension GL_EXT_buffer_reference : require

// The block size is chosen at launch: kiln specializes constant 0 (and 1, 2
// for kernels that declare local_size_y_id / local_size_z_id).
layout(local_size_x_id = 0) in;

layout(buffer_reference, std430) buffer F32 { float v[]; };
layout(push_constant, std430) uniform Args {
  F32 y;
  F32 x;
  float a;
  uint n;
} args;

void main() {
  // Grid-stride, so any grid covers any n (Vulkan grids are often limited
  // to 65535 workgroups).
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < args.n; i += stride) {
    args.y.v[i] = args.a * args.x.v[i] + args.y.v[i];
  }
}
