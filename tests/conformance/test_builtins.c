/* The built-in helpers: kiln_axpy_f32, kiln_reduce_sum_f32 and kiln_dot_f32
 * at many sizes, against sums in double with float32 error bounds, and
 * exactly on data whose every partial sum is an integer below 2^24;
 * kiln_sgemm_f32 on shapes that reach every path of each of its kernels,
 * launched through the API and directly.
 *
 * Over 600 lines: every helper's cases share the CPU references and the
 * data makers here. */
#include <math.h>
#include <stdio.h>

#include "conformance.h"

static const size_t sizes[] = {
    0,    1,    2,    3,    31,   32,    33,     255,      256,     257,
    1000, 1023, 1024, 1025, 4097, 65537, 262143, 1u << 20, 3000001, 1u << 24};
#define SIZE_COUNT (sizeof sizes / sizeof sizes[0])
#define MAX_N ((size_t)1 << 24)

/* The unit roundoff of float32. */
#define U32 (1.0 / 16777216.0)

/* A bound on the error of the helpers' float32 sum of n terms whose
 * absolute values add up to `abs`. docs/kernels.md: G = min(ceil(n / 2048),
 * 512) blocks of 256 threads (1024 blocks above 2^23 elements), so a thread
 * adds 8 or at most ceil(n / 262144) terms in a row, a tree of 8 levels sums
 * a block, and the last block adds the G block sums (at most 4 a thread,
 * then 8 levels). The bound counts more roundings on every path: ceil(n /
 * 32768) terms a thread, 32 more, and two trees of 10 levels (blocks of up
 * to 1024 threads). A product adds one rounding. */
static double sum_tolerance(size_t n, double abs, bool products) {
  double serial = n > 32768 ? ceil((double)n / 32768.0) : 1.0;
  double depth = serial + 10 + 32 + 10 + (products ? 1 : 0);
  return 1.01 * depth * U32 * abs + 1e-30;
}

/* A result slot: 16 payload bytes of which the helper may write only the 4
 * at `at`; everything else must keep its canary. */
static float read_slot(const conf_guarded *g, kiln_stream *s, size_t at,
                       const char *what) {
  size_t total = g->size + 2 * CONF_GUARD;
  unsigned char *got = conf_alloc(total);
  check_ok(kiln_buffer_read(s, g->buf, 0, got, total));
  float v;
  memcpy(&v, got + CONF_GUARD + at, 4);
  memcpy(got + CONF_GUARD + at, g->canary + CONF_GUARD + at, 4);
  conf_check_bytes(got, g->canary, total, what);
  free(got);
  return v;
}

/* Fills x[] and y[] with one of the test's kinds of data. */
static void make_data(conf_rng *r, float *x, float *y, size_t n, int kind) {
  for (size_t i = 0; i < n; i++) {
    switch (kind) {
    case 0: /* signed */
      x[i] = conf_uniform(r, -1.0f, 1.0f);
      y[i] = conf_uniform(r, -1.0f, 1.0f);
      break;
    case 1: /* positive: relative errors are meaningful */
      x[i] = conf_uniform(r, 0.0f, 1.0f);
      y[i] = conf_uniform(r, 0.5f, 2.0f);
      break;
    default: /* -1, 0, 1: every partial sum is exact in float32 */
      x[i] = (float)((int)conf_below(r, 3) - 1);
      y[i] = (float)((int)conf_below(r, 3) - 1);
    }
  }
}

static void axpy(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  float *x = conf_alloc(MAX_N * 4), *y = conf_alloc(MAX_N * 4);
  for (size_t t = 0; t < SIZE_COUNT; t++) {
    const size_t n = sizes[t];
    const float a = conf_uniform(&r, -2.0f, 2.0f);
    make_data(&r, x, y, n, 0);
    const size_t x_off = 4 * conf_below(&r, 8);
    kiln_buffer *bx;
    check_ok(kiln_buffer_create(conf.ctx, x_off + n * 4 + 4, 0, &bx));
    check_ok(kiln_buffer_write(NULL, bx, x_off, x, n * 4));
    conf_guarded gy;
    conf_guarded_create(&gy, n * 4, &r);
    check_ok(kiln_buffer_write(NULL, gy.buf, CONF_GUARD, y, n * 4));
    check_ok(kiln_axpy_f32(NULL, n, a, bx, x_off, gy.buf, CONF_GUARD));

    size_t total = n * 4 + 2 * CONF_GUARD;
    unsigned char *got = conf_alloc(total);
    check_ok(kiln_buffer_read(NULL, gy.buf, 0, got, total));
    /* Either a fused or a separate multiply-add is right. */
    for (size_t i = 0; i < n; i++) {
      float g;
      memcpy(&g, got + CONF_GUARD + 4 * i, 4);
      double exact = (double)a * x[i] + y[i];
      double tol = 2 * U32 * (fabs((double)a * x[i]) + fabs(exact));
      if (!(fabs(g - exact) <= tol))
        fail_msg("kiln_axpy_f32 n=%zu: y[%zu] = %.9g, expected %.9g", n, i, g,
                 exact);
    }
    memcpy(got + CONF_GUARD, conf_guarded_initial(&gy), n * 4);
    char what[64];
    snprintf(what, sizeof what, "the guards of kiln_axpy_f32 n=%zu", n);
    conf_check_bytes(got, gy.canary, total, what);
    free(got);
    conf_guarded_destroy(&gy);
    check_ok(kiln_buffer_destroy(bx));
  }
  free(x);
  free(y);
}

