/* HGEMM: row-major C = A B with A and B in binary16 and C in float32,
 * square matrices of 256 to 8192, through kiln_hgemm_f16() (the matrix
 * units where the device has them) and through cuBLAS's cublasGemmEx with
 * the same types (f16 inputs, f32 output and sums, CUBLAS_COMPUTE_32F), in
 * GFLOP/s. Before timing, odd shapes check every element against a double
 * reference; every timed product is checked at sampled elements. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cuda_raw.h"

#define FIRST 256u
#define LAST 8192u
#define QUICK_FIRST 64u
#define QUICK_LAST 256u
#define SAMPLES 64u

/* The binary16 nearest to v, for the inputs' range ([0.5, 1.5): normal
 * halves, no overflow). */
static uint16_t half_of(float v) {
  uint32_t x;
  memcpy(&x, &v, 4);
  uint32_t h = (((x >> 23) & 0xffu) - 112u) << 10 | ((x >> 13) & 0x3ffu);
  const uint32_t rest = x & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(((x >> 16) & 0x8000u) | h);
}

static double value_of(uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  return (1024.0 + (h & 0x3ff)) * ldexp(1.0, exp - 25);
}

/* Element i of the input `seed`, as a half. */
static uint16_t input(uint32_t seed, size_t i) {
  return half_of(bench_value(seed, i));
}

typedef struct shape {
  uint32_t m, n, k;
} shape;

typedef struct hgemm_state {
  bench *b;
  kiln_buffer *a, *bm, *c;
  shape s;
} hgemm_state;

static kiln_status hgemm_op(bench *b, void *arg) {
  hgemm_state *g = arg;
  const shape *s = &g->s;
  return kiln_hgemm_f16(b->stream, s->m, s->n, s->k, 1.0f, g->a, 0, s->k, g->bm,
                        0, s->n, 0.0f, g->c, 0, s->n);
}

/* Writes the rows x cols halves of input `seed` to kiln's `buf`, or where
 * buf is NULL to the raw CUDA allocation `raw` (cuBLAS's, as
 * bench_upload_raw). */
static int upload(bench *b, kiln_buffer *buf, raw_ptr raw, size_t rows,
                  size_t cols, uint32_t seed) {
  const size_t chunk = (size_t)1 << 20;
  const size_t total = rows * cols;
  uint16_t *h = malloc((total < chunk ? total : chunk) * sizeof *h);
  if (h == NULL) {
    fprintf(stderr, "kiln-bench: out of host memory\n");
    return -1;
  }
  int result = 0;
  for (size_t at = 0; at < total && result == 0; at += chunk) {
    const size_t n = total - at < chunk ? total - at : chunk;
    for (size_t i = 0; i < n; i++) h[i] = input(seed, at + i);
    if (buf == NULL) {
      result = cuda_raw_htod(b->raw, raw + at * 2, h, n * 2);
      continue;
    }
    kiln_status st = kiln_buffer_write(b->stream, buf, at * 2, h, n * 2);
    if (st != KILN_OK) result = bench_kiln_error("kiln_buffer_write", st);
  }
  free(h);
  return result;
}

/* (A B)[i][j] and the sum of its terms' magnitudes (all positive). */
static double reference(const shape *s, size_t i, size_t j) {
  double sum = 0.0;
  for (size_t l = 0; l < s->k; l++)
    sum += value_of(input(BENCH_SEED_A, i * s->k + l)) *
           value_of(input(BENCH_SEED_B, l * s->n + j));
  return sum;
}

/* Element (i, j) of C is the reference within float32 sums of k terms. */
static int check_element(hgemm_state *g, size_t i, size_t j, unsigned *bad) {
  const shape *s = &g->s;
  float got;
  BENCH_CHECK(
      kiln_buffer_read(g->b->stream, g->c, (i * s->n + j) * 4, &got, 4));
  const double expected = reference(s, i, j);
  if (!bench_close(got, expected, expected, s->k + 4.0) && (*bad)++ < 5)
    fprintf(stderr,
            "kiln-bench: hgemm %ux%ux%u: C[%zu][%zu] = %.9g, expected "
            "%.9g\n",
            s->m, s->n, s->k, i, j, (double)got, expected);
  return 0;
}

/* The corners and SAMPLES spread elements, or every element. */
static int check(hgemm_state *g, bool every) {
  const shape *s = &g->s;
  unsigned bad = 0, checked = 0;
  if (every) {
    for (size_t i = 0; i < s->m; i++)
      for (size_t j = 0; j < s->n; j++, checked++)
        if (check_element(g, i, j, &bad) != 0) return -1;
  } else {
    for (unsigned t = 0; t < SAMPLES + 4; t++, checked++) {
      size_t i = t & 1 ? s->m - 1 : 0, j = t & 2 ? s->n - 1 : 0;
      if (t >= 4) {
        i = (size_t)(bench_value(11, t) * 1e6) % s->m;
        j = (size_t)(bench_value(12, t) * 1e6) % s->n;
      }
      if (check_element(g, i, j, &bad) != 0) return -1;
    }
  }
  if (bad != 0)
    bench_wrong(g->b, "hgemm %ux%ux%u: %u of %u checked elements differ", s->m,
                s->n, s->k, bad, checked);
  return 0;
}

typedef struct blas_call {
  cublas *blas;
  shape s;
  raw_ptr a, b, c;
} blas_call;

static int blas_op(void *arg) {
  blas_call *c = arg;
  return cublas_hgemm(c->blas, c->s.m, c->s.n, c->s.k, c->a, c->s.k, c->b,
                      c->s.n, c->c, c->s.n);
}

