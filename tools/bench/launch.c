/* Launch cost, on host clocks: an empty kernel launched many times in a row
 * (the host's cost per launch, and the time until all of them are done),
 * and launch-then-synchronize round trips, through kiln (under every sync
 * policy too) and through the raw driver with the same kernel bytes. On a
 * backend other than CUDA, kiln is measured with no CUDA context in the
 * process and the raw driver afterwards (bench_launch_beside_raw), since
 * two APIs' contexts on one GPU time-slice against each other. On Vulkan,
 * kiln's round trip also takes turns with the raw Vulkan driver's on
 * kiln's own device and queue: one dispatch recorded once, submitted with
 * a timeline signal and waited for by polling the semaphore, as kiln's
 * default policy polls for its first 100 us (issue 33's busy-poll). */
#include <stdlib.h>

#include "bench.h"
#include "cuda_raw.h"
#if KILN_BENCH_VULKAN_RAW
#include "vulkan_raw.h"
#endif

/* Written by tools/kiln-embed at build time: kiln_bench_empty per backend. */
extern const kiln_module_image kiln_bench_images[];
extern const size_t kiln_bench_images_count;

#define LAUNCHES 100000u
#define QUICK_LAUNCHES 2000u
#define ROUND_TRIPS 1000u
#define QUICK_ROUND_TRIPS 50u
/* The long runs of each sync policy's context: only its round trips are
 * reported. */
#define POLICY_LAUNCHES 1000u
#define BLOCK 32u
/* The kernel's buffer: BLOCK floats it writes in the check launch, then
 * BLOCK that must keep SENTINEL. */
#define FLOATS (2u * BLOCK)
#define SENTINEL 0x5a5a5a5au
/* Issue 28: a trace handler that does nothing costs a launch at most this
 * much more than no handler. */
#define TRACED_GOAL 1.10

typedef struct launch_figures {
  double host_us;  /* host time per launch in a long run */
  double batch_ms; /* the long run, from the first launch to completion */
  double round_trip_us;
} launch_figures;

/* One implementation's way to launch the empty kernel and wait; `begin`
 * and `end` (may be NULL) around each of its turns, untimed. */
typedef struct launcher {
  int (*launch)(void *self);
  int (*wait)(void *self);
  void *self;
  void (*begin)(void);
  void (*end)(void);
} launcher;

static void turn_begin(const launcher *l) {
  if (l->begin) l->begin();
}

static void turn_end(const launcher *l) {
  if (l->end) l->end();
}

/* Medians over opt.repeat long runs of `count` launches, and over
 * opt.repeat * trips round trips, for each of the `n` launchers. The
 * launchers take turns within every repeat, in alternating order, so
 * drift in the GPU's launch throughput (larger than the difference being
 * measured, from run to run) falls on all of them alike. */
static int measure(const bench *b, const launcher *l, size_t n, unsigned count,
                   unsigned trips, launch_figures *out) {
  size_t repeat = b->opt.repeat;
  size_t samples = repeat * trips;
  double *host = malloc(n * repeat * sizeof *host);
  double *batch = malloc(n * repeat * sizeof *batch);
  double *rt = malloc(n * samples * sizeof *rt);
  int result = -1;
  if (host == NULL || batch == NULL || rt == NULL) {
    fprintf(stderr, "kiln-bench: out of host memory\n");
    goto out;
  }
  /* Warm-up: a tenth of a run, then a wait, for each. */
  for (size_t j = 0; j < n; j++) {
    turn_begin(&l[j]);
    int failed = 0;
    for (unsigned i = 0; i < count / 10 && !failed; i++)
      failed = l[j].launch(l[j].self);
    if (!failed) failed = l[j].wait(l[j].self);
    turn_end(&l[j]);
    if (failed) goto out;
  }
  for (size_t r = 0; r < repeat; r++) {
    for (size_t turn = 0; turn < n; turn++) {
      /* Who goes first alternates too: a run right after another one's
       * wait starts against a drained queue. */
      size_t j = r % 2 ? n - 1 - turn : turn;
      turn_begin(&l[j]);
      int failed = 0;
      double t0 = bench_now();
      for (unsigned i = 0; i < count && !failed; i++)
        failed = l[j].launch(l[j].self);
      double t1 = bench_now();
      if (!failed) failed = l[j].wait(l[j].self);
      double t2 = bench_now();
      turn_end(&l[j]);
      if (failed) goto out;
      host[j * repeat + r] = (t1 - t0) * 1e6 / count;
      batch[j * repeat + r] = (t2 - t0) * 1e3;
    }
  }
  for (size_t i = 0; i < samples; i++) {
    for (size_t turn = 0; turn < n; turn++) {
      size_t j = i % 2 ? n - 1 - turn : turn;
      turn_begin(&l[j]);
      double t0 = bench_now();
      int failed = l[j].launch(l[j].self) || l[j].wait(l[j].self);
      rt[j * samples + i] = (bench_now() - t0) * 1e6;
      turn_end(&l[j]);
      if (failed) goto out;
    }
  }
  for (size_t j = 0; j < n; j++) {
    out[j].host_us = bench_median(host + j * repeat, repeat);
    out[j].batch_ms = bench_median(batch + j * repeat, repeat);
    out[j].round_trip_us = bench_median(rt + j * samples, samples);
  }
  result = 0;
out:
  free(rt);
  free(batch);
  free(host);
  return result;
}

