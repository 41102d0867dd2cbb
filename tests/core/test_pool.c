/* Memory in stream order on a backend without a memory table: the core's
 * own pool (core/memory/pool.c). A released buffer is parked with an event
 * recorded at its release; a create of the same size takes it back on the
 * releasing stream at once, on another stream only once the event is
 * done; the pool's counts, trims and keep setting; out of memory with
 * parked buffers; the commands through the door (trace); buffers made in a
 * capture, which are the graph's; and a teardown that leaves nothing
 * behind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_backend.h"
#include "kiln_check.h"

static kiln_stream *stream_of(fake_fixture *f) {
  kiln_stream *s;
  check_ok(kiln_stream_create(f->ctx, &s));
  return s;
}

static uint64_t address_of(kiln_buffer *b) {
  kiln_native_buffer n;
  check_ok(kiln_buffer_get_native(b, &n));
  return n.device_address;
}

static void expect_usage(fake_fixture *f, size_t reserved, size_t used,
                         const char *when) {
  size_t r = 0, u = 0;
  check_ok(kiln_context_pool_usage(f->ctx, &r, &u));
  if (r != reserved || u != used)
    fail_msg("%s: the pool says %zu reserved, %zu used; expected %zu, %zu",
             when, r, u, reserved, used);
}

/* Released and made again on one stream: the same memory, no new buffer
 * from the backend, whatever the device has done (stream order covers the
 * reuse). */
static void a_release_is_reused_on_its_stream(void **state) {
  fake_fixture *f = *state;
  kiln_stream *s = stream_of(f);
  f->fb.events_pending = true; /* the release's event never completes */
  kiln_buffer *a, *b;
  check_ok(kiln_buffer_create_async(s, 4096, 0, &a));
  const uint64_t at = address_of(a);
  const unsigned inits = f->fb.calls[FAKE_OP_BUFFER_INIT];
  check_ok(kiln_buffer_destroy_async(s, a));
  check_ok(kiln_buffer_create_async(s, 4096, 0, &b));
  assert_int_equal(address_of(b), at);
  assert_int_equal(f->fb.calls[FAKE_OP_BUFFER_INIT], inits);
  f->fb.events_pending = false;
  check_ok(kiln_buffer_destroy_async(s, b));
  check_ok(kiln_stream_destroy(s));
}

/* On another stream, the parked buffer is taken only once its release's
 * event is done: before, the backend makes a new one. */
static void another_stream_waits_for_the_release(void **state) {
  fake_fixture *f = *state;
  kiln_stream *s1 = stream_of(f), *s2 = stream_of(f);
  kiln_buffer *a, *b, *c;
  check_ok(kiln_buffer_create_async(s1, 4096, 0, &a));
  const uint64_t at = address_of(a);
  f->fb.events_pending = true;
  check_ok(kiln_buffer_destroy_async(s1, a));
  check_ok(kiln_buffer_create_async(s2, 4096, 0, &b));
  if (address_of(b) == at)
    fail_msg("stream 2 got the memory stream 1 released while stream 1's "
             "work before the release was not done");
  f->fb.events_pending = false;
  check_ok(kiln_buffer_create_async(s2, 4096, 0, &c));
  assert_int_equal(address_of(c), at);
  check_ok(kiln_buffer_destroy_async(s2, b));
  check_ok(kiln_buffer_destroy_async(s2, c));
  check_ok(kiln_stream_destroy(s1));
  check_ok(kiln_stream_destroy(s2));
}

/* What the pool counts, and what trims, the keep setting and the
 * synchronous destroy do to it. */
