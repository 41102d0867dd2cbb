/* Streaming bandwidth: BabelStream's kernels (copy, mul, add, triad, dot)
 * on float32 arrays of 2^16 to 2^28 elements, through kiln's built-in
 * kernels, through the raw driver with the same kernels, and against the
 * device's copy ceiling (cuMemcpyDtoD). On the Vulkan backend the same
 * SPIR-V is also dispatched through raw Vulkan on kiln's device, behind
 * the barrier kiln records between two commands, so that what Vulkan's
 * ordering costs the driver shows apart from what kiln adds. GB/s count
 * bytes read plus written per element: 8 for copy, mul and dot, 12 for add
 * and triad. Over 600 lines because the three comparators share the
 * operations' table, their arguments and their checks (stream_state,
 * check_result), which a split would have to export. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cuda_raw.h"
#if KILN_BENCH_VULKAN_RAW && KILN_BENCH_VULKAN_IMAGES
#include "vulkan_raw.h"
#define STREAM_VULKAN_RAW 1
/* Written by tools/kiln-embed: the library's own SPIR-V of each operation,
 * in enum op's order. */
extern const kiln_module_image kiln_bench_vulkan_images[];
extern const size_t kiln_bench_vulkan_images_count;
#else
#define STREAM_VULKAN_RAW 0
#endif

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
  /* The raw Vulkan comparator's reduction workspace (slots, then the
   * ticket, all 0 between reductions), and whether it runs. */
  kiln_buffer *vk_slots;
  bool vk_raw;
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

/* The result a timed run of op on n elements left (its last operation's):
 * the dot's value, or every element of c; `who` names the run in a
 * message. */
static int check_result(stream_state *s, enum op op, size_t n,
                        const bench_sums *sums, const char *who) {
  bench *b = s->b;
  if (op != OP_DOT)
    return bench_verify(b, who, s->c, 0, n, expect, &op);
  float got;
  BENCH_CHECK(kiln_buffer_read(b->stream, s->result, 0, &got, 4));
  if (!bench_close(got, sums->dot, sums->dot, bench_sum_roundings(n)))
    bench_wrong(b, "%s of %zu elements is %.9g, expected %.9g", who, n,
                (double)got, sums->dot);
  return 0;
}

/* ---- the same through raw Vulkan ---------------------------------------- */

#if STREAM_VULKAN_RAW
/* The push-constant block kiln packs for `op` (std430: the addresses, then
 * the scalar, then n); its size. */
static uint32_t vulkan_raw_args(stream_state *s, enum op op, size_t n,
                                unsigned char *out) {
  const kiln_buffer *order[5];
  size_t count = 0;
  if (op == OP_DOT) {
    order[count++] = s->vk_slots;
    order[count++] = s->a;
    order[count++] = s->bb;
    order[count++] = s->result;
    order[count++] = s->vk_slots;
  } else {
    order[count++] = s->c;
    order[count++] = s->a;
    if (ops[op].inputs == 2) order[count++] = s->bb;
  }
  uint32_t at = 0;
  for (size_t i = 0; i < count; i++) {
    kiln_native_buffer nb;
    if (kiln_buffer_get_native(order[i], &nb) != KILN_OK) return 0;
    uint64_t address = nb.device_address;
    /* The ticket follows the slots (core/builtins/builtin.c). */
    if (op == OP_DOT && i == count - 1) address += REDUCE_MAX_BLOCKS * 4;
    memcpy(out + at, &address, 8);
    at += 8;
  }
  if (ops[op].scalar) {
    const float scalar = SCALAR;
    memcpy(out + at, &scalar, 4);
    at += 4;
  }
  const uint32_t n32 = (uint32_t)n;
  memcpy(out + at, &n32, 4);
  return at + 4;
}

/* Submits the comparator's ordered command buffer `iters` times, each
 * waited for, timed by the host's clock. */
static int vulkan_raw_submissions(void *self, unsigned iters, double *ms) {
  const double start = bench_now();
  for (unsigned i = 0; i < iters; i++)
    if (vulkan_raw_run(self, VULKAN_RAW_ORDERED) != 0) return -1;
  *ms = (bench_now() - start) * 1e3;
  return 0;
}

/* `op` on n elements, `count` times in one command buffer, ordered as kiln
 * orders two commands of a stream: ms per dispatch, as bench_measure
 * times every figure, each submission and its wait spread over `count`
 * dispatches. -1 with the reason printed when the comparator cannot run.
 * (Without the barrier the dispatches overlap, and arrays within the L2
 * cache are read by several at once: the H200 then read 1.4 times the
 * cache's own ceiling, a figure of no bandwidth, so there is no such
 * row.) */
