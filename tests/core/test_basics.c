/* Logging, status and other names, versions, the per-thread error message.
 * meson runs this twice: with KILN_LOG empty (nothing may be printed) and
 * with KILN_LOG=warn (warnings go to stderr); the tests read KILN_LOG to
 * know which run they are in. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_backend.h"
#include "kiln_check.h"

/* ---- Capturing stderr ---------------------------------------------------- */

typedef struct capture {
  FILE *file;
  int saved_fd;
} capture;

static void capture_start(capture *c) {
  fflush(stderr);
  c->file = tmpfile();
  assert_non_null(c->file);
  c->saved_fd = dup(STDERR_FILENO);
  assert_true(c->saved_fd >= 0);
  assert_true(dup2(fileno(c->file), STDERR_FILENO) >= 0);
}

/* Restores stderr and returns what was written to it (free it). */
static char *capture_end(capture *c) {
  fflush(stderr);
  dup2(c->saved_fd, STDERR_FILENO);
  close(c->saved_fd);
  long size = ftell(c->file);
  char *text = calloc(1, (size_t)(size > 0 ? size : 0) + 1);
  assert_non_null(text);
  rewind(c->file);
  size_t got = fread(text, 1, (size_t)(size > 0 ? size : 0), c->file);
  text[got] = '\0';
  fclose(c->file);
  return text;
}

/* ---- Log traffic --------------------------------------------------------- */

/* Makes kiln log at three levels: info (a context is created), warn (it is
 * destroyed with an object alive) and debug (a call fails). */
static void make_noise(void) {
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  kiln_context *ctx;
  kiln_buffer *b;
  check_ok(kiln_context_create(&o, &ctx));
  check_ok(kiln_buffer_create(ctx, 16, 0, &b));
  kiln_buffer_create(ctx, 0, 0, &b);
  kiln_context_destroy(ctx);
}

#define MAX_RECORDS 64

typedef struct log_record {
  kiln_log_level level;
  char message[256];
} log_record;

typedef struct log_sink {
  int count;
  log_record records[MAX_RECORDS];
} log_sink;

static void collect(kiln_log_level level, const char *message, void *user) {
  log_sink *sink = user;
  if (sink->count == MAX_RECORDS) return;
  sink->records[sink->count].level = level;
  kiln_strlcpy(sink->records[sink->count].message, message,
               sizeof sink->records[0].message);
  sink->count++;
}

static int count_level(const log_sink *sink, kiln_log_level level) {
  int n = 0;
  for (int i = 0; i < sink->count; i++) n += sink->records[i].level == level;
  return n;
}

static bool has_message(const log_sink *sink, const char *needle) {
  for (int i = 0; i < sink->count; i++)
    if (strstr(sink->records[i].message, needle)) return true;
  return false;
}

static const char *env_log(void) {
  const char *v = getenv("KILN_LOG");
  return v && *v ? v : NULL;
}

static fake_backend fake;

static int install_fake(void **state) {
  (void)state;
  fake_init(&fake, KILN_BACKEND_VULKAN);
  fake_backend *list[] = {&fake};
  fake_install(list, 1);
  return 0;
}

/* First in the list: nothing has set the level yet. */
static void level_comes_from_the_environment(void **state) {
  (void)state;
  const char *v = env_log();
  kiln_log_level want = KILN_LOG_OFF;
  if (v && strcmp(v, "warn") == 0) want = KILN_LOG_WARN;
  if (v && strcmp(v, "debug") == 0) want = KILN_LOG_DEBUG;
  if (v && strcmp(v, "error") == 0) want = KILN_LOG_ERROR;
  if (v && strcmp(v, "info") == 0) want = KILN_LOG_INFO;
  assert_int_equal(kiln_get_log_level(), want);
}

/* Without KILN_LOG nothing reaches stderr; with KILN_LOG=warn the warning
 * does and the debug messages do not. */