static void counts_trims_and_keep(void **state) {
  fake_fixture *f = *state;
  kiln_stream *s = stream_of(f);
  kiln_buffer *a, *b;
  expect_usage(f, 0, 0, "a new context");
  check_ok(kiln_buffer_create_async(s, 1000, 0, &a));
  check_ok(kiln_buffer_create_async(s, 3000, 0, &b));
  expect_usage(f, 4000, 4000, "two live buffers");
  check_ok(kiln_buffer_destroy_async(s, a));
  expect_usage(f, 4000, 3000, "one released");
  f->fb.events_pending = true;
  check_ok(kiln_context_trim_pool(f->ctx, 0));
  expect_usage(f, 4000, 3000, "a trim while the release is not done");
  f->fb.events_pending = false;
  check_ok(kiln_context_trim_pool(f->ctx, 0));
  expect_usage(f, 3000, 3000, "a trim once it is done");
  assert_int_equal(f->fb.live[KILN_OBJECT_BUFFER], 1);
  /* The keep setting acts at a synchronize of the device. */
  check_ok(kiln_buffer_destroy_async(s, b));
  expect_usage(f, 3000, 0, "all released");
  check_ok(kiln_context_synchronize(f->ctx));
  expect_usage(f, 3000, 0, "a synchronize, keeping all");
  check_ok(kiln_context_set_pool_keep(f->ctx, 0));
  check_ok(kiln_context_synchronize(f->ctx));
  expect_usage(f, 0, 0, "a synchronize, keeping nothing");
  assert_int_equal(f->fb.live[KILN_OBJECT_BUFFER], 0);
  /* The synchronous destroy takes a pool's buffer too. */
  check_ok(kiln_buffer_create_async(s, 500, 0, &a));
  check_ok(kiln_buffer_destroy(a));
  expect_usage(f, 0, 0, "a pool's buffer destroyed synchronously");
  check_ok(kiln_stream_destroy(s));
}

/* When the backend is out of memory, the pool frees what is parked and
 * done, and tries once more. */
static void out_of_memory_gives_back_what_is_parked(void **state) {
  fake_fixture *f = *state;
  kiln_stream *s = stream_of(f);
  kiln_buffer *a, *b;
  check_ok(kiln_buffer_create_async(s, 2048, 0, &a));
  check_ok(kiln_buffer_destroy_async(s, a));
  expect_usage(f, 2048, 0, "one parked");
  f->fb.fail_op = FAKE_OP_BUFFER_INIT;
  f->fb.fail_status = KILN_ERROR_OUT_OF_DEVICE_MEMORY;
  check_ok(kiln_buffer_create_async(s, 100, 0, &b));
  expect_usage(f, 100, 100, "after the retry");
  f->fb.fail_op = FAKE_OP_BUFFER_INIT;
  f->fb.fail_status = KILN_ERROR_OUT_OF_DEVICE_MEMORY;
  kiln_buffer *c = NULL;
  check_fails(kiln_buffer_create_async(s, 100, 0, &c),
              KILN_ERROR_OUT_OF_DEVICE_MEMORY);
  check_message_has("kiln_buffer_create_async");
  assert_null(c);
  f->fb.fail_op = FAKE_OP_COUNT;
  check_ok(kiln_buffer_destroy_async(s, b));
  check_ok(kiln_stream_destroy(s));
}

/* KILN_BUFFER_ZERO on reused memory: zeroes, in stream order. */
static void zeroes_on_reused_memory(void **state) {
  fake_fixture *f = *state;
  kiln_stream *s = stream_of(f);
  kiln_buffer *a;
  unsigned char got[64], zero[64] = {0};
  const unsigned char ones = 0xFF;
  check_ok(kiln_buffer_create_async(s, 64, 0, &a));
  check_ok(kiln_buffer_fill(s, a, 0, 64, &ones, 1));
  check_ok(kiln_buffer_destroy_async(s, a));
  check_ok(kiln_buffer_create_async(s, 64, KILN_BUFFER_ZERO, &a));
  check_ok(kiln_buffer_read(s, a, 0, got, 64));
  assert_memory_equal(got, zero, 64);
  check_ok(kiln_buffer_destroy_async(s, a));
  check_ok(kiln_stream_destroy(s));
}

static size_t traced[2];

static void count_pool_commands(const kiln_trace_command *c, void *data) {
  (void)data;
  if (c->kind == KILN_TRACE_ALLOC) traced[0] += c->bytes;
  if (c->kind == KILN_TRACE_FREE) traced[1] += c->bytes;
}

