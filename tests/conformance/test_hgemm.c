/* kiln_hgemm_f16: half-precision A and B, float32 C. Exactly, on halves
 * whose products and sums are all exact in float32 (multiples of 1/8 below
 * 2 in magnitude), and within float32 rounding of a double reference on
 * random halves; through the API (which picks the device's best kernel:
 * mma.sync on CUDA, cooperative matrices on NVIDIA's Vulkan) and with each
 * kernel of the built-in module launched directly in its own shape. */
#include <math.h>
#include <stdio.h>

#include "conformance.h"

/* The binary16 nearest to v for |v| < 65504 (round to nearest even). */
static uint16_t half_of(float v) {
  uint32_t x;
  memcpy(&x, &v, 4);
  const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  const int exp = (int)((x >> 23) & 0xffu) - 127;
  uint32_t mant = x & 0x7fffffu;
  if (exp < -25) return sign;
  if (exp < -14) { /* subnormal half */
    mant |= 0x800000u;
    const int shift = -exp - 14 + 13;
    uint32_t h = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1u))) h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((uint32_t)(exp + 15) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(sign | h);
}

static double value_of(uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const double mant = h & 0x3ff;
  const double v = exp == 0 ? mant * ldexp(1.0, -24)
                            : (1024.0 + mant) * ldexp(1.0, exp - 25);
  return (h & 0x8000u) ? -v : v;
}

typedef struct hgemm_case {
  conf_gemm_case g;
  bool exact; /* data whose every sum is exact in float32 */
} hgemm_case;

/* A kernel of the built-in module and its launch shape (docs/kernels.md). */
typedef struct hgemm_kernel {
  const char *name;
  uint32_t tile_m, tile_n;
  size_t shared_bytes;
} hgemm_kernel;

static const hgemm_kernel hgemm_kernels[] = {
    {"kiln_hgemm_f16_mma", 128, 256, 156672},
    {"kiln_hgemm_f16_mma_k32", 128, 256, 81408},
    {"kiln_hgemm_f16", 64, 64, 0},
};
#define HGEMM_KERNELS (sizeof hgemm_kernels / sizeof hgemm_kernels[0])

static void run(const hgemm_kernel *kern, const conf_gemm_case *t,
                kiln_buffer *a, kiln_buffer *b, kiln_buffer *c, size_t c_off) {
  if (!kern) {
    check_ok(kiln_hgemm_f16(NULL, t->m, t->n, t->k, t->alpha, a, t->a_off,
                            t->lda, b, t->b_off, t->ldb, t->beta, c, c_off,
                            t->ldc));
    return;
  }
  conf_gemm_launch(kern->name, kern->tile_m, kern->tile_n, 256,
                   kern->shared_bytes, 0, t, a, b, c, c_off);
}

static uint16_t random_half(conf_rng *r, bool exact) {
  if (exact) return half_of((float)((int)conf_below(r, 31) - 15) / 8.0f);
  return half_of(conf_uniform(r, -1.0f, 1.0f));
}

static float small_whole(conf_rng *r) {
  return (float)((int)conf_below(r, 9) - 4);
}