/* Sum and dot of every size and kind of data; each twice, which must give
 * the same bits (docs/kernels.md: the order of additions is fixed). */
static void reductions(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  float *x = conf_alloc(MAX_N * 4), *y = conf_alloc(MAX_N * 4);
  for (int kind = 0; kind < 3; kind++) {
    for (size_t t = 0; t < SIZE_COUNT; t++) {
      const size_t n = sizes[t];
      make_data(&r, x, y, n, kind);
      const size_t x_off = 4 * conf_below(&r, 8), y_off = 4 * conf_below(&r, 8);
      kiln_buffer *bx, *by;
      check_ok(kiln_buffer_create(conf.ctx, x_off + n * 4 + 4, 0, &bx));
      check_ok(kiln_buffer_create(conf.ctx, y_off + n * 4 + 4, 0, &by));
      check_ok(kiln_buffer_write(NULL, bx, x_off, x, n * 4));
      check_ok(kiln_buffer_write(NULL, by, y_off, y, n * 4));
      double sum = 0, sum_abs = 0, dot = 0, dot_abs = 0;
      for (size_t i = 0; i < n; i++) {
        sum += x[i];
        sum_abs += fabs(x[i]);
        dot += (double)x[i] * y[i];
        dot_abs += fabs((double)x[i] * y[i]);
      }
      const struct {
        const char *name;
        double want, tol;
      } ops[2] = {
          {"kiln_reduce_sum_f32", sum,
           kind == 2 ? 0.0 : sum_tolerance(n, sum_abs, false)},
          {"kiln_dot_f32", dot,
           kind == 2 ? 0.0 : sum_tolerance(n, dot_abs, true)},
      };
      for (int op = 0; op < 2; op++) {
        float first = 0;
        for (int rep = 0; rep < 2; rep++) {
          conf_guarded res;
          conf_guarded_create(&res, 16, &r);
          const size_t at = 4 + 4 * (size_t)rep;
          if (op == 0)
            check_ok(kiln_reduce_sum_f32(NULL, n, bx, x_off, res.buf,
                                         CONF_GUARD + at));
          else
            check_ok(kiln_dot_f32(NULL, n, bx, x_off, by, y_off, res.buf,
                                  CONF_GUARD + at));
          char what[96];
          snprintf(what, sizeof what, "%s n=%zu around its result",
                   ops[op].name, n);
          float got = read_slot(&res, NULL, at, what);
          conf_guarded_destroy(&res);
          if (!(fabs(got - ops[op].want) <= ops[op].tol))
            fail_msg(
                "%s n=%zu (data kind %d): %.9g, expected %.9g within "
                "%.3g",
                ops[op].name, n, kind, got, ops[op].want, ops[op].tol);
          if (rep == 0)
            first = got;
          else if (memcmp(&first, &got, 4) != 0)
            fail_msg("%s n=%zu gave %.9g, then %.9g for the same data",
                     ops[op].name, n, first, got);
        }
      }
      check_ok(kiln_buffer_destroy(by));
      check_ok(kiln_buffer_destroy(bx));
    }
  }
  free(x);
  free(y);
}

/* Reductions queued back to back on one stream share its scratch memory;
 * on two streams each has its own. Exact data, so results compare. */
