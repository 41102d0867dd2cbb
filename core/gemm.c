/* The GEMM helpers: kiln_sgemm_f32's argument checks and its launch. */
#include <string.h>

#include "core/internal.h"

/* kiln_sgemm_f32's shape, fixed by the kernels: 256 threads compute one
 * 128 x 128 tile of C. */
#define SGEMM_THREADS 256u
#define SGEMM_TILE 128u

kiln_status kiln_check_matrix(const kiln_buffer *b, size_t offset, size_t rows,
                              size_t cols, size_t ld, size_t elem_size,
                              kiln_context *ctx, const char *fn,
                              const char *what) {
  if (ld < cols)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: the row stride of %s is %zu elements, less "
                          "than its %zu columns",
                          fn, what, ld, cols);
  if (rows == 0 || cols == 0) /* nothing of it is read or written */
    return kiln_check_array(b, offset, 0, elem_size, ctx, fn, what);
  if ((rows - 1) > (SIZE_MAX - cols) / ld)
    return kiln_set_error(KILN_ERROR_OVERFLOW,
                          "%s: the extent of %s overflows size_t", fn, what);
  size_t elems = (rows - 1) * ld + cols;
  return kiln_check_array(b, offset, elems, elem_size, ctx, fn, what);
}

kiln_status kiln_sgemm_f32(kiln_stream *stream, size_t m, size_t n, size_t k,
                           float alpha, const kiln_buffer *a, size_t a_offset,
                           size_t lda, const kiln_buffer *b, size_t b_offset,
                           size_t ldb, float beta, kiln_buffer *c,
                           size_t c_offset, size_t ldc) {
  static const char fn[] = "kiln_sgemm_f32";
  kiln_stream *s;
  kiln_status st = kiln_check_helper(c, stream, 0, fn, "C", &s);
  if (st != KILN_OK) return st;
  kiln_context *ctx = c->base.context;
  const size_t dims[6] = {m, n, k, lda, ldb, ldc};
  for (int i = 0; i < 6; i++)
    if (dims[i] > UINT32_MAX)
      return kiln_set_error(
          KILN_ERROR_OUT_OF_RANGE,
          "%s: %s = %zu; the kernel takes at most 2^32 - 1", fn,
          (const char *[]){"m", "n", "k", "lda", "ldb", "ldc"}[i], dims[i]);
  if (k == 0 && m && n)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: k is 0; the product needs k >= 1", fn);
  if ((st = kiln_check_matrix(c, c_offset, m, n, ldc, sizeof(float), ctx, fn,
                              "C")) != KILN_OK ||
      (st = kiln_check_matrix(a, a_offset, m, k, lda, sizeof(float), ctx, fn,
                              "A")) != KILN_OK ||
      (st = kiln_check_matrix(b, b_offset, k, n, ldb, sizeof(float), ctx, fn,
                              "B")) != KILN_OK)
    return st;
  if (m == 0 || n == 0) return KILN_OK;
  kiln_kernel *kern;
  if ((st = kiln_builtin_kernel(ctx, "kiln_sgemm_f32", &kern)) != KILN_OK)
    return st;
  kiln_arg args[11] = {kiln_arg_buffer(c, c_offset),
                       kiln_arg_buffer(a, a_offset),
                       kiln_arg_buffer(b, b_offset),
                       kiln_arg_u32((uint32_t)m),
                       kiln_arg_u32((uint32_t)n),
                       kiln_arg_u32((uint32_t)k),
                       kiln_arg_u32((uint32_t)lda),
                       kiln_arg_u32((uint32_t)ldb),
                       kiln_arg_u32((uint32_t)ldc),
                       kiln_arg_f32(alpha),
                       kiln_arg_f32(beta)};
  kiln_launch_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.grid.x = (uint32_t)((n + SGEMM_TILE - 1) / SGEMM_TILE);
  cfg.grid.y = (uint32_t)((m + SGEMM_TILE - 1) / SGEMM_TILE);
  cfg.grid.z = 1;
  cfg.block.x = SGEMM_THREADS;
  cfg.block.y = cfg.block.z = 1;
  return kiln_launch_helper(s, kern, &cfg, args, 11);
}
