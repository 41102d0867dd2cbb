/* Device printf that arrives: a kernel compiled from source prints a token,
 * and by the time a wait for it returns the token is in the process's
 * stdout, under every sync policy and for each kind of wait (a stream's,
 * bounded and not; an event's, plain and blocking; the context's). CUDA's
 * and HIP's drivers flush their printf buffer only in a synchronizing call
 * of theirs, which kiln's polling waits are not (issue 30).
 *
 * Vulkan kernels have no printf of the driver's: GLSL's debugPrintfEXT is
 * the validation layer's, whose text kiln sends to its log handler, with
 * the kernel's name, under KILN_VULKAN_VALIDATION=printf. The process's
 * instance is made once, so that runs in a child started with it.
 *
 * stdout is pointed at a file of the test's while it runs, and read after
 * each wait, with stdio's own buffer flushed first: the driver may write
 * through it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conformance.h"
#include "timing.h"

/* No #include: NVRTC and HIPRTC declare printf themselves, and NVRTC finds
 * no <cstdio>. */
#define PRINTF_TEXT                                                        \
  "extern \"C\" __global__ void conf_says(unsigned token) {\n"             \
  "  if (threadIdx.x == 0 && blockIdx.x == 0)\n"                           \
  "    printf(\"kiln-conf-printf %u.\\n\", token);\n"                      \
  "}\n"

static const kiln_sync_policy policies[] = {KILN_SYNC_AUTO, KILN_SYNC_SPIN,
                                            KILN_SYNC_YIELD, KILN_SYNC_BLOCK};
static const char *const policy_names[] = {"auto", "spin", "yield", "block"};

enum wait_kind {
  WAIT_STREAM,
  WAIT_STREAM_BOUNDED,
  WAIT_EVENT,
  WAIT_BLOCKING_EVENT,
  WAIT_CONTEXT,
  WAITS
};
static const char *const wait_names[] = {
    "kiln_stream_synchronize", "kiln_stream_synchronize_timeout",
    "kiln_event_synchronize", "kiln_event_synchronize (KILN_EVENT_BLOCKING)",
    "kiln_context_synchronize"};

/* stdout, pointed at a file for the test and put back after it. */
typedef struct captured {
  int saved; /* the descriptor stdout had */
  FILE *file;
} captured;

static void capture_begin(captured *c) {
  char path[] = "/tmp/kiln-conf-printf-XXXXXX";
  const int fd = mkstemp(path);
  assert_true(fd >= 0);
  unlink(path);
  c->file = fdopen(fd, "r");
  assert_non_null(c->file);
  fflush(stdout);
  c->saved = dup(STDOUT_FILENO);
  assert_true(c->saved >= 0);
  assert_true(dup2(fd, STDOUT_FILENO) >= 0);
}

static void capture_end(captured *c) {
  fflush(stdout);
  dup2(c->saved, STDOUT_FILENO);
  close(c->saved);
  fclose(c->file);
}

/* Whether the file holds the line for `token` now. */
static bool printed(captured *c, unsigned token) {
  fflush(stdout);
  char want[64], line[256];
  snprintf(want, sizeof want, "kiln-conf-printf %u.\n", token);
  rewind(c->file);
  while (fgets(line, sizeof line, c->file))
    if (strcmp(line, want) == 0) return true;
  return false;
}

/* Launches conf_says(token) on s and waits for it the `kind` way. */
static kiln_status launch_and_wait(kiln_context *ctx, kiln_stream *s,
                                   kiln_kernel *k, unsigned token,
                                   enum wait_kind kind) {
  const kiln_launch_config one = {{1, 1, 1}, {32, 1, 1}, 0};
  const kiln_arg arg = kiln_arg_u32(token);
  kiln_status st = kiln_launch(s, k, &one, &arg, 1);
  if (st != KILN_OK) return st;
  kiln_event *e = NULL;
  switch (kind) {
  case WAIT_STREAM: return kiln_stream_synchronize(s);
  case WAIT_STREAM_BOUNDED:
    return kiln_stream_synchronize_timeout(s, UINT64_C(60000000000));
  case WAIT_EVENT:
  case WAIT_BLOCKING_EVENT:
    st = kind == WAIT_EVENT
             ? kiln_event_create_with_flags(ctx, KILN_EVENT_NO_TIMING, &e)
             : kiln_event_create_with_flags(
                   ctx, KILN_EVENT_BLOCKING | KILN_EVENT_NO_TIMING, &e);
    if (st == KILN_OK) st = kiln_event_record(e, s);
    if (st == KILN_OK) st = kiln_event_synchronize(e);
    if (e) kiln_event_destroy(e);
    return st;
  case WAIT_CONTEXT: return kiln_context_synchronize(ctx);
  case WAITS: break;
  }
  return KILN_ERROR_INVALID_ARGUMENT;
}

