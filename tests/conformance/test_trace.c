/* Trace hooks on the backend under test: the commands of a small program
 * as kiln_set_trace_handler's handler hears them, their completions with
 * device times, and KILN_TRACE=nvtx's ranges as NVTX's injection hook and
 * rocTX receive them (through the recording libraries of tests/core, which
 * meson names in KILN_TEST_NVTX_RECORDER and KILN_TEST_ROCTX_LIBRARY). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "conformance.h"

enum { WORDS = 256 };

typedef struct trace_sink {
  kiln_trace_command seen[16];
  char names[16][32];
  size_t count;
} trace_sink;

static void collect(const kiln_trace_command *c, void *user_data) {
  trace_sink *sink = user_data;
  if (sink->count == 16) return;
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

/* Whether the device times events: the answer of kiln_event_elapsed_ms
 * on two events recorded back to back. */
static bool device_times_events(void) {
  kiln_event *a, *b;
  check_ok(kiln_event_create(conf.ctx, &a));
  check_ok(kiln_event_create(conf.ctx, &b));
  check_ok(kiln_event_record(a, NULL));
  check_ok(kiln_event_record(b, NULL));
  check_ok(kiln_event_synchronize(b));
  float ms;
  kiln_status st = kiln_event_elapsed_ms(a, b, &ms);
  check_ok(kiln_event_destroy(a));
  check_ok(kiln_event_destroy(b));
  if (st == KILN_ERROR_UNSUPPORTED) return false;
  check_ok(st);
  return true;
}

/* Two launches and a read on one stream, with completions asked: the read
 * reports the launches, the stream's wait the read, each with the same
 * number as when it was queued, in order, each starting no earlier than
 * the one before it and ending no earlier than it started. */
static void completions_come_with_device_times(void **state) {
  (void)state;
  kiln_buffer *b;
  kiln_stream *s;
  check_ok(kiln_buffer_create(conf.ctx, WORDS * 4, 0, &b));
  check_ok(kiln_stream_create(conf.ctx, &s));
  uint32_t data[WORDS] = {0};
  kiln_launch_config c = kiln_launch_config_1d(WORDS, 64);
  const kiln_arg args[3] = {kiln_arg_buffer(b, 0), kiln_arg_u32(WORDS),
                            kiln_arg_u32(1)};
  kiln_kernel *k = conf_kernel("conf_add_u32");
  check_ok(kiln_buffer_write(s, b, 0, data, sizeof data));
  check_ok(kiln_stream_synchronize(s));

  trace_sink sink;
  memset(&sink, 0, sizeof sink);
  check_ok(kiln_set_trace_handler_ex(collect, KILN_TRACE_COMPLETIONS, &sink));
  check_ok(kiln_launch(s, k, &c, args, 3));
  check_ok(kiln_launch(s, k, &c, args, 3));
  check_ok(kiln_buffer_read(s, b, 0, data, sizeof data));
  check_ok(kiln_stream_synchronize(s));
  kiln_set_trace_handler(NULL, NULL);

  for (uint32_t i = 0; i < WORDS; i++) assert_int_equal(data[i], 2);
  /* launch, launch, their completions at the read, the read, its own. */
  assert_int_equal(sink.count, 6);
  const size_t queued[3] = {0, 1, 4}, completed[3] = {2, 3, 5};
  const bool timed = device_times_events();
  for (size_t i = 0; i < 3; i++) {
    const kiln_trace_command *q = &sink.seen[queued[i]];
    const kiln_trace_command *d = &sink.seen[completed[i]];
    assert_int_equal(q->phase, KILN_TRACE_QUEUED);
    assert_int_equal(d->phase, KILN_TRACE_COMPLETED);
    assert_true(q->id != 0);
    assert_int_equal(d->id, q->id);
    assert_int_equal(d->kind, q->kind);
    assert_ptr_equal(d->stream, s);
    assert_int_equal(d->timed, timed);
    assert_true(d->start_ns <= d->end_ns);
    if (i > 0) {
      assert_int_equal(q->id, sink.seen[queued[i - 1]].id + 1);
      assert_true(d->start_ns >= sink.seen[completed[i - 1]].start_ns);
    }
  }
  assert_string_equal(sink.names[2], "conf_add_u32");
  assert_int_equal(sink.seen[5].kind, KILN_TRACE_READ);
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_buffer_destroy(b));
}

