/* Streaming bandwidth: BabelStream's kernels (copy, mul, add, triad, dot)
 * on float32 arrays of 2^16 to 2^28 elements, through kiln's built-in
 * kernels, through the raw driver with the same kernels, and against the
 * device's copy ceiling (cuMemcpyDtoD). GB/s count bytes read plus written
 * per element: 8 for copy, mul and dot, 12 for add and triad. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cuda_raw.h"

#define BLOCK 256u
#define SCALAR 0.4f /* BabelStream's */
/* Floats around a checked output that must keep SENTINEL. */
#define GUARD 4u
#define SENTINEL 0x7fc0deadu /* a quiet NaN: never a computed value */
/* The core's reduction helpers: one launch of bench_reduce_blocks(n) (at
 * most 1024) blocks of 256 threads, whose last block adds the blocks' sums
 * up; the ticket counter follows their slots, all 0 between reductions
 * (core/builtins/builtin.c). */
#define REDUCE_BLOCK 256u
#define REDUCE_MAX_BLOCKS 1024u

enum op { OP_COPY, OP_MUL, OP_ADD, OP_TRIAD, OP_DOT, OP_COUNT };

static const struct {
  const char *name;   /* BabelStream's */
  const char *kernel; /* kiln's built-in kernel */
  unsigned inputs;
  bool scalar;
  unsigned bytes; /* read + written per element */
} ops[OP_COUNT] = {
    [OP_COPY] = {"copy", "kiln_copy_f32", 1, false, 8},
    [OP_MUL] = {"mul", "kiln_scale_f32", 1, true, 8},
    [OP_ADD] = {"add", "kiln_add_f32", 2, false, 12},
    [OP_TRIAD] = {"triad", "kiln_triad_f32", 2, true, 12},
    [OP_DOT] = {"dot", "kiln_dot_f32", 2, false, 8},
};

typedef struct stream_state {
  bench *b;
  kiln_kernel *kernel[OP_COUNT];
  kiln_buffer *a, *bb, *c, *result;
  size_t capacity; /* floats in a, bb and c */
  /* The raw comparator's copies, and its kernels. */
  void *function[OP_COUNT];
  raw_ptr ra, rb, rc, slots, rresult;
} stream_state;

/* Blocks of BLOCK threads, one float4 per thread; the kernels loop
 * grid-stride where the device's grid limit cuts this short. */
static uint32_t grid_for(const bench *b, size_t n) {
  size_t blocks = (n + 4 * BLOCK - 1) / (4 * BLOCK);
  if (blocks == 0) blocks = 1;
  if (blocks > b->props.max_grid_size[0]) blocks = b->props.max_grid_size[0];
  return (uint32_t)blocks;
}

/* ---- one kiln operation -------------------------------------------------- */

typedef struct kiln_call {
  stream_state *s;
  enum op op;
  size_t n;
  size_t a_off, b_off, c_off; /* bytes */
  kiln_launch_config config;
  kiln_arg args[5];
  size_t count;
} kiln_call;

static void kiln_call_init(kiln_call *k, stream_state *s, enum op op,
                           size_t n, size_t a_off, size_t b_off,
                           size_t c_off) {
  *k = (kiln_call){.s = s, .op = op, .n = n, .a_off = a_off,
                   .b_off = b_off, .c_off = c_off};
  k->config = kiln_launch_config_1d(1, BLOCK);
  k->config.grid.x = grid_for(s->b, n);
  k->args[k->count++] = kiln_arg_buffer(s->c, c_off);
  k->args[k->count++] = kiln_arg_buffer(s->a, a_off);
  if (ops[op].inputs == 2) k->args[k->count++] = kiln_arg_buffer(s->bb, b_off);
  if (ops[op].scalar) k->args[k->count++] = kiln_arg_f32(SCALAR);
  k->args[k->count++] = kiln_arg_u32((uint32_t)n);
}

static kiln_status kiln_op(bench *b, void *arg) {
  kiln_call *k = arg;
  stream_state *s = k->s;
  if (k->op == OP_DOT)
    return kiln_dot_f32(b->stream, k->n, s->a, k->a_off, s->bb, k->b_off,
                        s->result, 0);
  return kiln_launch(b->stream, s->kernel[k->op], &k->config, k->args,
                     k->count);
}

/* ---- the same through the raw driver ------------------------------------- */

typedef struct raw_call {
  stream_state *s;
  enum op op;
  uint32_t n, grid, blocks;
  float scalar;
  raw_ptr tickets;
  void *params[6];
} raw_call;