/* ---- Vulkan: in a child under KILN_VULKAN_VALIDATION=printf ---------- */

/* Two kernels, conf_says and conf_echo, that print one token each. */
#define GLSL_PRINTF_TEXT(word)                                             \
  "#version 460\n"                                                         \
  "#extension GL_EXT_debug_printf : require\n"                             \
  "layout(local_size_x_id = 0) in;\n"                                      \
  "layout(push_constant) uniform Args { uint token; } args;\n"             \
  "void main() {\n"                                                        \
  "  if (gl_GlobalInvocationID.x == 0)\n"                                  \
  "    debugPrintfEXT(\"kiln-conf-" word " %u.\", args.token);\n"         \
  "}\n"

/* What the child's log handler was given: the printf lines (the rest of
 * the log, at whatever KILN_LOG asks, is not kept) and the validation
 * layer's findings, which fail the child as they fail the suite. */
static struct {
  pthread_mutex_t lock;
  char lines[16384];
  size_t used;
  int validation;
} logged = {PTHREAD_MUTEX_INITIALIZER, "", 0, 0};

static void on_child_log(kiln_log_level level, const char *message,
                         void *data) {
  (void)level;
  (void)data;
  pthread_mutex_lock(&logged.lock);
  if (strncmp(message, "Vulkan validation: ", 19) == 0) {
    logged.validation++;
    fprintf(stderr, "%s\n", message);
  } else if (strncmp(message, "vulkan printf (", 15) == 0 &&
             logged.used < sizeof logged.lines) {
    logged.used += (size_t)snprintf(logged.lines + logged.used,
                                    sizeof logged.lines - logged.used, "%s\n",
                                    message);
  }
  pthread_mutex_unlock(&logged.lock);
}

/* Whether the log holds the line `word` `token` printed by `kernels` (the
 * name the line gives); the line is taken out, so that a later check
 * needs a later print. */
static bool child_logged(const char *kernels, const char *word,
                         unsigned token) {
  char want[160];
  snprintf(want, sizeof want, "vulkan printf (%s): kiln-conf-%s %u.\n",
           kernels, word, token);
  pthread_mutex_lock(&logged.lock);
  char *at = strstr(logged.lines, want);
  if (at) at[0] = '-';
  pthread_mutex_unlock(&logged.lock);
  return at != NULL;
}

/* Notes `what` under policy `name` among the missing lines. */
static void note_missing(char *missing, size_t missing_size, size_t *used,
                         const char *what, const char *name) {
  if (*used < missing_size)
    *used += (size_t)snprintf(missing + *used, missing_size - *used,
                              "%s%s under %s", *used ? "; " : "", what, name);
}