/* kiln (g, its inputs uploaded) and cuBLAS on the same shape and inputs,
 * taking turns. */
static int measure_both(hgemm_state *g, const shape *s, double *kiln_ms,
                        double *blas_ms) {
  bench *b = g->b;
  size_t a_halves = (size_t)s->m * s->k, b_halves = (size_t)s->k * s->n;
  blas_call c = {b->blas, *s, 0, 0, 0};
  if (cuda_raw_enter(b->raw) != 0) return -1;
  int result = cuda_raw_alloc(b->raw, a_halves * 2, &c.a);
  if (result == 0) result = cuda_raw_alloc(b->raw, b_halves * 2, &c.b);
  if (result == 0)
    result = cuda_raw_alloc(b->raw, (size_t)s->m * s->n * 4, &c.c);
  if (result == 0) result = upload(b, NULL, c.a, s->m, s->k, BENCH_SEED_A);
  if (result == 0) result = upload(b, NULL, c.b, s->k, s->n, BENCH_SEED_B);
  if (result == 0)
    result = bench_measure_kiln_raw(b, hgemm_op, g, blas_op, &c, kiln_ms,
                                    blas_ms);
  cuda_raw_free(b->raw, c.c);
  cuda_raw_free(b->raw, c.b);
  cuda_raw_free(b->raw, c.a);
  cuda_raw_leave(b->raw);
  return result;
}

static int run_shape(hgemm_state *g, const shape *s) {
  bench *b = g->b;
  const double flops = 2.0 * (double)s->m * s->n * s->k;
  double ms, blas_ms = -1.0, blas_gflops = -1.0;
  g->s = *s;
  if (upload(b, g->a, 0, s->m, s->k, BENCH_SEED_A) != 0 ||
      upload(b, g->bm, 0, s->k, s->n, BENCH_SEED_B) != 0)
    return -1;
  const int timed = b->blas != NULL && cublas_has_hgemm(b->blas)
                        ? measure_both(g, s, &ms, &blas_ms)
                        : bench_measure_kiln(b, hgemm_op, g, &ms);
  if (timed != 0 || check(g, false) != 0) return -1;
  const double kiln_gflops = flops / (ms * 1e6);
  bench_result r = {"hgemm", "hgemm", "kiln", s->k, ms, kiln_gflops,
                    "GFLOP/s", 0};
  if (bench_record(b, &r) != 0) return -1;
  if (blas_ms > 0.0) {
    blas_gflops = flops / (blas_ms * 1e6);
    bench_result c = {"hgemm", "hgemm",     "cublas", s->k,
                      blas_ms, blas_gflops, "GFLOP/s", 0};
    if (bench_record(b, &c) != 0) return -1;
  }
  fprintf(b->out, "%7u", s->n);
  bench_cell(b->out, 11, 1, kiln_gflops);
  bench_cell(b->out, 11, 1, blas_gflops);
  bench_cell(b->out, 13, 3, blas_gflops > 0 ? kiln_gflops / blas_gflops : -1);
  fprintf(b->out, "\n");
  return 0;
}

/* Odd shapes, every element checked: edge tiles in m, n and k. */
static const shape checks[] = {{1, 1, 1}, {130, 270, 100}, {67, 300, 520}};

static int run(hgemm_state *g, uint32_t first, uint32_t largest) {
  bench *b = g->b;
  for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
    g->s = checks[i];
    if (upload(b, g->a, 0, g->s.m, g->s.k, BENCH_SEED_A) != 0 ||
        upload(b, g->bm, 0, g->s.k, g->s.n, BENCH_SEED_B) != 0)
      return -1;
    BENCH_CHECK(hgemm_op(b, g));
    if (check(g, true) != 0) return -1;
  }
  fprintf(b->out,
          "\nhgemm: f16 inputs, f32 sums and output, GFLOP/s, median of %u\n"
          "%7s %11s %11s %13s\n",
          b->opt.repeat, "n", "kiln", "cuBLAS", "kiln/cuBLAS");
  for (uint32_t n = first; n <= largest; n *= 2) {
    shape s = {n, n, n};
    if (run_shape(g, &s) != 0) return -1;
  }
  return 0;
}

int bench_hgemm(bench *b) {
  uint32_t first = b->opt.quick ? QUICK_FIRST : FIRST;
  uint32_t largest = b->opt.quick ? QUICK_LAST : LAST;
  while (largest > first && (size_t)largest * largest * 4 > b->opt.max_bytes)
    largest /= 2;
  size_t elems = (size_t)largest * largest;
  for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
    const shape *s = &checks[i];
    const size_t most = s->k * (s->m > s->n ? s->m : s->n);
    if (elems < most) elems = most;
    if (elems < (size_t)s->m * s->n) elems = (size_t)s->m * s->n;
  }
  hgemm_state g = {b, NULL, NULL, NULL, {0, 0, 0}};
  kiln_status st = kiln_buffer_create(b->ctx, elems * 2, 0, &g.a);
  if (st == KILN_OK) st = kiln_buffer_create(b->ctx, elems * 2, 0, &g.bm);
  if (st == KILN_OK) st = kiln_buffer_create(b->ctx, elems * 4, 0, &g.c);
  int result = st == KILN_OK ? run(&g, first, largest)
                             : bench_kiln_error("kiln_buffer_create", st);
  kiln_buffer_destroy(g.a);
  kiln_buffer_destroy(g.bm);
  kiln_buffer_destroy(g.c);
  return result;
}
