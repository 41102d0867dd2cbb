#version 460
// One explicit step of the 2-D heat equation on a rank's rows, written
// against kiln's argument ABI: the push-constant block lists the kernel's
// parameters in order, buffers as 64-bit device addresses.
#extension GL_EXT_buffer_reference : require

// The block shape is chosen at launch: kiln specializes constants 0 and 1.
layout(local_size_x_id = 0, local_size_y_id = 1) in;

layout(buffer_reference, std430) buffer F32 { float v[]; };
layout(push_constant, std430) uniform Args {
  F32 dst;
  F32 src;
  uint nx;               // columns
  uint row_first;        // first local row to update (row 0 is a halo)
  uint row_count;
  uint first_global_row; // the global row of local row 1
  uint ny;               // rows of the whole grid
  float alpha;
} args;

void main() {
  // Grid-stride in both dimensions, so any grid covers any block of rows.
  uint stride_x = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  uint stride_y = gl_NumWorkGroups.y * gl_WorkGroupSize.y;
  for (uint r = gl_GlobalInvocationID.y; r < args.row_count; r += stride_y) {
    uint row = args.row_first + r;
    uint global_row = args.first_global_row + row - 1u;
    for (uint col = gl_GlobalInvocationID.x; col < args.nx; col += stride_x) {
      uint i = row * args.nx + col;
      float c = args.src.v[i];
      // The grid's edges hold their values (Dirichlet boundary).
      if (global_row == 0u || global_row == args.ny - 1u || col == 0u ||
          col == args.nx - 1u) {
        args.dst.v[i] = c;
      } else {
        // The same grouping in every language, so that a point's value
        // does not depend on which rank computes it.
        float vertical = args.src.v[i - args.nx] + args.src.v[i + args.nx];
        float horizontal = args.src.v[i - 1u] + args.src.v[i + 1u];
        args.dst.v[i] = c + args.alpha * ((vertical + horizontal) - 4.0 * c);
      }
    }
  }
}
