/* Memory in stream order on a backend with a pool of its own (a memory
 * table): what core/memory/reuse.c keeps in front of it. A buffer released
 * on a stream is taken back by that stream's next create of its size
 * without the backend; never by another stream; and it goes to the
 * backend, on its own stream and while that stream lives, when it is
 * pushed out by a newer release on its stream, too large, past the keep
 * setting, at a context's synchronize, at a trim, when the device is
 * full, when its stream goes and when the context goes; and
 * what the pool says of itself at debug level. The fake's memory table
 * here counts what reaches the backend. */
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

enum { MIB = 1 << 20 };

/* What reached the memory table. */
static struct {
  unsigned inits, deinits, trims;
  size_t live_bytes;                /* made by init_async, not yet freed */
  const kiln_stream *freed_on;      /* the stream of the last deinit_async */
  size_t freed_size;                /* and its buffer's size */
  bool oom_next;                    /* the next init_async is refused */
} seen;

/* The fake pool counts whole 256-byte pieces, as Vulkan's sub-allocator
 * rounds a range up to its alignment. */
static size_t pool_bytes(const kiln_buffer *buf) {
  return (buf->size + 255) & ~(size_t)255;
}

static fake_backend *fake_of(const kiln_context *ctx) {
  return (fake_backend *)(uintptr_t)ctx->ops;
}

static kiln_status supported(kiln_context *ctx) {
  (void)ctx;
  return KILN_OK;
}

static kiln_status init_async(kiln_buffer *buf, kiln_stream *s,
                              uint32_t flags) {
  (void)s;
  if (seen.oom_next) {
    seen.oom_next = false;
    return kiln_set_error(KILN_ERROR_OUT_OF_DEVICE_MEMORY, "fake: full");
  }
  kiln_status st = fake_of(buf->base.context)->ops.buffer_init(buf, flags);
  if (st == KILN_OK) {
    seen.inits++;
    seen.live_bytes += pool_bytes(buf);
  }
  return st;
}

static kiln_status deinit_async(kiln_buffer *buf, kiln_stream *s) {
  /* The stream must still take work: a release queued on a stream that
   * is gone would be lost, or touch freed memory. */
  if (!s->ready) fail_msg("a kept buffer was released on a stream that went");
  seen.deinits++;
  seen.live_bytes -= pool_bytes(buf);
  seen.freed_on = s;
  seen.freed_size = buf->size;
  fake_of(buf->base.context)->ops.buffer_deinit(buf);
  return KILN_OK;
}

static kiln_status trim(kiln_context *ctx, size_t keep_bytes) {
  (void)ctx;
  (void)keep_bytes;
  seen.trims++;
  return KILN_OK;
}

static kiln_status usage(kiln_context *ctx, size_t *out_reserved,
                         size_t *out_used) {
  (void)ctx;
  *out_reserved = seen.live_bytes;
  *out_used = seen.live_bytes;
  return KILN_OK;
}

static kiln_status set_keep(kiln_context *ctx, size_t keep_bytes) {
  (void)ctx;
  (void)keep_bytes;
  return KILN_OK;
}

static const kiln_memory_ops memory_table = {
    .supported = supported,
    .buffer_init_async = init_async,
    .buffer_deinit_async = deinit_async,
    .trim = trim,
    .usage = usage,
    .set_keep = set_keep,
    .buffer_pool_bytes = pool_bytes,
};

static void use_memory_table(fake_backend *fb) {
  fb->ops.memory = &memory_table;
}

static int setup(void **state) {
  memset(&seen, 0, sizeof seen);
  return fake_fixture_setup_with(state, use_memory_table);
}

/* The fixture's teardown, which also fails if the fake holds a buffer:
 * the context's end gave back what was kept. */
static int teardown(void **state) {
  int rc = fake_fixture_teardown(state);
  if (seen.live_bytes != 0) {
    fprintf(stderr, "teardown: %zu bytes never given back to the pool\n",
            seen.live_bytes);
    rc = -1;
  }
  return rc;
}

static uint64_t address_of(kiln_buffer *b) {
  kiln_native_buffer n;
  check_ok(kiln_buffer_get_native(b, &n));
  return n.device_address;
}

static size_t used_of(fake_fixture *f) {
  size_t used = 0;
  check_ok(kiln_context_pool_usage(f->ctx, NULL, &used));
  return used;
}

/* A hundred pairs on one stream: one buffer from the backend, the same
 * memory each time, none given back until the stream goes, and then on
 * that stream. */