static void raw_call_init(raw_call *r, stream_state *s, enum op op,
                          size_t n) {
  memset(r, 0, sizeof *r);
  r->s = s;
  r->op = op;
  r->n = (uint32_t)n;
  r->grid = grid_for(s->b, n);
  r->scalar = SCALAR;
  r->blocks = bench_reduce_blocks(n);
  size_t count = 0;
  r->params[count++] = op == OP_DOT ? &s->slots : &s->rc;
  r->params[count++] = &s->ra;
  if (ops[op].inputs == 2) r->params[count++] = &s->rb;
  if (ops[op].scalar) r->params[count++] = &r->scalar;
  if (op == OP_DOT) {
    r->tickets = s->slots + REDUCE_MAX_BLOCKS * 4;
    r->params[count++] = &s->rresult;
    r->params[count++] = &r->tickets;
  }
  r->params[count] = &r->n;
}

static int raw_op(void *arg) {
  raw_call *r = arg;
  stream_state *s = r->s;
  if (r->op != OP_DOT)
    return cuda_raw_launch(s->b->raw, s->function[r->op], r->grid, 1, BLOCK,
                           r->params);
  return cuda_raw_launch(s->b->raw, s->function[OP_DOT], r->blocks, 1,
                         REDUCE_BLOCK, r->params);
}

typedef struct copy_call {
  cuda_raw *raw;
  raw_ptr dst, src;
  size_t bytes;
} copy_call;

static int copy_op(void *arg) {
  copy_call *c = arg;
  return cuda_raw_dtod(c->raw, c->dst, c->src, c->bytes);
}

int bench_ceiling(bench *b, size_t n, double *gbps) {
  *gbps = -1.0;
  if (b->raw == NULL) return 0;
  const bench_result *known =
      bench_find(b, "stream", "ceiling", "cuMemcpyDtoD", n);
  if (known != NULL) {
    *gbps = known->value;
    return 0;
  }
  copy_call c = {b->raw, 0, 0, n * sizeof(float)};
  double ms = 0.0;
  if (cuda_raw_enter(b->raw) != 0) return -1;
  int result = cuda_raw_alloc(b->raw, c.bytes, &c.src);
  if (result == 0) result = cuda_raw_alloc(b->raw, c.bytes, &c.dst);
  if (result == 0) result = cuda_raw_fill32(b->raw, c.src, 0x3f800000u, n);
  if (result == 0) result = bench_measure_raw(b, copy_op, &c, &ms);
  cuda_raw_free(b->raw, c.dst);
  cuda_raw_free(b->raw, c.src);
  cuda_raw_leave(b->raw);
  if (result != 0) return -1;
  *gbps = 2.0 * (double)c.bytes / (ms * 1e6);
  bench_result r = {"stream", "ceiling", "cuMemcpyDtoD", n, ms, *gbps,
                    "GB/s", 2 * c.bytes};
  return bench_record(b, &r);
}

/* ---- checks -------------------------------------------------------------- */

static double expect(const void *arg, size_t i, double *magnitude) {
  enum op op = *(const enum op *)arg;
  double a = bench_value(BENCH_SEED_A, i), b = bench_value(BENCH_SEED_B, i);
  double s = SCALAR, value = a;
  switch (op) {
  case OP_MUL: value = s * a; break;
  case OP_ADD: value = a + b; break;
  case OP_TRIAD: value = a + s * b; break;
  default: break;
  }
  *magnitude = op == OP_COPY ? 0.0 : value; /* every term is positive */
  return value;
}

/* The floats of c within GUARD of [c_off, c_off + n) kept SENTINEL. */
static int check_guards(stream_state *s, enum op op, size_t c_off, size_t n) {
  uint32_t words[2 * GUARD];
  size_t before = c_off < GUARD ? c_off : GUARD;
  size_t first = c_off - before;
  BENCH_CHECK(kiln_buffer_read(s->b->stream, s->c, first * 4, words,
                               before * 4));
  BENCH_CHECK(kiln_buffer_read(s->b->stream, s->c, (c_off + n) * 4,
                               words + before, GUARD * 4));
  for (size_t i = 0; i < before + GUARD; i++) {
    if (words[i] != SENTINEL) {
      bench_wrong(s->b, "%s: wrote outside its %zu elements", ops[op].name,
                  n);
      break;
    }
  }
  return 0;
}

/* Every kernel on an odd n, with whole buffers (the vector path) and with
 * a, b and dst 1, 2 and 3 floats in (the one-float path): every element and
 * the guards around the output are checked. */
