/* Memory in stream order: kiln_buffer_create_async and
 * kiln_buffer_destroy_async, and the context's pool.
 *
 * The two tests that hold a stream behind a gate check what only stream
 * order promises: a release returns while other work is queued, and memory
 * released behind unfinished work does not reach another stream's buffer
 * before that work is done. On one queue (lavapipe) the second is seen
 * under KILN_DEBUG=reorder (the conformance-reorder run), where the held
 * work runs last; on a GPU with several queues, plainly. */
#include <stdio.h>

#include "conformance.h"
#include "timing.h"

/* Long enough for every check made while the gate is closed, on two loaded
 * cores under a sanitizer; the gate opens by itself after it, so that a
 * failing test does not hold the device. */
#define GATE_MS 20000u

static void fill_byte(kiln_stream *s, kiln_buffer *b, size_t size,
                      unsigned char value) {
  check_ok(kiln_buffer_fill(s, b, 0, size, &value, 1));
}

/* Every byte of `b` must be `value`. */
static void expect_bytes(kiln_stream *s, kiln_buffer *b, size_t size,
                         unsigned char value, const char *what) {
  unsigned char *got = conf_alloc(size), *want = conf_alloc(size);
  memset(want, value, size);
  check_ok(kiln_buffer_read(s, b, 0, got, size));
  conf_check_bytes(got, want, size, what);
  free(got);
  free(want);
}

/* The gate, or a skip where this backend's streams cannot be held apart,
 * or where KILN_DEBUG=guard makes both calls the synchronous ones. */
static conf_gate *gate_or_skip(kiln_stream *s) {
  const char *why_not = conf_gate_why_not(conf.ctx);
  if (why_not) kiln_skip("%s", why_not);
  const char *debug = getenv("KILN_DEBUG");
  if (debug && strstr(debug, "guard"))
    kiln_skip("KILN_DEBUG=guard makes kiln_buffer_create_async and "
              "destroy_async the synchronous calls, which wait");
  return conf_gate_close(conf.ctx, s, GATE_MS);
}

/* A buffer used only on stream B is released while stream A's work waits
 * behind a closed gate: the release returns before the gate opens (the
 * synchronous kiln_buffer_destroy would wait for A); `size`-byte
 * buffers. */
static void released_while_another_stream_waits(size_t size) {
  kiln_stream *a, *b;
  check_ok(kiln_stream_create(conf.ctx, &a));
  check_ok(kiln_stream_create(conf.ctx, &b));
  kiln_buffer *held, *temp;
  check_ok(kiln_buffer_create(conf.ctx, size, 0, &held));
  conf_gate *gate = gate_or_skip(a);
  fill_byte(a, held, size, 0x11);
  check_ok(kiln_buffer_create_async(b, size, 0, &temp));
  fill_byte(b, temp, size, 0x22);
  check_ok(kiln_buffer_copy(b, temp, 0, temp, size / 2, size / 2));
  check_ok(kiln_buffer_destroy_async(b, temp));
  if (conf_gate_opened_at(gate) != 0)
    fail_msg("kiln_buffer_destroy_async returned only after stream A's gate "
             "opened (%u ms): it waited for a stream that never used the "
             "buffer",
             GATE_MS);
  if (!conf_gate_open(gate)) fail_msg("the gate opened by itself");
  conf_gate_free(gate);
  expect_bytes(a, held, size, 0x11, "stream A's buffer after its gate");
  check_ok(kiln_buffer_destroy(held));
  check_ok(kiln_stream_destroy(a));
  check_ok(kiln_stream_destroy(b));
}

/* Small: the core keeps the release for B (core/memory/reuse.c). */
static void a_release_in_stream_order_does_not_wait(void **state) {
  (void)state;
  released_while_another_stream_waits((size_t)64 << 10);
}

/* Past what the core keeps: the release reaches the backend's pool. */
static void a_large_release_in_stream_order_does_not_wait(void **state) {
  (void)state;
  released_while_another_stream_waits((size_t)8 << 20);
}

/* Memory released on B behind a closed gate, with a fill of B's still to
 * run on it, must not become C's new buffer before the fill is done: C
 * fills its buffer and reads it back after everything ran; had the pool
 * given C the released memory at once, B's late fill would show;
 * `size`-byte buffers (a filler beside each on C). */
