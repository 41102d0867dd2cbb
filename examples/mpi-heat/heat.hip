// One explicit step of the 2-D heat equation on a rank's rows, written
// against kiln's argument ABI: the parameters are the ordered list the
// program passes to kiln_launch. extern "C" keeps the name kiln looks up.
//   nx: columns; rows [row_first, row_first + row_count) are updated (local
//   row 0 is a halo); first_global_row: the global row of local row 1;
//   ny: rows of the whole grid.
extern "C" __global__ void heat_step(float *dst, const float *src,
                                     unsigned nx, unsigned row_first,
                                     unsigned row_count,
                                     unsigned first_global_row, unsigned ny,
                                     float alpha) {
  // Grid-stride in both dimensions, so any grid covers any block of rows.
  unsigned stride_x = gridDim.x * blockDim.x;
  unsigned stride_y = gridDim.y * blockDim.y;
  for (unsigned r = blockIdx.y * blockDim.y + threadIdx.y; r < row_count;
       r += stride_y) {
    unsigned row = row_first + r;
    unsigned global_row = first_global_row + row - 1u;
    for (unsigned col = blockIdx.x * blockDim.x + threadIdx.x; col < nx;
         col += stride_x) {
      unsigned i = row * nx + col;
      float c = src[i];
      // The grid's edges hold their values (Dirichlet boundary).
      if (global_row == 0u || global_row == ny - 1u || col == 0u ||
          col == nx - 1u) {
        dst[i] = c;
      } else {
        // The same grouping in every language, so that a point's value
        // does not depend on which rank computes it.
        float vertical = src[i - nx] + src[i + nx];
        float horizontal = src[i - 1u] + src[i + 1u];
        dst[i] = c + alpha * ((vertical + horizontal) - 4.0f * c);
      }
    }
  }
}
