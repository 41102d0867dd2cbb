/* SGEMM: row-major C = A B of square float32 matrices, 256 to 8192, then
 * of the odd shapes in `odd`, through kiln_sgemm_f32() (float32 FMAs, no
 * tensor cores; it picks one of the kernels below by size) and through
 * cuBLAS with the default math mode (no TF32), in GFLOP/s. Before timing,
 * odd shapes, leading dimensions and offsets check the edges of each kernel
 * below element by element, each launched directly in its own shape; the
 * split kernel, which needs a workspace, runs through kiln_sgemm_f32() on
 * the thin shapes, checked at sampled elements as every timed product is. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cuda_raw.h"

/* kiln_sgemm_f32's kernels (docs/kernels.md): 256 threads per block (128
 * on Vulkan where vulkan_128 says so), one block per tile of C, x across
 * its columns; the first one's columns are the backend's (backend_launch). */
#define BLOCK 256u
typedef struct gemm_kernel {
  const char *name;
  uint32_t tile_m, tile_n;
  bool vulkan_128;
} gemm_kernel;
static const gemm_kernel kernels[] = {
    {"kiln_sgemm_f32", 128, 128, true},
    {"kiln_sgemm_f32_mid", 64, 64, true},
    {"kiln_sgemm_f32_small", 32, 64, false},
};
#define KERNELS (sizeof kernels / sizeof kernels[0])
#define FIRST 256u
#define LAST 8192u
#define QUICK_FIRST 64u
#define QUICK_LAST 256u
#define SEED_C 7u
#define SAMPLES 64u
/* Floats the checks need in each buffer (their largest matrix). */
#define CHECK_FLOATS 65536u

typedef struct shape {
  uint32_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
  size_t a_off, b_off, c_off; /* floats */
} shape;

/* Edge tiles in m and n, k not a multiple of 8, leading dimensions that
 * are not multiples of 4, unaligned offsets, beta on and off. */
static const shape checks[] = {
    {1, 1, 1, 1, 1, 1, 1.0f, 0.0f, 0, 0, 0},
    {67, 45, 33, 37, 50, 47, 0.5f, 2.0f, 0, 0, 0},
    {130, 260, 17, 20, 264, 261, 1.0f, -1.0f, 1, 0, 3},
    {128, 128, 8, 8, 128, 128, 1.0f, 0.0f, 0, 0, 0},
    {256, 128, 40, 40, 132, 128, 1.0f, 0.5f, 0, 0, 0},
    {200, 300, 129, 132, 300, 304, -1.0f, 0.25f, 0, 0, 0},
};

/* m x n x k products beside the square sweep: no multiple of any tile, and
 * tall and wide ones with few tiles of C and a long k. Each is compared
 * with the square size of the nearest flop count. */
typedef struct odd_shape {
  uint32_t m, n, k;
  const char *name; /* the results' name */
} odd_shape;
static const odd_shape odd[] = {
    {1000, 1000, 1000, "sgemm-1000x1000x1000"},
    {4096, 64, 4096, "sgemm-4096x64x4096"},
    {64, 4096, 4096, "sgemm-64x4096x4096"},
};
static const odd_shape quick_odd[] = {
    {100, 100, 100, "sgemm-100x100x100"},
    {256, 16, 256, "sgemm-256x16x256"},
    {16, 256, 256, "sgemm-16x256x256"},
};
#define ODD (sizeof odd / sizeof odd[0])

static unsigned log2_of(uint32_t n) {
  unsigned l = 0;
  while (n >>= 1) l++;
  return l;
}

typedef struct gemm_state {
  bench *b;
  /* The kernel launched directly, or NULL for kiln_sgemm_f32(). */
  const gemm_kernel *direct;
  kiln_kernel *kernel;
  kiln_buffer *a, *bm, *c;
  shape s;
  kiln_launch_config config;
  kiln_arg args[11];
} gemm_state;

/* The columns of C and threads a block of `kernel` on `backend`: CUDA's
 * kiln_sgemm_f32 takes 128 x 256 tiles (docs/kernels.md). */
static void backend_launch(kiln_backend backend, const gemm_kernel *kernel,
                           uint32_t *tile_n, uint32_t *threads) {
  if (kernel == &kernels[0] && backend == KILN_BACKEND_CUDA) *tile_n = 256;
  if (kernel->vulkan_128 && backend == KILN_BACKEND_VULKAN) *threads = 128;
}

