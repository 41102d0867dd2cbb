/* The GEMM helpers: kiln_sgemm_f32's argument checks and its launch. */
#include <string.h>

#include "core/internal.h"

/* kiln_sgemm_f32's kernels (docs/kernels.md), each with the tile of C one
 * block of 256 threads computes and the shared memory it declares. */
#define SGEMM_THREADS 256u
typedef struct sgemm_kernel {
  const char *name;
  uint32_t tile_m, tile_n;
  size_t shared_bytes;
} sgemm_kernel;
static const sgemm_kernel sgemm_large = {"kiln_sgemm_f32", 128, 128, 16384};
static const sgemm_kernel sgemm_mid = {"kiln_sgemm_f32_mid", 64, 64, 16896};
static const sgemm_kernel sgemm_small = {"kiln_sgemm_f32_small", 32, 64, 25600};

/* What to assume where the device hides its SM count (Vulkan without
 * VK_NV_shader_sm_builtins or VK_AMD_shader_core_properties2). */
#define SGEMM_DEFAULT_UNITS 64u

static size_t sgemm_tiles(const sgemm_kernel *kern, size_t m, size_t n) {
  return ((m + kern->tile_m - 1) / kern->tile_m) *
         ((n + kern->tile_n - 1) / kern->tile_n);
}

/* The largest tile that still gives every SM work: 128 x 128 once there
 * are 1.5 tiles per SM (below that the last wave leaves SMs idle for a
 * whole tile's time), else 64 x 64 while there is a tile per SM, else
 * 32 x 64. The smaller tiles split k between the warps of a block, so a
 * small grid still has 8 warps per block (H100 figures in
 * docs/performance.md). A device with too little shared memory for a
 * variant gets the next larger one. */
static const sgemm_kernel *sgemm_pick(const kiln_context *ctx, size_t m,
                                      size_t n) {
  const size_t units = ctx->properties.compute_units
                           ? ctx->properties.compute_units
                           : SGEMM_DEFAULT_UNITS;
  const size_t shared = ctx->properties.max_shared_memory_per_block;
  if (2 * sgemm_tiles(&sgemm_large, m, n) >= 3 * units ||
      shared < sgemm_mid.shared_bytes)
    return &sgemm_large;
  if (sgemm_tiles(&sgemm_mid, m, n) >= units ||
      shared < sgemm_small.shared_bytes)
    return &sgemm_mid;
  return &sgemm_small;
}

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

kiln_status kiln_gemm_check(const kiln_gemm *g, size_t ab_size,
                            kiln_stream *stream, const char *fn,
                            kiln_stream **out_stream) {
  kiln_status st = kiln_check_helper(g->c, stream, 0, fn, "C", out_stream);
  if (st != KILN_OK) return st;
  kiln_context *ctx = g->c->base.context;
  const size_t dims[6] = {g->m, g->n, g->k, g->lda, g->ldb, g->ldc};
  static const char *const names[6] = {"m", "n", "k", "lda", "ldb", "ldc"};
  for (int i = 0; i < 6; i++)
    if (dims[i] > UINT32_MAX)
      return kiln_set_error(KILN_ERROR_OUT_OF_RANGE,
                            "%s: %s = %zu; the kernel takes at most 2^32 - 1",
                            fn, names[i], dims[i]);
  if (g->k == 0 && g->m && g->n)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: k is 0; the product needs k >= 1", fn);
  if ((st = kiln_check_matrix(g->c, g->c_offset, g->m, g->n, g->ldc,
                              sizeof(float), ctx, fn, "C")) != KILN_OK ||
      (st = kiln_check_matrix(g->a, g->a_offset, g->m, g->k, g->lda, ab_size,
                              ctx, fn, "A")) != KILN_OK)
    return st;
  return kiln_check_matrix(g->b, g->b_offset, g->k, g->n, g->ldb, ab_size, ctx,
                           fn, "B");
}

kiln_status kiln_gemm_launch(kiln_stream *s, kiln_kernel *kernel,
                             const kiln_gemm *g, uint32_t tile_m,
                             uint32_t tile_n, size_t shared_bytes) {
  kiln_arg args[11] = {kiln_arg_buffer(g->c, g->c_offset),
                       kiln_arg_buffer(g->a, g->a_offset),
                       kiln_arg_buffer(g->b, g->b_offset),
                       kiln_arg_u32((uint32_t)g->m),
                       kiln_arg_u32((uint32_t)g->n),
                       kiln_arg_u32((uint32_t)g->k),
                       kiln_arg_u32((uint32_t)g->lda),
                       kiln_arg_u32((uint32_t)g->ldb),
                       kiln_arg_u32((uint32_t)g->ldc),
                       kiln_arg_f32(g->alpha),
                       kiln_arg_f32(g->beta)};
  kiln_launch_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.grid.x = (uint32_t)((g->n + tile_n - 1) / tile_n);
  cfg.grid.y = (uint32_t)((g->m + tile_m - 1) / tile_m);
  cfg.grid.z = 1;
  cfg.block.x = SGEMM_THREADS;
  cfg.block.y = cfg.block.z = 1;
  cfg.shared_memory_bytes = shared_bytes;
  return kiln_launch_helper(s, kernel, &cfg, args, 11);
}

kiln_status kiln_sgemm_f32(kiln_stream *stream, size_t m, size_t n, size_t k,
                           float alpha, const kiln_buffer *a, size_t a_offset,
                           size_t lda, const kiln_buffer *b, size_t b_offset,
                           size_t ldb, float beta, kiln_buffer *c,
                           size_t c_offset, size_t ldc) {
  const kiln_gemm g = {.m = m,
                       .n = n,
                       .k = k,
                       .alpha = alpha,
                       .beta = beta,
                       .a = a,
                       .a_offset = a_offset,
                       .lda = lda,
                       .b = b,
                       .b_offset = b_offset,
                       .ldb = ldb,
                       .c = c,
                       .c_offset = c_offset,
                       .ldc = ldc};
  kiln_stream *s;
  kiln_status st =
      kiln_gemm_check(&g, sizeof(float), stream, "kiln_sgemm_f32", &s);
  if (st != KILN_OK || m == 0 || n == 0) return st;
  kiln_context *ctx = c->base.context;
  const sgemm_kernel *pick = sgemm_pick(ctx, m, n);
  kiln_kernel *kern;
  if ((st = kiln_builtin_kernel(ctx, pick->name, &kern)) != KILN_OK) return st;
  return kiln_gemm_launch(s, kern, &g, pick->tile_m, pick->tile_n, 0);
}