static void reductions_queued_on_streams(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  enum { ROUNDS = 16 };
  const size_t n = 300007;
  float *x = conf_alloc(n * 4), *y = conf_alloc(n * 4);
  kiln_stream *streams[2];
  check_ok(kiln_stream_create(conf.ctx, &streams[0]));
  check_ok(kiln_stream_create(conf.ctx, &streams[1]));
  kiln_buffer *bx[ROUNDS], *by;
  float want[ROUNDS], want_dot[ROUNDS];
  make_data(&r, x, y, n, 2);
  check_ok(kiln_buffer_create(conf.ctx, n * 4, 0, &by));
  check_ok(kiln_buffer_write(NULL, by, 0, y, n * 4));
  for (int i = 0; i < ROUNDS; i++) {
    for (size_t j = 0; j < n; j++) x[j] = (float)((int)conf_below(&r, 3) - 1);
    double s = 0, d = 0;
    for (size_t j = 0; j < n; j++) {
      s += x[j];
      d += (double)x[j] * y[j];
    }
    want[i] = (float)s;
    want_dot[i] = (float)d;
    check_ok(kiln_buffer_create(conf.ctx, n * 4, 0, &bx[i]));
    check_ok(kiln_buffer_write(NULL, bx[i], 0, x, n * 4));
  }
  conf_guarded res;
  conf_guarded_create(&res, ROUNDS * 8, &r);
  check_ok(kiln_context_synchronize(conf.ctx));
  for (int i = 0; i < ROUNDS; i++) {
    kiln_stream *s = streams[i % 2];
    check_ok(kiln_reduce_sum_f32(s, n, bx[i], 0, res.buf,
                                 CONF_GUARD + 8 * (size_t)i));
    check_ok(kiln_dot_f32(s, n, bx[i], 0, by, 0, res.buf,
                          CONF_GUARD + 8 * (size_t)i + 4));
  }
  check_ok(kiln_stream_synchronize(streams[0]));
  check_ok(kiln_stream_synchronize(streams[1]));
  float expect[ROUNDS * 2];
  for (int i = 0; i < ROUNDS; i++) {
    expect[2 * i] = want[i];
    expect[2 * i + 1] = want_dot[i];
  }
  conf_guarded_check(&res, NULL, expect,
                     "16 sums and dots queued on two streams (result i: "
                     "sum at 8i, dot at 8i + 4)");
  conf_guarded_destroy(&res);
  for (int i = 0; i < ROUNDS; i++) check_ok(kiln_buffer_destroy(bx[i]));
  check_ok(kiln_buffer_destroy(by));
  check_ok(kiln_stream_destroy(streams[1]));
  check_ok(kiln_stream_destroy(streams[0]));
  free(x);
  free(y);
}

/* Sums and dots of data with NaNs and infinities, queued back to back on
 * one stream, then one of plain ones: the result is NaN or infinite as
 * IEEE arithmetic says, and the ones' sum is still exact after them. A NaN
 * whose bits are all ones, kept as it is by x86 and AMD arithmetic, would
 * be a block sum whose slot word is 0, "not written" (docs/kernels.md): on
 * lavapipe a kernel without the rule for it fails here. NVIDIA's
 * arithmetic makes every NaN its own quiet NaN, so there this case cannot
 * tell. +inf and -inf lie in the first and the last block. */
static void reductions_of_nans_and_infinities(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  enum { CASES = 5 };
  static const char *const names[CASES] = {
      "ones with one NaN of all-ones bits", "all NaNs of all-ones bits",
      "ones with one +inf", "ones with +inf and -inf", "ones"};
  static const size_t sizes_here[] = {1000, (size_t)1 << 20, 3000001};
  for (size_t t = 0; t < sizeof sizes_here / sizeof sizes_here[0]; t++) {
    const size_t n = sizes_here[t];
    float *x = conf_alloc(n * 4);
    kiln_buffer *bx[CASES], *bones, *res;
    for (size_t j = 0; j < n; j++) x[j] = 1.0f;
    check_ok(kiln_buffer_create(conf.ctx, n * 4, 0, &bones));
    check_ok(kiln_buffer_write(NULL, bones, 0, x, n * 4));
    check_ok(kiln_buffer_create(conf.ctx, 8 * CASES, 0, &res));
    const uint32_t nan_bits = 0xffffffffu;
    for (int c = 0; c < CASES; c++) {
      for (size_t j = 0; j < n; j++) {
        if (c == 1)
          memcpy(&x[j], &nan_bits, 4);
        else
          x[j] = 1.0f;
      }
      if (c == 0) memcpy(&x[conf_below(&r, n)], &nan_bits, 4);
      if (c == 2 || c == 3) x[0] = INFINITY;
      if (c == 3) x[n - 1] = -INFINITY;
      check_ok(kiln_buffer_create(conf.ctx, n * 4, 0, &bx[c]));
      check_ok(kiln_buffer_write(NULL, bx[c], 0, x, n * 4));
    }
    check_ok(kiln_context_synchronize(conf.ctx));
    for (int c = 0; c < CASES; c++) {
      check_ok(kiln_reduce_sum_f32(NULL, n, bx[c], 0, res, 8 * (size_t)c));
      check_ok(kiln_dot_f32(NULL, n, bx[c], 0, bones, 0, res,
                            8 * (size_t)c + 4));
    }
    float got[2 * CASES];
    check_ok(kiln_buffer_read(NULL, res, 0, got, sizeof got));
    for (int c = 0; c < CASES; c++)
      for (int op = 0; op < 2; op++) {
        const float g = got[2 * c + op];
        const bool ok = c <= 1 || c == 3 ? isnan(g)
                        : c == 2         ? isinf(g) && g > 0
                                         : g == (float)n;
        if (!ok)
          fail_msg("%s of %s, n=%zu: %.9g", op ? "kiln_dot_f32"
                                               : "kiln_reduce_sum_f32",
                   names[c], n, g);
      }
    for (int c = 0; c < CASES; c++) check_ok(kiln_buffer_destroy(bx[c]));
    check_ok(kiln_buffer_destroy(res));
    check_ok(kiln_buffer_destroy(bones));
    free(x);
  }
}