static void pairs_on_one_stream_ask_the_backend_once(void **state) {
  fake_fixture *f = *state;
  kiln_stream *s;
  check_ok(kiln_stream_create(f->ctx, &s));
  uint64_t first = 0;
  for (int i = 0; i < 100; i++) {
    kiln_buffer *b;
    check_ok(kiln_buffer_create_async(s, 4096, 0, &b));
    if (i == 0) first = address_of(b);
    if (address_of(b) != first)
      fail_msg("pair %d got other memory than the first", i);
    check_ok(kiln_buffer_destroy_async(s, b));
  }
  assert_int_equal(seen.inits, 1);
  assert_int_equal(seen.deinits, 0);
  if (used_of(f) != 0)
    fail_msg("a kept buffer counts as used: %zu bytes", used_of(f));
  check_ok(kiln_stream_destroy(s));
  assert_int_equal(seen.deinits, 1);
  assert_ptr_equal(seen.freed_on, s);
}

/* Another stream never takes what a stream released: the release may not
 * be done. */
static void another_stream_gets_other_memory(void **state) {
  fake_fixture *f = *state;
  kiln_stream *s1, *s2;
  check_ok(kiln_stream_create(f->ctx, &s1));
  check_ok(kiln_stream_create(f->ctx, &s2));
  kiln_buffer *a, *b;
  check_ok(kiln_buffer_create_async(s1, 4096, 0, &a));
  const uint64_t at = address_of(a);
  check_ok(kiln_buffer_destroy_async(s1, a));
  check_ok(kiln_buffer_create_async(s2, 4096, 0, &b));
  if (address_of(b) == at)
    fail_msg("stream 2 took the buffer stream 1 released");
  assert_int_equal(seen.inits, 2);
  check_ok(kiln_buffer_destroy_async(s2, b));
  check_ok(kiln_stream_destroy(s1));
  assert_ptr_equal(seen.freed_on, s1);
  check_ok(kiln_stream_destroy(s2));
  assert_ptr_equal(seen.freed_on, s2);
}

/* Past 4 MiB a release goes to the backend at once; so does every release
 * once the keep setting is below its size, and what was kept goes then. */
static void large_buffers_and_the_keep_setting(void **state) {
  fake_fixture *f = *state;
  kiln_stream *s;
  check_ok(kiln_stream_create(f->ctx, &s));
  kiln_buffer *b;
  check_ok(kiln_buffer_create_async(s, 4 * MIB + 1, 0, &b));
  check_ok(kiln_buffer_destroy_async(s, b));
  assert_int_equal(seen.deinits, 1);
  check_ok(kiln_buffer_create_async(s, 1000, 0, &b));
  check_ok(kiln_buffer_destroy_async(s, b));
  assert_int_equal(seen.deinits, 1);
  check_ok(kiln_context_set_pool_keep(f->ctx, 0));
  assert_int_equal(seen.deinits, 2);
  assert_int_equal(seen.freed_size, 1000);
  check_ok(kiln_buffer_create_async(s, 1000, 0, &b));
  check_ok(kiln_buffer_destroy_async(s, b));
  assert_int_equal(seen.deinits, 3);
  check_ok(kiln_context_set_pool_keep(f->ctx, SIZE_MAX));
  check_ok(kiln_stream_destroy(s));
}

/* A release pushes out only what is kept for its own stream: another
 * stream's would be released on that stream, queuing work there (and
 * waiting, where its queue is full). With no room, the release goes to
 * the backend itself. */
static void a_release_pushes_out_only_its_streams(void **state) {
  fake_fixture *f = *state;
  kiln_stream *s1, *s2;
  check_ok(kiln_stream_create(f->ctx, &s1));
  check_ok(kiln_stream_create(f->ctx, &s2));
  kiln_buffer *b[9];
  for (size_t i = 0; i < 9; i++)
    check_ok(kiln_buffer_create_async(i < 8 ? s1 : s2, 100 + i, 0, &b[i]));
  for (size_t i = 0; i < 8; i++) check_ok(kiln_buffer_destroy_async(s1, b[i]));
  check_ok(kiln_buffer_destroy_async(s2, b[8]));
  assert_int_equal(seen.deinits, 1);
  assert_ptr_equal(seen.freed_on, s2);
  assert_int_equal(seen.freed_size, 108);
  check_ok(kiln_stream_destroy(s1));
  assert_int_equal(seen.deinits, 9);
  check_ok(kiln_stream_destroy(s2));
}

/* A context's synchronize gives back what is kept before it waits, so
 * that the keep setting and trims cover it. */
