/* The GEMM helpers: kiln_sgemm_f32's argument checks and its launch. */
#include <string.h>

#include "core/internal.h"

/* kiln_sgemm_f32's kernels (docs/kernels.md), each with the tile of C one
 * block computes and the shared memory it declares. The large kernel is
 * 128 x 128 as far as the choice below counts; its launch is the
 * backend's (sgemm_shape: 128 x 256 blocks on CUDA, one an SM doing the
 * work of two 128 x 128 blocks, so the count means the same; 128 threads
 * on Vulkan), and so are the threads of the 64 x 64 kernels (128 on
 * Vulkan). The small kernel has SMALL_THREADS everywhere. */
#define SMALL_THREADS 256u

/* The launch shapes that each backend's source of these kernels fixes
 * (shaders/<name>/), tuned for its compiler: a block of `threads` computes
 * 128 x tile_n of C in kiln_sgemm_f32, one of `tiled_threads` 64 x 64 in
 * kiln_sgemm_f32_mid and kiln_sgemm_f32_split. They live here, beside the
 * choice they feed, rather than in the backend table: they describe
 * kiln's own kernels, not a driver. A backend not listed has the shape of
 * the portable source (shaders/hip/). */
typedef struct sgemm_shape {
  const char *backend;
  uint32_t tile_n, threads, tiled_threads;
} sgemm_shape;
static const sgemm_shape sgemm_shapes[] = {
    {"cuda", 256, 256, 256},
    {"vulkan", 128, 128, 128},
};
static const sgemm_shape sgemm_portable = {"hip", 128, 256, 256};

static const sgemm_shape *sgemm_shape_of(const kiln_context *ctx) {
  for (size_t i = 0; i < sizeof sgemm_shapes / sizeof sgemm_shapes[0]; i++)
    if (strcmp(sgemm_shapes[i].backend, ctx->ops->name) == 0)
      return &sgemm_shapes[i];
  return &sgemm_portable;
}
typedef struct sgemm_kernel {
  const char *name;
  uint32_t tile_m, tile_n;
  size_t shared_bytes;
} sgemm_kernel;
static const sgemm_kernel sgemm_large = {"kiln_sgemm_f32", 128, 128, 16384};
static const sgemm_kernel sgemm_mid = {"kiln_sgemm_f32_mid", 64, 64, 16896};
static const sgemm_kernel sgemm_small = {"kiln_sgemm_f32_small", 32, 64, 25600};
static const sgemm_kernel sgemm_split = {"kiln_sgemm_f32_split", 64, 64, 16896};

/* kiln_sgemm_f32_split splits k between up to SPLIT_MAX blocks per tile,
 * each with SPLIT_K_MIN rows of k at least (a multiple of SPLIT_K_STEP, a
 * whole number of the kernel's steps), and at most SPLIT_BLOCKS_PER_UNIT
 * blocks per SM in all, the blocks that one SM runs at once: a second wave
 * of blocks would cost more than the longer k of fewer blocks (the H100's
 * 4096 x 64 x 4096: 4 per tile, 31 TFLOP/s; 6, 23). Shorter k per block
 * loses to the 32 x 64 kernel unsplit (512 x 512 x 512: 17.6 against 19.7
 * on CUDA, 12.5 against 17.5 on Vulkan). Their sums meet in the stream's
 * workspace: the parts of that many blocks, then a ticket counter per
 * tile. */
#define SPLIT_MAX 16u
#define SPLIT_K_MIN 512u
#define SPLIT_K_STEP 64u
#define SPLIT_BLOCKS_PER_UNIT 2u

/* What to assume where the device hides its SM count (Vulkan without
 * VK_NV_shader_sm_builtins or VK_AMD_shader_core_properties2). */
#define SGEMM_DEFAULT_UNITS 64u

static size_t sgemm_tiles(const sgemm_kernel *kern, size_t m, size_t n) {
  return ((m + kern->tile_m - 1) / kern->tile_m) *
         ((n + kern->tile_n - 1) / kern->tile_n);
}

static size_t sgemm_units(const kiln_context *ctx) {
  return ctx->properties.compute_units ? ctx->properties.compute_units
                                       : SGEMM_DEFAULT_UNITS;
}

/* How many blocks kiln_sgemm_f32_split gives each of `tiles` tiles of a
 * product of depth k (1: do not split). */
static uint32_t sgemm_splits(size_t units, size_t tiles, size_t k) {
  size_t splits = SPLIT_BLOCKS_PER_UNIT * units / tiles;
  if (splits > k / SPLIT_K_MIN) splits = k / SPLIT_K_MIN;
  if (splits > SPLIT_MAX) splits = SPLIT_MAX;
  return splits < 2 ? 1 : (uint32_t)splits;
}

/* The largest tile that still gives every SM work: 128 x 128 once there
 * are 1.5 tiles per SM (below that the last wave leaves SMs idle for a
 * whole tile's time), else 64 x 64 while there is a tile per SM; below
 * that 64 x 64 tiles with k split between *splits blocks each where k is
 * long enough, else 32 x 64. The smaller tiles split k between the warps
 * of a block, so a small grid still keeps several warps per block busy
 * (H100 figures in docs/performance.md). A device with too little shared
 * memory for a variant gets the next larger one. */