typedef struct kiln_launcher {
  kiln_stream *stream;
  kiln_kernel *kernel;
  kiln_launch_config config;
  kiln_arg args[2];
} kiln_launcher;

static int kiln_launch_one(void *self) {
  kiln_launcher *k = self;
  kiln_status st = kiln_launch(k->stream, k->kernel, &k->config, k->args, 2);
  return st == KILN_OK ? 0 : bench_kiln_error("kiln_launch", st);
}

static int kiln_wait(void *self) {
  kiln_launcher *k = self;
  kiln_status st = kiln_stream_synchronize(k->stream);
  return st == KILN_OK ? 0 : bench_kiln_error("kiln_stream_synchronize", st);
}

/* The trace handler issue 28 holds to 1.1 x the untraced launch: one that
 * does nothing, so that the figure is the door's cost of reporting. The
 * count tells that it was called. */
static unsigned long traced_commands;

static void trace_nothing(const kiln_trace_command *command, void *user) {
  (void)command;
  (void)user;
  traced_commands++;
}

static void trace_on(void) { kiln_set_trace_handler(trace_nothing, NULL); }

static void trace_off(void) { kiln_set_trace_handler(NULL, NULL); }

typedef struct raw_launcher {
  cuda_raw *raw;
  void *function;
  raw_ptr out;
  uint32_t n;
  void *params[2];
} raw_launcher;

static int raw_launch_one(void *self) {
  raw_launcher *r = self;
  return cuda_raw_launch(r->raw, r->function, 1, 1, BLOCK, r->params);
}

static int raw_wait(void *self) {
  return cuda_raw_sync(((raw_launcher *)self)->raw);
}

/* Measures kiln's launchers k[0 .. nk) (none: nk 0) and, where the
 * comparator has the kernel, the raw driver's, interleaved; the raw
 * figures stay negative otherwise. */
static int measure_with_raw(bench *b, const launcher *k, size_t nk,
                            unsigned count, unsigned trips,
                            launch_figures *kiln_f, launch_figures *raw_f) {
  raw_launcher r = {b->raw, NULL, 0, 0, {NULL, NULL}};
  r.params[0] = &r.out;
  r.params[1] = &r.n;
  /* kiln and the comparator share the device's primary context, so making
   * it current for the raw calls leaves kiln's calls as they were. */
  if (cuda_raw_enter(b->raw) != 0) return -1;
  int result = 0;
  if (cuda_raw_function(b->raw, "kiln_bench_empty", &r.function) != 0) {
    cuda_raw_no_kernel("launch", "kiln_bench_empty");
    if (nk) result = measure(b, k, nk, count, trips, kiln_f);
  } else if ((result = cuda_raw_alloc(b->raw, FLOATS * 4, &r.out)) == 0) {
    launcher all[3] = {{raw_launch_one, raw_wait, &r, NULL, NULL}};
    for (size_t i = 0; i < nk; i++) all[1 + i] = k[i];
    launch_figures f[3];
    result = measure(b, all, 1 + nk, count, trips, f);
    *raw_f = f[0];
    for (size_t i = 0; i < nk; i++) kiln_f[i] = f[1 + i];
  }
  cuda_raw_free(b->raw, r.out);
  cuda_raw_leave(b->raw);
  return result;
}

/* The kernel's check launch wrote zeros to the first BLOCK floats; every
 * timed launch (n = 0) must have left the rest alone. */
