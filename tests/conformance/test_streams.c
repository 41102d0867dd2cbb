/* Streams and events: order within a stream over many dependent operations,
 * streams joined by events, event queries and timing. */
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "conformance.h"
#include "timing.h"

/* conf_busy's step, and k steps of it composed into one v -> mul * v + add
 * (mod 2^32), so that the reference costs one step per element. */
#define LCG_MUL 1664525u
#define LCG_ADD 1013904223u

typedef struct affine {
  uint32_t mul, add;
} affine;

static affine lcg_steps(uint64_t k) {
  affine f = {1, 0};
  for (uint64_t i = 0; i < k; i++) {
    f.mul *= LCG_MUL;
    f.add = f.add * LCG_MUL + LCG_ADD;
  }
  return f;
}

static void busy(kiln_stream *s, kiln_buffer *b, size_t offset, uint32_t n,
                 uint32_t rounds) {
  kiln_launch_config c = kiln_launch_config_1d(n, 128);
  if (c.grid.x > 1024) c.grid.x = 1024;
  const kiln_arg args[3] = {kiln_arg_buffer(b, offset), kiln_arg_u32(n),
                            kiln_arg_u32(rounds)};
  check_ok(kiln_launch(s, conf_kernel("conf_busy"), &c, args, 3));
}

static void add_u32(kiln_stream *s, kiln_buffer *b, size_t offset, uint32_t n,
                    uint32_t value) {
  kiln_launch_config c = kiln_launch_config_1d(n, 64);
  const kiln_arg args[3] = {kiln_arg_buffer(b, offset), kiln_arg_u32(n),
                            kiln_arg_u32(value)};
  check_ok(kiln_launch(s, conf_kernel("conf_add_u32"), &c, args, 3));
}

/* 1000 operations of every kind on two buffers, each depending on the ones
 * before, with no synchronization but the reads'. */
static void order_within_a_stream(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  enum { WORDS = 4096, OPS = 1000 };
  kiln_stream *s;
  check_ok(kiln_stream_create(conf.ctx, &s));
  conf_guarded g[2];
  uint32_t *mirror[2];
  for (int i = 0; i < 2; i++) {
    conf_guarded_create(&g[i], WORDS * 4, &r);
    mirror[i] = conf_alloc(WORDS * 4);
    memcpy(mirror[i], conf_guarded_initial(&g[i]), WORDS * 4);
  }
  uint32_t data[WORDS], got[WORDS];
  for (uint32_t op = 0; op < OPS; op++) {
    const int d = (int)(op % 2);
    const size_t len = 1 + conf_below(&r, WORDS);
    const size_t at = conf_below(&r, WORDS - len + 1);
    switch (op % 5) {
    case 0:
    case 2:
      add_u32(s, g[d].buf, CONF_GUARD + at * 4, (uint32_t)len, op);
      for (size_t i = 0; i < len; i++) mirror[d][at + i] += op;
      break;
    case 1: {
      const size_t from = conf_below(&r, WORDS - len + 1);
      check_ok(kiln_buffer_copy(s, g[d].buf, CONF_GUARD + at * 4, g[1 - d].buf,
                                CONF_GUARD + from * 4, len * 4));
      memcpy(mirror[d] + at, mirror[1 - d] + from, len * 4);
      break;
    }
    case 3:
      conf_random_bytes(&r, data, len * 4);
      check_ok(
          kiln_buffer_write(s, g[d].buf, CONF_GUARD + at * 4, data, len * 4));
      memcpy(mirror[d] + at, data, len * 4);
      break;
    default: {
      const uint32_t pattern = (uint32_t)conf_next(&r);
      check_ok(kiln_buffer_fill(s, g[d].buf, CONF_GUARD + at * 4, len * 4,
                                &pattern, 4));
      for (size_t i = 0; i < len; i++) mirror[d][at + i] = pattern;
    }
    }
    if (op % 97 == 96) {
      check_ok(kiln_buffer_read(s, g[d].buf, CONF_GUARD, got, WORDS * 4));
      char what[64];
      snprintf(what, sizeof what, "buffer %d after operation %u", d, op);
      conf_check_bytes(got, mirror[d], WORDS * 4, what);
    }
  }
  conf_guarded_check(&g[0], s, mirror[0], "the first buffer after 1000 ops");
  conf_guarded_check(&g[1], s, mirror[1], "the second buffer after 1000 ops");
  for (int i = 0; i < 2; i++) {
    conf_guarded_destroy(&g[i]);
    free(mirror[i]);
  }
  check_ok(kiln_stream_destroy(s));
}