static void released_behind_a_gate(size_t size) {
  enum { ROUNDS = 2 };
  kiln_stream *b, *c;
  check_ok(kiln_stream_create(conf.ctx, &b));
  check_ok(kiln_stream_create(conf.ctx, &c));
  conf_gate *gate = gate_or_skip(b);
  kiln_buffer *later[ROUNDS], *filler[ROUNDS];
  for (int i = 0; i < ROUNDS; i++) {
    kiln_buffer *early;
    check_ok(kiln_buffer_create_async(b, size, 0, &early));
    check_ok(kiln_buffer_create_async(c, size, 0, &filler[i]));
    fill_byte(b, early, size, 0xAA);
    check_ok(kiln_buffer_destroy_async(b, early));
    check_ok(kiln_buffer_create_async(c, size, 0, &later[i]));
    fill_byte(c, later[i], size, (unsigned char)(0x50 + i));
  }
  /* C's work first, then B's: with queues of their own, C finishes while
   * the gate holds B; on one queue, B's work is submitted before C's, and
   * only KILN_DEBUG=reorder runs C's first (at C's synchronize). */
  if (conf.props.stream_queues > 1) {
    check_ok(kiln_stream_synchronize(c));
    if (!conf_gate_open(gate))
      fail_msg("stream C's work waited for stream B's gate: an allocation "
               "on C depended on B's release");
  } else {
    if (!conf_gate_open(gate)) fail_msg("the gate opened by itself");
    check_ok(kiln_stream_synchronize(c));
  }
  conf_gate_free(gate);
  check_ok(kiln_context_synchronize(conf.ctx));
  for (int i = 0; i < ROUNDS; i++) {
    char what[96];
    snprintf(what, sizeof what,
             "stream C's buffer %d, made after B released one behind a gate",
             i);
    expect_bytes(c, later[i], size, (unsigned char)(0x50 + i), what);
    check_ok(kiln_buffer_destroy_async(c, later[i]));
    check_ok(kiln_buffer_destroy_async(c, filler[i]));
  }
  check_ok(kiln_stream_destroy(b));
  check_ok(kiln_stream_destroy(c));
}

/* Large enough, with a filler that takes the rest of the early buffer's
 * block, that a pool which takes released memory back only when it is
 * short of room (Vulkan's: a request past half a 64 MiB block gets a
 * block of twice its size) is short of it at every later create on C, and
 * looks at the early buffer's release. */
static void memory_is_reused_only_after_the_release_point(void **state) {
  (void)state;
  released_behind_a_gate((size_t)40 << 20);
}

/* Small enough that the core keeps B's release for B's own next create
 * (core/memory/reuse.c): C must not get it from there either. */
static void a_kept_release_is_only_for_its_stream(void **state) {
  (void)state;
  released_behind_a_gate((size_t)64 << 10);
}

/* Memory released on a stream and made again there (the pool's quickest
 * reuse) holds what the new buffer's work put in it: zeroes for
 * KILN_BUFFER_ZERO, however the last user left it. */
static void reuse_on_one_stream_and_zeroes(void **state) {
  (void)state;
  enum { SIZE = 3 << 12, ROUNDS = 20 };
  kiln_stream *s;
  check_ok(kiln_stream_create(conf.ctx, &s));
  for (int i = 0; i < ROUNDS; i++) {
    kiln_buffer *x;
    check_ok(kiln_buffer_create_async(s, SIZE, 0, &x));
    fill_byte(s, x, SIZE, (unsigned char)(0xF0 + i % 16));
    check_ok(kiln_buffer_destroy_async(s, x));
    check_ok(kiln_buffer_create_async(s, SIZE, KILN_BUFFER_ZERO, &x));
    expect_bytes(s, x, SIZE, 0, "a KILN_BUFFER_ZERO buffer of reused memory");
    check_ok(kiln_buffer_destroy_async(s, x));
  }
  check_ok(kiln_stream_destroy(s));
}

/* A buffer of kiln_buffer_create_async is a buffer like any: kernels,
 * copies and the synchronous destroy take it. */