static int check_output(bench *b, const kiln_buffer *buf) {
  uint32_t words[FLOATS];
  BENCH_CHECK(kiln_buffer_read(b->stream, buf, 0, words, sizeof words));
  for (unsigned i = 0; i < FLOATS; i++) {
    uint32_t expected = i < BLOCK ? 0u : SENTINEL;
    if (words[i] != expected) {
      bench_wrong(b, "kiln_bench_empty: word %u is 0x%08x, expected 0x%08x",
                  i, (unsigned)words[i], (unsigned)expected);
      break;
    }
  }
  return 0;
}

static int record(bench *b, const char *impl, unsigned count,
                  const launch_figures *f) {
  bench_result host = {"launch", "host", impl, count, f->host_us * 1e-3,
                       f->host_us, "us", 0};
  bench_result batch = {"launch", "batch", impl, count, f->batch_ms,
                        f->batch_ms, "ms", 0};
  bench_result trip = {"launch", "round-trip", impl, 1,
                       f->round_trip_us * 1e-3, f->round_trip_us, "us", 0};
  if (bench_record(b, &host) != 0 || bench_record(b, &batch) != 0 ||
      bench_record(b, &trip) != 0)
    return -1;
  return 0;
}

/* Fills the buffer with the sentinel, runs the check launch (n = BLOCK)
 * and leaves `k` ready for timed launches (n = 0) on `stream`. */
static int prepare(kiln_launcher *k, kiln_stream *stream, kiln_module *module,
                   kiln_buffer *buf) {
  k->stream = stream;
  BENCH_CHECK(kiln_module_get_kernel(module, "kiln_bench_empty", &k->kernel));
  k->config = kiln_launch_config_1d(BLOCK, BLOCK);
  k->args[0] = kiln_arg_buffer(buf, 0);
  k->args[1] = kiln_arg_u32(BLOCK);
  const uint32_t sentinel = SENTINEL;
  BENCH_CHECK(kiln_buffer_fill(stream, buf, 0, FLOATS * 4, &sentinel, 4));
  BENCH_CHECK(kiln_launch(stream, k->kernel, &k->config, k->args, 2));
  k->args[1] = kiln_arg_u32(0);
  return 0;
}

/* The round trip of a context of its own with `policy`, on the device of
 * b->ctx (as the environment chose it). */
static int policy_round_trip(bench *b, kiln_sync_policy policy,
                             double *out_us) {
  kiln_context_options o = kiln_context_options_default();
  o.backend = b->props.backend;
  o.sync = policy;
  kiln_context *ctx = NULL;
  kiln_module *module = NULL;
  kiln_buffer *buf = NULL;
  kiln_stream *stream = NULL;
  BENCH_CHECK(kiln_context_create(&o, &ctx));
  kiln_status st = kiln_module_create(ctx, kiln_bench_images,
                                      kiln_bench_images_count, &module);
  if (st == KILN_OK) st = kiln_buffer_create(ctx, FLOATS * 4, 0, &buf);
  if (st == KILN_OK) st = kiln_context_default_stream(ctx, &stream);
  int result = st == KILN_OK ? 0 : bench_kiln_error("policy set-up", st);
  kiln_launcher k;
  if (result == 0) result = prepare(&k, stream, module, buf);
  launcher l = {kiln_launch_one, kiln_wait, &k, NULL, NULL};
  launch_figures f;
  unsigned trips = b->opt.quick ? QUICK_ROUND_TRIPS : ROUND_TRIPS;
  if (result == 0 &&
      (result = measure(b, &l, 1, POLICY_LAUNCHES, trips, &f)) == 0) {
    *out_us = f.round_trip_us;
    kiln_stream *own = b->stream; /* check_output reads on b->stream */
    b->stream = stream;
    result = check_output(b, buf);
    b->stream = own;
  }
  if ((st = kiln_context_destroy(ctx)) != KILN_OK &&
      st != KILN_ERROR_OBJECTS_ALIVE)
    result = bench_kiln_error("kiln_context_destroy", st);
  return result;
}

#if KILN_BENCH_VULKAN_RAW
/* Issue 33: Vulkan's launch + wait against the raw driver's. */
#define VULKAN_RAW_GOAL 1.10

/* The raw round trips beside kiln's: the plain one the goal is held to;
 * kiln's stream batch of it (the barrier before its first command and the
 * one to the host at its end), recorded once; and that recorded again each
 * time, as kiln records each launch, into a buffer begun again (as kiln's
 * are; vulkan_raw.h); and the batch with only a barrier at its end that
 * orders later submissions too. The differences between them say where
 * kiln's extra time goes: barriers, recording, or kiln's own work. */
