/* Test data and result checks. Arrays are generated from their index, so
 * an element can be checked without keeping a host copy of a 1 GiB array,
 * and a kernel that reads the wrong element gets a different value. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>

#include "bench.h"
#include "cuda_raw.h"

/* Elements per upload chunk, and the sampling of large arrays. */
#define CHUNK ((size_t)1 << 20)
#define FULL_CHECK_LIMIT ((size_t)1 << 20)
#define SAMPLE_RUNS 256u
#define SAMPLE_RUN_LENGTH 64u
#define SHOWN_MISMATCHES 5u

/* A 32-bit integer hash with good avalanche (xor-shift-multiply). */
static uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

float bench_value(uint32_t seed, size_t i) {
  uint32_t h = mix((uint32_t)i ^ mix(seed ^ (uint32_t)((uint64_t)i >> 32)));
  /* 23 random bits: exactly representable, in [0.5, 1.5). */
  return 0.5f + (float)(h >> 9) * (1.0f / 8388608.0f);
}

void bench_sums_extend(bench_sums *s, size_t n) {
  for (; s->n < n; s->n++) {
    double a = bench_value(BENCH_SEED_A, s->n);
    s->sum += a;
    s->dot += a * (double)bench_value(BENCH_SEED_B, s->n);
  }
}

uint32_t bench_reduce_blocks(size_t n) {
  const size_t most = n > ((size_t)1 << 23) ? 1024 : 512;
  const size_t g = (n + 2047) / 2048;
  return (uint32_t)(g == 0 ? 1 : g > most ? most : g);
}

double bench_sum_roundings(size_t n) {
  const size_t threads = (size_t)bench_reduce_blocks(n) * 256;
  return 2.0 * (double)((n + threads - 1) / threads + 32);
}

/* Writes bench_value(seed, i) for i < n, a chunk at a time, to kiln's
 * `buf` from byte `offset`, or where buf is NULL to the raw CUDA
 * allocation `raw`. */
static int upload(bench *b, kiln_buffer *buf, size_t offset, uint64_t raw,
                  size_t n, uint32_t seed) {
  size_t chunk = n < CHUNK ? n : CHUNK;
  float *host = malloc(chunk * sizeof *host);
  if (host == NULL) {
    fprintf(stderr, "kiln-bench: out of host memory\n");
    return -1;
  }
  int result = 0;
  for (size_t done = 0; done < n && result == 0; done += chunk) {
    size_t count = n - done < chunk ? n - done : chunk;
    for (size_t i = 0; i < count; i++) host[i] = bench_value(seed, done + i);
    const size_t at = done * sizeof(float), bytes = count * sizeof(float);
    if (buf == NULL) {
      result = cuda_raw_htod(b->raw, raw + at, host, bytes);
      continue;
    }
    kiln_status st = kiln_buffer_write(b->stream, buf, offset + at, host,
                                       bytes);
    if (st != KILN_OK) result = bench_kiln_error("kiln_buffer_write", st);
  }
  free(host);
  return result;
}

int bench_upload(bench *b, kiln_buffer *buf, size_t offset, size_t n,
                 uint32_t seed) {
  return upload(b, buf, offset, 0, n, seed);
}

int bench_upload_raw(bench *b, uint64_t dst, size_t n, uint32_t seed) {
  return upload(b, NULL, 0, dst, n, seed);
}

bool bench_close(double got, double expected, double magnitude,
                 double roundings) {
  /* One float32 rounding errs by at most half an ulp, FLT_EPSILON / 2 of
   * the magnitude. */
  double error = fabs(got - expected);
  return error <= roundings * 0.5 * FLT_EPSILON * magnitude + FLT_MIN;
}

void bench_wrong(bench *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "kiln-bench: WRONG: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  b->wrong++;
}

/* Checks floats [first, first + count) of `buf`. */
static int verify_run(bench *b, const char *what, const kiln_buffer *buf,
                      size_t offset, size_t first, size_t count,
                      float *host, bench_expect_fn expect, const void *arg,
                      unsigned *mismatches) {
  BENCH_CHECK(kiln_buffer_read(b->stream, buf,
                               offset + first * sizeof(float), host,
                               count * sizeof(float)));
  for (size_t i = 0; i < count; i++) {
    double magnitude = 0.0;
    double expected = expect(arg, first + i, &magnitude);
    /* A few roundings: the device may fuse a multiply-add or not. */
    if (bench_close(host[i], expected, magnitude, 8.0)) continue;
    if (*mismatches < SHOWN_MISMATCHES)
      fprintf(stderr, "kiln-bench: %s: element %zu is %.9g, expected %.9g\n",
              what, first + i, (double)host[i], expected);
    ++*mismatches;
  }
  return 0;
}

int bench_verify(bench *b, const char *what, const kiln_buffer *buf,
                 size_t offset, size_t n, bench_expect_fn expect,
                 const void *arg) {
  size_t longest = n <= FULL_CHECK_LIMIT ? n : SAMPLE_RUN_LENGTH;
  float *host = malloc((longest ? longest : 1) * sizeof *host);
  if (host == NULL) {
    fprintf(stderr, "kiln-bench: out of host memory\n");
    return -1;
  }
  unsigned mismatches = 0;
  int result = 0;
  if (n <= FULL_CHECK_LIMIT) {
    result = verify_run(b, what, buf, offset, 0, n, host, expect, arg,
                        &mismatches);
  } else {
    /* Evenly spread runs, the last one ending at the last element. */
    for (unsigned r = 0; r < SAMPLE_RUNS && result == 0; r++) {
      size_t first = (n - SAMPLE_RUN_LENGTH) / (SAMPLE_RUNS - 1) * r;
      if (r == SAMPLE_RUNS - 1) first = n - SAMPLE_RUN_LENGTH;
      result = verify_run(b, what, buf, offset, first, SAMPLE_RUN_LENGTH,
                          host, expect, arg, &mismatches);
    }
  }
  free(host);
  size_t checked = n <= FULL_CHECK_LIMIT
                       ? n
                       : (size_t)SAMPLE_RUNS * SAMPLE_RUN_LENGTH;
  if (result == 0 && mismatches != 0)
    bench_wrong(b, "%s: %u of the %zu elements checked differ", what,
                mismatches, checked);
  return result;
}
