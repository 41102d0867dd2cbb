/* KILN_DEBUG=reorder on the fake backend (fake_queue.c): work a stream
 * queued without waiting for another's runs before that other's earlier
 * work, so a program that relied on queue order sees the wrong result;
 * event waits keep the order they ask for, and no more; and the core's
 * own paths (graph capture and replay, the built-in helpers, host buffer
 * transfers, KILN_DEBUG=guard) still give the right results. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/internal.h"
#include "fake_backend.h"
#include "kiln_check.h"

enum { N = 64 };

/* A fixture whose context was created under KILN_DEBUG=`modes`. */
static int setup_with(void **state, const char *modes) {
  setenv("KILN_DEBUG", modes, 1);
  int rc = fake_fixture_setup(state);
  unsetenv("KILN_DEBUG");
  return rc;
}

static int reorder_setup(void **state) { return setup_with(state, "reorder"); }

static int guard_reorder_setup(void **state) {
  return setup_with(state, "guard,reorder");
}

static kiln_context *ctx_of(void **state) {
  return ((fake_fixture *)*state)->ctx;
}

static void pattern(unsigned char *p, unsigned char seed) {
  for (size_t i = 0; i < N; i++) p[i] = (unsigned char)(seed + i * 7);
}

/* Writes on `a`, then copies on `b` without waiting, and returns in got
 * what the copy found. */
static void unordered_copy(kiln_context *ctx, unsigned char *got) {
  unsigned char data[N];
  pattern(data, 1);
  kiln_buffer *x, *y;
  check_ok(kiln_buffer_create(ctx, N, KILN_BUFFER_ZERO, &x));
  check_ok(kiln_buffer_create(ctx, N, KILN_BUFFER_ZERO, &y));
  kiln_stream *a, *b;
  check_ok(kiln_stream_create(ctx, &a));
  check_ok(kiln_stream_create(ctx, &b));
  check_ok(kiln_buffer_write(a, x, 0, data, N));
  check_ok(kiln_buffer_copy(b, y, 0, x, 0, N));
  check_ok(kiln_context_synchronize(ctx));
  check_ok(kiln_buffer_read(b, y, 0, got, N));
  unsigned char x_now[N];
  check_ok(kiln_buffer_read(a, x, 0, x_now, N));
  assert_memory_equal(x_now, data, N);
  check_ok(kiln_stream_destroy(a));
  check_ok(kiln_stream_destroy(b));
  check_ok(kiln_buffer_destroy(x));
  check_ok(kiln_buffer_destroy(y));
}

/* The copy on the second stream ran before the first stream's earlier
 * write: it found the zeros. The same program on a context without the
 * mode finds the data, which is how the mistake hides. */
static void unordered_streams_run_out_of_order(void **state) {
  unsigned char got[N], zero[N] = {0}, data[N];
  unordered_copy(ctx_of(state), got);
  assert_memory_equal(got, zero, N);

  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  kiln_context *plain;
  check_ok(kiln_context_create(&o, &plain));
  unordered_copy(plain, got);
  pattern(data, 1);
  assert_memory_equal(got, data, N);
  check_ok(kiln_context_destroy(plain));
}

/* A wait runs the recorded stream up to the record, and no further: the
 * write after the record (and the one the event records again after the
 * wait) comes after the copy; a second wait carries the order on to a
 * third stream. */
