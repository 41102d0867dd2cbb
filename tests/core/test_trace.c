/* Trace hooks (kiln_set_trace_handler, KILN_TRACE=log): what the handler
 * hears of each command the door queues, and of what it does not queue.
 * Completions: test_trace_completions.c; KILN_TRACE=nvtx:
 * test_trace_nvtx.c. */
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

#define MAX_SEEN 32

typedef struct trace_sink {
  kiln_trace_command seen[MAX_SEEN];
  char names[MAX_SEEN][32];
  size_t count;
} trace_sink;

static void collect(const kiln_trace_command *c, void *user_data) {
  trace_sink *sink = user_data;
  if (sink->count == MAX_SEEN) fail_msg("more than %d commands", MAX_SEEN);
  sink->seen[sink->count] = *c;
  snprintf(sink->names[sink->count], sizeof sink->names[0], "%s",
           c->kernel_name ? c->kernel_name : "");
  sink->count++;
}

static kiln_kernel *kernel_k(kiln_context *ctx, kiln_module **out_module) {
  kiln_module_image img = fake_image("k");
  kiln_kernel *k;
  check_ok(kiln_module_create(ctx, &img, 1, out_module));
  check_ok(kiln_module_get_kernel(*out_module, "k", &k));
  return k;
}

static kiln_stream *default_stream(kiln_context *ctx) {
  kiln_stream *s;
  check_ok(kiln_context_default_stream(ctx, &s));
  return s;
}

static void check_seen(const trace_sink *sink, size_t i, kiln_trace_kind kind,
                       size_t bytes, kiln_stream *s, kiln_context *ctx) {
  assert_true(i < sink->count);
  assert_int_equal(sink->seen[i].kind, kind);
  assert_int_equal(sink->seen[i].bytes, bytes);
  assert_ptr_equal(sink->seen[i].stream, s);
  assert_ptr_equal(sink->seen[i].context, ctx);
  if (kind != KILN_TRACE_LAUNCH) assert_null(sink->seen[i].kernel_name);
}

/* Each command is heard once, as it is queued, with its kind, operands,
 * stream and context; failed calls and calls with nothing to do are not. */
static void commands_are_traced_with_their_operands(void **state) {
  fake_fixture *f = *state;
  f->fb.fill_with_kernel = false;
  kiln_context *ctx = f->ctx;
  kiln_module *m;
  kiln_kernel *k = kernel_k(ctx, &m);
  kiln_buffer *a, *b;
  kiln_stream *s;
  kiln_event *e;
  check_ok(kiln_buffer_create(ctx, 64, 0, &a));
  check_ok(kiln_buffer_create(ctx, 64, 0, &b));
  check_ok(kiln_stream_create(ctx, &s));
  check_ok(kiln_event_create(ctx, &e));
  unsigned char bytes[64] = {0};
  const uint32_t pattern = 7;
  kiln_launch_config cfg = {{3, 2, 1}, {8, 4, 1}, 0};

  trace_sink sink;
  memset(&sink, 0, sizeof sink);
  kiln_set_trace_handler(collect, &sink);
  check_ok(kiln_buffer_write(s, a, 0, bytes, 64));
  check_ok(kiln_launch(s, k, &cfg, NULL, 0));
  check_ok(kiln_buffer_copy(s, b, 8, a, 0, 32));
  check_ok(kiln_buffer_fill(s, b, 0, 16, &pattern, 4));
  check_ok(kiln_event_record(e, s));
  check_ok(kiln_stream_wait_event(NULL, e));
  check_ok(kiln_buffer_read(s, b, 0, bytes, 48));
  /* Nothing to do, or refused: not heard of. */
  check_ok(kiln_buffer_write(s, a, 0, bytes, 0));
  kiln_launch_config empty = {{0, 1, 1}, {8, 1, 1}, 0};
  check_ok(kiln_launch(s, k, &empty, NULL, 0));
  check_fails(kiln_buffer_copy(s, b, 60, a, 0, 32), KILN_ERROR_OUT_OF_RANGE);
  kiln_set_trace_handler(NULL, NULL);
  check_ok(kiln_buffer_write(s, a, 0, bytes, 64));

  assert_int_equal(sink.count, 7);
  check_seen(&sink, 0, KILN_TRACE_WRITE, 64, s, ctx);
  check_seen(&sink, 1, KILN_TRACE_LAUNCH, 0, s, ctx);
  assert_string_equal(sink.names[1], "k");
  assert_int_equal(sink.seen[1].grid.x, 3);
  assert_int_equal(sink.seen[1].grid.y, 2);
  assert_int_equal(sink.seen[1].grid.z, 1);
  assert_int_equal(sink.seen[1].block.x, 8);
  assert_int_equal(sink.seen[1].block.y, 4);
  assert_int_equal(sink.seen[1].block.z, 1);
  check_seen(&sink, 2, KILN_TRACE_COPY, 32, s, ctx);
  check_seen(&sink, 3, KILN_TRACE_FILL, 16, s, ctx);
  check_seen(&sink, 4, KILN_TRACE_RECORD, 0, s, ctx);
  check_seen(&sink, 5, KILN_TRACE_WAIT, 0, default_stream(ctx), ctx);
  check_seen(&sink, 6, KILN_TRACE_READ, 48, s, ctx);

  check_ok(kiln_event_destroy(e));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_buffer_destroy(a));
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_module_destroy(m));
}