/* Work on one stream that waits on an event recorded after a long chain on
 * another sees the chain's results; then the other way round. */
static void streams_joined_by_an_event(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  const uint32_t n = 1u << 18, links = 20, rounds = 50;
  uint32_t *x = conf_alloc(n * 4), *want = conf_alloc(n * 4);
  uint32_t *got = conf_alloc(n * 4);
  conf_random_bytes(&r, x, n * 4);
  kiln_stream *s[2];
  kiln_event *e;
  kiln_buffer *b[2];
  check_ok(kiln_stream_create(conf.ctx, &s[0]));
  check_ok(kiln_stream_create(conf.ctx, &s[1]));
  check_ok(kiln_event_create(conf.ctx, &e));
  check_ok(kiln_buffer_create(conf.ctx, n * 4, 0, &b[0]));
  check_ok(kiln_buffer_create(conf.ctx, n * 4, KILN_BUFFER_ZERO, &b[1]));
  check_ok(kiln_context_synchronize(conf.ctx));
  const affine f = lcg_steps((uint64_t)links * rounds);
  for (int dir = 0; dir < 2; dir++) {
    kiln_stream *a = s[dir], *w = s[1 - dir];
    kiln_buffer *src = b[dir], *dst = b[1 - dir];
    check_ok(kiln_buffer_write(a, src, 0, x, n * 4));
    for (uint32_t i = 0; i < links; i++) busy(a, src, 0, n, rounds);
    check_ok(kiln_event_record(e, a));
    check_ok(kiln_stream_wait_event(w, e));
    check_ok(kiln_buffer_copy(w, dst, 0, src, 0, n * 4));
    check_ok(kiln_buffer_read(w, dst, 0, got, n * 4));
    for (uint32_t i = 0; i < n; i++) want[i] = f.mul * x[i] + f.add;
    conf_check_bytes(got, want, n * 4,
                     dir ? "the first stream after waiting on the second"
                         : "the second stream after waiting on the first");
    check_ok(kiln_event_query(e));
    memcpy(x, want, n * 4);
  }
  check_ok(kiln_buffer_destroy(b[1]));
  check_ok(kiln_buffer_destroy(b[0]));
  check_ok(kiln_event_destroy(e));
  check_ok(kiln_stream_destroy(s[1]));
  check_ok(kiln_stream_destroy(s[0]));
  free(x);
  free(want);
  free(got);
}

/* Host-buffer copies, device copies and kernels interleaved on one stream,
 * each round depending on the last and overwriting what it read (on Vulkan
 * the copies to and from host memory run on a transfer queue where there
 * is one, the kernels on a compute queue), then a second stream that
 * waits on an event to use what the first copied out. */
