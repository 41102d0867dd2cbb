/* kiln_hgemm_f16: half-precision inputs, float32 sums, on the matrix units
 * where the device has them. Which kernel runs is picked once per context,
 * from the kernels the backend built and what the device offers. */
#include "core/internal.h"

/* The kernels, best first, with the launch shape each is written for
 * (docs/kernels.md, shaders/<backend>/hgemm.* and kiln_hgemm_f16*.comp). */
typedef struct hgemm_kernel {
  const char *name;
  bool matrix_module; /* in the backend's builtin_matrix_images */
  uint32_t tile_m, tile_n;
  uint32_t threads;    /* per block */
  size_t shared_bytes; /* dynamic shared memory it is launched with */
  uint32_t subgroup;   /* the subgroup size it needs, or 0 for any */
  /* Needs A and B 16-byte aligned, k, n, lda, ldb multiples of 8, and m,
   * n, k below 2^31 (the class of call kiln_hgemm_f16 tests). */
  bool aligned;
  /* Persistent: launched as one block an SM (at most one per tile), each
   * taking tiles in turn; else one block per tile. */
  bool persistent;
} hgemm_kernel;

static const hgemm_kernel hgemm_kernels[] = {
    /* CUDA, Hopper (sm_90a): wgmma fed by the TMA, four stages of 64 of k. */
    {"kiln_hgemm_f16_wgmma", true, 128, 256, 384, 197696, 0, true, true},
    /* CUDA, sm_75 and newer: mma.sync with three stages of 64 of k (the
     * H100, A100), or of 32 where a block gets less shared memory. */
    {"kiln_hgemm_f16_mma", false, 128, 256, 256, 156672, 0, false, false},
    {"kiln_hgemm_f16_mma_k32", false, 128, 256, 256, 81408, 0, false, false},
    /* Vulkan: GL_NV_cooperative_matrix, written for 32-wide subgroups. */
    {"kiln_hgemm_f16_coop", true, 128, 128, 256, 0, 32, false, false},
    /* Every backend: the ordinary cores. */
    {"kiln_hgemm_f16", false, 64, 64, 256, 0, 0, false, false},
};
#define HGEMM_KERNELS (sizeof hgemm_kernels / sizeof hgemm_kernels[0])

/* The first kernel of hgemm_kernels that this backend built and this
 * device can run, for calls of class `aligned` (1: A and B come in whole
 * 16-byte pieces; 0: any); its index + 1 is published in
 * ctx->hgemm_variant. */
static kiln_status pick(kiln_context *ctx, int aligned, int *out_variant) {
  const kiln_device_properties *p = &ctx->properties;
  kiln_status st = KILN_ERROR_NOT_FOUND;
  bool matrix_refused = false;
  pthread_mutex_lock(&ctx->lock);
  int variant =
      atomic_load_explicit(&ctx->hgemm_variant[aligned], memory_order_acquire);
  for (size_t i = 0; variant == 0 && i < HGEMM_KERNELS; i++) {
    const hgemm_kernel *h = &hgemm_kernels[i];
    if (h->shared_bytes > p->max_shared_memory_per_block_optin ||
        (h->subgroup && p->subgroup_size != h->subgroup) ||
        (h->aligned && !aligned) || (h->matrix_module && matrix_refused))
      continue;
    kiln_kernel *k = NULL;
    if (h->matrix_module) {
      /* A device that refuses the matrix module (no cooperative matrices,
       * or a CUDA GPU other than Hopper) gets the next kernel. */
      st = kiln_builtin_matrix_kernel(ctx, h->name, &k);
      matrix_refused = !ctx->builtin_matrix_module;
    } else {
      st = kiln_builtin_kernel(ctx, h->name, &k);
      if (st == KILN_ERROR_UNSUPPORTED) break; /* no kernels at all */
    }
    if (st == KILN_OK) {
      ctx->hgemm_kernel[aligned] = k;
      variant = (int)i + 1;
      atomic_store_explicit(&ctx->hgemm_variant[aligned], variant,
                            memory_order_release);
    }
  }
  pthread_mutex_unlock(&ctx->lock);
  if (variant == 0)
    return st == KILN_ERROR_UNSUPPORTED
               ? st
               : kiln_set_error(KILN_ERROR_UNSUPPORTED,
                                "kiln_hgemm_f16: this build has no "
                                "half-precision GEMM kernel for the %s "
                                "backend",
                                ctx->ops->name);
  *out_variant = variant;
  return KILN_OK;
}

kiln_status kiln_hgemm_f16(kiln_stream *stream, size_t m, size_t n, size_t k,
                           float alpha, const kiln_buffer *a, size_t a_offset,
                           size_t lda, const kiln_buffer *b, size_t b_offset,
                           size_t ldb, float beta, kiln_buffer *c,
                           size_t c_offset, size_t ldc) {
  const kiln_gemm g = kiln_gemm_args(m, n, k, alpha, a, a_offset, lda, b,
                                     b_offset, ldb, beta, c, c_offset, ldc);
  kiln_stream *s;
  kiln_status st = kiln_gemm_check(&g, 2, stream, "kiln_hgemm_f16", &s);
  if (st != KILN_OK || m == 0 || n == 0) return st;
  kiln_context *ctx = c->base.context;
  /* A buffer made from a native pointer may start anywhere, so the
   * addresses themselves are tested. The matrix kernels' tile coordinates
   * are signed 32-bit (the TMA's): larger matrices take another kernel. */
  const uint64_t a_at = a->device_address + a->guard + a_offset;
  const uint64_t b_at = b->device_address + b->guard + b_offset;
  const int aligned = a_at % 16 == 0 && b_at % 16 == 0 && lda % 8 == 0 &&
                      ldb % 8 == 0 && k % 8 == 0 && n % 8 == 0 &&
                      m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX;
  int variant =
      atomic_load_explicit(&ctx->hgemm_variant[aligned], memory_order_acquire);
  if (variant == 0 && (st = pick(ctx, aligned, &variant)) != KILN_OK) return st;
  const hgemm_kernel *h = &hgemm_kernels[variant - 1];
  /* A device that hides its SM count (0) gets a block per tile, in a row. */
  const size_t units = ctx->properties.compute_units;
  const size_t blocks = !h->persistent ? 0 : units ? units : SIZE_MAX;
  return kiln_gemm_launch(s, ctx->hgemm_kernel[aligned], &g, h->tile_m,
                          h->tile_n, h->threads, h->shared_bytes, blocks);
}