enum { VK_TRIP_KILN, VK_TRIP_RAW, VK_TRIP_BARRIERS, VK_TRIP_RECORDED,
       VK_TRIP_TAIL, VK_TRIPS };

static int vulkan_trip(kiln_launcher *k, vulkan_raw *r, int which) {
  switch (which) {
  case VK_TRIP_KILN: return kiln_launch_one(k) || kiln_wait(k);
  case VK_TRIP_RAW: return vulkan_raw_run(r, VULKAN_RAW_ORDERED);
  case VK_TRIP_BARRIERS: return vulkan_raw_batch_run(r, VULKAN_RAW_BATCH_ONCE);
  case VK_TRIP_TAIL: return vulkan_raw_batch_run(r, VULKAN_RAW_BATCH_TAIL);
  default: return vulkan_raw_batch_run(r, VULKAN_RAW_BATCH_AGAIN);
  }
}

/* The order of sample i's turns: a shuffle (a fixed LCG, so runs repeat),
 * so that no round trip always follows the same other one, whose wait or
 * recording would leave the driver in a state that favours or hurts it. */
static void trip_order(size_t i, int order[VK_TRIPS]) {
  uint64_t x = 0x9e3779b97f4a7c15u * (i + 1);
  for (int j = 0; j < VK_TRIPS; j++) order[j] = j;
  for (int j = VK_TRIPS - 1; j > 0; j--) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    const int pick = (int)((x >> 33) % (uint64_t)(j + 1));
    const int held = order[j];
    order[j] = order[pick];
    order[pick] = held;
  }
}

/* kiln's round trip and the raw Vulkan ones, taking turns in shuffled
 * order (trip_order), opt.repeat * trips samples each; the medians, in
 * us. */
static int vulkan_round_trips(bench *b, kiln_launcher *k,
                              const kiln_buffer *buf, unsigned trips) {
  vulkan_raw *r = vulkan_raw_open_empty(b, buf, BLOCK, 1, 1, "launch");
  if (r == NULL) return 0;
  const size_t samples = (size_t)b->opt.repeat * trips;
  double *t = malloc(VK_TRIPS * samples * sizeof *t);
  int result = t ? 0 : -1;
  if (!t) fprintf(stderr, "kiln-bench: out of host memory\n");
  /* A warm-up each; kiln's stream is idle after each of its turns, as the
   * raw submissions to its queue need. */
  for (unsigned i = 0; result == 0 && i < trips / 10 + 1; i++)
    for (int j = 0; result == 0 && j < VK_TRIPS; j++)
      result = vulkan_trip(k, r, j);
  for (size_t i = 0; result == 0 && i < samples; i++) {
    int order[VK_TRIPS];
    trip_order(i, order);
    for (int turn = 0; result == 0 && turn < VK_TRIPS; turn++) {
      const int j = order[turn];
      const double t0 = bench_now();
      result = vulkan_trip(k, r, j);
      t[j * samples + i] = (bench_now() - t0) * 1e6;
    }
  }
  vulkan_raw_close(r);
  if (result == 0) {
    static const char *const names[VK_TRIPS] = {
        "kiln", "vulkan-raw", "vulkan-raw-barriers",
        "vulkan-raw-barriers-recorded", "vulkan-raw-tail-barrier"};
    double us[VK_TRIPS];
    for (int j = 0; j < VK_TRIPS && result == 0; j++) {
      us[j] = bench_median(t + j * samples, samples);
      bench_result br = {"launch", "round-trip-vulkan-turns", names[j], 1,
                         us[j] * 1e-3, us[j], "us", 0};
      if (bench_record(b, &br) != 0) result = -1;
    }
    fprintf(b->out,
            "launch + synchronize, taking turns with raw Vulkan (one "
            "dispatch, submitted with a timeline signal, the semaphore "
            "polled; us): kiln %.2f, raw %.2f; raw with kiln's two barriers "
            "%.2f, and recorded each time %.2f; raw with one barrier, at "
            "the end, to the host and later commands %.2f\n",
            us[VK_TRIP_KILN], us[VK_TRIP_RAW], us[VK_TRIP_BARRIERS],
            us[VK_TRIP_RECORDED], us[VK_TRIP_TAIL]);
    bench_goal_line(b->out, "launch + wait, kiln / raw Vulkan (issue 33)",
                    us[VK_TRIP_KILN] / us[VK_TRIP_RAW], "x", VULKAN_RAW_GOAL);
  }
  free(t);
  return result;
}
#endif

