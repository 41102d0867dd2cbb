#version 460
// y = a * x, in kiln's argument ABI: the push-constant block lists the
// parameters in order, buffers as 64-bit device addresses.
#extension GL_EXT_buffer_reference : require

layout(local_size_x_id = 0) in;

layout(buffer_reference, std430) buffer F32 { float v[]; };
layout(push_constant, std430) uniform Args {
  F32 y;
  F32 x;
  float a;
  uint n;
} args;

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < args.n; i += stride) {
    args.y.v[i] = args.a * args.x.v[i];
  }
}
