/* The Vulkan pipeline cache kept on disk (backends/vulkan/pipeline_cache.c):
 * written at context destroy, loaded by the next context, a damaged entry
 * ignored and replaced, nothing written with KILN_CACHE=off. Runs with the
 * validation layer on (meson.build) and fails on any of its messages. */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kiln/kiln.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[1 << 18];
static size_t log_used;
static int validation_messages;

static void on_log(kiln_log_level level, const char *message, void *data) {
  (void)level;
  (void)data;
  pthread_mutex_lock(&log_lock);
  if (strncmp(message, "Vulkan validation: ", 19) == 0) {
    validation_messages++;
    fprintf(stderr, "%s\n", message);
  }
  int n = snprintf(log_text + log_used, sizeof log_text - log_used, "%s\n",
                   message);
  if (n > 0 && (size_t)n < sizeof log_text - log_used) log_used += (size_t)n;
  pthread_mutex_unlock(&log_lock);
}

static void log_reset(void) {
  pthread_mutex_lock(&log_lock);
  log_text[0] = '\0';
  log_used = 0;
  pthread_mutex_unlock(&log_lock);
}

/* The N of "loaded N bytes from disk" in the log, or 0 when absent. */
static unsigned long loaded_bytes(void) {
  static const char line[] = "vulkan: pipeline cache: loaded ";
  pthread_mutex_lock(&log_lock);
  const char *at = strstr(log_text, line);
  unsigned long n = at ? strtoul(at + sizeof line - 1, NULL, 10) : 0;
  pthread_mutex_unlock(&log_lock);
  return n;
}

#define check_ok(call)                                                         \
  do {                                                                         \
    kiln_status st_ = (call);                                                  \
    if (st_ != KILN_OK)                                                        \
      fail_msg("%s: %s: %s", #call, kiln_status_name(st_), kiln_last_error()); \
  } while (0)

/* ---- A fresh cache directory per test ------------------------------------ */

static char dir[256];

static int fresh_dir(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/kiln-pipeline-cache-test-XXXXXX");
  if (!mkdtemp(dir)) return -1;
  setenv("KILN_CACHE_DIR", dir, 1);
  unsetenv("KILN_CACHE");
  unsetenv("KILN_CACHE_MAX_BYTES");
  return 0;
}

static int drop_dir(void **state) {
  (void)state;
  DIR *d = opendir(dir);
  if (d) {
    for (struct dirent *e; (e = readdir(d));) {
      char path[512];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      if (e->d_name[0] != '.' || strncmp(e->d_name, ".tmp-", 5) == 0)
        unlink(path);
    }
    closedir(d);
  }
  rmdir(dir);
  unsetenv("KILN_CACHE");
  return validation_messages == 0 ? 0 : -1;
}

/* The one pipeline entry's path into out[size]; false when there are
 * none, fails when there are several. */
static bool pipeline_entry(char *out, size_t size) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int count = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t n = strlen(e->d_name);
    if (strncmp(e->d_name, "pipeline-", 9) == 0 && n > 3 &&
        strcmp(e->d_name + n - 3, ".kc") == 0) {
      snprintf(out, size, "%s/%s", dir, e->d_name);
      count++;
    }
  }
  closedir(d);
  assert_true(count <= 1);
  return count == 1;
}

static int file_count(void) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int count = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) count++;
  closedir(d);
  return count;
}

/* Creates a context, runs axpy on it and checks the result, destroys it;
 * the log holds what the context said. */
static void one_context(void) {
  log_reset();
  kiln_context_options o = kiln_context_options_default();
  o.backend = KILN_BACKEND_VULKAN;
  kiln_context *ctx;
  check_ok(kiln_context_create(&o, &ctx));
  enum { N = 1000 };
  float x[N], y[N], got[N];
  for (int i = 0; i < N; i++) {
    x[i] = (float)i;
    y[i] = (float)(N - i);
  }
  kiln_buffer *bx, *by;
  check_ok(kiln_buffer_create(ctx, sizeof x, 0, &bx));
  check_ok(kiln_buffer_create(ctx, sizeof y, 0, &by));
  check_ok(kiln_buffer_write(NULL, bx, 0, x, sizeof x));
  check_ok(kiln_buffer_write(NULL, by, 0, y, sizeof y));
  check_ok(kiln_axpy_f32(NULL, N, 2.0f, bx, 0, by, 0));
  check_ok(kiln_buffer_read(NULL, by, 0, got, sizeof got));
  for (int i = 0; i < N; i++)
    assert_float_equal(got[i], 2.0f * (float)i + (float)(N - i), 0.0f);
  check_ok(kiln_buffer_destroy(bx));
  check_ok(kiln_buffer_destroy(by));
  check_ok(kiln_context_destroy(ctx));
}

/* ---- Tests --------------------------------------------------------------- */

static void saved_then_loaded(void **state) {
  (void)state;
  char path[512];
  one_context();
  assert_int_equal(loaded_bytes(), 0);
  assert_true(pipeline_entry(path, sizeof path));

  one_context();
  if (loaded_bytes() == 0) {
    fprintf(stderr, "%s", log_text);
    fail_msg("the second context did not load the pipeline cache (its log "
             "is above)");
  }
  assert_true(pipeline_entry(path, sizeof path));
}

static void damaged_entry_ignored_and_replaced(void **state) {
  (void)state;
  char path[512];
  one_context();
  assert_true(pipeline_entry(path, sizeof path));
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  assert_int_equal(fseek(f, -1, SEEK_END), 0);
  int c = fgetc(f);
  assert_int_equal(fseek(f, -1, SEEK_END), 0);
  fputc(c ^ 0x5a, f);
  assert_int_equal(fclose(f), 0);

  one_context();
  if (loaded_bytes() != 0) {
    fprintf(stderr, "%s", log_text);
    fail_msg("a damaged pipeline cache entry was used (the log is above)");
  }
  assert_true(pipeline_entry(path, sizeof path));

  /* What the destroy wrote back is whole again. */
  one_context();
  assert_true(loaded_bytes() > 0);
}

static void nothing_written_when_off(void **state) {
  (void)state;
  setenv("KILN_CACHE", "off", 1);
  one_context();
  one_context();
  assert_int_equal(loaded_bytes(), 0);
  assert_int_equal(file_count(), 0);
}

int main(void) {
  kiln_set_log_handler(on_log, NULL);
  kiln_set_log_level(KILN_LOG_DEBUG);
  const char *reason;
  if (kiln_backend_available(KILN_BACKEND_VULKAN, &reason) != KILN_OK) {
    fprintf(stderr, "skipped: Vulkan is unavailable: %s\n", reason);
    return 77;
  }
#define T(name) cmocka_unit_test_setup_teardown(name, fresh_dir, drop_dir)
  const struct CMUnitTest tests[] = {
      T(saved_then_loaded),
      T(damaged_entry_ignored_and_replaced),
      T(nothing_written_when_off),
  };
#undef T
  int failed = cmocka_run_group_tests_name("vulkan-pipeline-cache", tests,
                                           NULL, NULL);
  if (validation_messages)
    fprintf(stderr, "%d Vulkan validation messages\n", validation_messages);
  return failed || validation_messages ? 1 : 0;
}