/* Reductions queued with no synchronize between them, each after a kernel
 * that wrote what it reads: on sm_90 the CUDA backend starts a reduction
 * while the kernel before it drains (backends/cuda/launch.c), and one that
 * read before that kernel was done would add stale values. First each
 * round adds 1 to x with kiln_axpy_f32, then sums x; then each reduction
 * writes its result into the array the next one adds up, so that result is
 * written last thing before the next reduction reads it. Every value is a
 * whole number below 2^24, so every result is exact. */
static void reductions_follow_writers(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  enum { ROUNDS = 48, CHAIN = 22 };
  const size_t n = (size_t)1 << 18;
  float *h = conf_alloc(n * 4);
  for (size_t j = 0; j < n; j++) h[j] = 1.0f;
  kiln_buffer *bx, *bones;
  check_ok(kiln_buffer_create(conf.ctx, n * 4, KILN_BUFFER_ZERO, &bx));
  check_ok(kiln_buffer_create(conf.ctx, n * 4, 0, &bones));
  check_ok(kiln_buffer_write(NULL, bones, 0, h, n * 4));
  conf_guarded res;
  conf_guarded_create(&res, ROUNDS * 8, &r);
  check_ok(kiln_context_synchronize(conf.ctx));
  float expect[ROUNDS * 2];
  for (int i = 0; i < ROUNDS; i++) {
    check_ok(kiln_axpy_f32(NULL, n, 1.0f, bones, 0, bx, 0));
    check_ok(kiln_reduce_sum_f32(NULL, n, bx, 0, res.buf,
                                 CONF_GUARD + 8 * (size_t)i));
    check_ok(kiln_dot_f32(NULL, n, bx, 0, bones, 0, res.buf,
                          CONF_GUARD + 8 * (size_t)i + 4));
    expect[2 * i] = expect[2 * i + 1] = (float)((size_t)(i + 1) * n);
  }
  conf_guarded_check(&res, NULL, expect,
                     "48 rounds of x += 1 then sum(x) and dot(x, 1) on one "
                     "stream (round i: sum at 8i, dot at 8i + 4)");
  conf_guarded_destroy(&res);
  /* y = 1, 0, 0, ...; result j goes to y[j + 1] and is the sum of all
   * before it: 1, 2, 4, ... */
  memset(h, 0, n * 4);
  h[0] = 1.0f;
  check_ok(kiln_buffer_write(NULL, bx, 0, h, n * 4));
  for (size_t j = 0; j < CHAIN; j++) {
    if (j % 2 == 0)
      check_ok(kiln_reduce_sum_f32(NULL, n, bx, 0, bx, 4 * (j + 1)));
    else
      check_ok(kiln_dot_f32(NULL, n, bx, 0, bones, 0, bx, 4 * (j + 1)));
  }
  check_ok(kiln_buffer_read(NULL, bx, 0, h, 4 * (CHAIN + 2)));
  for (size_t j = 0; j <= CHAIN + 1; j++) {
    const float want = j == 0      ? 1.0f
                       : j > CHAIN ? 0.0f
                                   : ldexpf(1.0f, (int)j - 1);
    if (h[j] != want)
      fail_msg("%zu reductions each adding up the results of those before "
               "it: y[%zu] = %.9g, expected %.9g",
               (size_t)CHAIN, j, h[j], want);
  }
  check_ok(kiln_buffer_destroy(bones));
  check_ok(kiln_buffer_destroy(bx));
  free(h);
}