static void stderr_by_default(void **state) {
  (void)state;
  capture c;
  capture_start(&c);
  make_noise();
  char *text = capture_end(&c);
  const char *v = env_log();
  if (!v) {
    if (text[0]) fail_msg("kiln printed without being asked: \"%s\"", text);
  } else if (strcmp(v, "warn") == 0) {
    if (!strstr(text, "alive"))
      fail_msg("KILN_LOG=warn: the warning is missing from stderr: \"%s\"",
               text);
    if (strstr(text, "size is 0") || strstr(text, "context on"))
      fail_msg("KILN_LOG=warn printed debug or info messages: \"%s\"", text);
  }
  free(text);
}

static void handler_gets_the_levels_asked_for(void **state) {
  (void)state;
  log_sink sink;
  memset(&sink, 0, sizeof sink);
  kiln_set_log_handler(collect, &sink);

  kiln_set_log_level(KILN_LOG_INFO);
  assert_int_equal(kiln_get_log_level(), KILN_LOG_INFO);
  make_noise();
  assert_true(count_level(&sink, KILN_LOG_INFO) >= 1);
  assert_true(count_level(&sink, KILN_LOG_WARN) >= 1);
  assert_int_equal(count_level(&sink, KILN_LOG_DEBUG), 0);
  assert_true(has_message(&sink, "alive"));

  memset(&sink, 0, sizeof sink);
  kiln_set_log_level(KILN_LOG_WARN);
  make_noise();
  assert_int_equal(count_level(&sink, KILN_LOG_INFO), 0);
  assert_int_equal(count_level(&sink, KILN_LOG_DEBUG), 0);
  assert_true(count_level(&sink, KILN_LOG_WARN) >= 1);

  /* At debug level every failure is logged with its message. */
  memset(&sink, 0, sizeof sink);
  kiln_set_log_level(KILN_LOG_DEBUG);
  kiln_buffer *b;
  kiln_buffer_create(NULL, 16, 0, &b);
  assert_true(count_level(&sink, KILN_LOG_DEBUG) >= 1);
  assert_true(has_message(&sink, kiln_last_error()));

  memset(&sink, 0, sizeof sink);
  kiln_set_log_level(KILN_LOG_OFF);
  assert_int_equal(kiln_get_log_level(), KILN_LOG_OFF);
  make_noise();
  assert_int_equal(sink.count, 0);

  /* A NULL handler sends messages back to stderr. */
  kiln_set_log_level(KILN_LOG_WARN);
  kiln_set_log_handler(NULL, NULL);
  capture c;
  capture_start(&c);
  make_noise();
  char *text = capture_end(&c);
  kiln_set_log_level(KILN_LOG_OFF);
  assert_int_equal(sink.count, 0);
  if (!strstr(text, "alive"))
    fail_msg("with no handler the warning should be on stderr: \"%s\"", text);
  free(text);
}

static void status_names(void **state) {
  (void)state;
  static const char *const names[] = {
      "KILN_OK",
      "KILN_ERROR_INVALID_ARGUMENT",
      "KILN_ERROR_INVALID_HANDLE",
      "KILN_ERROR_WRONG_CONTEXT",
      "KILN_ERROR_OUT_OF_RANGE",
      "KILN_ERROR_OVERFLOW",
      "KILN_ERROR_OUT_OF_HOST_MEMORY",
      "KILN_ERROR_OUT_OF_DEVICE_MEMORY",
      "KILN_ERROR_UNSUPPORTED",
      "KILN_ERROR_UNAVAILABLE",
      "KILN_ERROR_NOT_FOUND",
      "KILN_ERROR_NO_IMAGE",
      "KILN_ERROR_INVALID_IMAGE",
      "KILN_ERROR_LAUNCH_FAILED",
      "KILN_ERROR_NOT_READY",
      "KILN_ERROR_DEVICE_LOST",
      "KILN_ERROR_OBJECTS_ALIVE",
      "KILN_ERROR_INVALID_STATE",
      "KILN_ERROR_BACKEND",
      "KILN_ERROR_COMPILE",
      "KILN_ERROR_TIMEOUT",
      "KILN_ERROR_MEMORY_CORRUPTION",
  };
  const size_t count = sizeof names / sizeof names[0];
  assert_int_equal(count, KILN_ERROR_MEMORY_CORRUPTION + 1);
  for (size_t i = 0; i < count; i++)
    assert_string_equal(kiln_status_name((kiln_status)i), names[i]);
  assert_string_equal(kiln_status_name((kiln_status)count),
                      "KILN_STATUS_UNKNOWN");
  assert_string_equal(kiln_status_name((kiln_status)-1), "KILN_STATUS_UNKNOWN");
  assert_string_equal(kiln_status_name((kiln_status)1000),
                      "KILN_STATUS_UNKNOWN");
}

