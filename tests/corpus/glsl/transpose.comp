#version 460
// transpose.cu in GLSL: 32 x 32 tiles through shared memory, padded by a
// column, workgroups of 32 x 8.
#extension GL_EXT_buffer_reference : require

#define TILE 32
#define ROWS 8

layout(local_size_x_id = 0, local_size_y_id = 1) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats {
  float v[];
};

layout(push_constant, std430) uniform Args {
  Floats out_m;
  Floats in_m;
  uint width;
  uint height;
} args;

shared float tile[TILE][TILE + 1];

void main() {
  const uvec2 t = gl_LocalInvocationID.xy;
  uint x = gl_WorkGroupID.x * TILE + t.x;
  uint y = gl_WorkGroupID.y * TILE + t.y;
  for (uint j = 0; j < TILE; j += ROWS)
    if (x < args.width && y + j < args.height)
      tile[t.y + j][t.x] = args.in_m.v[(y + j) * args.width + x];
  barrier();
  x = gl_WorkGroupID.y * TILE + t.x;
  y = gl_WorkGroupID.x * TILE + t.y;
  for (uint j = 0; j < TILE; j += ROWS)
    if (x < args.height && y + j < args.width)
      args.out_m.v[(y + j) * args.height + x] = tile[t.x][t.y + j];
}