static void set_args(gemm_state *g, const shape *s) {
  g->s = *s;
  if (!g->direct) return;
  uint32_t tile_n = g->direct->tile_n, threads = BLOCK;
  backend_launch(g->b->props.backend, g->direct, &tile_n, &threads);
  g->config = kiln_launch_config_1d(1, threads);
  g->config.grid.x = (s->n + tile_n - 1) / tile_n;
  g->config.grid.y = (s->m + g->direct->tile_m - 1) / g->direct->tile_m;
  kiln_arg *a = g->args;
  a[0] = kiln_arg_buffer(g->c, s->c_off * 4);
  a[1] = kiln_arg_buffer(g->a, s->a_off * 4);
  a[2] = kiln_arg_buffer(g->bm, s->b_off * 4);
  a[3] = kiln_arg_u32(s->m);
  a[4] = kiln_arg_u32(s->n);
  a[5] = kiln_arg_u32(s->k);
  a[6] = kiln_arg_u32(s->lda);
  a[7] = kiln_arg_u32(s->ldb);
  a[8] = kiln_arg_u32(s->ldc);
  a[9] = kiln_arg_f32(s->alpha);
  a[10] = kiln_arg_f32(s->beta);
}

static kiln_status sgemm_op(bench *b, void *arg) {
  gemm_state *g = arg;
  const shape *s = &g->s;
  if (g->direct)
    return kiln_launch(b->stream, g->kernel, &g->config, g->args, 11);
  return kiln_sgemm_f32(b->stream, s->m, s->n, s->k, s->alpha, g->a,
                        s->a_off * 4, s->lda, g->bm, s->b_off * 4, s->ldb,
                        s->beta, g->c, s->c_off * 4, s->ldc);
}

/* alpha * (A B)[i][j] + beta * c0 from the generated inputs, and the
 * magnitude of its terms. */
static double reference(const shape *s, size_t i, size_t j, double c0,
                        double *magnitude) {
  double sum = 0.0, size = 0.0;
  for (size_t kk = 0; kk < s->k; kk++) {
    double p = (double)bench_value(BENCH_SEED_A, i * s->lda + kk) *
               bench_value(BENCH_SEED_B, kk * s->ldb + j);
    sum += p;
    size += fabs(p);
  }
  double beta_term = s->beta != 0.0f ? (double)s->beta * c0 : 0.0;
  *magnitude = fabs((double)s->alpha) * size + fabs(beta_term);
  return (double)s->alpha * sum + beta_term;
}

/* Writes the rows x cols matrix `seed` with leading dimension ld at float
 * `offset`, element (i, j) being bench_value(seed, i * ld + j); the padding
 * between rows is left alone. */
static int upload_rows(bench *b, kiln_buffer *buf, size_t offset, size_t rows,
                       size_t cols, size_t ld, uint32_t seed) {
  float *row = malloc(cols * sizeof *row);
  if (row == NULL) {
    fprintf(stderr, "kiln-bench: out of host memory\n");
    return -1;
  }
  kiln_status st = KILN_OK;
  for (size_t i = 0; i < rows && st == KILN_OK; i++) {
    for (size_t j = 0; j < cols; j++) row[j] = bench_value(seed, i * ld + j);
    st =
        kiln_buffer_write(b->stream, buf, (offset + i * ld) * 4, row, cols * 4);
  }
  free(row);
  return st == KILN_OK ? 0 : bench_kiln_error("kiln_buffer_write", st);
}

/* One odd shape, every element of C and its padding columns checked. All
 * of A's and B's buffers outside the matrices (row padding included) hold
 * NaN, so a kernel that reads past an edge gets a NaN in its result. */