/* Each policy's round trip, with a context of its own; block last, then
 * auto again: on the H200 every round trip after a block-policy context
 * read about 45 us against 12 before it (docs/performance.md, fourteenth
 * session), and the second auto shows whether the blocking waits left
 * the process slower. */
static int policy_round_trips(bench *b) {
  static const struct {
    kiln_sync_policy policy;
    const char *name, *record;
  } policies[] = {
      {KILN_SYNC_AUTO, "auto", "round-trip-auto"},
      {KILN_SYNC_SPIN, "spin", "round-trip-spin"},
      {KILN_SYNC_YIELD, "yield", "round-trip-yield"},
      {KILN_SYNC_BLOCK, "block", "round-trip-block"},
      {KILN_SYNC_AUTO, "auto after block", "round-trip-auto-after-block"},
  };
  fprintf(b->out, "launch + synchronize by sync policy, a context each (us):");
  for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++) {
    double us = -1.0;
    if (policy_round_trip(b, policies[i].policy, &us) != 0) return -1;
    bench_result r = {"launch", policies[i].record, "kiln", 1, us * 1e-3, us,
                      "us", 0};
    if (bench_record(b, &r) != 0) return -1;
    fprintf(b->out, " %s %.2f%s", policies[i].name, us,
            i + 1 < sizeof policies / sizeof policies[0] ? "," : "\n");
  }
  return 0;
}

static int run(bench *b, kiln_module *module, kiln_buffer *buf) {
  unsigned count = b->opt.quick ? QUICK_LAUNCHES : LAUNCHES;
  unsigned trips = b->opt.quick ? QUICK_ROUND_TRIPS : ROUND_TRIPS;
  kiln_launcher k;
  if (prepare(&k, b->stream, module, buf) != 0) return -1;

  /* kiln untraced, and kiln with a handler that does nothing, set only
   * around its own turns. */
  launch_figures kiln_f[2], raw_f = {-1.0, -1.0, -1.0};
  const launcher l[2] = {
      {kiln_launch_one, kiln_wait, &k, NULL, NULL},
      {kiln_launch_one, kiln_wait, &k, trace_on, trace_off}};
  traced_commands = 0;
  int measured = b->raw != NULL
                     ? measure_with_raw(b, l, 2, count, trips, kiln_f, &raw_f)
                     : measure(b, l, 2, count, trips, kiln_f);
  if (measured != 0 || check_output(b, buf) != 0 ||
      record(b, "kiln", count, &kiln_f[0]) != 0 ||
      record(b, "kiln-traced", count, &kiln_f[1]) != 0)
    return -1;
  if (raw_f.host_us >= 0.0 && record(b, "cuda-raw", count, &raw_f) != 0)
    return -1;
  /* Every launch of the traced turns: the warm-up, the runs and the round
   * trips. */
  const unsigned long want =
      count / 10 + (unsigned long)b->opt.repeat * (count + trips);
  if (traced_commands < want)
    bench_wrong(b,
                "launch: the trace handler saw %lu commands, fewer than the "
                "%lu launches made while it was set",
                traced_commands, want);

  fprintf(b->out,
          "\nlaunch: an empty kernel, 1 block of %u threads; median of %u "
          "(host clock; %s; traced: with a trace handler that does "
          "nothing)\n%-34s %12s %12s %12s\n",
          BLOCK, b->opt.repeat,
          b->raw ? "kiln and raw take turns" : "kiln alone", "", "kiln",
          "kiln traced", "raw CUDA");
  char label[64];
  fprintf(b->out, "%-34s", "host cost per launch (us)");
  bench_cell(b->out, 12, 3, kiln_f[0].host_us);
  bench_cell(b->out, 12, 3, kiln_f[1].host_us);
  bench_cell(b->out, 12, 3, raw_f.host_us);
  snprintf(label, sizeof label, "%u launches to completion (ms)", count);
  fprintf(b->out, "\n%-34s", label);
  bench_cell(b->out, 12, 2, kiln_f[0].batch_ms);
  bench_cell(b->out, 12, 2, kiln_f[1].batch_ms);
  bench_cell(b->out, 12, 2, raw_f.batch_ms);
  fprintf(b->out, "\n%-34s", "launch + synchronize (us)");
  bench_cell(b->out, 12, 2, kiln_f[0].round_trip_us);
  bench_cell(b->out, 12, 2, kiln_f[1].round_trip_us);
  bench_cell(b->out, 12, 2, raw_f.round_trip_us);
  fprintf(b->out, "\n");
  bench_goal_line(b->out, "traced host cost per launch / untraced (issue 28)",
                  kiln_f[1].host_us / kiln_f[0].host_us, "x", TRACED_GOAL);
#if KILN_BENCH_VULKAN_RAW
  if (b->props.backend == KILN_BACKEND_VULKAN &&
      vulkan_round_trips(b, &k, buf, trips) != 0)
    return -1;
#endif
  return policy_round_trips(b);
}