static int vulkan_raw_time(stream_state *s, enum op op, size_t n,
                           unsigned count, double *ms) {
  bench *b = s->b;
  *ms = -1.0;
  unsigned char args[64];
  const uint32_t bytes = vulkan_raw_args(s, op, n, args);
  const uint32_t grid =
      op == OP_DOT ? bench_reduce_blocks(n) : grid_for(b, n);
  const uint32_t block = op == OP_DOT ? REDUCE_BLOCK : BLOCK;
  char why[512] = "kiln_buffer_get_native failed";
  vulkan_raw *r = NULL;
  /* The comparator shares kiln's queue: kiln's work is done first. */
  if (bytes != 0 && kiln_stream_synchronize(b->stream) != KILN_OK)
    snprintf(why, sizeof why, "kiln_stream_synchronize: %s",
             kiln_last_error());
  else if (bytes != 0)
    r = vulkan_raw_open(b->ctx, b->stream, &kiln_bench_vulkan_images[op], 1,
                        ops[op].kernel, grid, block, args, bytes, count, 1,
                        why, sizeof why);
  if (r == NULL) {
    fprintf(stderr, "kiln-bench: stream: no raw Vulkan comparator: %s\n",
            why);
    s->vk_raw = false;
    return -1;
  }
  double per_submission;
  const int result = bench_measure(b, vulkan_raw_submissions, r, &per_submission);
  if (result == 0) *ms = per_submission / count;
  vulkan_raw_close(r);
  return result;
}

/* The raw Vulkan figure of every operation at n, GB/s, each result
 * checked as kiln's is. kiln_ms: kiln's time per operation, which sizes
 * the command buffer. */
static int vulkan_raw_size(stream_state *s, size_t n, const double *kiln_ms,
                           bench_sums *sums, double *gbps) {
  bench *b = s->b;
  for (enum op op = 0; op < OP_COUNT; op++) gbps[op] = -1.0;
  const double target = b->opt.quick ? 1.0 : 20.0;
  const unsigned most = b->opt.quick ? 16u : 2000u;
  for (enum op op = 0; op < OP_COUNT && s->vk_raw; op++) {
    unsigned count = most;
    if (kiln_ms[op] > 0.0 && target / kiln_ms[op] < most)
      count = target / kiln_ms[op] < 4.0 ? 4u
                                           : (unsigned)(target / kiln_ms[op]);
    const double bytes = (double)ops[op].bytes * (double)n;
    /* The output starts as SENTINEL, so that the check below sees what
     * the raw dispatches wrote and not kiln's result of the same. */
    const uint32_t sentinel = SENTINEL;
    BENCH_CHECK(kiln_buffer_fill(b->stream, op == OP_DOT ? s->result : s->c,
                                 0, (op == OP_DOT ? 1 : n) * 4, &sentinel, 4));
    double ms;
    if (vulkan_raw_time(s, op, n, count, &ms) != 0) return s->vk_raw ? -1 : 0;
    gbps[op] = bytes / (ms * 1e6);
    bench_result r = {"stream", ops[op].name, "vulkan-raw", n, ms, gbps[op],
                      "GB/s", (size_t)bytes};
    if (bench_record(b, &r) != 0) return -1;
    char who[64];
    snprintf(who, sizeof who, "raw Vulkan %s", ops[op].name);
    if (check_result(s, op, n, sums, who) != 0) return -1;
  }
  return 0;
}
#endif

/* ---- timing -------------------------------------------------------------- */