static void hgemm_case_run(conf_rng *r, const hgemm_kernel *kern,
                           const hgemm_case *hc) {
  const conf_gemm_case *t = &hc->g;
  const bool exact = hc->exact;
  const size_t a_elems = (size_t)(t->m - 1) * t->lda + t->k;
  const size_t b_elems = (size_t)(t->k - 1) * t->ldb + t->n;
  uint16_t *a = conf_alloc(a_elems * 2), *b = conf_alloc(b_elems * 2);
  for (size_t i = 0; i < a_elems; i++) a[i] = random_half(r, exact);
  for (size_t i = 0; i < b_elems; i++) b[i] = random_half(r, exact);
  kiln_buffer *ba, *bb;
  check_ok(kiln_buffer_create(conf.ctx, t->a_off + a_elems * 2, 0, &ba));
  check_ok(kiln_buffer_create(conf.ctx, t->b_off + b_elems * 2, 0, &bb));
  check_ok(kiln_buffer_write(NULL, ba, t->a_off, a, a_elems * 2));
  check_ok(kiln_buffer_write(NULL, bb, t->b_off, b, b_elems * 2));

  /* C starts as small whole numbers where beta is not 0: beta * C is then
   * exact for the exact cases. */
  conf_guarded gc;
  const size_t payload = conf_gemm_c_create(&gc, t, r, small_whole);

  run(kern, t, ba, bb, gc.buf, CONF_GUARD + t->c_off);
  const char *name = kern ? kern->name : "kiln_hgemm_f16()";
  const size_t total = payload + 2 * CONF_GUARD;
  unsigned char *got = conf_alloc(total);
  check_ok(kiln_buffer_read(NULL, gc.buf, 0, got, total));
  unsigned char *want = conf_alloc(total);
  memcpy(want, gc.canary, total);
  /* The halves' values, once: the largest case has 10^9 products. */
  double *av = conf_alloc(a_elems * sizeof *av);
  double *bv = conf_alloc(b_elems * sizeof *bv);
  for (size_t i = 0; i < a_elems; i++) av[i] = value_of(a[i]);
  for (size_t i = 0; i < b_elems; i++) bv[i] = value_of(b[i]);
  for (size_t i = 0; i < t->m; i++)
    for (size_t j = 0; j < t->n; j++) {
      double sum = 0.0, abs = 0.0;
      for (size_t l = 0; l < t->k; l++) {
        const double p = av[i * t->lda + l] * bv[l * t->ldb + j];
        sum += p;
        abs += fabs(p);
      }
      const size_t at = CONF_GUARD + t->c_off + 4 * (i * t->ldc + j);
      float old, g;
      memcpy(&old, gc.canary + at, 4);
      memcpy(&g, got + at, 4);
      /* Exact data: alpha * sum is one rounding, as the kernel's; then
       * fmaf with beta, as the kernel's. Else float32 sums of k terms. */
      const float scaled = t->alpha * (float)sum;
      const float expect =
          t->beta != 0.0f ? fmaf(t->beta, old, scaled) : scaled;
      const double tol =
          exact ? 0.0
                : 1.01 * (double)(t->k + 2) * ldexp(1.0, -24) *
                          (fabs(t->alpha) * abs +
                           (t->beta != 0.0f ? fabs(t->beta * old) : 0.0)) +
                      1e-30;
      if (!(fabs((double)g - (double)expect) <= tol))
        fail_msg(
            "%s m=%u n=%u k=%u lda=%u ldb=%u ldc=%u offsets %zu/%zu/%zu "
            "alpha=%g beta=%g: C[%zu][%zu] = %.9g, expected %.9g "
            "(tolerance %.3g)",
            name, t->m, t->n, t->k, t->lda, t->ldb, t->ldc, t->a_off, t->b_off,
            t->c_off, (double)t->alpha, (double)t->beta, i, j, (double)g,
            (double)expect, tol);
      memcpy(want + at, got + at, 4);
    }
  conf_check_bytes(got, want, total, "bytes around C's elements");
  free(av);
  free(bv);
  free(want);
  free(got);
  conf_guarded_destroy(&gc);
  check_ok(kiln_buffer_destroy(ba));
  check_ok(kiln_buffer_destroy(bb));
  free(a);
  free(b);
}

/* Shapes that reach every path of each kernel: whole tiles, edge tiles in
 * m, n and k, leading dimensions beyond the columns and not multiples of
 * 8, offsets that are not 16-byte aligned, alpha and beta. Through the API,
 * the cases whose A and B come in whole 16-byte pieces (offsets multiples
 * of 16; k, n, lda and ldb of 8) go to a kernel that may need that (wgmma
 * on Hopper): 16 x 16 x 16, 128 x 256 x 64, 136 x 264 x 200 (edges in m,
 * n and k, offsets, beta, an odd ldc) and 200 x 136 x 520. */
static const hgemm_case cases[] = {
    {{1, 1, 1, 1, 1, 1, 0, 0, 0, 1.0f, 0.0f}, true},
    {{16, 16, 16, 16, 16, 16, 0, 0, 0, 1.0f, 0.0f}, true},
    {{128, 256, 64, 64, 256, 256, 0, 0, 0, 1.0f, 0.0f}, true},
    {{130, 270, 100, 100, 270, 270, 0, 0, 0, 1.0f, 0.0f}, true},
    {{257, 300, 200, 208, 304, 301, 0, 0, 0, 0.5f, 2.0f}, true},
    {{70, 90, 72, 80, 96, 92, 2, 6, 4, -1.0f, 0.0f}, true},
    {{33, 17, 9, 9, 17, 17, 2, 2, 4, 1.0f, -1.0f}, true},
    {{136, 264, 200, 200, 264, 267, 32, 16, 4, 0.5f, 2.0f}, true},
    {{200, 136, 520, 520, 136, 136, 0, 0, 0, 1.0f, 0.0f}, false},
    {{64, 512, 1030, 1032, 520, 512, 16, 0, 0, 0.25f, 1.0f}, false},
};
#define CASES (sizeof cases / sizeof cases[0])

/* Through the API only (the kernels launched directly have the cases
 * above): 162 tiles of 128 x 256, more than any GPU has SMs, so that the
 * blocks of a persistent kernel (wgmma's, one an SM) take a second tile,
 * each of three slices of 64 of k, a count that crosses the wrap of its
 * four stages inside a block; A and B aligned, edges in m, n and k, beta,
 * an odd ldc. */
