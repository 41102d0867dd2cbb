// What kiln_hgemm_f16_mma (hgemm.cu) and kiln_hgemm_f16_wgmma
// (hgemm_wgmma.cu) share: the order in which blocks take their tiles, and
// the write of a pair of sums.
#pragma once

// The first row and column of tile `id` of C's tiles_x x tiles_y tiles
// of tile_m x tile_n. Tiles are taken in order of id; numbered so that
// consecutive ids walk down a band of 8 tile rows before moving right, the
// band's tiles of A and the shared tiles of B are read from L2 while still
// there.
__device__ static __forceinline__ void kiln_hgemm_tile_of(
    unsigned int id, unsigned int tiles_x, unsigned int tiles_y,
    unsigned int tile_m, unsigned int tile_n, unsigned int *row0,
    unsigned int *col0) {
  const unsigned int band = 8u;
  const unsigned int first = id / (band * tiles_x) * band;
  const unsigned int rows_here = min(tiles_y - first, band);
  const unsigned int in_band = id % (band * tiles_x);
  *row0 = (first + in_band % rows_here) * tile_m;
  *col0 = in_band / rows_here * tile_n;
}

// The tile this block computes, where the grid has one block per tile
// (x over columns): blocks run in launch order, x fastest.
__device__ static __forceinline__ void kiln_hgemm_tile(unsigned int tile_m,
                                                       unsigned int tile_n,
                                                       unsigned int *row0,
                                                       unsigned int *col0) {
  kiln_hgemm_tile_of(blockIdx.y * gridDim.x + blockIdx.x, gridDim.x,
                     gridDim.y, tile_m, tile_n, row0, col0);
}

// The write of two neighbouring sums of C, columns col and col + 1 of a
// row (both kernels' accumulators hold pairs of columns): v0 and v1 are
// alpha times the sums; beta * C is added where beta != 0 (C is not read
// otherwise). One float2 where the pair lies inside C and C allows it
// (c_vec: 8-byte aligned rows), else each float with its bounds check.
__device__ static __forceinline__ void kiln_hgemm_store_pair(
    float *row, unsigned int col, unsigned int n, float v0, float v1,
    float beta, bool c_vec) {
  if (c_vec && col + 2u <= n) {
    float2 *p = (float2 *)(row + col);
    if (beta != 0.0f) {
      const float2 old = *p;
      v0 = fmaf(beta, old.x, v0);
      v1 = fmaf(beta, old.y, v1);
    }
    *p = make_float2(v0, v1);
  } else {
    if (col < n) row[col] = beta != 0.0f ? fmaf(beta, row[col], v0) : v0;
    if (col + 1u < n)
      row[col + 1u] = beta != 0.0f ? fmaf(beta, row[col + 1u], v1) : v1;
  }
}