/* A fill that kiln does with its kernel kiln_fill is heard as that launch,
 * then as the fill. */
static void a_fill_by_kernel_is_also_its_launch(void **state) {
  fake_fixture *f = *state;
  f->fb.fill_with_kernel = true;
  kiln_buffer *a;
  check_ok(kiln_buffer_create(f->ctx, 64, 0, &a));
  const uint8_t pattern = 3;
  trace_sink sink;
  memset(&sink, 0, sizeof sink);
  kiln_set_trace_handler(collect, &sink);
  check_ok(kiln_buffer_fill(NULL, a, 1, 9, &pattern, 1));
  kiln_set_trace_handler(NULL, NULL);
  assert_int_equal(sink.count, 2);
  assert_int_equal(sink.seen[0].kind, KILN_TRACE_LAUNCH);
  assert_string_equal(sink.names[0], "kiln_fill");
  check_seen(&sink, 1, KILN_TRACE_FILL, 9, default_stream(f->ctx), f->ctx);
  check_ok(kiln_buffer_destroy(a));
}

/* What a capture keeps is queued by no one: it is not heard of, at the
 * capture, at the graph's build or inside its replay; the replay itself
 * is one command (KILN_TRACE_GRAPH_LAUNCH). */
static void captured_commands_are_not_traced(void **state) {
  fake_fixture *f = *state;
  kiln_module *m;
  kiln_kernel *k = kernel_k(f->ctx, &m);
  kiln_stream *s;
  check_ok(kiln_stream_create(f->ctx, &s));
  kiln_launch_config cfg = {{1, 1, 1}, {1, 1, 1}, 0};
  trace_sink sink;
  memset(&sink, 0, sizeof sink);
  kiln_set_trace_handler(collect, &sink);
  check_ok(kiln_stream_begin_capture(s));
  check_ok(kiln_launch(s, k, &cfg, NULL, 0));
  kiln_graph *g;
  check_ok(kiln_stream_end_capture(s, &g));
  check_ok(kiln_graph_launch(g, s));
  check_ok(kiln_stream_synchronize(s));
  kiln_set_trace_handler(NULL, NULL);
  /* The replay is one command of the door; what it replays is not. */
  assert_int_equal(sink.count, 1);
  assert_int_equal(sink.seen[0].kind, KILN_TRACE_GRAPH_LAUNCH);
  assert_ptr_equal(sink.seen[0].stream, s);
  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_module_destroy(m));
}

typedef struct log_sink {
  char lines[8][256];
  size_t count;
} log_sink;