static int run_size(stream_state *s, size_t n, bench_sums *sums) {
  bench *b = s->b;
  double kiln_gbps[OP_COUNT], raw_gbps[OP_COUNT], kiln_ms[OP_COUNT];
  double ceiling = -1.0;
  for (enum op op = 0; op < OP_COUNT; op++) {
    double bytes = (double)ops[op].bytes * (double)n, ms;
    kiln_call k;
    kiln_call_init(&k, s, op, n, 0, 0, 0);
    if (bench_measure_kiln(b, kiln_op, &k, &ms) != 0) return -1;
    kiln_ms[op] = ms;
    kiln_gbps[op] = bytes / (ms * 1e6);
    bench_result r = {"stream", ops[op].name, "kiln", n, ms, kiln_gbps[op],
                      "GB/s", (size_t)bytes};
    if (bench_record(b, &r) != 0) return -1;

    if (check_result(s, op, n, sums, ops[op].name) != 0) return -1;

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
#if STREAM_VULKAN_RAW
  double vk_gbps[OP_COUNT];
  const bool vk = s->vk_raw;
  if (vk && vulkan_raw_size(s, n, kiln_ms, sums, vk_gbps) != 0) return -1;
#else
  (void)kiln_ms;
#endif

  char size[32];
  fprintf(b->out, "%11zu %9s  %-10s", n,
          bench_bytes_text(n * sizeof(float), size, sizeof size), "kiln");
  for (enum op op = 0; op < OP_COUNT; op++)
    bench_cell(b->out, 8, 1, kiln_gbps[op]);
  fprintf(b->out, "\n");
  if (b->raw != NULL) {
    fprintf(b->out, "%11s %9s  %-10s", "", "", "raw CUDA");
    for (enum op op = 0; op < OP_COUNT; op++)
      bench_cell(b->out, 8, 1, raw_gbps[op]);
    bench_cell(b->out, 8, 1, ceiling);
    fprintf(b->out, "\n");
  }
#if STREAM_VULKAN_RAW
  if (vk) {
    fprintf(b->out, "%11s %9s  %-10s", "", "", "raw Vulkan");
    for (enum op op = 0; op < OP_COUNT; op++)
      bench_cell(b->out, 8, 1, vk_gbps[op]);
    fprintf(b->out, "\n");
  }
#endif
  return 0;
}

/* Issue 33's mid sizes on Vulkan: triad and dot against the raw CUDA
 * launch of the same kernel (the goal), and what raw Vulkan with kiln's
 * barrier reaches of it, so that the driver's share of the gap shows
 * beside kiln's. */
static void mid_sizes(bench *b) {
  static const size_t sizes[] = {1u << 20, 1u << 21, 1u << 22};
  static const enum op which[] = {OP_TRIAD, OP_DOT};
  bool header = false;
  for (size_t w = 0; w < 2; w++) {
    for (size_t i = 0; i < 3; i++) {
      const char *name = ops[which[w]].name;
      const bench_result *k = bench_find(b, "stream", name, "kiln", sizes[i]);
      const bench_result *c =
          bench_find(b, "stream", name, "cuda-raw", sizes[i]);
      const bench_result *v =
          bench_find(b, "stream", name, "vulkan-raw", sizes[i]);
      if (k == NULL || c == NULL || v == NULL || c->value <= 0.0) continue;
      if (!header) {
        fprintf(b->out, "  issue 33, Vulkan at mid sizes, each over raw "
                        "CUDA's launch of the same kernel (goal: kiln >= "
                        "0.90):\n  %-6s %8s %8s %12s\n",
                "", "array", "kiln", "raw Vulkan");
        header = true;
      }
      char size[32];
      fprintf(b->out, "  %-6s %8s %8.3f %12.3f\n", name,
              bench_bytes_text(sizes[i] * sizeof(float), size, sizeof size),
              k->value / c->value, v->value / c->value);
    }
  }
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
          "events; raw: CUDA events%s)\n%11s %9s  %-10s %8s %8s %8s %8s "
          "%8s%s\n",
          b->opt.repeat,
          s->vk_raw ? "; raw Vulkan: kiln's SPIR-V on kiln's device, "
                      "dispatched back to back in one command buffer behind "
                      "kiln's barrier between two commands, host clock"
                    : "",
          "n", "array", "", "copy", "mul", "add", "triad", "dot",
          b->raw != NULL ? "  ceiling" : "");
  const bench_sweep w = bench_array_sweep(b);
  bench_sums sums = {0, 0.0, 0.0};
  for (unsigned lg = w.first_log2; lg <= w.last_log2; lg += w.step) {
    size_t n = (size_t)1 << lg;
    if (n > largest) break;
    bench_sums_extend(&sums, n);
    if (run_size(s, n, &sums) != 0) return -1;
  }
  if (s->vk_raw) mid_sizes(b);
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
  s.vk_raw = STREAM_VULKAN_RAW && b->props.backend == KILN_BACKEND_VULKAN;
  if ((st = kiln_buffer_create(b->ctx, bytes, 0, &s.a)) != KILN_OK ||
      (st = kiln_buffer_create(b->ctx, bytes, 0, &s.bb)) != KILN_OK ||
      (st = kiln_buffer_create(b->ctx, bytes, 0, &s.c)) != KILN_OK ||
      (st = kiln_buffer_create(b->ctx, 4, 0, &s.result)) != KILN_OK ||
      (s.vk_raw &&
       (st = kiln_buffer_create(b->ctx, (REDUCE_MAX_BLOCKS + 1) * 4,
                                KILN_BUFFER_ZERO, &s.vk_slots)) != KILN_OK))
    bench_kiln_error("kiln_buffer_create", st);
  else
    result = run(&s, largest);
  raw_teardown(&s);
  kiln_buffer *buffers[] = {s.a, s.bb, s.c, s.result, s.vk_slots};
  for (size_t i = 0; i < 5; i++)
    if (buffers[i] != NULL && (st = kiln_buffer_destroy(buffers[i])) != KILN_OK)
      result = bench_kiln_error("kiln_buffer_destroy", st);
  return result;
}
