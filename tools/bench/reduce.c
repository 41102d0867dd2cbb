/* Reduction: the float32 sum of arrays of 2^16 to 2^28 elements through
 * kiln_reduce_sum_f32(), through the raw driver with the same launch of the
 * same kernel, and against the copy ceiling. GB/s count the bytes read, 4
 * per element. */
#include <string.h>

#include "bench.h"
#include "cuda_raw.h"

/* core/builtins/builtin.c's helper: one launch of bench_reduce_blocks(n) (at most
 * 1024) blocks of 256 threads, whose last block adds the blocks' sums up;
 * the ticket counter follows their slots, all 0 between reductions. */
#define BLOCK 256u
#define MAX_BLOCKS 1024u

typedef struct reduce_state {
  bench *b;
  kiln_buffer *x, *result;
  void *function;
  raw_ptr rx, slots, rresult;
} reduce_state;

typedef struct kiln_call {
  reduce_state *s;
  size_t n, offset;
} kiln_call;

static kiln_status kiln_op(bench *b, void *arg) {
  kiln_call *k = arg;
  return kiln_reduce_sum_f32(b->stream, k->n, k->s->x, k->offset,
                             k->s->result, 0);
}

typedef struct raw_call {
  reduce_state *s;
  uint32_t n, blocks;
  raw_ptr tickets;
  void *params[5];
} raw_call;

static int raw_op(void *arg) {
  raw_call *r = arg;
  return cuda_raw_launch(r->s->b->raw, r->s->function, r->blocks, 1, BLOCK,
                         r->params);
}

static int measure_raw(reduce_state *s, size_t n, double *ms) {
  raw_call r;
  r.s = s;
  r.n = (uint32_t)n;
  r.blocks = bench_reduce_blocks(n);
  r.params[0] = &s->slots;
  r.params[1] = &s->rx;
  r.params[2] = &s->rresult;
  r.tickets = s->slots + MAX_BLOCKS * 4;
  r.params[3] = &r.tickets;
  r.params[4] = &r.n;
  if (cuda_raw_enter(s->b->raw) != 0) return -1;
  int result = bench_measure_raw(s->b, raw_op, &r, ms);
  cuda_raw_leave(s->b->raw);
  return result;
}

/* The sum at s->result is sums->sum, within the roundings of its order. */
static int check_sum(reduce_state *s, size_t n, const bench_sums *sums,
                     const char *what) {
  float got;
  BENCH_CHECK(kiln_buffer_read(s->b->stream, s->result, 0, &got, 4));
  if (!bench_close(got, sums->sum, sums->sum, bench_sum_roundings(n)))
    bench_wrong(s->b, "sum of %zu elements%s is %.9g, expected %.9g", n,
                what, (double)got, sums->sum);
  return 0;
}

static int run_size(reduce_state *s, size_t n, const bench_sums *sums) {
  bench *b = s->b;
  kiln_call k = {s, n, 0};
  double ms, kiln_gbps, raw_gbps = -1.0, ceiling;
  double bytes = (double)n * sizeof(float);
  if (bench_measure_kiln(b, kiln_op, &k, &ms) != 0 ||
      check_sum(s, n, sums, "") != 0)
    return -1;
  kiln_gbps = bytes / (ms * 1e6);
  bench_result r = {"reduce", "sum", "kiln", n, ms, kiln_gbps, "GB/s",
                    (size_t)bytes};
  if (bench_record(b, &r) != 0) return -1;
  if (s->function != NULL) {
    if (measure_raw(s, n, &ms) != 0) return -1;
    raw_gbps = bytes / (ms * 1e6);
    bench_result raw = {"reduce", "sum", "cuda-raw", n, ms, raw_gbps,
                        "GB/s", (size_t)bytes};
    if (bench_record(b, &raw) != 0) return -1;
  }
  if (bench_ceiling(b, n, &ceiling) != 0) return -1;

  char size[32];
  fprintf(b->out, "%11zu %9s", n,
          bench_bytes_text(n * sizeof(float), size, sizeof size));
  bench_cell(b->out, 9, 1, kiln_gbps);
  bench_cell(b->out, 9, 1, raw_gbps);
  bench_cell(b->out, 9, 1, ceiling);
  bench_cell(b->out, 13, 3, ceiling > 0.0 ? kiln_gbps / ceiling : -1.0);
  fprintf(b->out, "\n");
  return 0;
}