static void an_event_wait_keeps_order(void **state) {
  kiln_context *ctx = ctx_of(state);
  unsigned char first[N], second[N], third[N], got[N];
  pattern(first, 1);
  pattern(second, 2);
  pattern(third, 3);
  kiln_buffer *x, *y, *z;
  check_ok(kiln_buffer_create(ctx, N, KILN_BUFFER_ZERO, &x));
  check_ok(kiln_buffer_create(ctx, N, KILN_BUFFER_ZERO, &y));
  check_ok(kiln_buffer_create(ctx, N, KILN_BUFFER_ZERO, &z));
  kiln_stream *a, *b, *c;
  check_ok(kiln_stream_create(ctx, &a));
  check_ok(kiln_stream_create(ctx, &b));
  check_ok(kiln_stream_create(ctx, &c));
  kiln_event *e, *f;
  check_ok(kiln_event_create(ctx, &e));
  check_ok(kiln_event_create(ctx, &f));

  check_ok(kiln_buffer_write(a, x, 0, first, N));
  check_ok(kiln_event_record(e, a));
  check_ok(kiln_buffer_write(a, x, 0, second, N));
  check_ok(kiln_stream_wait_event(b, e));
  check_ok(kiln_event_record(e, a));
  check_ok(kiln_buffer_write(a, x, 0, third, N));
  check_ok(kiln_buffer_copy(b, y, 0, x, 0, N));
  check_ok(kiln_event_record(f, b));
  check_ok(kiln_stream_wait_event(c, f));
  check_ok(kiln_buffer_copy(c, z, 0, y, 0, N));
  check_ok(kiln_event_synchronize(f));
  check_ok(kiln_buffer_read(c, z, 0, got, N));
  assert_memory_equal(got, first, N);
  check_ok(kiln_buffer_read(c, y, 0, got, N));
  assert_memory_equal(got, first, N);
  check_ok(kiln_buffer_read(a, x, 0, got, N));
  assert_memory_equal(got, third, N);

  check_ok(kiln_event_destroy(e));
  check_ok(kiln_event_destroy(f));
  check_ok(kiln_stream_destroy(a));
  check_ok(kiln_stream_destroy(b));
  check_ok(kiln_stream_destroy(c));
  check_ok(kiln_buffer_destroy(x));
  check_ok(kiln_buffer_destroy(y));
  check_ok(kiln_buffer_destroy(z));
}

/* Held work runs at every host wait: a stream synchronize, an event query,
 * a blocking read, a destroy; and a held write keeps the caller's bytes,
 * which the caller may reuse as soon as the call returns. */
static void host_waits_run_what_is_held(void **state) {
  kiln_context *ctx = ctx_of(state);
  unsigned char data[N], got[N];
  pattern(data, 4);
  kiln_buffer *x;
  check_ok(kiln_buffer_create(ctx, N, KILN_BUFFER_ZERO, &x));
  kiln_stream *a;
  check_ok(kiln_stream_create(ctx, &a));
  kiln_event *e;
  check_ok(kiln_event_create(ctx, &e));
  kiln_host_buffer *h;
  check_ok(kiln_host_buffer_create(ctx, N, 0, &h));
  unsigned char *hd = kiln_host_buffer_data(h);

  unsigned char reused[N];
  memcpy(reused, data, N);
  check_ok(kiln_buffer_write(a, x, 0, reused, N));
  memset(reused, 0, N);
  check_ok(kiln_buffer_read_async(a, x, 0, h, 0, N));
  check_ok(kiln_stream_synchronize(a));
  assert_memory_equal(hd, data, N);

  memset(hd, 0, N);
  check_ok(kiln_buffer_read_async(a, x, 0, h, 0, N));
  check_ok(kiln_event_record(e, a));
  check_ok(kiln_event_query(e));
  assert_memory_equal(hd, data, N);

  const uint32_t word = 0x01020304;
  check_ok(kiln_buffer_fill(a, x, 0, N, &word, 4));
  check_ok(kiln_buffer_read(NULL, x, 0, got, N));
  for (size_t i = 0; i < N; i += 4) assert_memory_equal(got + i, &word, 4);

  /* Destroying the stream runs what it holds before the buffer goes. */
  memset(hd, 0, N);
  check_ok(kiln_buffer_read_async(a, x, 0, h, 0, N));
  check_ok(kiln_stream_destroy(a));
  assert_memory_equal(hd, got, N);

  check_ok(kiln_host_buffer_destroy(h));
  check_ok(kiln_event_destroy(e));
  check_ok(kiln_buffer_destroy(x));
}

/* Events time only what has run: before a host wait their records are
 * held, and the time between them is not ready, as on a device. */