static void a_stream_ordered_buffer_is_a_buffer(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  enum { SIZE = 12345 };
  unsigned char *data = conf_alloc(SIZE), *got = conf_alloc(SIZE);
  conf_random_bytes(&r, data, SIZE);
  kiln_stream *s;
  check_ok(kiln_stream_create(conf.ctx, &s));
  kiln_buffer *x, *y;
  check_ok(kiln_buffer_create_async(s, SIZE, 0, &x));
  check_ok(kiln_buffer_create(conf.ctx, SIZE, 0, &y));
  if (kiln_buffer_size(x) != SIZE)
    fail_msg("kiln_buffer_size gave %zu for a %d-byte buffer",
             kiln_buffer_size(x), SIZE);
  check_ok(kiln_buffer_write(s, x, 0, data, SIZE));
  check_ok(kiln_buffer_copy(s, y, 0, x, 0, SIZE));
  check_ok(kiln_buffer_read(s, y, 0, got, SIZE));
  conf_check_bytes(got, data, SIZE, "a copy out of a stream-ordered buffer");
  check_ok(kiln_buffer_destroy(x));
  check_ok(kiln_buffer_destroy(y));
  check_ok(kiln_stream_destroy(s));
  free(data);
  free(got);
}

/* A thousand pairs of one size leave the pool as large as the first few
 * did: released memory is reused, not piled up. */
static void a_thousand_pairs_keep_the_pool_flat(void **state) {
  (void)state;
  enum { SIZE = 1 << 16, PAIRS = 1000, EARLY = 10 };
  kiln_stream *s;
  check_ok(kiln_stream_create(conf.ctx, &s));
  size_t early = 0, reserved = 0, used = 0;
  for (int i = 0; i < PAIRS; i++) {
    kiln_buffer *x;
    check_ok(kiln_buffer_create_async(s, SIZE, 0, &x));
    fill_byte(s, x, SIZE, (unsigned char)i);
    check_ok(kiln_buffer_destroy_async(s, x));
    if (i == EARLY - 1) {
      check_ok(kiln_stream_synchronize(s));
      check_ok(kiln_context_pool_usage(conf.ctx, &early, NULL));
    }
  }
  check_ok(kiln_stream_synchronize(s));
  check_ok(kiln_context_pool_usage(conf.ctx, &reserved, &used));
  printf("  pool after %d pairs of %d bytes: %zu reserved (%zu after %d), "
         "%zu used\n",
         PAIRS, SIZE, reserved, early, EARLY, used);
  if (reserved > early)
    fail_msg("the pool grew from %zu to %zu bytes over %d pairs of one size",
             early, reserved, PAIRS);
  check_ok(kiln_stream_destroy(s));
}

/* What the pool says of itself: a live buffer counts as used; once it is
 * released, it does not, kept for its stream or not, whatever its size;
 * a trim after a synchronize of the context gives back what nothing
 * uses (a buffer kept for its stream included), and never grows the
 * pool. (Where the pool shares its blocks with the synchronous buffers,
 * Vulkan's, a trim can free only blocks left empty, so there it is held
 * only to not growing.) */
static void the_pool_counts_and_trims(void **state) {
  (void)state;
  enum { SIZE = 4 << 20 };
  kiln_stream *s;
  check_ok(kiln_stream_create(conf.ctx, &s));
  check_ok(kiln_context_synchronize(conf.ctx));
  size_t used0, used1, used2, reserved1, reserved2;
  check_ok(kiln_context_pool_usage(conf.ctx, NULL, &used0));
  kiln_buffer *x;
  check_ok(kiln_buffer_create_async(s, SIZE, 0, &x));
  check_ok(kiln_stream_synchronize(s));
  check_ok(kiln_context_pool_usage(conf.ctx, &reserved1, &used1));
  if (used1 < used0 + SIZE || reserved1 < used1)
    fail_msg("with a live %d-byte buffer the pool says %zu used (%zu "
             "before) and %zu reserved",
             SIZE, used1, used0, reserved1);
  check_ok(kiln_buffer_destroy_async(s, x));
  check_ok(kiln_stream_synchronize(s));
  size_t used_kept;
  check_ok(kiln_context_pool_usage(conf.ctx, NULL, &used_kept));
  if (used_kept != used0)
    fail_msg("a released %d-byte buffer still counts: %zu bytes used, %zu "
             "before it was made",
             SIZE, used_kept, used0);
  /* An odd size, which a pool may round up. */
  check_ok(kiln_buffer_create_async(s, 100, 0, &x));
  check_ok(kiln_buffer_destroy_async(s, x));
  check_ok(kiln_context_pool_usage(conf.ctx, NULL, &used_kept));
  if (used_kept != used0)
    fail_msg("a released 100-byte buffer still counts: %zu bytes used, %zu "
             "before it was made",
             used_kept, used0);
  check_ok(kiln_context_synchronize(conf.ctx));
  check_ok(kiln_context_trim_pool(conf.ctx, 0));
  check_ok(kiln_context_pool_usage(conf.ctx, &reserved2, &used2));
  printf("  pool: %zu used, %zu reserved with the buffer; %zu, %zu after "
         "its release and a trim\n",
         used1, reserved1, used2, reserved2);
  if (used2 + SIZE > used1)
    fail_msg("after the release the pool still counts %zu bytes used (%zu "
             "with the buffer)",
             used2, used1);
  if (reserved2 > reserved1)
    fail_msg("a trim to 0 left %zu bytes reserved, more than the %zu with "
             "the buffer alive",
             reserved2, reserved1);
  if (conf.backend != KILN_BACKEND_VULKAN && reserved2 + SIZE > reserved1)
    fail_msg("a trim to 0 after a synchronize left %zu bytes reserved, "
             "against %zu with the %d-byte buffer alive: the released "
             "buffer's memory was not given back",
             reserved2, reserved1, SIZE);
  check_ok(kiln_context_set_pool_keep(conf.ctx, SIZE_MAX));
  check_ok(kiln_stream_destroy(s));
}