static int raw_setup(reduce_state *s, size_t n) {
  cuda_raw *raw = s->b->raw;
  if (cuda_raw_enter(raw) != 0) return -1;
  int result = 0;
  if (cuda_raw_function(raw, "kiln_reduce_sum_f32", &s->function) != 0) {
    s->function = NULL;
    cuda_raw_no_kernel("reduce", "kiln_reduce_sum_f32");
  } else if (cuda_raw_alloc(raw, n * sizeof(float), &s->rx) != 0 ||
             cuda_raw_alloc(raw, (MAX_BLOCKS + 1) * 4, &s->slots) != 0 ||
             cuda_raw_fill32(raw, s->slots, 0, MAX_BLOCKS + 1) != 0 ||
             cuda_raw_alloc(raw, 4, &s->rresult) != 0 ||
             cuda_raw_fill32(raw, s->rx, 0x3f800000u, n) != 0 ||
             cuda_raw_sync(raw) != 0) {
    result = -1;
  }
  cuda_raw_leave(raw);
  return result;
}

static void raw_teardown(reduce_state *s) {
  cuda_raw *raw = s->b->raw;
  if (raw == NULL || cuda_raw_enter(raw) != 0) return;
  cuda_raw_free(raw, s->rx);
  cuda_raw_free(raw, s->slots);
  cuda_raw_free(raw, s->rresult);
  cuda_raw_leave(raw);
}

static int run(reduce_state *s, size_t largest) {
  bench *b = s->b;
  /* An odd n one float into the buffer: the unaligned path and the tail. */
  size_t check_n = bench_array_sweep(b).check_n;
  bench_sums sums = {0, 0.0, 0.0};
  bench_sums_extend(&sums, check_n);
  kiln_call k = {s, check_n, sizeof(float)};
  if (bench_upload(b, s->x, sizeof(float), check_n, BENCH_SEED_A) != 0)
    return -1;
  BENCH_CHECK(kiln_op(b, &k));
  if (check_sum(s, check_n, &sums, " (unaligned)") != 0) return -1;

  if (b->raw != NULL && raw_setup(s, largest) != 0) return -1;
  if (bench_upload(b, s->x, 0, largest, BENCH_SEED_A) != 0) return -1;
  fprintf(b->out,
          "\nreduce: sum, GB/s (bytes read), median of %u\n%11s %9s %9s "
          "%9s %9s %13s\n",
          b->opt.repeat, "n", "array", "kiln", "raw CUDA", "ceiling",
          "kiln/ceiling");
  const bench_sweep w = bench_array_sweep(b);
  sums = (bench_sums){0, 0.0, 0.0};
  for (unsigned lg = w.first_log2; lg <= w.last_log2; lg += w.step) {
    size_t n = (size_t)1 << lg;
    if (n > largest) break;
    bench_sums_extend(&sums, n);
    if (run_size(s, n, &sums) != 0) return -1;
  }
  return 0;
}

int bench_reduce(bench *b) {
  reduce_state s;
  memset(&s, 0, sizeof s);
  s.b = b;
  const bench_sweep w = bench_array_sweep(b);
  const size_t largest = w.largest, check_n = w.check_n;
  size_t floats = (largest > check_n + 1 ? largest : check_n + 1);
  kiln_status st;
  int result = -1;
  if ((st = kiln_buffer_create(b->ctx, floats * sizeof(float), 0, &s.x)) !=
          KILN_OK ||
      (st = kiln_buffer_create(b->ctx, 4, 0, &s.result)) != KILN_OK)
    bench_kiln_error("kiln_buffer_create", st);
  else
    result = run(&s, largest);
  raw_teardown(&s);
  if ((st = kiln_buffer_destroy(s.result)) != KILN_OK ||
      (st = kiln_buffer_destroy(s.x)) != KILN_OK)
    result = bench_kiln_error("kiln_buffer_destroy", st);
  return result;
}