static void elapsed_waits_for_the_records(void **state) {
  kiln_context *ctx = ctx_of(state);
  kiln_stream *a;
  check_ok(kiln_stream_create(ctx, &a));
  kiln_event *e0, *e1;
  check_ok(kiln_event_create(ctx, &e0));
  check_ok(kiln_event_create(ctx, &e1));
  check_ok(kiln_event_record(e0, a));
  check_ok(kiln_event_record(e1, a));
  float ms = -1.0f;
  check_fails(kiln_event_elapsed_ms(e0, e1, &ms), KILN_ERROR_NOT_READY);
  assert_true(ms == -1.0f);
  check_ok(kiln_event_synchronize(e1));
  check_ok(kiln_event_elapsed_ms(e0, e1, &ms));
  assert_true(ms >= 0.0f);
  check_ok(kiln_event_destroy(e0));
  check_ok(kiln_event_destroy(e1));
  check_ok(kiln_stream_destroy(a));
}

/* A graph replays in stream order with its captured wait and record: the
 * wait orders its copy after another stream's write, and a third stream
 * that waits for the graph's record sees the graph's work. */
static void graphs_keep_their_captured_order(void **state) {
  kiln_context *ctx = ctx_of(state);
  unsigned char data[N], want[N], got[N];
  pattern(data, 5);
  kiln_buffer *x, *y, *z;
  check_ok(kiln_buffer_create(ctx, N, KILN_BUFFER_ZERO, &x));
  check_ok(kiln_buffer_create(ctx, N, KILN_BUFFER_ZERO, &y));
  check_ok(kiln_buffer_create(ctx, N, KILN_BUFFER_ZERO, &z));
  kiln_stream *a, *s, *c;
  check_ok(kiln_stream_create(ctx, &a));
  check_ok(kiln_stream_create(ctx, &s));
  check_ok(kiln_stream_create(ctx, &c));
  kiln_event *written, *done;
  check_ok(kiln_event_create(ctx, &written));
  check_ok(kiln_event_create(ctx, &done));

  /* Recorded once before the capture, as a wait needs. */
  check_ok(kiln_event_record(written, a));
  const uint32_t word = 0xa5a5a5a5u;
  check_ok(kiln_stream_begin_capture(s));
  check_ok(kiln_stream_wait_event(s, written));
  check_ok(kiln_buffer_copy(s, y, 0, x, 0, N));
  check_ok(kiln_buffer_fill(s, y, 0, 8, &word, 4));
  check_ok(kiln_event_record(done, s));
  kiln_graph *g;
  check_ok(kiln_stream_end_capture(s, &g));

  check_ok(kiln_buffer_write(a, x, 0, data, N));
  check_ok(kiln_event_record(written, a));
  check_ok(kiln_graph_launch(g, s));
  check_ok(kiln_stream_wait_event(c, done));
  check_ok(kiln_buffer_copy(c, z, 0, y, 0, N));
  check_ok(kiln_stream_synchronize(c));
  memcpy(want, data, N);
  memcpy(want, &word, 4);
  memcpy(want + 4, &word, 4);
  check_ok(kiln_buffer_read(c, z, 0, got, N));
  assert_memory_equal(got, want, N);

  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_event_destroy(written));
  check_ok(kiln_event_destroy(done));
  check_ok(kiln_stream_destroy(a));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_stream_destroy(c));
  check_ok(kiln_buffer_destroy(x));
  check_ok(kiln_buffer_destroy(y));
  check_ok(kiln_buffer_destroy(z));
}

/* The built-in helpers (a reduction, axpy, a fill through the kiln_fill
 * kernel) on a stream that waits for another's writes: exact results on
 * small integers, which sum without rounding. */