typedef conf_gemm_case gemm_case;

/* One of kiln_sgemm_f32's kernels, with the tile of C that one block
 * computes (docs/kernels.md; tile_n 0: the large kernel, whose columns are
 * the backend's, below), for the split kernel the rows of k each block
 * takes, and whether Vulkan's is written for 128 invocations (else a block
 * has 256 threads). */
typedef struct gemm_kernel {
  const char *name;
  uint32_t tile_m, tile_n;
  uint32_t k_split;
  bool vulkan_128;
} gemm_kernel;

static const gemm_kernel gemm_kernels[] = {
    {"kiln_sgemm_f32", 128, 0, 0, true},
    {"kiln_sgemm_f32_mid", 64, 64, 0, true},
    {"kiln_sgemm_f32_small", 32, 64, 0, false},
    {"kiln_sgemm_f32_split", 64, 64, 16, true},
    {"kiln_sgemm_f32_split", 64, 64, 192, true},
};
#define GEMM_KERNELS (sizeof gemm_kernels / sizeof gemm_kernels[0])

/* The columns of C of a block of the large kernel and the threads of a
 * block of `kern`, which docs/kernels.md gives for each backend. */
static uint32_t sgemm_large_tile_n(void) {
  return conf.backend == KILN_BACKEND_CUDA ? 256 : 128;
}

static uint32_t sgemm_threads(const gemm_kernel *kern) {
  return conf.backend == KILN_BACKEND_VULKAN && kern->vulkan_128 ? 128 : 256;
}

/* C = alpha A B + beta C through kiln_sgemm_f32, or with `kern` launched
 * directly in its own shape. */
static void run_sgemm(const gemm_kernel *kern, const gemm_case *t,
                      kiln_buffer *a, kiln_buffer *b, kiln_buffer *c,
                      size_t c_off) {
  if (!kern) {
    check_ok(kiln_sgemm_f32(NULL, t->m, t->n, t->k, t->alpha, a, t->a_off,
                            t->lda, b, t->b_off, t->ldb, t->beta, c, c_off,
                            t->ldc));
    return;
  }
  const bool large = kern->tile_n == 0;
  conf_gemm_launch(kern->name, kern->tile_m,
                   large ? sgemm_large_tile_n() : kern->tile_n,
                   sgemm_threads(kern), 0, kern->k_split, t, a, b, c, c_off);
}

/* C's starting elements where beta is not 0. */
static float unit_value(conf_rng *r) { return conf_uniform(r, -1.0f, 1.0f); }

