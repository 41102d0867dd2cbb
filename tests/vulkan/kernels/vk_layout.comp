#version 460
// A push-constant block of matrices, arrays and vectors, for reflection
// only: mat2x3 at 0 (2 columns of stride 16), float[3] at 32 (stride 4),
// vec3 at 48: the block spans 60 bytes. Dynamic shared memory through
// constant_id 3.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(constant_id = 3) const uint SHARED_BYTES = 4;
shared float scratch[SHARED_BYTES / 4];

layout(push_constant, std430) uniform Args {
  mat2x3 m;
  float arr[3];
  vec3 v;
} args;

void main() {
  scratch[0] = args.m[1][2] + args.arr[2] + args.v.z;
}
