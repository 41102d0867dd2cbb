/* Trace hooks on the backend under test: the commands of a small program
 * as kiln_set_trace_handler's handler hears them. */
#include <stdio.h>
#include <string.h>

#include "conformance.h"

enum { WORDS = 256 };

typedef struct trace_sink {
  kiln_trace_command seen[8];
  char names[8][32];
  size_t count;
} trace_sink;

static void collect(const kiln_trace_command *c, void *user_data) {
  trace_sink *sink = user_data;
  if (sink->count == 8) return;
  sink->seen[sink->count] = *c;
  snprintf(sink->names[sink->count], sizeof sink->names[0], "%s",
           c->kernel_name ? c->kernel_name : "");
  sink->count++;
}

/* A write, a launch and a read: each heard once, in order, with the
 * kernel's name, grid and block, the bytes moved, the stream and the
 * context; the work itself unchanged. */
static void a_small_program_is_traced(void **state) {
  (void)state;
  kiln_buffer *b;
  kiln_stream *s;
  check_ok(kiln_buffer_create(conf.ctx, WORDS * 4, 0, &b));
  check_ok(kiln_stream_create(conf.ctx, &s));
  uint32_t data[WORDS];
  for (uint32_t i = 0; i < WORDS; i++) data[i] = i;
  kiln_launch_config c = kiln_launch_config_1d(WORDS, 64);
  const kiln_arg args[3] = {kiln_arg_buffer(b, 0), kiln_arg_u32(WORDS),
                            kiln_arg_u32(7)};
  kiln_kernel *k = conf_kernel("conf_add_u32");

  trace_sink sink;
  memset(&sink, 0, sizeof sink);
  kiln_set_trace_handler(collect, &sink);
  check_ok(kiln_buffer_write(s, b, 0, data, sizeof data));
  check_ok(kiln_launch(s, k, &c, args, 3));
  check_ok(kiln_buffer_read(s, b, 0, data, sizeof data));
  kiln_set_trace_handler(NULL, NULL);

  for (uint32_t i = 0; i < WORDS; i++) assert_int_equal(data[i], i + 7);
  assert_int_equal(sink.count, 3);
  const kiln_trace_kind kinds[3] = {KILN_TRACE_WRITE, KILN_TRACE_LAUNCH,
                                    KILN_TRACE_READ};
  const size_t bytes[3] = {sizeof data, 0, sizeof data};
  for (size_t i = 0; i < 3; i++) {
    assert_int_equal(sink.seen[i].kind, kinds[i]);
    assert_int_equal(sink.seen[i].bytes, bytes[i]);
    assert_ptr_equal(sink.seen[i].stream, s);
    assert_ptr_equal(sink.seen[i].context, conf.ctx);
  }
  assert_string_equal(sink.names[1], "conf_add_u32");
  assert_int_equal(sink.seen[1].grid.x, WORDS / 64);
  assert_int_equal(sink.seen[1].grid.y, 1);
  assert_int_equal(sink.seen[1].grid.z, 1);
  assert_int_equal(sink.seen[1].block.x, 64);
  assert_int_equal(sink.seen[1].block.y, 1);
  assert_int_equal(sink.seen[1].block.z, 1);
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_buffer_destroy(b));
}

int conf_run_trace_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(a_small_program_is_traced),
  };
  return cmocka_run_group_tests_name("trace", tests, NULL, NULL);
}