static const sgemm_kernel *sgemm_pick(const kiln_context *ctx, size_t m,
                                      size_t n, size_t k, uint32_t *splits) {
  const size_t units = sgemm_units(ctx);
  const size_t shared = ctx->properties.max_shared_memory_per_block;
  if (2 * sgemm_tiles(&sgemm_large, m, n) >= 3 * units ||
      shared < sgemm_mid.shared_bytes)
    return &sgemm_large;
  if (sgemm_tiles(&sgemm_mid, m, n) >= units ||
      shared < sgemm_small.shared_bytes)
    return &sgemm_mid;
  *splits = sgemm_splits(units, sgemm_tiles(&sgemm_split, m, n), k);
  return *splits > 1 ? &sgemm_split : &sgemm_small;
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

/* The split kernel's extra arguments: its workspace (parts, then a
 * counter per tile), and the rows of k each block takes. */
typedef struct gemm_split {
  kiln_buffer *workspace;
  size_t tickets_offset;
  uint32_t k_split, splits;
} gemm_split;

static kiln_status gemm_launch(kiln_stream *s, kiln_kernel *kernel,
                               const kiln_gemm *g, uint32_t tile_m,
                               uint32_t tile_n, uint32_t threads,
                               size_t shared_bytes, size_t max_blocks,
                               const gemm_split *split) {
  kiln_arg args[14] = {kiln_arg_buffer(g->c, g->c_offset),
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
  if (max_blocks) {
    size_t tiles = (size_t)cfg.grid.x * cfg.grid.y;
    if (tiles > max_blocks) tiles = max_blocks;
    cfg.grid.x = (uint32_t)(tiles < INT32_MAX ? tiles : INT32_MAX);
    cfg.grid.y = 1;
  }
  cfg.block.x = threads;
  cfg.block.y = cfg.block.z = 1;
  cfg.shared_memory_bytes = shared_bytes;
  size_t count = 11;
  if (split) {
    args[count++] = kiln_arg_buffer(split->workspace, 0);
    args[count++] = kiln_arg_buffer(split->workspace, split->tickets_offset);
    args[count++] = kiln_arg_u32(split->k_split);
    cfg.grid.z = split->splits;
  }
  return kiln_launch_helper(s, kernel, &cfg, args, count);
}

kiln_status kiln_gemm_launch(kiln_stream *s, kiln_kernel *kernel,
                             const kiln_gemm *g, uint32_t tile_m,
                             uint32_t tile_n, uint32_t threads,
                             size_t shared_bytes, size_t max_blocks) {
  return gemm_launch(s, kernel, g, tile_m, tile_n, threads, shared_bytes,
                     max_blocks, NULL);
}

/* The threads of a block of `kern`: the backend's for the large kernel and
 * the 64 x 64 ones (mid, split), SMALL_THREADS for the small one. */
static uint32_t sgemm_threads(const kiln_context *ctx,
                              const sgemm_kernel *kern) {
  if (kern == &sgemm_large) return sgemm_shape_of(ctx)->threads;
  if (kern == &sgemm_small) return SMALL_THREADS;
  return sgemm_shape_of(ctx)->tiled_threads;
}

/* kiln_sgemm_f32 through the split kernel, `splits` blocks per tile. */
static kiln_status sgemm_split_launch(kiln_stream *s, const kiln_gemm *g,
                                      uint32_t splits) {
  kiln_context *ctx = s->base.context;
  const size_t units = sgemm_units(ctx);
  const size_t tile_bytes =
      (size_t)sgemm_split.tile_m * sgemm_split.tile_n * sizeof(float);
  /* A problem that splits has fewer tiles than SMs (sgemm_pick). */
  const size_t tickets_offset = SPLIT_BLOCKS_PER_UNIT * units * tile_bytes;
  const size_t ticket_bytes = units * sizeof(uint32_t);
  kiln_kernel *kern;
  gemm_split split = {.tickets_offset = tickets_offset};
  kiln_status st = kiln_builtin_kernel(ctx, sgemm_split.name, &kern);
  if (st != KILN_OK || (st = kiln_helper_workspace(
                            s, KILN_SCRATCH_GEMM, tickets_offset + ticket_bytes,
                            ticket_bytes, &split.workspace)) != KILN_OK)
    return st;
  /* Whole steps of the kernel per block, the last block taking the rest. */
  const size_t per = (g->k + splits - 1) / splits;
  split.k_split =
      (uint32_t)((per + SPLIT_K_STEP - 1) / SPLIT_K_STEP * SPLIT_K_STEP);
  split.splits = (uint32_t)((g->k + split.k_split - 1) / split.k_split);
  return gemm_launch(s, kern, g, sgemm_split.tile_m, sgemm_split.tile_n,
                     sgemm_threads(ctx, &sgemm_split), 0, 0, &split);
}

kiln_status kiln_sgemm_f32(kiln_stream *stream, size_t m, size_t n, size_t k,
                           float alpha, const kiln_buffer *a, size_t a_offset,
                           size_t lda, const kiln_buffer *b, size_t b_offset,
                           size_t ldb, float beta, kiln_buffer *c,
                           size_t c_offset, size_t ldc) {
  const kiln_gemm g = kiln_gemm_args(m, n, k, alpha, a, a_offset, lda, b,
                                     b_offset, ldb, beta, c, c_offset, ldc);
  kiln_stream *s;
  kiln_status st =
      kiln_gemm_check(&g, sizeof(float), stream, "kiln_sgemm_f32", &s);
  if (st != KILN_OK || m == 0 || n == 0) return st;
  kiln_context *ctx = c->base.context;
  uint32_t splits = 1;
  const sgemm_kernel *pick = sgemm_pick(ctx, m, n, k, &splits);
  if (pick == &sgemm_split) return sgemm_split_launch(s, &g, splits);
  const bool large = pick == &sgemm_large;
  const uint32_t tile_n = large ? sgemm_shape_of(ctx)->tile_n : pick->tile_n;
  kiln_kernel *kern;
  if ((st = kiln_builtin_kernel(ctx, pick->name, &kern)) != KILN_OK) return st;
  return kiln_gemm_launch(s, kern, &g, pick->tile_m, tile_n,
                          sgemm_threads(ctx, pick), 0, 0);
}
