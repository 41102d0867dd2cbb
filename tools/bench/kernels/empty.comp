#version 460
// kiln_bench_empty(float *dst, u32 n): kiln-bench's launch-cost kernel.
// It writes dst[i] = 0 for i < n once, as a check that it runs; every timed
// launch passes n = 0, so it does no memory work, yet has a realistic
// argument list (a buffer and a scalar) for the launch path to pack.
#extension GL_EXT_buffer_reference : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(buffer_reference, std430) buffer F32 {
  float v[];
};

layout(push_constant, std430) uniform Args {
  F32 dst;
  uint n;
} args;

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < args.n) args.dst.v[i] = 0.0;
}