static int check_kernels(stream_state *s) {
  bench *b = s->b;
  size_t n = bench_array_sweep(b).check_n;
  bench_sums sums = {0, 0.0, 0.0};
  bench_sums_extend(&sums, n);
  const uint32_t sentinel = SENTINEL;
  for (size_t shift = 0; shift < 2; shift++) {
    size_t a_off = shift, b_off = 2 * shift, c_off = 3 * shift;
    if (bench_upload(b, s->a, a_off * 4, n, BENCH_SEED_A) != 0 ||
        bench_upload(b, s->bb, b_off * 4, n, BENCH_SEED_B) != 0)
      return -1;
    for (enum op op = 0; op < OP_COUNT; op++) {
      char what[64];
      snprintf(what, sizeof what, "%s (%zu elements%s)", ops[op].name, n,
               shift ? ", unaligned" : "");
      BENCH_CHECK(kiln_buffer_fill(b->stream, s->c, 0,
                                   (n + c_off + GUARD) * 4, &sentinel, 4));
      kiln_call k;
      kiln_call_init(&k, s, op, n, a_off * 4, b_off * 4, c_off * 4);
      BENCH_CHECK(kiln_op(b, &k));
      if (op == OP_DOT) {
        float got;
        BENCH_CHECK(kiln_buffer_read(b->stream, s->result, 0, &got, 4));
        if (!bench_close(got, sums.dot, sums.dot, bench_sum_roundings(n)))
          bench_wrong(b, "%s is %.9g, expected %.9g", what, (double)got,
                      sums.dot);
        continue;
      }
      if (bench_verify(b, what, s->c, c_off * 4, n, expect, &op) != 0 ||
          check_guards(s, op, c_off, n) != 0)
        return -1;
    }
  }
  return 0;
}

/* ---- timing -------------------------------------------------------------- */

static int run_size(stream_state *s, size_t n, bench_sums *sums) {
  bench *b = s->b;
  double kiln_gbps[OP_COUNT], raw_gbps[OP_COUNT], ceiling = -1.0;
  for (enum op op = 0; op < OP_COUNT; op++) {
    double bytes = (double)ops[op].bytes * (double)n, ms;
    kiln_call k;
    kiln_call_init(&k, s, op, n, 0, 0, 0);
    if (bench_measure_kiln(b, kiln_op, &k, &ms) != 0) return -1;
    kiln_gbps[op] = bytes / (ms * 1e6);
    bench_result r = {"stream", ops[op].name, "kiln", n, ms, kiln_gbps[op],
                      "GB/s", (size_t)bytes};
    if (bench_record(b, &r) != 0) return -1;

    /* The timed runs left their last result to check. */
    if (op == OP_DOT) {
      float got;
      BENCH_CHECK(kiln_buffer_read(b->stream, s->result, 0, &got, 4));
      if (!bench_close(got, sums->dot, sums->dot, bench_sum_roundings(n)))
        bench_wrong(b, "dot of %zu elements is %.9g, expected %.9g", n,
                    (double)got, sums->dot);
    } else if (bench_verify(b, ops[op].name, s->c, 0, n, expect, &op) != 0) {
      return -1;
    }

    raw_gbps[op] = -1.0;
    if (b->raw == NULL || s->function[op] == NULL) continue;
    raw_call rc;
    raw_call_init(&rc, s, op, n);
    if (cuda_raw_enter(b->raw) != 0) return -1;
    int result = bench_measure_raw(b, raw_op, &rc, &ms);
    cuda_raw_leave(b->raw);
    if (result != 0) return -1;
    raw_gbps[op] = bytes / (ms * 1e6);
    bench_result raw = {"stream", ops[op].name, "cuda-raw", n, ms,
                        raw_gbps[op], "GB/s", (size_t)bytes};
    if (bench_record(b, &raw) != 0) return -1;
  }
  if (bench_ceiling(b, n, &ceiling) != 0) return -1;

  char size[32];
  fprintf(b->out, "%11zu %9s  %-9s", n,
          bench_bytes_text(n * sizeof(float), size, sizeof size), "kiln");
  for (enum op op = 0; op < OP_COUNT; op++)
    bench_cell(b->out, 8, 1, kiln_gbps[op]);
  fprintf(b->out, "\n");
  if (b->raw != NULL) {
    fprintf(b->out, "%11s %9s  %-9s", "", "", "raw CUDA");
    for (enum op op = 0; op < OP_COUNT; op++)
      bench_cell(b->out, 8, 1, raw_gbps[op]);
    bench_cell(b->out, 8, 1, ceiling);
    fprintf(b->out, "\n");
  }
  return 0;
}

/* The raw comparator's arrays and kernels; without them (no kernels in the
 * build) the raw columns stay empty and the ceiling is still measured. */