static void other_names(void **state) {
  (void)state;
  assert_string_equal(kiln_device_type_name(KILN_DEVICE_TYPE_DISCRETE_GPU),
                      "discrete GPU");
  assert_string_equal(kiln_device_type_name(KILN_DEVICE_TYPE_INTEGRATED_GPU),
                      "integrated GPU");
  assert_string_equal(kiln_device_type_name(KILN_DEVICE_TYPE_VIRTUAL_GPU),
                      "virtual GPU");
  assert_string_equal(kiln_device_type_name(KILN_DEVICE_TYPE_CPU), "CPU");
  assert_string_equal(kiln_device_type_name(KILN_DEVICE_TYPE_OTHER), "other");
  assert_string_equal(kiln_device_type_name((kiln_device_type)77), "other");
  assert_string_equal(kiln_image_format_name(KILN_IMAGE_SPIRV), "SPIR-V");
  assert_string_equal(kiln_image_format_name(KILN_IMAGE_PTX), "PTX");
  assert_string_equal(kiln_image_format_name(KILN_IMAGE_CUBIN), "cubin");
  assert_string_equal(kiln_image_format_name(KILN_IMAGE_FATBIN), "fatbin");
  assert_string_equal(kiln_image_format_name(KILN_IMAGE_HIP_CODE_OBJECT),
                      "HIP code object");
  assert_string_equal(kiln_image_format_name((kiln_image_format)0), "unknown");
  assert_string_equal(kiln_image_format_name((kiln_image_format)9), "unknown");
}

static void versions(void **state) {
  (void)state;
  assert_int_equal(kiln_version(), KILN_VERSION);
  assert_int_equal(KILN_VERSION, KILN_VERSION_MAJOR * 10000 +
                                     KILN_VERSION_MINOR * 100 +
                                     KILN_VERSION_PATCH);
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", KILN_VERSION_MAJOR,
           KILN_VERSION_MINOR, KILN_VERSION_PATCH);
  assert_string_equal(kiln_version_string(), want);
}

static void *fresh_thread_message(void *arg) {
  const char **out = arg;
  *out = kiln_last_error()[0] ? "not empty" : "";
  return NULL;
}

static void error_messages(void **state) {
  (void)state;
  kiln_buffer *b;
  assert_int_equal(kiln_buffer_create(NULL, 1, 0, &b),
                   KILN_ERROR_INVALID_HANDLE);
  assert_true(kiln_last_error()[0] != '\0');
  /* Successful calls leave the message alone. */
  size_t n;
  check_ok(kiln_device_count(KILN_BACKEND_VULKAN, &n));
  assert_true(kiln_last_error()[0] != '\0');
  kiln_clear_error();
  assert_string_equal(kiln_last_error(), "");

  kiln_buffer_create(NULL, 1, 0, &b);
  const char *other = NULL;
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, fresh_thread_message, &other), 0);
  pthread_join(t, NULL);
  assert_string_equal(other, "");
  assert_true(kiln_last_error()[0] != '\0');
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(level_comes_from_the_environment),
      cmocka_unit_test(stderr_by_default),
      cmocka_unit_test(handler_gets_the_levels_asked_for),
      cmocka_unit_test(status_names),
      cmocka_unit_test(other_names),
      cmocka_unit_test(versions),
      cmocka_unit_test(error_messages),
  };
  return cmocka_run_group_tests(tests, install_fake, NULL);
}