static void sgemm_case(conf_rng *r, const gemm_kernel *kern,
                       const gemm_case *t) {
  const size_t a_elems = (size_t)(t->m - 1) * t->lda + t->k;
  const size_t b_elems = (size_t)(t->k - 1) * t->ldb + t->n;
  float *a = conf_alloc(a_elems * 4), *b = conf_alloc(b_elems * 4);
  for (size_t i = 0; i < a_elems; i++) a[i] = conf_uniform(r, -1.0f, 1.0f);
  for (size_t i = 0; i < b_elems; i++) b[i] = conf_uniform(r, -1.0f, 1.0f);
  kiln_buffer *ba, *bb;
  check_ok(kiln_buffer_create(conf.ctx, t->a_off + a_elems * 4, 0, &ba));
  check_ok(kiln_buffer_create(conf.ctx, t->b_off + b_elems * 4, 0, &bb));
  check_ok(kiln_buffer_write(NULL, ba, t->a_off, a, a_elems * 4));
  check_ok(kiln_buffer_write(NULL, bb, t->b_off, b, b_elems * 4));

  conf_guarded gc;
  const size_t payload = conf_gemm_c_create(&gc, t, r, unit_value);

  run_sgemm(kern, t, ba, bb, gc.buf, CONF_GUARD + t->c_off);
  const char *name = kern ? kern->name : "kiln_sgemm_f32()";
  const size_t total = payload + 2 * CONF_GUARD;
  unsigned char *got = conf_alloc(total);
  check_ok(kiln_buffer_read(NULL, gc.buf, 0, got, total));
  /* Row by row, along B's rows: the reference of a 4096 x 4096 B then
   * streams through memory instead of striding down its columns. */
  double *sum = conf_alloc(t->n * sizeof(double));
  double *abs = conf_alloc(t->n * sizeof(double));
  for (size_t i = 0; i < t->m; i++) {
    memset(sum, 0, t->n * sizeof(double));
    memset(abs, 0, t->n * sizeof(double));
    for (size_t l = 0; l < t->k; l++) {
      const double x = a[i * t->lda + l];
      const float *brow = b + l * t->ldb;
      for (size_t j = 0; j < t->n; j++) {
        double p = x * brow[j];
        sum[j] += p;
        abs[j] += fabs(p);
      }
    }
    for (size_t j = 0; j < t->n; j++) {
      const size_t at = CONF_GUARD + t->c_off + 4 * (i * t->ldc + j);
      float c0, g;
      memcpy(&c0, gc.canary + at, 4);
      memcpy(&g, got + at, 4);
      double want = t->alpha * sum[j], scale = fabs(t->alpha) * abs[j];
      if (t->beta != 0.0f) {
        want += (double)t->beta * c0;
        scale += fabs((double)t->beta * c0);
      }
      double tol = 1.01 * (t->k + 3) * U32 * scale + 1e-30;
      if (!(fabs(g - want) <= tol))
        fail_msg(
            "%s m=%u n=%u k=%u lda=%u ldb=%u ldc=%u alpha=%g beta=%g: "
            "C[%zu][%zu] = %.9g, expected %.9g within %.3g",
            name, t->m, t->n, t->k, t->lda, t->ldb, t->ldc, (double)t->alpha,
            (double)t->beta, i, j, g, want, tol);
      memcpy(got + at, gc.canary + at, 4);
    }
  }
  free(abs);
  free(sum);
  char what[128];
  snprintf(what, sizeof what,
           "%s m=%u n=%u k=%u ldc=%u: bytes around C's elements", name, t->m,
           t->n, t->k, t->ldc);
  conf_check_bytes(got, gc.canary, total, what);
  free(got);
  conf_guarded_destroy(&gc);
  check_ok(kiln_buffer_destroy(bb));
  check_ok(kiln_buffer_destroy(ba));
  free(a);
  free(b);
}

/* Whole tiles and edge tiles, k a multiple of the kernels' slice or not,
 * aligned and unaligned matrices, padded rows, every kind of alpha/beta. */