/* Only buffers count as in use: not a host buffer, nor the memory a read
 * stages through on a new stream (Vulkan's pool serves both, and a
 * program that watches its buffers' bytes must not see kiln's). */
static void the_pool_counts_only_buffers(void **state) {
  (void)state;
  enum { SIZE = 1 << 20 };
  kiln_stream *s;
  check_ok(kiln_stream_create(conf.ctx, &s));
  check_ok(kiln_context_synchronize(conf.ctx));
  size_t before, with, after;
  check_ok(kiln_context_pool_usage(conf.ctx, NULL, &before));
  kiln_host_buffer *h;
  check_ok(kiln_host_buffer_create(conf.ctx, SIZE, 0, &h));
  kiln_buffer *x;
  check_ok(kiln_buffer_create_async(s, SIZE, 0, &x));
  fill_byte(s, x, SIZE, 0x5a);
  expect_bytes(s, x, SIZE, 0x5a, "a stream-ordered buffer read on a new "
                                 "stream");
  check_ok(kiln_context_pool_usage(conf.ctx, NULL, &with));
  check_ok(kiln_buffer_destroy_async(s, x));
  check_ok(kiln_stream_synchronize(s));
  check_ok(kiln_context_pool_usage(conf.ctx, NULL, &after));
  printf("  pool: %zu bytes used before, %zu with a buffer and a host "
         "buffer of %d, %zu after the buffer's release\n",
         before, with, SIZE, after);
  if (with < before + SIZE || with - before >= 2 * SIZE)
    fail_msg("with one live %d-byte buffer and a host buffer of as many "
             "bytes, the pool's use grew from %zu to %zu bytes",
             SIZE, before, with);
  if (after != before)
    fail_msg("the pool counted %zu bytes in use before the buffer and %zu "
             "after its release (a host buffer and a read stay alive)",
             before, after);
  check_ok(kiln_host_buffer_destroy(h));
  check_ok(kiln_stream_destroy(s));
}