static int check_shape(gemm_state *g, const shape *s) {
  bench *b = g->b;
  size_t c_floats = (size_t)s->m * s->ldc;
  float *c = malloc(c_floats * sizeof *c);
  if (c == NULL) {
    fprintf(stderr, "kiln-bench: out of host memory\n");
    return -1;
  }
  int result = -1;
  const uint32_t poison = 0x7fc00000u; /* a quiet NaN */
  kiln_status st;
  if ((st = kiln_buffer_fill(b->stream, g->a, 0, CHECK_FLOATS * 4, &poison,
                             4)) != KILN_OK ||
      (st = kiln_buffer_fill(b->stream, g->bm, 0, CHECK_FLOATS * 4, &poison,
                             4)) != KILN_OK) {
    result = bench_kiln_error("kiln_buffer_fill", st);
    goto out;
  }
  if (upload_rows(b, g->a, s->a_off, s->m, s->k, s->lda, BENCH_SEED_A) ||
      upload_rows(b, g->bm, s->b_off, s->k, s->n, s->ldb, BENCH_SEED_B) ||
      bench_upload(b, g->c, s->c_off * 4, c_floats, SEED_C) != 0)
    goto out;
  set_args(g, s);
  st = sgemm_op(b, g);
  if (st == KILN_OK)
    st = kiln_buffer_read(b->stream, g->c, s->c_off * 4, c, c_floats * 4);
  if (st != KILN_OK) {
    result = bench_kiln_error("kiln_sgemm_f32 check", st);
    goto out;
  }
  unsigned bad = 0;
  for (size_t i = 0; i < s->m; i++) {
    for (size_t j = 0; j < s->ldc; j++) {
      double c0 = bench_value(SEED_C, i * s->ldc + j), magnitude = 0.0;
      double expected = j < s->n ? reference(s, i, j, c0, &magnitude) : c0;
      if (bench_close(c[i * s->ldc + j], expected, magnitude, s->k + 4.0))
        continue;
      if (bad++ < 5)
        fprintf(stderr,
                "kiln-bench: %s %ux%ux%u: C[%zu][%zu] = %.9g, "
                "expected %.9g\n",
                g->direct->name, s->m, s->n, s->k, i, j,
                (double)c[i * s->ldc + j], expected);
    }
  }
  if (bad != 0)
    bench_wrong(b,
                "%s m=%u n=%u k=%u lda=%u ldb=%u ldc=%u: %u of %zu "
                "elements differ",
                g->direct->name, s->m, s->n, s->k, s->lda, s->ldb, s->ldc, bad,
                c_floats);
  result = 0;
out:
  free(c);
  return result;
}

/* A timed product: the corners and SAMPLES spread elements. */
static int check_timed(gemm_state *g, const shape *s) {
  bench *b = g->b;
  unsigned bad = 0;
  for (unsigned t = 0; t < SAMPLES + 4; t++) {
    size_t i, j;
    if (t < 4) {
      i = t & 1 ? s->m - 1 : 0;
      j = t & 2 ? s->n - 1 : 0;
    } else {
      i = (size_t)(bench_value(11, t) * 1e6) % s->m;
      j = (size_t)(bench_value(12, t) * 1e6) % s->n;
    }
    float got;
    BENCH_CHECK(
        kiln_buffer_read(b->stream, g->c, (i * s->ldc + j) * 4, &got, 4));
    double magnitude;
    double expected = reference(s, i, j, 0.0, &magnitude);
    if (!bench_close(got, expected, magnitude, s->k + 4.0) && bad++ < 5)
      fprintf(stderr,
              "kiln-bench: sgemm %ux%ux%u: C[%zu][%zu] = %.9g, "
              "expected %.9g\n",
              s->m, s->n, s->k, i, j, (double)got, expected);
  }
  if (bad != 0)
    bench_wrong(b, "sgemm %ux%ux%u: %u of %u sampled elements differ", s->m,
                s->n, s->k, bad, SAMPLES + 4);
  return 0;
}

typedef struct blas_call {
  cublas *blas;
  uint32_t m, n, k;
  raw_ptr a, b, c;
} blas_call;

static int blas_op(void *arg) {
  blas_call *c = arg;
  return cublas_sgemm(c->blas, c->m, c->n, c->k, c->a, c->k, c->b, c->n, c->c,
                      c->n);
}

/* kiln (g, its inputs uploaded and its arguments set) and cuBLAS on the
 * same shape and inputs, taking turns. */
static int measure_both(gemm_state *g, const shape *s, double *kiln_ms,
                        double *blas_ms) {
  bench *b = g->b;
  size_t a_floats = (size_t)s->m * s->k, b_floats = (size_t)s->k * s->n;
  blas_call c = {b->blas, s->m, s->n, s->k, 0, 0, 0};
  if (cuda_raw_enter(b->raw) != 0) return -1;
  int result = cuda_raw_alloc(b->raw, a_floats * 4, &c.a);
  if (result == 0) result = cuda_raw_alloc(b->raw, b_floats * 4, &c.b);
  if (result == 0)
    result = cuda_raw_alloc(b->raw, (size_t)s->m * s->n * 4, &c.c);
  if (result == 0) result = bench_upload_raw(b, c.a, a_floats, BENCH_SEED_A);
  if (result == 0) result = bench_upload_raw(b, c.b, b_floats, BENCH_SEED_B);
  if (result == 0)
    result = bench_measure_kiln_raw(b, sgemm_op, g, blas_op, &c, kiln_ms,
                                    blas_ms);
  cuda_raw_free(b->raw, c.c);
  cuda_raw_free(b->raw, c.b);
  cuda_raw_free(b->raw, c.a);
  cuda_raw_leave(b->raw);
  return result;
}