static void collect_log(kiln_log_level level, const char *message,
                        void *user_data) {
  log_sink *sink = user_data;
  if (level == KILN_LOG_INFO && strncmp(message, "trace: ", 7) == 0 &&
      sink->count < 8)
    snprintf(sink->lines[sink->count++], sizeof sink->lines[0], "%s", message);
}

/* KILN_TRACE=log gives a new context a sink of kiln's own, which writes a
 * line per command to the log whatever its level, beside the handler (set
 * or not) and for the context's life; an unknown sink fails the context's
 * creation, naming it. */
static void kiln_trace_log_writes_a_line_per_command(void **state) {
  fake_fixture *f = *state;
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  kiln_context *ctx;
  setenv("KILN_TRACE", "logs", 1);
  check_fails(kiln_context_create(&o, &ctx), KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("KILN_TRACE=\"logs\"");
  setenv("KILN_TRACE", "log,bogus", 1);
  check_fails(kiln_context_create(&o, &ctx), KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("\"bogus\", which is no trace sink");

  log_sink sink;
  memset(&sink, 0, sizeof sink);
  kiln_set_log_handler(collect_log, &sink);
  setenv("KILN_TRACE", "log", 1);
  check_ok(kiln_context_create(&o, &ctx));
  unsetenv("KILN_TRACE");
  kiln_buffer *a, *other;
  check_ok(kiln_buffer_create(ctx, 16, 0, &a));
  check_ok(kiln_buffer_create(f->ctx, 16, 0, &other));
  unsigned char bytes[16] = {0};
  check_ok(kiln_buffer_write(NULL, a, 0, bytes, 16));
  trace_sink seen;
  memset(&seen, 0, sizeof seen);
  kiln_set_trace_handler(collect, &seen);
  check_ok(kiln_buffer_write(NULL, a, 0, bytes, 8));
  kiln_set_trace_handler(NULL, NULL);
  check_ok(kiln_buffer_write(NULL, a, 0, bytes, 4));
  /* The fixture's context was made without the variable. */
  check_ok(kiln_buffer_write(NULL, other, 0, bytes, 16));
  kiln_stream *s = default_stream(ctx);
  check_ok(kiln_buffer_destroy(a));
  check_ok(kiln_context_destroy(ctx));
  kiln_set_log_handler(NULL, NULL);
  assert_int_equal(sink.count, 3);
  assert_non_null(strstr(sink.lines[0], "trace: write of 16 bytes on stream"));
  assert_non_null(strstr(sink.lines[1], "trace: write of 8 bytes on stream"));
  assert_non_null(strstr(sink.lines[2], "trace: write of 4 bytes on stream"));
  assert_int_equal(seen.count, 1);
  check_seen(&seen, 0, KILN_TRACE_WRITE, 8, s, ctx);
  check_ok(kiln_buffer_destroy(other));
}

/* kiln_set_trace_handler_ex refuses a flag it does not know, keeping the
 * handler in force. */
static void unknown_trace_flags_are_refused(void **state) {
  fake_fixture *f = *state;
  kiln_buffer *a;
  check_ok(kiln_buffer_create(f->ctx, 16, 0, &a));
  unsigned char bytes[16] = {0};
  trace_sink sink;
  memset(&sink, 0, sizeof sink);
  kiln_set_trace_handler(collect, &sink);
  check_fails(kiln_set_trace_handler_ex(NULL, 1u << 7, NULL),
              KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("0x80");
  check_ok(kiln_buffer_write(NULL, a, 0, bytes, 16));
  kiln_set_trace_handler(NULL, NULL);
  assert_int_equal(sink.count, 1);
  /* A plain handler hears the queued phase alone, without numbers. */
  assert_int_equal(sink.seen[0].phase, KILN_TRACE_QUEUED);
  assert_int_equal(sink.seen[0].id, 0);
  check_ok(kiln_buffer_destroy(a));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(commands_are_traced_with_their_operands,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(a_fill_by_kernel_is_also_its_launch,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(captured_commands_are_not_traced,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(kiln_trace_log_writes_a_line_per_command,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(unknown_trace_flags_are_refused,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
