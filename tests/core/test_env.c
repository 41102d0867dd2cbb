/* kiln's environment variables read strictly: whole numbers are digits and
 * nothing else, an unknown KILN_LOG is reported and ignored,
 * KILN_VULKAN_VALIDATION makes warnings visible, and a backend that failed
 * to load is tried again once the variable naming its library changes.
 * The log level is read once per process, so those cases run this program
 * again (--log-child) in a fresh process with the environment they need. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "deadline.h"
#include "fake_backend.h"
#include "kiln_check.h"

static const char *const watched[] = {
    "KILN_BACKEND",        "KILN_DEVICE",       "KILN_SYNC_TIMEOUT_MS",
    "KILN_CUDA_LIBRARY",   "KILN_HIP_LIBRARY",  "KILN_VULKAN_LIBRARY",
    "KILN_LOG",            "KILN_VULKAN_VALIDATION",
};

static void unset_watched(void) {
  for (size_t i = 0; i < sizeof watched / sizeof watched[0]; i++)
    unsetenv(watched[i]);
}

static int setup(void **state) {
  fake_backend *fb = calloc(1, sizeof *fb);
  if (!fb) return -1;
  fake_init(fb, KILN_BACKEND_VULKAN);
  const kiln_device_type two[] = {KILN_DEVICE_TYPE_DISCRETE_GPU,
                                  KILN_DEVICE_TYPE_DISCRETE_GPU};
  fake_set_devices(fb, 2, two);
  unset_watched();
  *state = fb;
  return 0;
}

static int teardown(void **state) {
  unset_watched();
  kiln_registry_override(NULL, 0);
  free(*state);
  return 0;
}

static void install(fake_backend *fb) {
  fake_backend *list[] = {fb};
  fake_install(list, 1);
}

/* kiln_context_create with the defaults must fail with INVALID_ARGUMENT,
 * naming `variable` and quoting `value`. */
static void expect_rejected(const char *variable, const char *value) {
  kiln_context *ctx = NULL;
  setenv(variable, value, 1);
  check_fails(kiln_context_create(NULL, &ctx), KILN_ERROR_INVALID_ARGUMENT);
  assert_null(ctx);
  char quoted[96];
  snprintf(quoted, sizeof quoted, "%s=\"%s\"", variable, value);
  check_message_has(quoted);
}

static void expect_device(const fake_backend *fb, size_t index) {
  kiln_context *ctx = NULL;
  check_ok(kiln_context_create(NULL, &ctx));
  kiln_device_properties p;
  check_ok(kiln_context_get_properties(ctx, &p));
  assert_string_equal(p.name, fb->devices[index].name);
  check_ok(kiln_context_destroy(ctx));
}