static const hgemm_case many_tiles = {
    {1100, 4360, 136, 136, 4360, 4361, 16, 32, 4, 1.0f, 2.0f}, true};

static void hgemm_through_the_api(void **state) {
  (void)state;
  conf_rng r = conf_rng_for("hgemm_through_the_api");
  for (size_t i = 0; i < CASES; i++) hgemm_case_run(&r, NULL, &cases[i]);
  hgemm_case_run(&r, NULL, &many_tiles);
}

static void hgemm_kernels_launched_directly(void **state) {
  (void)state;
  conf_rng r = conf_rng_for("hgemm_kernels_launched_directly");
  kiln_module *builtins;
  check_ok(kiln_context_builtin_module(conf.ctx, &builtins));
  size_t ran = 0;
  for (size_t k = 0; k < HGEMM_KERNELS; k++) {
    const hgemm_kernel *kern = &hgemm_kernels[k];
    kiln_kernel *handle;
    if (kiln_module_get_kernel(builtins, kern->name, &handle) != KILN_OK) {
      /* The tensor-core kernels are CUDA's alone; CUDA must have them. */
      if (conf.backend == KILN_BACKEND_CUDA)
        fail_msg("%s is not in CUDA's built-in module: %s", kern->name,
                 kiln_last_error());
      print_message("%s: not built for %s\n", kern->name,
                    kiln_backend_name(conf.backend));
      continue;
    }
    if (kern->shared_bytes > conf.props.max_shared_memory_per_block_optin) {
      print_message("%s: needs %zu bytes of shared memory, %s gives %zu\n",
                    kern->name, kern->shared_bytes, conf.props.name,
                    conf.props.max_shared_memory_per_block_optin);
      continue;
    }
    for (size_t i = 0; i < CASES; i++) hgemm_case_run(&r, kern, &cases[i]);
    ran++;
  }
  /* Every backend builds the portable kernel. */
  assert_true(ran >= 1);
}

/* The same product twice gives the same bits: the order of the sums is
 * fixed by the kernel, not by scheduling. Two depths: 704 lets A and B be
 * read 16 bytes at a time (a kernel that needs that may run), 700 not. */
static void hgemm_repeats_exactly(void **state) {
  (void)state;
  conf_rng r = conf_rng_for("hgemm_repeats_exactly");
  enum { M = 300, N = 264, K = 704 };
  uint16_t *a = conf_alloc(M * K * 2), *b = conf_alloc(K * N * 2);
  for (size_t i = 0; i < (size_t)M * K; i++) a[i] = random_half(&r, false);
  for (size_t i = 0; i < (size_t)K * N; i++) b[i] = random_half(&r, false);
  kiln_buffer *ba, *bb, *bc;
  check_ok(kiln_buffer_create(conf.ctx, M * K * 2, 0, &ba));
  check_ok(kiln_buffer_create(conf.ctx, K * N * 2, 0, &bb));
  check_ok(kiln_buffer_create(conf.ctx, M * N * 4, 0, &bc));
  check_ok(kiln_buffer_write(NULL, ba, 0, a, M * K * 2));
  check_ok(kiln_buffer_write(NULL, bb, 0, b, K * N * 2));
  float *first = conf_alloc(M * N * 4), *second = conf_alloc(M * N * 4);
  static const size_t depths[2] = {700, K};
  for (int i = 0; i < 2; i++) {
    const size_t k = depths[i];
    check_ok(kiln_hgemm_f16(NULL, M, N, k, 1.0f, ba, 0, k, bb, 0, N, 0.0f, bc,
                            0, N));
    check_ok(kiln_buffer_read(NULL, bc, 0, first, M * N * 4));
    check_ok(kiln_hgemm_f16(NULL, M, N, k, 1.0f, ba, 0, k, bb, 0, N, 0.0f, bc,
                            0, N));
    check_ok(kiln_buffer_read(NULL, bc, 0, second, M * N * 4));
    conf_check_bytes(second, first, M * N * 4,
                     k == K ? "a repeated kiln_hgemm_f16, k = 704"
                            : "a repeated kiln_hgemm_f16, k = 700");
  }
  check_ok(kiln_buffer_destroy(ba));
  check_ok(kiln_buffer_destroy(bb));
  check_ok(kiln_buffer_destroy(bc));
  free(a);
  free(b);
  free(first);
  free(second);
}

/* A and B in buffers made from native pointers 4 bytes past a 16-byte
 * boundary: their offsets are 0 and every dimension a multiple of 8, yet
 * the rows do not come in whole 16-byte pieces, so the call must not go to
 * a kernel that needs them (wgmma's tensor maps refuse such an address). */