static void async_copies_and_kernels_interleave(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  enum { WORDS = 1 << 16, ROUNDS = 24, BUSY = 3 };
  const size_t bytes = (size_t)WORDS * 4;
  kiln_stream *s[2];
  kiln_event *e;
  kiln_buffer *a, *b, *c;
  kiln_host_buffer *in, *out;
  check_ok(kiln_stream_create(conf.ctx, &s[0]));
  check_ok(kiln_stream_create(conf.ctx, &s[1]));
  check_ok(kiln_event_create(conf.ctx, &e));
  check_ok(kiln_buffer_create(conf.ctx, bytes, 0, &a));
  check_ok(kiln_buffer_create(conf.ctx, bytes, 0, &b));
  check_ok(kiln_buffer_create(conf.ctx, bytes, 0, &c));
  check_ok(kiln_host_buffer_create(conf.ctx, bytes * ROUNDS, 0, &in));
  check_ok(kiln_host_buffer_create(conf.ctx, bytes * ROUNDS, 0, &out));
  uint32_t *x = kiln_host_buffer_data(in), *y = kiln_host_buffer_data(out);
  conf_random_bytes(&r, x, bytes * ROUNDS);
  memset(y, 0, bytes * ROUNDS);
  for (uint32_t i = 0; i < ROUNDS; i++) {
    const size_t at = i * bytes;
    check_ok(kiln_buffer_write_async(s[0], a, 0, in, at, bytes));
    busy(s[0], a, 0, WORDS, BUSY);
    check_ok(kiln_buffer_copy(s[0], b, 0, a, 0, bytes));
    add_u32(s[0], b, 0, WORDS, i);
    check_ok(kiln_buffer_read_async(s[0], b, 0, out, at, bytes));
  }
  check_ok(kiln_event_record(e, s[0]));
  check_ok(kiln_stream_wait_event(s[1], e));
  const size_t last = (size_t)(ROUNDS - 1) * bytes;
  check_ok(kiln_buffer_write_async(s[1], c, 0, out, last, bytes));
  uint32_t *got = conf_alloc(bytes), *want = conf_alloc(bytes);
  check_ok(kiln_buffer_read(s[1], c, 0, got, bytes));
  check_ok(kiln_stream_synchronize(s[0]));
  const affine f = lcg_steps(BUSY);
  for (uint32_t i = 0; i < ROUNDS; i++) {
    for (uint32_t k = 0; k < WORDS; k++)
      want[k] = f.mul * x[(size_t)i * WORDS + k] + f.add + i;
    char what[64];
    snprintf(what, sizeof what, "round %u copied out", i);
    conf_check_bytes(y + (size_t)i * WORDS, want, bytes, what);
  }
  conf_check_bytes(got, want, bytes,
                   "the second stream's copy of the last round");
  free(got);
  free(want);
  check_ok(kiln_host_buffer_destroy(out));
  check_ok(kiln_host_buffer_destroy(in));
  check_ok(kiln_buffer_destroy(c));
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_buffer_destroy(a));
  check_ok(kiln_event_destroy(e));
  check_ok(kiln_stream_destroy(s[1]));
  check_ok(kiln_stream_destroy(s[0]));
}

/* How long event_timing holds its stream behind a gate, and how far the
 * device's clock may run from the host's: 2% and 2 ms (a timestamp
 * period rounded by the driver, the timer's granularity). */
#define TIMING_HOLD_MS 200
#define CLOCK_RATIO 0.02
#define CLOCK_MS 2.0
/* When the gate opens by itself if the test has not: long after the test
 * opens it. */
#define TIMING_GATE_DEADLINE_MS 20000u

static double ms_between(uint64_t from, uint64_t to) {
  return (double)(to - from) / 1e6;
}

/* Elapsed times are positive for real work, add up (t(a,b) + t(b,c)
 * equals t(a,c) to within the timer's rounding), and lie within what the
 * host saw, which a wrong unit does not: no interval is longer than the
 * host's from before its first record to after its last wait, and one
 * that spans a gate the host held closed for a measured time is no
 * shorter than that. */