static int raw_setup(stream_state *s, size_t n) {
  cuda_raw *raw = s->b->raw;
  if (cuda_raw_enter(raw) != 0) return -1;
  int result = 0;
  const char *missing = NULL;
  for (enum op op = 0; op < OP_COUNT && missing == NULL; op++)
    if (cuda_raw_function(raw, ops[op].kernel, &s->function[op]) != 0)
      missing = ops[op].kernel;
  if (missing != NULL) {
    memset(s->function, 0, sizeof s->function);
    cuda_raw_no_kernel("stream", missing);
  } else {
    size_t bytes = n * sizeof(float);
    if (cuda_raw_alloc(raw, bytes, &s->ra) != 0 ||
        cuda_raw_alloc(raw, bytes, &s->rb) != 0 ||
        cuda_raw_alloc(raw, bytes, &s->rc) != 0 ||
        cuda_raw_alloc(raw, (REDUCE_MAX_BLOCKS + 1) * 4, &s->slots) != 0 ||
        cuda_raw_fill32(raw, s->slots, 0, REDUCE_MAX_BLOCKS + 1) != 0 ||
        cuda_raw_alloc(raw, 4, &s->rresult) != 0 ||
        cuda_raw_fill32(raw, s->ra, 0x3f800000u, n) != 0 ||
        cuda_raw_fill32(raw, s->rb, 0x3f800000u, n) != 0 ||
        cuda_raw_sync(raw) != 0)
      result = -1;
  }
  cuda_raw_leave(raw);
  return result;
}

static void raw_teardown(stream_state *s) {
  cuda_raw *raw = s->b->raw;
  if (raw == NULL || cuda_raw_enter(raw) != 0) return;
  cuda_raw_free(raw, s->ra);
  cuda_raw_free(raw, s->rb);
  cuda_raw_free(raw, s->rc);
  cuda_raw_free(raw, s->slots);
  cuda_raw_free(raw, s->rresult);
  cuda_raw_leave(raw);
}

static int run(stream_state *s, size_t largest) {
  bench *b = s->b;
  for (enum op op = 0; op < OP_DOT; op++)
    BENCH_CHECK(kiln_module_get_kernel(b->builtins, ops[op].kernel,
                                       &s->kernel[op]));
  if (check_kernels(s) != 0) return -1;
  if (b->raw != NULL && raw_setup(s, largest) != 0) return -1;
  if (bench_upload(b, s->a, 0, largest, BENCH_SEED_A) != 0 ||
      bench_upload(b, s->bb, 0, largest, BENCH_SEED_B) != 0)
    return -1;

  fprintf(b->out,
          "\nstream: GB/s (bytes read + written), median of %u (kiln "
          "events; raw: CUDA events)\n%11s %9s  %-9s %8s %8s %8s %8s %8s%s\n",
          b->opt.repeat, "n", "array", "", "copy", "mul", "add", "triad",
          "dot", b->raw != NULL ? "  ceiling" : "");
  const bench_sweep w = bench_array_sweep(b);
  bench_sums sums = {0, 0.0, 0.0};
  for (unsigned lg = w.first_log2; lg <= w.last_log2; lg += w.step) {
    size_t n = (size_t)1 << lg;
    if (n > largest) break;
    bench_sums_extend(&sums, n);
    if (run_size(s, n, &sums) != 0) return -1;
  }
  return 0;
}

int bench_stream(bench *b) {
  stream_state s;
  memset(&s, 0, sizeof s);
  s.b = b;
  const bench_sweep w = bench_array_sweep(b);
  const size_t largest = w.largest, check_n = w.check_n;
  s.capacity = (largest > check_n ? largest : check_n) + 3 + GUARD;
  size_t bytes = s.capacity * sizeof(float);
  kiln_status st;
  int result = -1;
  if ((st = kiln_buffer_create(b->ctx, bytes, 0, &s.a)) != KILN_OK ||
      (st = kiln_buffer_create(b->ctx, bytes, 0, &s.bb)) != KILN_OK ||
      (st = kiln_buffer_create(b->ctx, bytes, 0, &s.c)) != KILN_OK ||
      (st = kiln_buffer_create(b->ctx, 4, 0, &s.result)) != KILN_OK)
    bench_kiln_error("kiln_buffer_create", st);
  else
    result = run(&s, largest);
  raw_teardown(&s);
  kiln_buffer *buffers[] = {s.a, s.bb, s.c, s.result};
  for (size_t i = 0; i < 4; i++)
    if ((st = kiln_buffer_destroy(buffers[i])) != KILN_OK)
      result = bench_kiln_error("kiln_buffer_destroy", st);
  return result;
}