/* Both calls are commands of the door: the trace sees them with their
 * sizes. */
static void the_door_traces_both(void **state) {
  fake_fixture *f = *state;
  kiln_stream *s = stream_of(f);
  memset(traced, 0, sizeof traced);
  kiln_set_trace_handler(count_pool_commands, NULL);
  kiln_buffer *a;
  check_ok(kiln_buffer_create_async(s, 300, 0, &a));
  check_ok(kiln_buffer_destroy_async(s, a));
  kiln_set_trace_handler(NULL, NULL);
  assert_int_equal(traced[0], 300);
  assert_int_equal(traced[1], 300);
  check_ok(kiln_stream_destroy(s));
}

/* A context destroyed with parked and live buffers of the pool: the fake
 * holds nothing after. */
static void teardown_frees_the_pool(void **state) {
  fake_fixture *f = *state;
  kiln_stream *s = stream_of(f);
  kiln_buffer *a, *b;
  check_ok(kiln_buffer_create_async(s, 128, 0, &a));
  check_ok(kiln_buffer_create_async(s, 256, 0, &b));
  check_ok(kiln_buffer_destroy_async(s, a));
  check_ok(kiln_stream_destroy(s));
  (void)b; /* left alive: the context's destroy reports and releases it */
  kiln_status st = kiln_context_destroy(f->ctx);
  assert_int_equal(st, KILN_ERROR_OBJECTS_ALIVE);
  assert_int_equal(fake_live_objects(&f->fb), 0);
  /* For the fixture's teardown. */
  check_ok(kiln_context_create(
      &(kiln_context_options){KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT},
      &f->ctx));
}

/* A capture's buffer is made once, with the graph: replays make none,
 * zero it first for KILN_BUFFER_ZERO (the replay before filled it), and
 * the graph's destroy frees it; the graph's build queues nothing for it. */
static void a_graph_owns_its_buffers(void **state) {
  fake_fixture *f = *state;
  kiln_stream *s = stream_of(f);
  kiln_buffer *out;
  check_ok(kiln_buffer_create(f->ctx, 64, 0, &out));
  const long before = f->fb.live[KILN_OBJECT_BUFFER];
  check_ok(kiln_stream_begin_capture(s));
  kiln_buffer *tmp;
  check_ok(kiln_buffer_create_async(s, 64, KILN_BUFFER_ZERO, &tmp));
  check_ok(kiln_buffer_copy(s, out, 0, tmp, 0, 64));
  const unsigned char ab = 0xAB;
  check_ok(kiln_buffer_fill(s, tmp, 0, 64, &ab, 1));
  check_ok(kiln_buffer_destroy_async(s, tmp));
  kiln_graph *g;
  check_ok(kiln_stream_end_capture(s, &g));
  assert_int_equal(f->fb.live[KILN_OBJECT_BUFFER], before + 1);
  expect_usage(f, 0, 0, "a graph's buffer, not the pool's");
  unsigned char got[64], zero[64] = {0};
  for (int i = 0; i < 100; i++) {
    check_ok(kiln_buffer_fill(s, out, 0, 64, &ab, 1));
    check_ok(kiln_graph_launch(g, s));
    check_ok(kiln_buffer_read(s, out, 0, got, 64));
    assert_memory_equal(got, zero, 64);
  }
  assert_int_equal(f->fb.live[KILN_OBJECT_BUFFER], before + 1);
  check_ok(kiln_graph_destroy(g));
  assert_int_equal(f->fb.live[KILN_OBJECT_BUFFER], before);
  check_ok(kiln_buffer_destroy(out));
  check_ok(kiln_stream_destroy(s));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(a_release_is_reused_on_its_stream,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(another_stream_waits_for_the_release,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(counts_trims_and_keep,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(out_of_memory_gives_back_what_is_parked,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(zeroes_on_reused_memory,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(the_door_traces_both, fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(a_graph_owns_its_buffers,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(teardown_frees_the_pool,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