static void sgemm(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  static const gemm_case cases[] = {
      {1, 1, 1, 1, 1, 1, 0, 0, 0, 1.0f, 0.0f},
      {5, 7, 3, 4, 9, 8, 4, 8, 12, 2.0f, 0.5f},
      {128, 128, 8, 8, 128, 128, 0, 0, 0, 1.0f, 0.0f},
      {256, 256, 64, 64, 256, 256, 0, 0, 0, -1.5f, 1.0f},
      {129, 130, 9, 9, 130, 131, 16, 32, 4, 1.0f, -1.0f},
      {200, 77, 33, 40, 80, 77, 4, 4, 4, 0.5f, 0.0f},
      {3, 300, 17, 17, 300, 301, 0, 0, 0, 1.0f, 0.25f},
      {300, 3, 1, 1, 3, 3, 8, 0, 16, 1.0f, 0.0f},
      {384, 256, 300, 300, 256, 260, 0, 0, 0, 1.0f, 0.0f},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    sgemm_case(&r, NULL, &cases[i]);

  /* m or n of 0 does nothing. */
  conf_guarded g;
  conf_guarded_create(&g, 64, &r);
  check_ok(kiln_sgemm_f32(NULL, 0, 4, 4, 1.0f, g.buf, 0, 4, g.buf, 0, 4, 0.0f,
                          g.buf, CONF_GUARD, 4));
  check_ok(kiln_sgemm_f32(NULL, 4, 0, 4, 1.0f, g.buf, 0, 4, g.buf, 0, 4, 0.0f,
                          g.buf, CONF_GUARD, 4));
  conf_guarded_check(&g, NULL, conf_guarded_initial(&g),
                     "C after kiln_sgemm_f32 with m or n of 0");
  conf_guarded_destroy(&g);
}

/* Each kernel launched directly: whole and edge tiles, k below, at and past
 * a multiple of every kernel's step (8, 16, 32), offsets that leave the
 * matrices unaligned, padded rows, beta of 0 and not. */
static void sgemm_kernels(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  static const gemm_case cases[] = {
      {1, 1, 1, 1, 1, 1, 0, 0, 0, 1.0f, 0.0f},
      {5, 7, 3, 4, 9, 8, 4, 8, 12, 2.0f, 0.5f},
      {64, 64, 16, 16, 64, 64, 0, 0, 0, 1.0f, 0.0f},
      {96, 128, 48, 48, 128, 128, 0, 0, 0, 1.0f, 0.0f},
      {130, 70, 37, 40, 72, 75, 16, 32, 4, -1.5f, 1.0f},
      {128, 128, 100, 100, 128, 128, 0, 0, 0, 0.5f, 0.25f},
      {33, 200, 300, 300, 204, 200, 0, 16, 0, 1.0f, -1.0f},
      {70, 3, 65, 65, 3, 5, 4, 0, 8, 1.0f, 0.0f},
      /* Whole 128 x 256 tiles beside edge ones, every matrix aligned. */
      {160, 300, 24, 24, 300, 300, 0, 0, 0, 1.0f, 0.5f},
  };
  for (size_t v = 0; v < GEMM_KERNELS; v++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
      sgemm_case(&r, &gemm_kernels[v], &cases[i]);
}

/* The shapes kiln-bench reports beside the square ones, through the API:
 * a size that is no multiple of any tile or step, and tall and wide
 * products with few tiles and a long k. A CPU device (lavapipe) gets them
 * scaled down, keeping what makes them odd. */
static void sgemm_odd_shapes(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  const bool cpu = conf.props.type == KILN_DEVICE_TYPE_CPU;
  const gemm_case full[] = {
      {1000, 1000, 1000, 1000, 1000, 1000, 0, 0, 0, 1.0f, 0.0f},
      {4096, 64, 4096, 4096, 64, 64, 0, 0, 0, 1.0f, 0.0f},
      {64, 4096, 4096, 4096, 4096, 4096, 0, 0, 0, 1.0f, 0.5f},
  };
  const gemm_case scaled[] = {
      {250, 250, 250, 250, 250, 250, 0, 0, 0, 1.0f, 0.0f},
      {1024, 64, 600, 600, 64, 64, 0, 0, 0, 1.0f, 0.0f},
      {64, 1024, 600, 600, 1024, 1024, 0, 0, 0, 1.0f, 0.5f},
  };
  for (size_t i = 0; i < 3; i++)
    sgemm_case(&r, NULL, cpu ? &scaled[i] : &full[i]);
}

/* Products with few tiles and a long k, through kiln_sgemm_f32, which
 * splits their k between the blocks of a tile (on 64 SMs, or a device that
 * does not say, and on more): one after another on a stream, so each finds
 * the tickets the one before put back, and again from a graph replayed on
 * two streams at once beside the stream's own calls. Each C is right, and
 * the same bit for bit every time. */
static void sgemm_split_k(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  static const gemm_case cases[] = {
      {256, 64, 2048, 2048, 64, 64, 0, 0, 0, 1.0f, 0.0f},
      {64, 192, 1100, 1100, 192, 200, 0, 0, 0, -0.5f, 0.0f},
      {33, 70, 1500, 1504, 72, 71, 4, 8, 12, 1.0f, 0.75f},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    sgemm_case(&r, NULL, &cases[i]);

  enum { M = 256, N = 64, K = 2048, ROUNDS = 4 };
  float *a = conf_alloc(sizeof(float) * M * K);
  float *b = conf_alloc(sizeof(float) * K * N);
  float *want = conf_alloc(sizeof(float) * M * N);
  float *got = conf_alloc(sizeof(float) * M * N);
  for (size_t i = 0; i < (size_t)M * K; i++) a[i] = conf_uniform(&r, -1, 1);
  for (size_t i = 0; i < (size_t)K * N; i++) b[i] = conf_uniform(&r, -1, 1);
  kiln_buffer *ba, *bb, *c_direct, *c_graph;
  check_ok(kiln_buffer_create(conf.ctx, sizeof(float) * M * K, 0, &ba));
  check_ok(kiln_buffer_create(conf.ctx, sizeof(float) * K * N, 0, &bb));
  check_ok(kiln_buffer_create(conf.ctx, sizeof(float) * M * N, 0, &c_direct));
  check_ok(kiln_buffer_create(conf.ctx, sizeof(float) * M * N, 0, &c_graph));
  check_ok(kiln_buffer_write(NULL, ba, 0, a, sizeof(float) * M * K));
  check_ok(kiln_buffer_write(NULL, bb, 0, b, sizeof(float) * K * N));
  check_ok(kiln_sgemm_f32(NULL, M, N, K, 1.0f, ba, 0, K, bb, 0, N, 0.0f,
                          c_direct, 0, N));
  check_ok(kiln_buffer_read(NULL, c_direct, 0, want, sizeof(float) * M * N));
  kiln_stream *s, *other;
  check_ok(kiln_stream_create(conf.ctx, &s));
  check_ok(kiln_stream_create(conf.ctx, &other));
  kiln_graph *g;
  check_ok(kiln_stream_begin_capture(s));
  check_ok(kiln_sgemm_f32(s, M, N, K, 1.0f, ba, 0, K, bb, 0, N, 0.0f, c_graph,
                          0, N));
  check_ok(kiln_stream_end_capture(s, &g));
  for (int round = 0; round < ROUNDS; round++) {
    check_ok(kiln_graph_launch(g, round % 2 ? other : s));
    check_ok(kiln_graph_launch(g, round % 2 ? s : other));
    check_ok(kiln_sgemm_f32(s, M, N, K, 1.0f, ba, 0, K, bb, 0, N, 0.0f,
                            c_direct, 0, N));
    check_ok(kiln_stream_synchronize(s));
    check_ok(kiln_stream_synchronize(other));
    const kiln_buffer *cs[2] = {c_direct, c_graph};
    for (int i = 0; i < 2; i++) {
      check_ok(kiln_buffer_read(NULL, cs[i], 0, got, sizeof(float) * M * N));
      if (memcmp(got, want, sizeof(float) * M * N) != 0)
        fail_msg("round %d: the %s product differs from the first", round,
                 i ? "replayed" : "stream's");
    }
  }
  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_stream_destroy(other));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_buffer_destroy(c_graph));
  check_ok(kiln_buffer_destroy(c_direct));
  check_ok(kiln_buffer_destroy(bb));
  check_ok(kiln_buffer_destroy(ba));
  free(got);
  free(want);
  free(b);
  free(a);
}

/* Each kernel twice on the same inputs: bitwise the same C (the split-k
 * kernels add their groups' and blocks' sums in a fixed order). */
static void sgemm_repeatable(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  const gemm_case t = {100, 96, 777, 777, 96, 96, 0, 0, 0, 1.0f, 0.0f};
  const size_t na = (size_t)t.m * t.k, nb = (size_t)t.k * t.n;
  const size_t nc = (size_t)t.m * t.n;
  float *a = conf_alloc(na * 4), *b = conf_alloc(nb * 4);
  float *c0 = conf_alloc(nc * 4), *c1 = conf_alloc(nc * 4);
  for (size_t i = 0; i < na; i++) a[i] = conf_uniform(&r, -1.0f, 1.0f);
  for (size_t i = 0; i < nb; i++) b[i] = conf_uniform(&r, -1.0f, 1.0f);
  kiln_buffer *ba, *bb, *bc;
  check_ok(kiln_buffer_create(conf.ctx, na * 4, 0, &ba));
  check_ok(kiln_buffer_create(conf.ctx, nb * 4, 0, &bb));
  check_ok(kiln_buffer_create(conf.ctx, nc * 4, 0, &bc));
  check_ok(kiln_buffer_write(NULL, ba, 0, a, na * 4));
  check_ok(kiln_buffer_write(NULL, bb, 0, b, nb * 4));
  for (size_t v = 0; v < GEMM_KERNELS; v++) {
    run_sgemm(&gemm_kernels[v], &t, ba, bb, bc, 0);
    check_ok(kiln_buffer_read(NULL, bc, 0, c0, nc * 4));
    run_sgemm(&gemm_kernels[v], &t, ba, bb, bc, 0);
    check_ok(kiln_buffer_read(NULL, bc, 0, c1, nc * 4));
    if (memcmp(c0, c1, nc * 4) != 0)
      fail_msg("%s (k split %u): two runs on the same inputs differ",
               gemm_kernels[v].name, gemm_kernels[v].k_split);
  }
  check_ok(kiln_buffer_destroy(bc));
  check_ok(kiln_buffer_destroy(bb));
  check_ok(kiln_buffer_destroy(ba));
  free(c1);
  free(c0);
  free(b);
  free(a);
}

int conf_run_builtin_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(axpy),
      CONF_TEST(reductions),
      CONF_TEST(reductions_queued_on_streams),
      CONF_TEST(reductions_follow_writers),
      CONF_TEST(reductions_of_nans_and_infinities),
      CONF_TEST(sgemm),
      CONF_TEST(sgemm_kernels),
      CONF_TEST(sgemm_odd_shapes),
      CONF_TEST(sgemm_split_k),
      CONF_TEST(sgemm_repeatable),
  };
  return cmocka_run_group_tests_name("builtins", tests, NULL, NULL);
}
