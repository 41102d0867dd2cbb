/* How every figure is timed: warm up, size a batch so one sample lasts
 * long enough for the clock, take opt.repeat samples, report the median. */
#include <stdlib.h>
#include <time.h>

#include "bench.h"
#include "cuda_raw.h"

/* The time one sample aims at, and the most operations it may batch. */
#define TARGET_MS 20.0
#define QUICK_TARGET_MS 1.0
#define MAX_BATCH 10000u
#define QUICK_MAX_BATCH 16u

double bench_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double bench_median(double *v, size_t n) {
  qsort(v, n, sizeof *v, compare_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int bench_measure_turns(const bench *b, const bench_turn *turns, size_t n,
                        double *ms_per_op) {
  double target = b->opt.quick ? QUICK_TARGET_MS : TARGET_MS;
  unsigned most = b->opt.quick ? QUICK_MAX_BATCH : MAX_BATCH;
  unsigned iters[BENCH_MAX_TURNS];
  if (n == 0 || n > BENCH_MAX_TURNS) return -1;
  /* The warm-up run pays for first use (pipeline creation, page mapping,
   * clocks ramping up); the second sizes the batch. */
  for (size_t t = 0; t < n; t++) {
    double first = 0.0;
    if (turns[t].batch(turns[t].self, 1, &first) != 0 ||
        turns[t].batch(turns[t].self, 1, &first) != 0)
      return -1;
    iters[t] = most;
    if (first > 0.0 && target / first < most)
      iters[t] = target / first < 1.0 ? 1u : (unsigned)(target / first);
  }
  double *samples = malloc(n * b->opt.repeat * sizeof *samples);
  if (samples == NULL) {
    fprintf(stderr, "kiln-bench: out of host memory\n");
    return -1;
  }
  /* Each round runs every operation once, in turn, the order reversed
   * every other round: a drift of the clocks (a GPU at its power cap
   * moves by a tenth within seconds) reaches all of them alike. */
  for (unsigned r = 0; r < b->opt.repeat; r++) {
    for (size_t i = 0; i < n; i++) {
      const size_t t = r % 2 ? n - 1 - i : i;
      double ms = 0.0;
      if (turns[t].batch(turns[t].self, iters[t], &ms) != 0) {
        free(samples);
        return -1;
      }
      samples[t * b->opt.repeat + r] = ms / iters[t];
    }
  }
  for (size_t t = 0; t < n; t++)
    ms_per_op[t] = bench_median(samples + t * b->opt.repeat, b->opt.repeat);
  free(samples);
  return 0;
}

int bench_measure(const bench *b, bench_batch_fn batch, void *self,
                  double *ms_per_op) {
  const bench_turn turn = {batch, self};
  return bench_measure_turns(b, &turn, 1, ms_per_op);
}

typedef struct kiln_batch {
  bench *b;
  bench_kiln_op op;
  void *arg;
} kiln_batch;

static int time_kiln_batch(void *self, unsigned iters, double *ms) {
  kiln_batch *k = self;
  bench *b = k->b;
  BENCH_CHECK(kiln_event_record(b->start, b->stream));
  for (unsigned i = 0; i < iters; i++) {
    kiln_status st = k->op(b, k->arg);
    if (st != KILN_OK) return bench_kiln_error("a timed operation", st);
  }
  BENCH_CHECK(kiln_event_record(b->end, b->stream));
  BENCH_CHECK(kiln_event_synchronize(b->end));
  float elapsed = 0.0f;
  BENCH_CHECK(kiln_event_elapsed_ms(b->start, b->end, &elapsed));
  *ms = elapsed;
  return 0;
}

int bench_measure_kiln(bench *b, bench_kiln_op op, void *arg,
                       double *ms_per_op) {
  kiln_batch k = {b, op, arg};
  return bench_measure(b, time_kiln_batch, &k, ms_per_op);
}

typedef struct raw_batch {
  cuda_raw *raw;
  int (*queue)(void *arg);
  void *arg;
} raw_batch;

static int time_raw_batch(void *self, unsigned iters, double *ms) {
  raw_batch *r = self;
  return cuda_raw_time(r->raw, r->queue, r->arg, iters, ms);
}

int bench_measure_raw(const bench *b, int (*queue)(void *arg), void *arg,
                      double *ms_per_op) {
  raw_batch r = {b->raw, queue, arg};
  return bench_measure(b, time_raw_batch, &r, ms_per_op);
}

int bench_measure_kiln_raw(bench *b, bench_kiln_op op, void *arg,
                           int (*queue)(void *arg), void *raw_arg,
                           double *kiln_ms, double *raw_ms) {
  kiln_batch k = {b, op, arg};
  raw_batch r = {b->raw, queue, raw_arg};
  const bench_turn turns[2] = {{time_kiln_batch, &k}, {time_raw_batch, &r}};
  double ms[2];
  if (bench_measure_turns(b, turns, 2, ms) != 0) return -1;
  *kiln_ms = ms[0];
  *raw_ms = ms[1];
  return 0;
}

bench_sweep bench_array_sweep(const bench *b) {
  bench_sweep w;
  w.first_log2 = b->opt.quick ? 10u : 16u;
  w.last_log2 = b->opt.quick ? 16u : 28u;
  w.step = b->opt.quick ? 2u : 1u;
  w.largest = (size_t)1 << w.last_log2;
  while (w.largest * sizeof(float) > b->opt.max_bytes && w.largest > 1)
    w.largest /= 2;
  w.check_n = b->opt.quick ? 4099u : 1000003u;
  return w;
}
