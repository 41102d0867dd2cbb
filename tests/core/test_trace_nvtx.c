/* KILN_TRACE=nvtx on the fake backend, through NVTX's own injection hook:
 * meson runs this with NVTX_INJECTION64_PATH at nvtx_recorder.c's library
 * and KILN_ROCTX_LIBRARY at fake_roctx.c's, which record the ranges they
 * are given; the test reads them back and checks the names and nesting.
 * Run once more with KILN_ROCTX_LIBRARY at a library that does not exist
 * (KILN_TEST_ROCTX=missing): then kiln says so once, at the info level. */
#include <dlfcn.h>
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

/* What the recording library at the path in `variable` recorded since the
 * last look (malloc'd), through its function `fn`. */
static char *recorded(const char *variable, const char *fn) {
  const char *path = getenv(variable);
  if (!path) fail_msg("%s is not set: run this through meson test", variable);
  void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (!lib) fail_msg("%s (%s) was never loaded: %s", variable, path, dlerror());
  void *sym = dlsym(lib, fn);
  char *(*text)(void);
  memcpy(&text, &sym, sizeof sym);
  if (!text) fail_msg("%s lacks %s", path, fn);
  char *copy = text();
  dlclose(lib);
  return copy;
}

#if KILN_TEST_NVTX
static char *nvtx_text(void) {
  return recorded("NVTX_INJECTION64_PATH", "nvtx_recorder_text");
}
#endif

static char *roctx_text(void) {
  return recorded("KILN_ROCTX_LIBRARY", "fake_roctx_text");
}

static void check_text(char *text, const char *expected) {
  if (strcmp(text, expected) != 0)
    fail_msg("recorded:\n%s\nexpected:\n%s", text, expected);
  free(text);
}

static kiln_context *nvtx_context(void) {
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  kiln_context *ctx;
  setenv("KILN_TRACE", "nvtx", 1);
  check_ok(kiln_context_create(&o, &ctx));
  unsetenv("KILN_TRACE");
  return ctx;
}

/* A write, a launch, a fill that kiln does with its kernel (two ranges, one
 * in the other), an event's record and a launch the backend refuses, on a
 * context made with KILN_TRACE=nvtx; then work on the fixture's context,
 * made without it, which opens no range. */
static void run_program(fake_fixture *f) {
  kiln_context *ctx = nvtx_context();
  kiln_module_image img = fake_image("k");
  kiln_module *m;
  kiln_kernel *k;
  kiln_buffer *b, *other;
  kiln_event *e;
  check_ok(kiln_module_create(ctx, &img, 1, &m));
  check_ok(kiln_module_get_kernel(m, "k", &k));
  check_ok(kiln_buffer_create(ctx, 64, 0, &b));
  check_ok(kiln_buffer_create(f->ctx, 64, 0, &other));
  check_ok(kiln_event_create(ctx, &e));
#if KILN_TEST_NVTX
  free(nvtx_text());
#endif
  free(roctx_text());

  unsigned char bytes[64] = {0};
  const uint8_t pattern = 3;
  kiln_launch_config one = {{1, 1, 1}, {1, 1, 1}, 0};
  check_ok(kiln_buffer_write(NULL, b, 0, bytes, 64));
  check_ok(kiln_launch(NULL, k, &one, NULL, 0));
  f->fb.fill_with_kernel = true;
  check_ok(kiln_buffer_fill(NULL, b, 1, 9, &pattern, 1));
  check_ok(kiln_event_record(e, NULL));
  f->fb.fail_op = FAKE_OP_LAUNCH;
  f->fb.fail_status = KILN_ERROR_OUT_OF_DEVICE_MEMORY;
  check_fails(kiln_launch(NULL, k, &one, NULL, 0),
              KILN_ERROR_OUT_OF_DEVICE_MEMORY);
  check_ok(kiln_buffer_write(NULL, other, 0, bytes, 64));

  check_ok(kiln_event_destroy(e));
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_buffer_destroy(other));
  check_ok(kiln_module_destroy(m));
  check_ok(kiln_context_destroy(ctx));
}