static kiln_status child_policy(kiln_sync_policy policy, const char *name,
                                char *missing, size_t missing_size,
                                size_t *used) {
  const kiln_source src[] = {
      {KILN_SOURCE_GLSL, GLSL_PRINTF_TEXT("printf"), "says.comp", "conf_says"},
      {KILN_SOURCE_GLSL, GLSL_PRINTF_TEXT("echo"), "echo.comp", "conf_echo"}};
  kiln_context_options o = {KILN_BACKEND_VULKAN, KILN_DEVICE_FROM_ENV, policy};
  kiln_context *ctx = NULL;
  kiln_module *m = NULL;
  kiln_kernel *k = NULL, *echo = NULL;
  kiln_stream *s = NULL;
  kiln_graph *g = NULL;
  kiln_status st = kiln_context_create(&o, &ctx);
  if (st == KILN_OK) st = kiln_module_create_from_source(ctx, src, 2, NULL, &m);
  if (st == KILN_OK) st = kiln_module_get_kernel(m, "conf_says", &k);
  if (st == KILN_OK) st = kiln_module_get_kernel(m, "conf_echo", &echo);
  if (st == KILN_OK) st = kiln_stream_create(ctx, &s);
  for (int w = 0; st == KILN_OK && w < WAITS; w++) {
    const unsigned token = 1000u + 10u * (unsigned)policy + (unsigned)w;
    st = launch_and_wait(ctx, s, k, token, (enum wait_kind)w);
    if (st == KILN_OK && !child_logged("conf_says", "printf", token))
      note_missing(missing, missing_size, used, wait_names[w], name);
  }
  /* Two kernels back to back, behind a fill, with no wait between them:
   * each line still names its own kernel. */
  const unsigned token = 2000u + 10u * (unsigned)policy;
  const kiln_launch_config one = {{1, 1, 1}, {32, 1, 1}, 0};
  const kiln_arg first = kiln_arg_u32(token), second = kiln_arg_u32(token + 1);
  kiln_buffer *b = NULL;
  if (st == KILN_OK) st = kiln_buffer_create(ctx, 4096, 0, &b);
  const uint32_t seven = 7;
  if (st == KILN_OK) st = kiln_buffer_fill(s, b, 0, 4096, &seven, 4);
  if (st == KILN_OK) st = kiln_launch(s, k, &one, &first, 1);
  if (st == KILN_OK) st = kiln_launch(s, echo, &one, &second, 1);
  if (st == KILN_OK) st = kiln_stream_synchronize(s);
  if (st == KILN_OK && !child_logged("conf_says", "printf", token))
    note_missing(missing, missing_size, used, "the first of two kernels", name);
  if (st == KILN_OK && !child_logged("conf_echo", "echo", token + 1))
    note_missing(missing, missing_size, used, "the second of two kernels",
                 name);
  /* A graph's replays print too, under the graph's kernels' names. */
  if (st == KILN_OK) st = kiln_stream_begin_capture(s);
  if (st == KILN_OK) st = kiln_launch(s, k, &one, &first, 1);
  if (st == KILN_OK) st = kiln_launch(s, echo, &one, &second, 1);
  if (st == KILN_OK) st = kiln_stream_end_capture(s, &g);
  for (int replay = 0; st == KILN_OK && replay < 2; replay++) {
    st = kiln_graph_launch(g, s);
    if (st == KILN_OK) st = kiln_stream_synchronize(s);
    if (st == KILN_OK &&
        (!child_logged("conf_says, conf_echo", "printf", token) ||
         !child_logged("conf_says, conf_echo", "echo", token + 1)))
      note_missing(missing, missing_size, used,
                   replay ? "a graph's second replay" : "a graph's replay",
                   name);
  }
  if (b) kiln_buffer_destroy(b);
  if (g) kiln_graph_destroy(g);
  if (s) kiln_stream_destroy(s);
  if (m) kiln_module_destroy(m);
  if (ctx) {
    const kiln_status destroyed = kiln_context_destroy(ctx);
    if (st == KILN_OK) st = destroyed;
  }
  return st;
}

int conf_printf_child(const char *mode) {
  (void)mode;
  kiln_set_log_handler(on_child_log, NULL);
  char missing[1024] = "";
  size_t used = 0;
  for (size_t p = 0; p < sizeof policies / sizeof policies[0]; p++) {
    const kiln_status st = child_policy(policies[p], policy_names[p], missing,
                                        sizeof missing, &used);
    if (st != KILN_OK) {
      printf("kiln-conformance (child): sync policy %s: %s: %s\n",
             policy_names[p], kiln_status_name(st), kiln_last_error());
      return 1;
    }
  }
  /* With KILN_DEBUG=reorder each would wait for the other: refused. */
  setenv("KILN_DEBUG", "reorder", 1);
  kiln_context *ctx = NULL;
  const kiln_status mixed = kiln_context_create(NULL, &ctx);
  unsetenv("KILN_DEBUG");
  if (mixed != KILN_ERROR_UNSUPPORTED ||
      !strstr(kiln_last_error(), "do not go together")) {
    printf("kiln-conformance (child): KILN_DEBUG=reorder under printf gave "
           "%s (%s), not a refusal\n",
           kiln_status_name(mixed), kiln_last_error());
    if (ctx) kiln_context_destroy(ctx);
    return 1;
  }
  if (missing[0]) {
    printf("kiln-conformance (child): debugPrintfEXT's text had not reached "
           "the log, with its kernel's name, when these waits returned: %s; "
           "the log had:\n%s",
           missing, logged.lines);
    return 1;
  }
  return logged.validation ? 1 : 0;
}