static void helpers_after_a_wait(void **state) {
  fake_fixture *fx = *state;
  kiln_context *ctx = fx->ctx;
  enum { M = 1000 };
  float x[M], y[M], got[M];
  double sum = 0;
  for (size_t i = 0; i < M; i++) {
    x[i] = (float)(i % 13) - 6.0f;
    y[i] = (float)(i % 5);
    sum += x[i];
  }
  kiln_buffer *bx, *by, *res;
  check_ok(kiln_buffer_create(ctx, sizeof x, 0, &bx));
  check_ok(kiln_buffer_create(ctx, sizeof y, 0, &by));
  check_ok(kiln_buffer_create(ctx, 16, 0, &res));
  kiln_stream *a, *b;
  check_ok(kiln_stream_create(ctx, &a));
  check_ok(kiln_stream_create(ctx, &b));
  kiln_event *e;
  check_ok(kiln_event_create(ctx, &e));
  fx->fb.fill_with_kernel = true;
  const float canary = 7.0f;
  check_ok(kiln_buffer_fill(a, res, 0, 16, &canary, 4));
  fx->fb.fill_with_kernel = false;
  check_ok(kiln_buffer_write(a, bx, 0, x, sizeof x));
  check_ok(kiln_buffer_write(a, by, 0, y, sizeof y));
  check_ok(kiln_event_record(e, a));
  check_ok(kiln_stream_wait_event(b, e));
  check_ok(kiln_reduce_sum_f32(b, M, bx, 0, res, 4));
  check_ok(kiln_axpy_f32(b, M, 2.0f, bx, 0, by, 0));
  float r[4];
  check_ok(kiln_buffer_read(b, res, 0, r, sizeof r));
  assert_true(r[0] == canary && r[2] == canary && r[3] == canary);
  if ((double)r[1] != sum) fail_msg("sum %.9g, expected %.9g", r[1], sum);
  check_ok(kiln_buffer_read(b, by, 0, got, sizeof got));
  for (size_t i = 0; i < M; i++)
    if (got[i] != 2.0f * x[i] + y[i])
      fail_msg("y[%zu] = %.9g, expected %.9g", i, got[i], 2.0f * x[i] + y[i]);
  check_ok(kiln_event_destroy(e));
  check_ok(kiln_stream_destroy(a));
  check_ok(kiln_stream_destroy(b));
  check_ok(kiln_buffer_destroy(bx));
  check_ok(kiln_buffer_destroy(by));
  check_ok(kiln_buffer_destroy(res));
}

/* KILN_DEBUG=guard,reorder: legal work finds nothing, and a write past a
 * buffer that a launch took is still found at the stream's synchronize. */
static void guard_still_checks(void **state) {
  fake_fixture *fx = *state;
  kiln_context *ctx = fx->ctx;
  assert_non_null(ctx->guard);
  kiln_module_image img = fake_image("poke(p)");
  kiln_module *m;
  check_ok(kiln_module_create(ctx, &img, 1, &m));
  kiln_kernel *k;
  check_ok(kiln_module_get_kernel(m, "poke", &k));
  kiln_buffer *b;
  check_ok(kiln_buffer_create(ctx, N, 0, &b));
  kiln_stream *a;
  check_ok(kiln_stream_create(ctx, &a));
  unsigned char data[N];
  pattern(data, 6);
  check_ok(kiln_buffer_write(a, b, 0, data, N));
  const uint16_t half = 0x1234;
  check_ok(kiln_buffer_fill(a, b, 2, 4, &half, 2));
  kiln_launch_config c = kiln_launch_config_1d(1, 1);
  kiln_arg arg = kiln_arg_buffer(b, 0);
  check_ok(kiln_launch(a, k, &c, &arg, 1));
  check_ok(kiln_stream_synchronize(a));

  /* The test plays a kernel that writes one byte past the buffer. */
  check_ok(kiln_launch(a, k, &c, &arg, 1));
  const fake_launch *l = fake_launch_back(&fx->fb, 0);
  uint64_t address;
  memcpy(&address, l->args.data + l->args.offsets[0], sizeof address);
  ((unsigned char *)(uintptr_t)address)[N] ^= 0xff;
  check_fails(kiln_stream_synchronize(a), KILN_ERROR_MEMORY_CORRUPTION);
  check_message_has("size+0");
  check_ok(kiln_stream_destroy(a));
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_module_destroy(m));
}

#define REORDER_TEST(name) \
  cmocka_unit_test_setup_teardown(name, reorder_setup, fake_fixture_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      REORDER_TEST(unordered_streams_run_out_of_order),
      REORDER_TEST(an_event_wait_keeps_order),
      REORDER_TEST(host_waits_run_what_is_held),
      REORDER_TEST(elapsed_waits_for_the_records),
      REORDER_TEST(graphs_keep_their_captured_order),
      REORDER_TEST(helpers_after_a_wait),
      cmocka_unit_test_setup_teardown(guard_still_checks, guard_reorder_setup,
                                      fake_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