static void nvtx_ranges_name_each_command(void **state) {
#if KILN_TEST_NVTX
  run_program(*state);
  check_text(nvtx_text(), "push kiln: kiln_buffer_write 64 B\n"
                          "pop kiln\n"
                          "push kiln: k (registered)\n"
                          "pop kiln\n"
                          "push kiln: kiln_buffer_fill 9 B\n"
                          "push kiln: kiln_fill (registered)\n"
                          "pop kiln\n"
                          "pop kiln\n"
                          "push kiln: kiln_event_record\n"
                          "pop kiln\n"
                          "push kiln: k (registered)\n"
                          "pop kiln\n");
  free(roctx_text());
#else
  (void)state;
  kiln_skip("this kiln was built without NVTX 3's headers, so "
            "KILN_TRACE=nvtx drives rocTX alone");
#endif
}

static void roctx_ranges_name_each_command(void **state) {
  run_program(*state);
  check_text(roctx_text(), "push kiln_buffer_write 64 B\n"
                           "pop\n"
                           "push k\n"
                           "pop\n"
                           "push kiln_buffer_fill 9 B\n"
                           "push kiln_fill\n"
                           "pop\n"
                           "pop\n"
                           "push kiln_event_record\n"
                           "pop\n"
                           "push k\n"
                           "pop\n");
#if KILN_TEST_NVTX
  free(nvtx_text());
#endif
}

typedef struct log_sink {
  char lines[4][512];
  size_t count;
} log_sink;

static void collect_log(kiln_log_level level, const char *message,
                        void *user_data) {
  log_sink *sink = user_data;
  if (level == KILN_LOG_INFO && strstr(message, "rocTX") && sink->count < 4)
    snprintf(sink->lines[sink->count++], sizeof sink->lines[0], "%s", message);
}

/* Where rocTX does not load, the first context with KILN_TRACE=nvtx says
 * so at the info level, and no later one does; a kiln without NVTX then
 * refuses the sink, saying why. */
static void a_missing_roctx_is_said_once(void **state) {
  (void)state;
  log_sink sink;
  memset(&sink, 0, sizeof sink);
  kiln_set_log_handler(collect_log, &sink);
  kiln_set_log_level(KILN_LOG_INFO);
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  setenv("KILN_TRACE", "nvtx", 1);
  for (int i = 0; i < 2; i++) {
    kiln_context *ctx;
#if KILN_TEST_NVTX
    check_ok(kiln_context_create(&o, &ctx));
    check_ok(kiln_context_destroy(ctx));
#else
    check_fails(kiln_context_create(&o, &ctx), KILN_ERROR_INVALID_ARGUMENT);
    check_message_has("built without NVTX 3's headers");
    check_message_has("libroctx64-missing.so");
#endif
  }
  unsetenv("KILN_TRACE");
  kiln_set_log_level(KILN_LOG_OFF);
  kiln_set_log_handler(NULL, NULL);
  assert_int_equal(sink.count, 1);
  assert_non_null(strstr(sink.lines[0], "KILN_TRACE=nvtx: no rocTX ranges: "));
  assert_non_null(strstr(sink.lines[0], "libroctx64-missing.so"));
}

int main(void) {
  const struct CMUnitTest present[] = {
      cmocka_unit_test_setup_teardown(nvtx_ranges_name_each_command,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(roctx_ranges_name_each_command,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
  };
  const struct CMUnitTest missing[] = {
      cmocka_unit_test_setup_teardown(a_missing_roctx_is_said_once,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
  };
  const char *roctx = getenv("KILN_TEST_ROCTX");
  if (roctx && strcmp(roctx, "missing") == 0)
    return cmocka_run_group_tests(missing, NULL, NULL);
  return cmocka_run_group_tests(present, NULL, NULL);
}