static void event_timing(void **state) {
  (void)state;
  const char *why_not = conf_gate_why_not(conf.ctx);
  if (why_not) kiln_skip("%s", why_not);
  const uint32_t n = 1u << 16;
  kiln_stream *s;
  kiln_buffer *b;
  kiln_event *e[4];
  check_ok(kiln_stream_create(conf.ctx, &s));
  check_ok(kiln_buffer_create(conf.ctx, n * 4, KILN_BUFFER_ZERO, &b));
  for (int i = 0; i < 4; i++) check_ok(kiln_event_create(conf.ctx, &e[i]));
  /* An event on an idle stream completes at once. */
  check_ok(kiln_event_record(e[3], s));
  check_ok(kiln_event_synchronize(e[3]));
  check_ok(kiln_event_query(e[3]));
  /* Its kernel is on the device before the gate closes: a kernel's first
   * use may wait for the work queued before it, gate and all. */
  busy(s, b, 0, n, 1);

  const uint64_t first = conf_now_ns();
  check_ok(kiln_event_record(e[0], s));
  /* The device reached e[0] by the time this returns. */
  check_ok(kiln_event_synchronize(e[0]));
  const uint64_t e0_reached = conf_now_ns();
  conf_gate *gate = conf_gate_close(conf.ctx, s, TIMING_GATE_DEADLINE_MS);
  busy(s, b, 0, n, 200);
  check_ok(kiln_event_record(e[1], s));
  busy(s, b, 0, n, 400);
  check_ok(kiln_event_record(e[2], s));
  for (int i = 0; i < 4; i++) busy(s, b, 0, n, 400);
  check_ok(kiln_event_record(e[3], s));
  /* Behind the closed gate: not ready, in words, and no time yet. */
  kiln_clear_error();
  check_fails(kiln_event_query(e[3]), KILN_ERROR_NOT_READY);
  assert_true(kiln_last_error()[0] != '\0');
  float early = -1.0f;
  check_fails(kiln_event_elapsed_ms(e[2], e[3], &early), KILN_ERROR_NOT_READY);
  assert_true(early == -1.0f);

  const struct timespec hold = {0, TIMING_HOLD_MS * 1000000L};
  nanosleep(&hold, NULL);
  conf_gate_open(gate);
  check_ok(kiln_event_synchronize(e[3]));
  const uint64_t last = conf_now_ns();
  const double held = ms_between(e0_reached, conf_gate_opened_at(gate));
  const double host = ms_between(first, last);
  conf_gate_free(gate);

  for (int i = 0; i < 4; i++) check_ok(kiln_event_query(e[i]));
  float t01, t12, t02, t23, t03;
  check_ok(kiln_event_elapsed_ms(e[0], e[1], &t01));
  check_ok(kiln_event_elapsed_ms(e[1], e[2], &t12));
  check_ok(kiln_event_elapsed_ms(e[0], e[2], &t02));
  check_ok(kiln_event_elapsed_ms(e[2], e[3], &t23));
  check_ok(kiln_event_elapsed_ms(e[0], e[3], &t03));
  printf("  event times: %.4f + %.4f = %.4f ms (%.4f), then %.4f ms; %.4f ms "
         "in all, the host saw the gate held %.1f ms and the whole in "
         "%.1f ms\n",
         t01, t12, t01 + t12, t02, t23, t03, held, host);
  assert_true(t01 > 0.0f && t12 > 0.0f && t02 > 0.0f && t23 > 0.0f);
  assert_true(t02 >= t01 && t02 >= t12 && t03 >= t02);
  if (fabs((double)t01 + t12 - t02) > 0.01 * t02 + 0.01)
    fail_msg("t(0,1) + t(1,2) = %.4f ms, but t(0,2) = %.4f ms", t01 + t12, t02);
  if (t03 > host * (1 + CLOCK_RATIO) + CLOCK_MS)
    fail_msg("t(0,3) = %.4f ms, but the host saw all of it, from before "
             "e[0]'s record to after e[3]'s wait, in %.1f ms",
             t03, host);
  if (t01 < held * (1 - CLOCK_RATIO) - CLOCK_MS)
    fail_msg("t(0,1) = %.4f ms, but e[1] came after a gate that the host "
             "held closed for %.1f ms after e[0] was reached",
             t01, held);
  for (int i = 0; i < 4; i++) check_ok(kiln_event_destroy(e[i]));
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_stream_destroy(s));
}

/* Destroying a stream and synchronizing the context wait for queued work. */
static void destroy_and_context_synchronize_wait(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  enum { STREAMS = 8, WORDS = 1 << 16 };
  uint32_t *want = conf_alloc(STREAMS * WORDS * 4);
  conf_random_bytes(&r, want, STREAMS * WORDS * 4);
  kiln_buffer *b;
  kiln_host_buffer *h;
  check_ok(kiln_buffer_create(conf.ctx, STREAMS * WORDS * 4, 0, &b));
  check_ok(kiln_host_buffer_create(conf.ctx, STREAMS * WORDS * 4, 0, &h));
  uint32_t *hd = kiln_host_buffer_data(h);
  memcpy(hd, want, STREAMS * WORDS * 4);
  kiln_stream *s[STREAMS];
  for (int i = 0; i < STREAMS; i++) {
    const size_t at = (size_t)i * WORDS * 4;
    check_ok(kiln_stream_create(conf.ctx, &s[i]));
    check_ok(kiln_buffer_write_async(s[i], b, at, h, at, WORDS * 4));
    busy(s[i], b, at, WORDS, 20);
    check_ok(kiln_buffer_read_async(s[i], b, at, h, at, WORDS * 4));
  }
  const affine f = lcg_steps(20);
  for (size_t i = 0; i < (size_t)STREAMS * WORDS; i++)
    want[i] = f.mul * want[i] + f.add;
  /* Half the streams are destroyed with work queued, the other half waited
   * for through the context. */
  for (int i = 0; i < STREAMS; i += 2) {
    check_ok(kiln_stream_destroy(s[i]));
    const size_t at = (size_t)i * WORDS;
    conf_check_bytes(hd + at, want + at, WORDS * 4,
                     "a stream's results once it was destroyed");
  }
  check_ok(kiln_context_synchronize(conf.ctx));
  conf_check_bytes(hd, want, STREAMS * WORDS * 4,
                   "every stream's results after kiln_context_synchronize");
  for (int i = 1; i < STREAMS; i += 2) check_ok(kiln_stream_destroy(s[i]));
  check_ok(kiln_host_buffer_destroy(h));
  check_ok(kiln_buffer_destroy(b));
  free(want);
}