static void device_index_is_digits_only(void **state) {
  fake_backend *fb = *state;
  install(fb);
  setenv("KILN_BACKEND", "vulkan", 1);
  static const char *const bad[] = {
      " 0", "0 ", "+0", "-0", "\t1", "0x1", "1e0", "1.0", "one", "-1",
      /* SIZE_MAX is KILN_DEVICE_FROM_ENV, and one past it overflows. */
      "18446744073709551615", "18446744073709551616",
      "99999999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    expect_rejected("KILN_DEVICE", bad[i]);
  setenv("KILN_DEVICE", "1", 1);
  expect_device(fb, 1);
  setenv("KILN_DEVICE", "01", 1);
  expect_device(fb, 1);
  /* Empty counts as unset. */
  setenv("KILN_DEVICE", "", 1);
  expect_device(fb, 0);
}

static void sync_timeout_is_digits_only(void **state) {
  fake_backend *fb = *state;
  install(fb);
  static const char *const bad[] = {" 5", "5 ", "+5", "-5", "5ms", "0x10",
                                    "18446744073710"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    expect_rejected("KILN_SYNC_TIMEOUT_MS", bad[i]);
  setenv("KILN_SYNC_TIMEOUT_MS", "18446744073709", 1);
  expect_device(fb, 0);
  setenv("KILN_SYNC_TIMEOUT_MS", "0", 1);
  expect_device(fb, 0);
}

/* The backend of `kind`, unavailable while `variable` names a library that
 * is not there, becomes available after the variable is fixed, here
 * through kiln_backend_available. */
static void retried_after_fix(kiln_backend kind, const char *variable) {
  fake_backend fb;
  fake_init(&fb, kind);
  fake_set_unavailable(&fb, "cannot load /nonexistent");
  install(&fb);
  setenv(variable, "/nonexistent", 1);
  const char *reason = NULL;
  check_fails(kiln_backend_available(kind, &reason), KILN_ERROR_UNAVAILABLE);
  assert_string_equal(reason, "cannot load /nonexistent");
  assert_int_equal(fb.probe_calls, 1);

  /* Unchanged variable: the failure is remembered, not probed again. */
  fb.available = true;
  check_fails(kiln_backend_available(kind, NULL), KILN_ERROR_UNAVAILABLE);
  kiln_context *ctx = NULL;
  kiln_context_options o = {kind, 0, KILN_SYNC_DEFAULT};
  check_fails(kiln_context_create(&o, &ctx), KILN_ERROR_UNAVAILABLE);
  assert_int_equal(fb.probe_calls, 1);

  setenv(variable, "/fixed/library.so", 1);
  check_ok(kiln_backend_available(kind, &reason));
  assert_string_equal(reason, "");
  assert_int_equal(fb.probe_calls, 2);

  /* An available backend stays so, whatever the variable does. */
  setenv(variable, "/elsewhere/library.so", 1);
  check_ok(kiln_context_create(&o, &ctx));
  check_ok(kiln_context_destroy(ctx));
  assert_int_equal(fb.probe_calls, 2);
  kiln_registry_override(NULL, 0);
  unsetenv(variable);
}

static void failed_load_is_retried_when_its_variable_changes(void **state) {
  (void)state;
  retried_after_fix(KILN_BACKEND_CUDA, "KILN_CUDA_LIBRARY");
  retried_after_fix(KILN_BACKEND_HIP, "KILN_HIP_LIBRARY");
  retried_after_fix(KILN_BACKEND_VULKAN, "KILN_VULKAN_LIBRARY");
}

/* Unsetting the variable is a change too, and kiln_context_create probes
 * again on its own; another backend's variable is not. */
static void unsetting_the_variable_retries_in_context_create(void **state) {
  fake_backend *fb = *state;
  fake_set_unavailable(fb, "cannot load /nonexistent");
  install(fb);
  setenv("KILN_VULKAN_LIBRARY", "/nonexistent", 1);
  kiln_context *ctx = NULL;
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  check_fails(kiln_context_create(&o, &ctx), KILN_ERROR_UNAVAILABLE);
  check_message_has("cannot load /nonexistent");
  fb->available = true;
  setenv("KILN_CUDA_LIBRARY", "/other", 1);
  check_fails(kiln_context_create(&o, &ctx), KILN_ERROR_UNAVAILABLE);
  assert_int_equal(fb->probe_calls, 1);
  unsetenv("KILN_VULKAN_LIBRARY");
  check_ok(kiln_context_create(&o, &ctx));
  check_ok(kiln_context_destroy(ctx));
  assert_int_equal(fb->probe_calls, 2);
}

/* ---- The log level, in a fresh process each ---------------------------- */

static void print_log(kiln_log_level level, const char *message,
                          void *user_data) {
  (void)user_data;
  printf("handler %d: %s\n", (int)level, message);
}

/* The child's side: reports the level twice (the warning about KILN_LOG
 * must come once) and logs one message at warn and one at info. */
static int log_child(const char *mode) {
  if (strcmp(mode, "handler") == 0)
    kiln_set_log_handler(print_log, NULL);
  int first = (int)kiln_get_log_level();
  int again = (int)kiln_get_log_level();
  kiln_log(KILN_LOG_WARN, "a warning");
  kiln_log(KILN_LOG_INFO, "some information");
  printf("level %d %d\n", first, again);
  return fflush(stdout) == 0 ? 0 : 1;
}

static char self[4096];

/* Runs log_child in a new process with KILN_LOG and KILN_VULKAN_VALIDATION
 * as given (NULL: unset); its stdout and stderr into out[size]. */
static void run_log_child(const char *log, const char *validation,
                          const char *mode, char *out, size_t size) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    unsetenv("KILN_LOG");
    unsetenv("KILN_VULKAN_VALIDATION");
    if (log) setenv("KILN_LOG", log, 1);
    if (validation) setenv("KILN_VULKAN_VALIDATION", validation, 1);
    execl(self, self, "--log-child", mode, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  /* It logs a few lines and exits, in milliseconds. */
  const uint64_t deadline = deadline_in(20);
  size_t used = 0;
  ssize_t n = 1;
  struct pollfd in = {fds[0], POLLIN, 0};
  while (used + 1 < size && n > 0) {
    const uint64_t now = deadline_now_ns();
    if (now >= deadline ||
        poll(&in, 1, (int)((deadline - now) / 1000000u + 1)) <= 0)
      break;
    n = read(fds[0], out + used, size - 1 - used);
    if (n > 0) used += (size_t)n;
  }
  out[used] = '\0';
  close(fds[0]);
  int status = wait_child(pid, deadline);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail_msg("the log child failed (status %d): %s", status, out);
}

static size_t count(const char *text, const char *needle) {
  size_t n = 0;
  for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

/* Checks the child's level and whether the warn and info lines got out. */
static void expect_log(const char *log, const char *validation,
                       kiln_log_level level, size_t bad_value_warnings) {
  static const char *const modes[] = {"stderr", "handler"};
  for (size_t m = 0; m < 2; m++) {
    char out[4096];
    run_log_child(log, validation, modes[m], out, sizeof out);
    char expected[32];
    snprintf(expected, sizeof expected, "level %d %d\n", (int)level,
             (int)level);
    if (!strstr(out, expected) ||
        count(out, "is not a log level") != bad_value_warnings ||
        count(out, "a warning") != (size_t)(level >= KILN_LOG_WARN) ||
        count(out, "some information") != (size_t)(level >= KILN_LOG_INFO))
      fail_msg("KILN_LOG=%s KILN_VULKAN_VALIDATION=%s (%s): expected level "
               "%d and %zu warning(s) about KILN_LOG, got:\n%s",
               log ? log : "(unset)", validation ? validation : "(unset)",
               modes[m], (int)level, bad_value_warnings, out);
    if (bad_value_warnings) {
      char named[160];
      snprintf(named, sizeof named, "KILN_LOG=%s is not a log level", log);
      assert_non_null(strstr(out, named));
      assert_non_null(strstr(out, "off, error, warn, info or debug"));
      assert_non_null(strstr(out, m == 0 ? "kiln warn: KILN_LOG"
                                         : "handler 2: KILN_LOG"));
    }
  }
}

static void log_levels_by_name(void **state) {
  (void)state;
  expect_log(NULL, NULL, KILN_LOG_OFF, 0);
  expect_log("", NULL, KILN_LOG_OFF, 0);
  expect_log("off", NULL, KILN_LOG_OFF, 0);
  expect_log("error", NULL, KILN_LOG_ERROR, 0);
  expect_log("Warn", NULL, KILN_LOG_WARN, 0);
  expect_log("INFO", NULL, KILN_LOG_INFO, 0);
  expect_log("debug", NULL, KILN_LOG_DEBUG, 0);
}

static void unknown_log_value_warns_and_keeps_the_default(void **state) {
  (void)state;
  expect_log("garbage", NULL, KILN_LOG_OFF, 1);
  expect_log(" warn", NULL, KILN_LOG_OFF, 1);
  expect_log("2", NULL, KILN_LOG_OFF, 1);
  expect_log("garbage", "1", KILN_LOG_WARN, 1);
}

static void validation_makes_warnings_visible(void **state) {
  (void)state;
  expect_log(NULL, "1", KILN_LOG_WARN, 0);
  expect_log("", "1", KILN_LOG_WARN, 0);
  expect_log(NULL, "0", KILN_LOG_OFF, 0);
  /* The layer without synchronization validation, or with printf, is the
   * layer too. */
  expect_log(NULL, "core", KILN_LOG_WARN, 0);
  expect_log(NULL, "printf", KILN_LOG_WARN, 0);
  /* An explicit KILN_LOG wins, asking for less or for more. */
  expect_log("off", "1", KILN_LOG_OFF, 0);
  expect_log("error", "1", KILN_LOG_ERROR, 0);
  expect_log("debug", "1", KILN_LOG_DEBUG, 0);
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--log-child") == 0) {
    deadline_dump_on_sigusr2();
    return log_child(argv[2]);
  }
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    fprintf(stderr, "test_env: cannot read /proc/self/exe\n");
    return 1;
  }
  self[n] = '\0';
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(device_index_is_digits_only, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(sync_timeout_is_digits_only, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(
          failed_load_is_retried_when_its_variable_changes, setup, teardown),
      cmocka_unit_test_setup_teardown(
          unsetting_the_variable_retries_in_context_create, setup, teardown),
      cmocka_unit_test(log_levels_by_name),
      cmocka_unit_test(unknown_log_value_warns_and_keeps_the_default),
      cmocka_unit_test(validation_makes_warnings_visible),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