/* cuBLAS on kiln's own buffers, queued on kiln's stream through the
 * exported CUdeviceptrs and CUstream (issue 12: using them costs nothing). */
typedef struct blas_on_kiln {
  cublas *blas;
  uint32_t n;
  raw_ptr a, b, c;
} blas_on_kiln;

static kiln_status blas_on_kiln_op(bench *b, void *arg) {
  (void)b;
  blas_on_kiln *c = arg;
  return cublas_sgemm(c->blas, c->n, c->n, c->n, c->a, c->n, c->b, c->n, c->c,
                      c->n) == 0
             ? KILN_OK
             : KILN_ERROR_BACKEND;
}

static int measure_cublas_on_kiln(gemm_state *g, uint32_t n, double *ms) {
  bench *b = g->b;
  kiln_native_stream ns;
  kiln_native_buffer na, nb, nc;
  BENCH_CHECK(kiln_stream_get_native(b->stream, &ns));
  BENCH_CHECK(kiln_buffer_get_native(g->a, &na));
  BENCH_CHECK(kiln_buffer_get_native(g->bm, &nb));
  BENCH_CHECK(kiln_buffer_get_native(g->c, &nc));
  blas_on_kiln c = {b->blas, n, na.device_address, nb.device_address,
                    nc.device_address};
  if (cublas_set_stream(b->blas, b->raw, ns.stream) != 0) return -1;
  int result = bench_measure_kiln(b, blas_on_kiln_op, &c, ms);
  if (cublas_set_stream(b->blas, b->raw, NULL) != 0) result = -1;
  return result;
}

/* Times one product through kiln_sgemm_f32() and cuBLAS, records both
 * (their size being k, the matrix order of a square) and prints the row's
 * cells; *out_gflops gets kiln's figure. */
static int run_shape(gemm_state *g, const shape *s, const char *name,
                     double *out_gflops) {
  bench *b = g->b;
  double flops = 2.0 * (double)s->m * s->n * s->k, ms, blas_ms = -1;
  double kiln_gflops, blas_gflops = -1, on_kiln_gflops = -1;
  if (bench_upload(b, g->a, 0, (size_t)s->m * s->k, BENCH_SEED_A) != 0 ||
      bench_upload(b, g->bm, 0, (size_t)s->k * s->n, BENCH_SEED_B) != 0)
    return -1;
  set_args(g, s);
  const int timed = b->blas != NULL
                        ? measure_both(g, s, &ms, &blas_ms)
                        : bench_measure_kiln(b, sgemm_op, g, &ms);
  if (timed != 0 || check_timed(g, s) != 0) return -1;
  kiln_gflops = flops / (ms * 1e6);
  bench_result r = {"gemm", name, "kiln", s->k, ms, kiln_gflops, "GFLOP/s", 0};
  if (bench_record(b, &r) != 0) return -1;
  if (b->blas != NULL) {
    blas_gflops = flops / (blas_ms * 1e6);
    bench_result c = {"gemm", name, "cublas", s->k, blas_ms, blas_gflops,
                      "GFLOP/s", 0};
    if (bench_record(b, &c) != 0) return -1;
    if (b->props.backend == KILN_BACKEND_CUDA && s->m == s->k && s->n == s->k) {
      if (measure_cublas_on_kiln(g, s->n, &ms) != 0) return -1;
      on_kiln_gflops = flops / (ms * 1e6);
      bench_result k = {"gemm", name,           "cublas-on-kiln", s->k,
                        ms,     on_kiln_gflops, "GFLOP/s", 0};
      if (bench_record(b, &k) != 0) return -1;
    }
  }
  bench_cell(b->out, 11, 1, kiln_gflops);
  bench_cell(b->out, 11, 1, blas_gflops);
  bench_cell(b->out, 13, 3, blas_gflops > 0 ? kiln_gflops / blas_gflops : -1);
  bench_cell(b->out, 16, 3,
             on_kiln_gflops > 0 ? on_kiln_gflops / blas_gflops : -1);
  *out_gflops = kiln_gflops;
  return 0;
}