/* After the launch section of a backend other than CUDA, with the CUDA
 * comparator open: the raw driver alone (the Vulkan device idle), then
 * kiln's round trip with the CUDA context alive but idle, then both taking
 * turns, as kiln-bench measured before it kept them apart: what sharing
 * the GPU between two APIs costs. */
static int run_beside_raw(bench *b, kiln_module *module, kiln_buffer *buf) {
  unsigned count = b->opt.quick ? QUICK_LAUNCHES : LAUNCHES;
  unsigned trips = b->opt.quick ? QUICK_ROUND_TRIPS : ROUND_TRIPS;
  kiln_launcher k;
  if (prepare(&k, b->stream, module, buf) != 0) return -1;
  launcher l = {kiln_launch_one, kiln_wait, &k, NULL, NULL};
  launch_figures unused, raw_f = {-1.0, -1.0, -1.0}, idle, turns;
  turns = raw_f;
  if (measure_with_raw(b, NULL, 0, count, trips, &unused, &raw_f) != 0 ||
      measure(b, &l, 1, POLICY_LAUNCHES, trips, &idle) != 0 ||
      (raw_f.host_us >= 0.0 &&
       measure_with_raw(b, &l, 1, POLICY_LAUNCHES, trips, &turns,
                        &unused) != 0) ||
      check_output(b, buf) != 0)
    return -1;
  if (raw_f.host_us >= 0.0 && record(b, "cuda-raw", count, &raw_f) != 0)
    return -1;
  bench_result beside = {
      "launch", "round-trip-cuda-idle",    "kiln",
      1,        idle.round_trip_us * 1e-3, idle.round_trip_us,
      "us", 0};
  bench_result shared = {
      "launch", "round-trip-cuda-turns",    "kiln",
      1,        turns.round_trip_us * 1e-3, turns.round_trip_us,
      "us", 0};
  if (bench_record(b, &beside) != 0 ||
      (turns.round_trip_us >= 0.0 && bench_record(b, &shared) != 0))
    return -1;
  fprintf(b->out,
          "\nlaunch, raw CUDA alone after kiln's figures above (us): host "
          "per launch");
  bench_cell(b->out, 9, 3, raw_f.host_us);
  fprintf(b->out, ", round trip");
  bench_cell(b->out, 9, 2, raw_f.round_trip_us);
  fprintf(b->out,
          "\nkiln's round trip with a CUDA context in the process: idle");
  bench_cell(b->out, 9, 2, idle.round_trip_us);
  fprintf(b->out, ", taking turns with raw CUDA");
  bench_cell(b->out, 9, 2, turns.round_trip_us);
  fprintf(b->out, "\n");
  return 0;
}

static int with_kernel(bench *b, int (*body)(bench *b, kiln_module *module,
                                             kiln_buffer *buf)) {
  kiln_module *module = NULL;
  kiln_buffer *buf = NULL;
  BENCH_CHECK(kiln_module_create(b->ctx, kiln_bench_images,
                                 kiln_bench_images_count, &module));
  kiln_status st = kiln_buffer_create(b->ctx, FLOATS * 4, 0, &buf);
  int result = st == KILN_OK ? body(b, module, buf)
                             : bench_kiln_error("kiln_buffer_create", st);
  if ((st = kiln_buffer_destroy(buf)) != KILN_OK)
    result = bench_kiln_error("kiln_buffer_destroy", st);
  if ((st = kiln_module_destroy(module)) != KILN_OK)
    result = bench_kiln_error("kiln_module_destroy", st);
  return result;
}

int bench_launch(bench *b) { return with_kernel(b, run); }

int bench_launch_beside_raw(bench *b) {
  return b->raw != NULL ? with_kernel(b, run_beside_raw) : 0;
}
