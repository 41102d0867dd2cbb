// The write of two neighbouring sums of C, columns col and col + 1 of a
// row, shared by kiln_hgemm_f16_mma (hgemm.cu) and kiln_hgemm_f16_wgmma
// (hgemm_wgmma.cu), whose accumulators both hold pairs of columns: v0 and
// v1 are alpha times the sums; beta * C is added where beta != 0 (C is not
// read otherwise). One float2 where the pair lies inside C and C allows it
// (c_vec: 8-byte aligned rows), else each float with its bounds check.
#pragma once

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