/* What the recording library at `path` recorded since the last look
 * (malloc'd), through its function `fn`. */
static char *recorded(const char *path, const char *fn) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (!lib) fail_msg("%s was never loaded: %s", path, dlerror());
  void *sym = dlsym(lib, fn);
  char *(*text)(void);
  memcpy(&text, &sym, sizeof sym);
  if (!text) fail_msg("%s lacks %s", path, fn);
  char *copy = text();
  dlclose(lib);
  return copy;
}

static void check_recorded(const char *path, const char *fn,
                           const char *expected) {
  char *text = recorded(path, fn);
  if (strcmp(text, expected) != 0)
    fail_msg("%s recorded:\n%s\nexpected:\n%s", path, text, expected);
  free(text);
}

/* KILN_TRACE=nvtx on the real backend: a context made with it names a
 * write, a built-in kernel's launch and a read to NVTX (as the injection
 * hook that Nsight Systems uses receives them) and to rocTX. NVTX reads
 * its injection path once per process, at kiln's first NVTX call, which
 * this test makes. */
static void kiln_trace_nvtx_names_each_command(void **state) {
  (void)state;
  const char *recorder = getenv("KILN_TEST_NVTX_RECORDER");
  const char *roctx = getenv("KILN_TEST_ROCTX_LIBRARY");
  if (!roctx)
    kiln_skip("KILN_TEST_ROCTX_LIBRARY is not set: run the suite through "
              "meson test");
  if (recorder) setenv("NVTX_INJECTION64_PATH", recorder, 1);
  setenv("KILN_ROCTX_LIBRARY", roctx, 1);
  setenv("KILN_TRACE", "nvtx", 1);
  kiln_context_options o = kiln_context_options_default();
  o.backend = conf.backend;
  kiln_context *ctx;
  kiln_status st = kiln_context_create(&o, &ctx);
  unsetenv("KILN_TRACE");
  check_ok(st);
  kiln_buffer *x, *y;
  check_ok(kiln_buffer_create(ctx, WORDS * 4, 0, &x));
  check_ok(kiln_buffer_create(ctx, WORDS * 4, 0, &y));
  float data[WORDS];
  for (uint32_t i = 0; i < WORDS; i++) data[i] = (float)i;
  if (recorder) free(recorded(recorder, "nvtx_recorder_text"));
  free(recorded(roctx, "fake_roctx_text"));
  check_ok(kiln_buffer_write(NULL, x, 0, data, sizeof data));
  check_ok(kiln_buffer_write(NULL, y, 0, data, sizeof data));
  check_ok(kiln_axpy_f32(NULL, WORDS, 2.0f, x, 0, y, 0));
  check_ok(kiln_buffer_read(NULL, y, 0, data, sizeof data));
  check_ok(kiln_buffer_destroy(x));
  check_ok(kiln_buffer_destroy(y));
  check_ok(kiln_context_destroy(ctx));
  for (uint32_t i = 0; i < WORDS; i++) assert_true(data[i] == 3.0f * (float)i);
  check_recorded(roctx, "fake_roctx_text",
                 "push kiln_buffer_write 1024 B\n"
                 "pop\n"
                 "push kiln_buffer_write 1024 B\n"
                 "pop\n"
                 "push kiln_axpy_f32\n"
                 "pop\n"
                 "push kiln_buffer_read 1024 B\n"
                 "pop\n");
  if (!recorder)
    kiln_skip("rocTX checked; NVTX not: this kiln was built without NVTX "
              "3's headers");
  check_recorded(recorder, "nvtx_recorder_text",
                 "push kiln: kiln_buffer_write 1024 B\n"
                 "pop kiln\n"
                 "push kiln: kiln_buffer_write 1024 B\n"
                 "pop kiln\n"
                 "push kiln: kiln_axpy_f32 (registered)\n"
                 "pop kiln\n"
                 "push kiln: kiln_buffer_read 1024 B\n"
                 "pop kiln\n");
}

int conf_run_trace_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(a_small_program_is_traced),
      CONF_TEST(completions_come_with_device_times),
      CONF_TEST(kiln_trace_nvtx_names_each_command),
  };
  return cmocka_run_group_tests_name("trace", tests, NULL, NULL);
}