/* Bad calls fail in words and free nothing. */
static void bad_stream_ordered_calls(void **state) {
  (void)state;
  kiln_stream *s;
  check_ok(kiln_stream_create(conf.ctx, &s));
  kiln_buffer *x = NULL;
  check_fails(kiln_buffer_create_async(NULL, 16, 0, &x),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_buffer_create_async(s, 16, 0, NULL),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_buffer_create_async(s, 0, 0, &x),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_buffer_create_async(s, 16, 0x80, &x),
              KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("0x80");
  check_ok(kiln_buffer_destroy_async(s, NULL));

  /* A buffer of the synchronous call stays usable after the refusal. */
  kiln_buffer *plain;
  check_ok(kiln_buffer_create(conf.ctx, 64, 0, &plain));
  check_fails(kiln_buffer_destroy_async(s, plain),
              KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("kiln_buffer_destroy");
  fill_byte(s, plain, 64, 0x3C);
  expect_bytes(s, plain, 64, 0x3C, "a buffer whose async release was refused");
  check_ok(kiln_buffer_destroy(plain));

  /* A stream of another context. */
  kiln_context_options o = kiln_context_options_default();
  o.backend = conf.backend;
  kiln_context *other;
  check_ok(kiln_context_create(&o, &other));
  kiln_stream *far;
  check_ok(kiln_stream_create(other, &far));
  check_ok(kiln_buffer_create_async(s, 64, 0, &x));
  check_fails(kiln_buffer_destroy_async(far, x), KILN_ERROR_WRONG_CONTEXT);
  fill_byte(s, x, 64, 0x5A);
  expect_bytes(s, x, 64, 0x5A, "a buffer whose release on a far stream was "
                               "refused");

  /* Released twice. */
  check_ok(kiln_buffer_destroy_async(s, x));
  check_fails(kiln_buffer_destroy_async(s, x), KILN_ERROR_INVALID_HANDLE);
  check_ok(kiln_stream_destroy(far));
  check_ok(kiln_context_destroy(other));

  /* Inside a capture: a graph releases only what its capture made, once. */
  kiln_buffer *outside;
  check_ok(kiln_buffer_create_async(s, 64, 0, &outside));
  check_ok(kiln_stream_begin_capture(s));
  check_ok(kiln_buffer_create_async(s, 64, 0, &x));
  check_fails(kiln_buffer_destroy_async(s, outside), KILN_ERROR_UNSUPPORTED);
  check_message_has("made in its own capture");
  check_ok(kiln_buffer_destroy_async(s, x));
  check_fails(kiln_buffer_destroy_async(s, x), KILN_ERROR_INVALID_ARGUMENT);
  kiln_graph *g = NULL;
  check_ok(kiln_stream_end_capture(s, &g));
  /* The graph's buffer is the graph's while it lives. */
  check_fails(kiln_buffer_destroy_async(s, x), KILN_ERROR_INVALID_STATE);
  check_fails(kiln_buffer_destroy(x), KILN_ERROR_INVALID_STATE);
  check_ok(kiln_graph_destroy(g));
  check_fails(kiln_buffer_destroy(x), KILN_ERROR_INVALID_HANDLE);
  check_ok(kiln_buffer_destroy_async(s, outside));
  check_ok(kiln_stream_destroy(s));
}

/* A capture's buffers are made once, with the graph, and every replay
 * reuses them: a thousand replays leave the pool as it was, and a
 * KILN_BUFFER_ZERO buffer reads as zeros at each replay although the
 * replay before filled it. */
static void a_graph_makes_its_memory_once(void **state) {
  (void)state;
  enum { SIZE = 1 << 16, REPLAYS = 1000 };
  kiln_stream *s;
  check_ok(kiln_stream_create(conf.ctx, &s));
  kiln_buffer *zeros, *marks;
  check_ok(kiln_buffer_create(conf.ctx, SIZE, 0, &zeros));
  check_ok(kiln_buffer_create(conf.ctx, SIZE, 0, &marks));
  check_ok(kiln_stream_begin_capture(s));
  kiln_buffer *tmp;
  check_ok(kiln_buffer_create_async(s, SIZE, KILN_BUFFER_ZERO, &tmp));
  check_ok(kiln_buffer_copy(s, zeros, 0, tmp, 0, SIZE));
  fill_byte(s, tmp, SIZE, 0x77);
  check_ok(kiln_buffer_copy(s, marks, 0, tmp, 0, SIZE));
  check_ok(kiln_buffer_destroy_async(s, tmp));
  kiln_graph *g;
  check_ok(kiln_stream_end_capture(s, &g));
  check_ok(kiln_graph_launch(g, s));
  check_ok(kiln_stream_synchronize(s));
  size_t before, after;
  check_ok(kiln_context_pool_usage(conf.ctx, &before, NULL));
  for (int i = 1; i < REPLAYS; i++) {
    fill_byte(s, zeros, SIZE, 0x11);
    check_ok(kiln_graph_launch(g, s));
  }
  check_ok(kiln_stream_synchronize(s));
  check_ok(kiln_context_pool_usage(conf.ctx, &after, NULL));
  printf("  pool: %zu bytes reserved after the first replay, %zu after %d\n",
         before, after, REPLAYS);
  if (after > before)
    fail_msg("the pool grew from %zu to %zu bytes over %d replays of a graph "
             "that makes a buffer",
             before, after, REPLAYS);
  expect_bytes(s, zeros, SIZE, 0, "a captured KILN_BUFFER_ZERO buffer, copied "
                                  "out at the last replay");
  expect_bytes(s, marks, SIZE, 0x77, "a captured buffer filled and copied "
                                     "out at the last replay");
  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_buffer_destroy(zeros));
  check_ok(kiln_buffer_destroy(marks));
  check_ok(kiln_stream_destroy(s));
}

typedef struct allocator {
  uint64_t seed;
  char failure[256]; /* empty while all is well */
} allocator;

#define ALLOCATOR_CHECK(w, call)                                               \
  do {                                                                         \
    kiln_status st_ = (call);                                                  \
    if (st_ != KILN_OK && !(w)->failure[0])                                    \
      snprintf((w)->failure, sizeof(w)->failure, "%s: %s: %s", #call,          \
               kiln_status_name(st_), kiln_last_error());                      \
  } while (0)

/* One thread, its own stream: buffers of random sizes made, filled with
 * the thread's byte, read back and released, a few alive at a time. */
static void *allocate_on_a_stream(void *arg) {
  allocator *w = arg;
  enum { ROUNDS = 200, LIVE = 4, MAX = 1 << 16 };
  conf_rng r = {w->seed};
  unsigned char *got = malloc(MAX);
  const unsigned char mine = (unsigned char)(w->seed % 251 + 1);
  kiln_stream *s = NULL;
  kiln_buffer *live[LIVE] = {0};
  size_t sizes[LIVE] = {0};
  ALLOCATOR_CHECK(w, kiln_stream_create(conf.ctx, &s));
  for (int i = 0; i < ROUNDS && !w->failure[0] && got; i++) {
    const int k = i % LIVE;
    if (live[k]) {
      ALLOCATOR_CHECK(w, kiln_buffer_read(s, live[k], 0, got, sizes[k]));
      for (size_t j = 0; j < sizes[k] && !w->failure[0]; j++)
        if (got[j] != mine)
          snprintf(w->failure, sizeof w->failure,
                   "byte %zu of a %zu-byte buffer read %u, not the thread's "
                   "%u: memory shared with another thread's buffer?",
                   j, sizes[k], got[j], mine);
      ALLOCATOR_CHECK(w, kiln_buffer_destroy_async(s, live[k]));
      live[k] = NULL;
    }
    sizes[k] = 1 + conf_below(&r, MAX);
    ALLOCATOR_CHECK(w, kiln_buffer_create_async(s, sizes[k], 0, &live[k]));
    if (live[k])
      ALLOCATOR_CHECK(w, kiln_buffer_fill(s, live[k], 0, sizes[k], &mine, 1));
  }
  for (int k = 0; k < LIVE; k++)
    if (live[k]) ALLOCATOR_CHECK(w, kiln_buffer_destroy_async(s, live[k]));
  if (s) ALLOCATOR_CHECK(w, kiln_stream_destroy(s));
  if (!got) snprintf(w->failure, sizeof w->failure, "out of host memory");
  free(got);
  return NULL;
}

static void threads_allocate_on_their_own_streams(void **state) {
  (void)state;
  enum { THREADS = 4 };
  allocator w[THREADS];
  conf_thread *t[THREADS];
  conf_rng r = conf_rng_for(__func__);
  for (int i = 0; i < THREADS; i++) {
    w[i] = (allocator){.seed = conf_next(&r)};
    t[i] = conf_thread_start(allocate_on_a_stream, &w[i]);
  }
  for (int i = 0; i < THREADS; i++)
    conf_thread_join(t[i], "a thread allocating on its stream");
  for (int i = 0; i < THREADS; i++)
    if (w[i].failure[0]) fail_msg("thread %d: %s", i, w[i].failure);
}

int conf_run_stream_memory_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(a_release_in_stream_order_does_not_wait),
      CONF_TEST(a_large_release_in_stream_order_does_not_wait),
      CONF_TEST(memory_is_reused_only_after_the_release_point),
      CONF_TEST(a_kept_release_is_only_for_its_stream),
      CONF_TEST(reuse_on_one_stream_and_zeroes),
      CONF_TEST(a_stream_ordered_buffer_is_a_buffer),
      CONF_TEST(a_thousand_pairs_keep_the_pool_flat),
      CONF_TEST(the_pool_counts_and_trims),
      CONF_TEST(the_pool_counts_only_buffers),
      CONF_TEST(bad_stream_ordered_calls),
      CONF_TEST(a_graph_makes_its_memory_once),
      CONF_TEST(threads_allocate_on_their_own_streams),
  };
  return cmocka_run_group_tests_name("stream-memory", tests, NULL, NULL);
}