static void vulkan_printf_reaches_the_log(void) {
  const char *compiler = NULL;
  if (kiln_compiler_available(KILN_BACKEND_VULKAN, &compiler) != KILN_OK)
    kiln_skip("no GLSL compiler to build the printing kernel: %s",
              kiln_last_error());
  /* Without KILN_DEBUG (the reorder runs set it): printf refuses reorder,
   * which the child checks itself. */
  static const char *const dropped[] = {"KILN_DEBUG", NULL};
  static const char *const set[] = {"KILN_CONF_CHILD=printf-vulkan",
                                    "KILN_VULKAN_VALIDATION=printf", NULL};
  const pid_t pid = conf_spawn(dropped, set);
  const int status = conf_wait_child(pid, "the printf child");
  if (WIFEXITED(status) && WEXITSTATUS(status) == CONF_CHILD_UNAVAILABLE)
    kiln_skip("KILN_VULKAN_VALIDATION=printf needs the validation layer, "
              "which is not installed (the child's output says so)");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail_msg("the child under KILN_VULKAN_VALIDATION=printf failed (status "
             "%d); its output above says why",
             status);
}

static void printf_arrives_by_each_wait(void **state) {
  (void)state;
  if (conf.backend == KILN_BACKEND_VULKAN) {
    vulkan_printf_reaches_the_log();
    return;
  }
  const char *compiler = NULL;
  if (kiln_compiler_available(conf.backend, &compiler) != KILN_OK)
    kiln_skip("no %s compiler to build the printing kernel: %s",
              kiln_backend_name(conf.backend), kiln_last_error());
  const kiln_source src = {
      conf.backend == KILN_BACKEND_HIP ? KILN_SOURCE_HIP : KILN_SOURCE_CUDA,
      PRINTF_TEXT, conf.backend == KILN_BACKEND_HIP ? "says.hip" : "says.cu",
      NULL};
  char missing[512] = "";
  size_t used = 0;
  captured c;
  capture_begin(&c);
  for (size_t p = 0; p < sizeof policies / sizeof policies[0]; p++) {
    kiln_context_options o = {conf.backend, KILN_DEVICE_FROM_ENV,
                              policies[p]};
    kiln_context *ctx = NULL;
    kiln_module *m = NULL;
    kiln_kernel *k = NULL;
    kiln_stream *s = NULL;
    kiln_status st = kiln_context_create(&o, &ctx);
    if (st == KILN_OK)
      st = kiln_module_create_from_source(ctx, &src, 1, NULL, &m);
    if (st == KILN_OK) st = kiln_module_get_kernel(m, "conf_says", &k);
    if (st == KILN_OK) st = kiln_stream_create(ctx, &s);
    for (int w = 0; st == KILN_OK && w < WAITS; w++) {
      const unsigned token = 1000u + 10u * (unsigned)p + (unsigned)w;
      st = launch_and_wait(ctx, s, k, token, (enum wait_kind)w);
      if (st == KILN_OK && !printed(&c, token) && used < sizeof missing)
        used += (size_t)snprintf(missing + used, sizeof missing - used,
                                 "%s%s under %s", used ? "; " : "",
                                 wait_names[w], policy_names[p]);
    }
    /* Failures are told once stdout is back. */
    if (st == KILN_OK && s) st = kiln_stream_destroy(s);
    if (st == KILN_OK && m) st = kiln_module_destroy(m);
    if (ctx) {
      const kiln_status destroyed = kiln_context_destroy(ctx);
      if (st == KILN_OK) st = destroyed;
    }
    if (st != KILN_OK) {
      capture_end(&c);
      fail_msg("sync policy %s: %s: %s", policy_names[p],
               kiln_status_name(st), kiln_last_error());
    }
  }
  capture_end(&c);
  if (missing[0])
    fail_msg("device printf had not arrived when these waits returned: %s",
             missing);
}

int conf_run_printf_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(printf_arrives_by_each_wait),
  };
  return cmocka_run_group_tests_name("printf", tests, NULL, NULL);
}