static void a_synchronize_gives_back_what_is_kept(void **state) {
  fake_fixture *f = *state;
  kiln_stream *s;
  check_ok(kiln_stream_create(f->ctx, &s));
  kiln_buffer *b;
  check_ok(kiln_buffer_create_async(s, 100, 0, &b));
  check_ok(kiln_buffer_destroy_async(s, b));
  /* Kept: the fake pool counts 256 bytes for it, none of them used. */
  size_t reserved = 0;
  check_ok(kiln_context_pool_usage(f->ctx, &reserved, NULL));
  assert_int_equal(reserved, 256);
  if (used_of(f) != 0)
    fail_msg("a kept 100-byte buffer counts %zu bytes as used", used_of(f));
  check_ok(kiln_stream_synchronize(s));
  assert_int_equal(seen.deinits, 0);
  check_ok(kiln_context_synchronize(f->ctx));
  assert_int_equal(seen.deinits, 1);
  check_ok(kiln_stream_destroy(s));
}

/* Eight are kept, 16 MiB at most; the least recently kept goes first. */
static void the_least_recent_goes_first(void **state) {
  fake_fixture *f = *state;
  kiln_stream *s;
  check_ok(kiln_stream_create(f->ctx, &s));
  kiln_buffer *b[9];
  for (size_t i = 0; i < 9; i++)
    check_ok(kiln_buffer_create_async(s, 100 + i, 0, &b[i]));
  for (size_t i = 0; i < 8; i++) check_ok(kiln_buffer_destroy_async(s, b[i]));
  assert_int_equal(seen.deinits, 0);
  check_ok(kiln_buffer_destroy_async(s, b[8]));
  assert_int_equal(seen.deinits, 1);
  assert_int_equal(seen.freed_size, 100);
  /* The others are still there for their sizes. */
  for (size_t i = 1; i < 9; i++) {
    check_ok(kiln_buffer_create_async(s, 100 + i, 0, &b[i]));
    check_ok(kiln_buffer_destroy_async(s, b[i]));
  }
  assert_int_equal(seen.inits, 9);
  check_ok(kiln_context_trim_pool(f->ctx, 0));
  assert_int_equal(seen.deinits, 9);
  /* By bytes: the fifth 4 MiB buffer pushes out the first. */
  for (size_t i = 0; i < 5; i++)
    check_ok(kiln_buffer_create_async(s, 4 * MIB - i, 0, &b[i]));
  for (size_t i = 0; i < 4; i++) check_ok(kiln_buffer_destroy_async(s, b[i]));
  assert_int_equal(seen.deinits, 9);
  check_ok(kiln_buffer_destroy_async(s, b[4]));
  assert_int_equal(seen.deinits, 10);
  assert_int_equal(seen.freed_size, 4 * MIB);
  check_ok(kiln_stream_destroy(s));
}

/* A trim gives back what is kept, and so does a create the device
 * refuses, which then tries once more. */
static void trims_and_full_devices_take_what_is_kept(void **state) {
  fake_fixture *f = *state;
  kiln_stream *s;
  check_ok(kiln_stream_create(f->ctx, &s));
  kiln_buffer *b;
  check_ok(kiln_buffer_create_async(s, 2048, 0, &b));
  check_ok(kiln_buffer_destroy_async(s, b));
  check_ok(kiln_context_trim_pool(f->ctx, 0));
  assert_int_equal(seen.deinits, 1);
  assert_int_equal(seen.trims, 1);
  check_ok(kiln_buffer_create_async(s, 2048, 0, &b));
  check_ok(kiln_buffer_destroy_async(s, b));
  seen.oom_next = true;
  check_ok(kiln_buffer_create_async(s, 512, 0, &b));
  assert_int_equal(seen.deinits, 2);
  assert_int_equal(seen.freed_size, 2048);
  seen.oom_next = true;
  kiln_buffer *c = NULL;
  /* Nothing kept: refused once, no retry of the core's. */
  check_ok(kiln_buffer_destroy_async(s, b));
  check_ok(kiln_context_trim_pool(f->ctx, 0));
  check_fails(kiln_buffer_create_async(s, 512, 0, &c),
              KILN_ERROR_OUT_OF_DEVICE_MEMORY);
  check_message_has("kiln_buffer_create_async");
  assert_null(c);
  check_ok(kiln_stream_destroy(s));
}

/* KILN_BUFFER_ZERO on a kept buffer: zeroes, in stream order, whatever the
 * last user wrote. */
static void a_kept_buffer_is_zeroed_when_asked(void **state) {
  fake_fixture *f = *state;
  kiln_stream *s;
  check_ok(kiln_stream_create(f->ctx, &s));
  kiln_buffer *a;
  unsigned char got[64], zero[64] = {0};
  const unsigned char ones = 0xFF;
  check_ok(kiln_buffer_create_async(s, 64, 0, &a));
  check_ok(kiln_buffer_fill(s, a, 0, 64, &ones, 1));
  check_ok(kiln_buffer_destroy_async(s, a));
  check_ok(kiln_buffer_create_async(s, 64, KILN_BUFFER_ZERO, &a));
  assert_int_equal(seen.inits, 1);
  check_ok(kiln_buffer_read(s, a, 0, got, 64));
  assert_memory_equal(got, zero, 64);
  check_ok(kiln_buffer_destroy_async(s, a));
  check_ok(kiln_stream_destroy(s));
}

