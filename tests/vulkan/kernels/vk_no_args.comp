#version 460
// A kernel with no arguments at all: no push-constant block.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

shared uint scratch[4];

void main() {
  if (gl_LocalInvocationIndex < 4u) scratch[gl_LocalInvocationIndex] = 0u;
}