typedef struct worker {
  kiln_kernel *add;
  uint64_t seed;
  char failure[256]; /* empty while all is well */
} worker;

#define WORKER_CHECK(w, call)                                                  \
  do {                                                                         \
    kiln_status st_ = (call);                                                  \
    if (st_ != KILN_OK && !(w)->failure[0])                                    \
      snprintf((w)->failure, sizeof(w)->failure, "%s: %s: %s", #call,          \
               kiln_status_name(st_), kiln_last_error());                      \
  } while (0)

/* One thread, its own stream and objects: writes, launches, reads. */
static void *drive_a_stream(void *arg) {
  worker *w = arg;
  enum { WORDS = 20000, ROUNDS = 40 };
  conf_rng r = {w->seed};
  uint32_t *data = malloc(WORDS * 4), *got = malloc(WORDS * 4);
  kiln_stream *s = NULL;
  kiln_buffer *b = NULL;
  if (!data || !got) {
    snprintf(w->failure, sizeof w->failure, "out of host memory");
    goto done;
  }
  WORKER_CHECK(w, kiln_stream_create(conf.ctx, &s));
  WORKER_CHECK(w, kiln_buffer_create(conf.ctx, WORDS * 4, 0, &b));
  for (uint32_t i = 0; i < ROUNDS && !w->failure[0]; i++) {
    conf_random_bytes(&r, data, WORDS * 4);
    WORKER_CHECK(w, kiln_buffer_write(s, b, 0, data, WORDS * 4));
    kiln_launch_config c = kiln_launch_config_1d(WORDS, 128);
    const kiln_arg args[3] = {kiln_arg_buffer(b, 0), kiln_arg_u32(WORDS),
                              kiln_arg_u32(i)};
    WORKER_CHECK(w, kiln_launch(s, w->add, &c, args, 3));
    WORKER_CHECK(w, kiln_buffer_read(s, b, 0, got, WORDS * 4));
    for (uint32_t j = 0; j < WORDS && !w->failure[0]; j++)
      if (got[j] != data[j] + i)
        snprintf(w->failure, sizeof w->failure,
                 "round %u: word %u is 0x%08x, expected 0x%08x", i, j, got[j],
                 data[j] + i);
  }
done:
  if (b) WORKER_CHECK(w, kiln_buffer_destroy(b));
  if (s) WORKER_CHECK(w, kiln_stream_destroy(s));
  free(data);
  free(got);
  return NULL;
}

/* Different streams driven from different threads at once (kiln.h). */
static void threads_drive_their_own_streams(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  enum { THREADS = 4 };
  worker w[THREADS];
  conf_thread *t[THREADS];
  kiln_kernel *add = conf_kernel("conf_add_u32");
  for (int i = 0; i < THREADS; i++) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].add = add;
    w[i].seed = conf_next(&r);
    t[i] = conf_thread_start(drive_a_stream, &w[i]);
  }
  for (int i = 0; i < THREADS; i++) {
    char what[64];
    snprintf(what, sizeof what, "the thread driving stream %d", i);
    conf_thread_join(t[i], what);
  }
  for (int i = 0; i < THREADS; i++)
    if (w[i].failure[0]) fail_msg("thread %d: %s", i, w[i].failure);
}

int conf_run_stream_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(order_within_a_stream),
      CONF_TEST(streams_joined_by_an_event),
      CONF_TEST(async_copies_and_kernels_interleave),
      CONF_TEST(event_timing),
      CONF_TEST(destroy_and_context_synchronize_wait),
      CONF_TEST(threads_drive_their_own_streams),
  };
  return cmocka_run_group_tests_name("streams", tests, NULL, NULL);
}