static void hgemm_on_unaligned_native_memory(void **state) {
  (void)state;
  conf_rng r = conf_rng_for("hgemm_on_unaligned_native_memory");
  enum { M = 40, N = 64, K = 72, SKEW = 4 };
  uint16_t a[M * K], b[K * N];
  for (size_t i = 0; i < M * K; i++) a[i] = random_half(&r, true);
  for (size_t i = 0; i < K * N; i++) b[i] = random_half(&r, true);
  const size_t sizes[2] = {sizeof a, sizeof b};
  const void *data[2] = {a, b};
  kiln_buffer *owner[2], *view[2];
  for (int i = 0; i < 2; i++) {
    check_ok(kiln_buffer_create(conf.ctx, sizes[i] + 16, 0, &owner[i]));
    kiln_native_buffer nb;
    check_ok(kiln_buffer_get_native(owner[i], &nb));
    nb.device_address += SKEW;
    nb.vk_offset += SKEW;
    nb.size = sizes[i];
    check_ok(kiln_buffer_create_from_native(conf.ctx, &nb, 0, &view[i]));
    check_ok(kiln_buffer_write(NULL, view[i], 0, data[i], sizes[i]));
  }
  kiln_buffer *c;
  check_ok(kiln_buffer_create(conf.ctx, M * N * 4, 0, &c));
  check_ok(kiln_hgemm_f16(NULL, M, N, K, 1.0f, view[0], 0, K, view[1], 0, N,
                          0.0f, c, 0, N));
  float got[M * N];
  check_ok(kiln_buffer_read(NULL, c, 0, got, sizeof got));
  for (size_t i = 0; i < M; i++)
    for (size_t j = 0; j < N; j++) {
      double sum = 0.0;
      for (size_t l = 0; l < K; l++)
        sum += value_of(a[i * K + l]) * value_of(b[l * N + j]);
      if (got[i * N + j] != (float)sum)
        fail_msg("C[%zu][%zu] = %.9g, expected %.9g (A and B %d bytes past "
                 "a 16-byte boundary)",
                 i, j, (double)got[i * N + j], sum, SKEW);
    }
  for (int i = 0; i < 2; i++) {
    check_ok(kiln_buffer_destroy(view[i]));
    check_ok(kiln_buffer_destroy(owner[i]));
  }
  check_ok(kiln_buffer_destroy(c));
}

/* Bad arguments are refused with words, and nothing is launched. */
static void hgemm_bad_arguments(void **state) {
  (void)state;
  kiln_buffer *h, *f;
  check_ok(kiln_buffer_create(conf.ctx, 4096, 0, &h));
  check_ok(kiln_buffer_create(conf.ctx, 4096, 0, &f));
  check_fails(
      kiln_hgemm_f16(NULL, 4, 4, 4, 1.0f, h, 1, 4, h, 0, 4, 0.0f, f, 0, 4),
      KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("not a multiple of 2");
  check_fails(
      kiln_hgemm_f16(NULL, 4, 4, 4, 1.0f, h, 0, 4, h, 0, 4, 0.0f, f, 2, 4),
      KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("not a multiple of 4");
  check_fails(
      kiln_hgemm_f16(NULL, 4, 8, 4, 1.0f, h, 0, 4, h, 0, 4, 0.0f, f, 0, 8),
      KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("row stride of B");
  check_fails(
      kiln_hgemm_f16(NULL, 4, 4, 0, 1.0f, h, 0, 4, h, 0, 4, 0.0f, f, 0, 4),
      KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("k is 0");
  check_fails(kiln_hgemm_f16(NULL, 64, 64, 64, 1.0f, h, 0, 64, h, 0, 64, 0.0f,
                             f, 0, 64),
              KILN_ERROR_OUT_OF_RANGE);
  check_fails(
      kiln_hgemm_f16(NULL, 4, 4, 4, 1.0f, NULL, 0, 4, h, 0, 4, 0.0f, f, 0, 4),
      KILN_ERROR_INVALID_HANDLE);
  check_ok(
      kiln_hgemm_f16(NULL, 0, 4, 0, 1.0f, h, 0, 4, h, 0, 4, 0.0f, f, 0, 4));
  check_ok(kiln_buffer_destroy(h));
  check_ok(kiln_buffer_destroy(f));
}

int conf_run_hgemm_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(hgemm_through_the_api),
      CONF_TEST(hgemm_kernels_launched_directly),
      CONF_TEST(hgemm_repeats_exactly),
      CONF_TEST(hgemm_on_unaligned_native_memory),
      CONF_TEST(hgemm_bad_arguments),
  };
  return cmocka_run_group_tests_name("hgemm", tests, NULL, NULL);
}