/* Every kernel launched directly on the odd shapes of `checks`. */
static int check_kernels(gemm_state *g) {
  bench *b = g->b;
  for (size_t v = 0; v < KERNELS; v++) {
    g->direct = &kernels[v];
    BENCH_CHECK(
        kiln_module_get_kernel(b->builtins, kernels[v].name, &g->kernel));
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
      if (check_shape(g, &checks[i]) != 0) return -1;
  }
  g->direct = NULL;
  return 0;
}

static int run(gemm_state *g, uint32_t first, uint32_t largest, size_t floats) {
  bench *b = g->b;
  if (check_kernels(g) != 0) return -1;
  fprintf(b->out,
          "\ngemm: sgemm, float32 FMA (no tensor cores), GFLOP/s, median of "
          "%u\n%7s %11s %11s %13s %16s\n",
          b->opt.repeat, "n", "kiln", "cuBLAS", "kiln/cuBLAS", "on kiln/own");
  /* kiln's figure for each square size, by log2(n). */
  double square[32] = {0};
  for (uint32_t n = first; n <= largest; n *= 2) {
    shape s = {n, n, n, n, n, n, 1.0f, 0.0f, 0, 0, 0};
    fprintf(b->out, "%7u", n);
    if (run_shape(g, &s, "sgemm", &square[log2_of(n)]) != 0) return -1;
    fprintf(b->out, "\n");
  }
  fprintf(b->out,
          "\ngemm: sgemm, other shapes (m x n x k), GFLOP/s; the last column "
          "is kiln's\nfigure over its figure for the square size of the "
          "nearest flop count\n%16s %11s %11s %13s %16s %14s\n",
          "m x n x k", "kiln", "cuBLAS", "kiln/cuBLAS", "on kiln/own",
          "kiln/square");
  for (size_t i = 0; i < ODD; i++) {
    const odd_shape *d = b->opt.quick ? &quick_odd[i] : &odd[i];
    shape s = {d->m, d->n, d->k, d->k, d->n, d->n, 1.0f, 0.0f, 0, 0, 0};
    if ((size_t)s.m * s.k > floats || (size_t)s.k * s.n > floats ||
        (size_t)s.m * s.n > floats)
      continue;
    /* The square of the nearest flop count: n = cbrt(m n k), rounded to a
     * power of two in log scale. */
    double cube = cbrt((double)s.m * s.n * s.k);
    uint32_t near = 1u << (uint32_t)lround(log2(cube));
    fprintf(b->out, "%16s", d->name + strlen("sgemm-"));
    double gflops;
    if (run_shape(g, &s, d->name, &gflops) != 0) return -1;
    double base =
        near >= first && near <= largest ? square[log2_of(near)] : 0.0;
    bench_cell(b->out, 9, 3, base > 0 ? gflops / base : -1);
    fprintf(b->out, " (n=%u)\n", near);
  }
  return 0;
}

int bench_gemm(bench *b) {
  gemm_state g;
  memset(&g, 0, sizeof g);
  g.b = b;
  uint32_t first = b->opt.quick ? QUICK_FIRST : FIRST;
  uint32_t largest = b->opt.quick ? QUICK_LAST : LAST;
  while ((size_t)largest * largest * 4 > b->opt.max_bytes && largest > first)
    largest /= 2;
  size_t floats = (size_t)largest * largest;
  if (floats < CHECK_FLOATS) floats = CHECK_FLOATS;
  kiln_status st;
  int result = -1;
  if ((st = kiln_buffer_create(b->ctx, floats * 4, 0, &g.a)) != KILN_OK ||
      (st = kiln_buffer_create(b->ctx, floats * 4, 0, &g.bm)) != KILN_OK ||
      (st = kiln_buffer_create(b->ctx, floats * 4, 0, &g.c)) != KILN_OK)
    bench_kiln_error("kiln_buffer_create", st);
  else
    result = run(&g, first, largest, floats);
  kiln_buffer *buffers[] = {g.c, g.bm, g.a};
  for (size_t i = 0; i < 3; i++)
    if ((st = kiln_buffer_destroy(buffers[i])) != KILN_OK)
      result = bench_kiln_error("kiln_buffer_destroy", st);
  return result;
}