/* Kept on the default stream and on another when the context goes: both
 * are given back, each while its stream lives. */
static void the_context_gives_back_what_is_kept(void **state) {
  fake_fixture *f = *state;
  kiln_stream *def, *s;
  check_ok(kiln_context_default_stream(f->ctx, &def));
  check_ok(kiln_stream_create(f->ctx, &s));
  kiln_buffer *a, *b;
  check_ok(kiln_buffer_create_async(def, 4096, 0, &a));
  check_ok(kiln_buffer_destroy_async(def, a));
  check_ok(kiln_buffer_create_async(s, 8192, 0, &b));
  check_ok(kiln_buffer_destroy_async(s, b));
  assert_int_equal(seen.deinits, 0);
  /* s left alive: the context's destroy reports it and releases it. */
  assert_int_equal(kiln_context_destroy(f->ctx), KILN_ERROR_OBJECTS_ALIVE);
  assert_int_equal(seen.deinits, 2);
  assert_int_equal(seen.live_bytes, 0);
  assert_int_equal(fake_live_objects(&f->fb), 0);
  /* For the fixture's teardown. */
  check_ok(kiln_context_create(
      &(kiln_context_options){KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT},
      &f->ctx));
}

static char pool_said[512];

static void keep_pool_message(kiln_log_level level, const char *message,
                              void *user_data) {
  (void)user_data;
  if (level == KILN_LOG_DEBUG && strstr(message, "stream-ordered pool"))
    snprintf(pool_said, sizeof pool_said, "%s", message);
}

/* Expects the pool's last debug message to say `when` and `figures`. */
static void expect_said(const char *when, const char *figures) {
  if (!strstr(pool_said, when) || !strstr(pool_said, figures))
    fail_msg("the pool's debug message \"%s\" does not say \"%s\" and "
             "\"%s\"",
             pool_said, when, figures);
  pool_said[0] = '\0';
}

/* At debug level the pool says what it holds, as kiln_context_pool_usage
 * reads it: at a synchronize of the context, after a trim and at the
 * context's end. */
static void the_log_shows_the_pool(void **state) {
  fake_fixture *f = *state;
  const kiln_log_level was = kiln_get_log_level();
  pool_said[0] = '\0';
  kiln_set_log_handler(keep_pool_message, NULL);
  kiln_set_log_level(KILN_LOG_DEBUG);
  kiln_stream *s;
  check_ok(kiln_stream_create(f->ctx, &s));
  check_ok(kiln_context_synchronize(f->ctx));
  if (pool_said[0])
    fail_msg("a pool that never served spoke: \"%s\"", pool_said);
  kiln_buffer *b;
  check_ok(kiln_buffer_create_async(s, 4096, 0, &b));
  check_ok(kiln_context_synchronize(f->ctx));
  expect_said("at a synchronize of the context",
              "4096 bytes reserved, 4096 of them in use");
  /* Kept for s, it goes back to the pool before the synchronize's wait:
   * the fake pool frees it at once. */
  check_ok(kiln_buffer_destroy_async(s, b));
  check_ok(kiln_context_synchronize(f->ctx));
  expect_said("at a synchronize of the context",
              "0 bytes reserved, 0 of them in use");
  check_ok(kiln_buffer_create_async(s, 4096, 0, &b));
  check_ok(kiln_context_trim_pool(f->ctx, 0));
  expect_said("after a trim", "4096 bytes reserved, 4096 of them in use");
  check_ok(kiln_buffer_destroy_async(s, b));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_context_destroy(f->ctx));
  expect_said("at the context's end", "0 bytes reserved");
  kiln_set_log_level(was);
  kiln_set_log_handler(NULL, NULL);
  check_ok(kiln_context_create(
      &(kiln_context_options){KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT},
      &f->ctx));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(pairs_on_one_stream_ask_the_backend_once,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(another_stream_gets_other_memory, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(large_buffers_and_the_keep_setting,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(the_least_recent_goes_first, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(a_release_pushes_out_only_its_streams,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(a_synchronize_gives_back_what_is_kept,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(trims_and_full_devices_take_what_is_kept,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(a_kept_buffer_is_zeroed_when_asked,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(the_context_gives_back_what_is_kept,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(the_log_shows_the_pool, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
