/* kiln-conformance: the conformance suite on the backend KILN_BACKEND
 * names. Exits 77 (skipped) only when kiln says that backend cannot run
 * here, saying why in a line "kiln-skip: (all): <reason>"; every other
 * failure to set up is a failure. KILN_TEST_SEED=N
 * repeats a run's random data; KILN_CONF_FILTER=PATTERN runs only the tests
 * whose names match it (cmocka's wildcards * and ?, e.g. 'threads_*'),
 * KILN_CONF_SKIP=PATTERN leaves out those that match it, and
 * KILN_CONF_GROUPS=faults,threads runs only those groups of tests (the
 * names are in main's table), e.g. to run the suites of several backends
 * side by side on one GPU but those that exhaust or stall it alone.
 * A run that seems stuck tells where each thread is: send SIGUSR2 to each
 * of its threads (tgkill; scripts/gpu-verify.sh does) and each writes its
 * stack to stderr, as addresses for addr2line. */
#include <execinfo.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "conformance.h"
#include "timing.h"

#define EXIT_SKIP 77

/* Whether `name` is one of the comma-separated words of `list`. */
static bool in_list(const char *list, const char *name) {
  const size_t len = strlen(name);
  for (const char *p = list; *p;) {
    const char *end = strchr(p, ',');
    const size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n == len && strncmp(p, name, len) == 0) return true;
    if (!end) break;
    p = end + 1;
  }
  return false;
}

static uint64_t pick_seed(void) {
  const char *v = getenv("KILN_TEST_SEED");
  if (v && *v) return strtoull(v, NULL, 0);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000007u + (uint64_t)ts.tv_nsec;
}

/* Writes the calling thread's stack to stderr: backtrace_symbols_fd only
 * writes, and the handler runs for a diagnosis of a stuck run, after which
 * the process is killed anyway. */
static void dump_stack(int sig) {
  (void)sig;
  void *frames[48];
  int n = backtrace(frames, 48);
  char head[64];
  int len = snprintf(head, sizeof head, "== stack of thread %#lx\n",
                     (unsigned long)pthread_self());
  if (len > 0 && write(STDERR_FILENO, head, (size_t)len) < 0) return;
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
}

int main(void) {
  /* Line by line, so that progress and kiln's messages interleave. */
  setvbuf(stdout, NULL, _IOLBF, 0);
  /* sigaction, not signal(): under strict C11 glibc's signal() resets the
   * handler after one delivery, and every thread must print. */
  struct sigaction dump = {.sa_handler = dump_stack, .sa_flags = SA_RESTART};
  sigemptyset(&dump.sa_mask);
  sigaction(SIGUSR2, &dump, NULL);
  const char *name = getenv("KILN_BACKEND");
  if (!name || !*name) {
    fprintf(stderr, "kiln-conformance: set KILN_BACKEND to cuda, hip or "
                    "vulkan (meson test --suite <backend> does)\n");
    return 1;
  }
  if (kiln_backend_from_name(name, &conf.backend) != KILN_OK ||
      conf.backend == KILN_BACKEND_AUTO) {
    fprintf(stderr,
            "kiln-conformance: KILN_BACKEND=%s is not cuda, hip or "
            "vulkan\n",
            name);
    return 1;
  }
  const char *reason = "";
  if (kiln_backend_available(conf.backend, &reason) != KILN_OK) {
    /* The second line is kiln_skip's, for the whole suite: scripts/test.sh
     * counts it with the skipped cases. */
    printf("kiln-conformance: SKIP: the %s backend cannot run here: %s\n",
           kiln_backend_name(conf.backend), reason);
    printf("kiln-skip: (all): the %s backend cannot run here: %s\n",
           kiln_backend_name(conf.backend), reason);
    return EXIT_SKIP;
  }
  conf_install_log_handler();
  const char *child = getenv("KILN_CONF_CHILD");
  kiln_status st = kiln_context_create(NULL, &conf.ctx);
  /* The printf group's child asks for the validation layer itself, which
   * a machine may lack: the parent then says so and skips. */
  if (st == KILN_ERROR_UNAVAILABLE && child &&
      strncmp(child, "printf-", 7) == 0) {
    printf("kiln-conformance (child): %s\n", kiln_last_error());
    return CONF_CHILD_UNAVAILABLE;
  }
  if (st != KILN_OK) {
    fprintf(stderr,
            "kiln-conformance: the %s backend is available but "
            "kiln_context_create failed with %s: %s\n",
            kiln_backend_name(conf.backend), kiln_status_name(st),
            kiln_last_error());
    return 1;
  }
  if (kiln_context_get_properties(conf.ctx, &conf.props) != KILN_OK) {
    fprintf(stderr, "kiln-conformance: kiln_context_get_properties: %s\n",
            kiln_last_error());
    return 1;
  }
  if (child && *child) {
    int rc = strncmp(child, "fault-", 6) == 0    ? conf_fault_child(child)
             : strncmp(child, "printf-", 7) == 0 ? conf_printf_child(child)
                                                 : conf_compile_child(child);
    kiln_context_destroy(conf.ctx);
    return rc;
  }
  conf.seed = pick_seed();
  printf("kiln-conformance: %s on %s (%s, %s); seed %" PRIu64
         " (KILN_TEST_SEED=%" PRIu64 " repeats this run)\n",
         kiln_backend_name(conf.backend), conf.props.name,
         kiln_device_type_name(conf.props.type), conf.props.driver_version,
         conf.seed, conf.seed);

  const char *filter = getenv("KILN_CONF_FILTER");
  if (filter && *filter) cmocka_set_test_filter(filter);
  const char *skip = getenv("KILN_CONF_SKIP");
  if (skip && *skip) cmocka_set_skip_filter(skip);

  static const struct {
    const char *name;
    int (*run)(void);
  } groups[] = {
      {"device", conf_run_device_tests},
      {"buffers", conf_run_buffer_tests},
      {"suballoc", conf_run_suballoc_tests},
      {"stream-memory", conf_run_stream_memory_tests},
      {"kernels", conf_run_kernel_tests},
      {"builtins", conf_run_builtin_tests},
      {"hgemm", conf_run_hgemm_tests},
      {"streams", conf_run_stream_tests},
      {"peers", conf_run_peer_tests},
      {"peer-memory", conf_run_peer_memory_tests},
      {"graphs", conf_run_graph_tests},
      {"branches", conf_run_branch_tests},
      {"sync", conf_run_sync_tests},
      {"interop", conf_run_interop_tests},
      {"vendor", conf_run_vendor_tests},
      {"errors", conf_run_error_tests},
      {"compile", conf_run_compile_tests},
      {"bad-input", conf_run_bad_input_tests},
      {"threads", conf_run_thread_tests},
      {"guard", conf_run_guard_tests},
      {"globals", conf_run_global_tests},
      {"trace", conf_run_trace_tests},
      {"printf", conf_run_printf_tests},
      {"attributes", conf_run_attribute_tests},
      {"corpus", conf_run_corpus_tests},
      {"faults", conf_run_fault_tests},
  };
  const char *only = getenv("KILN_CONF_GROUPS");
  int failed = 0;
  /* Each group's time, for whoever must fit the suite into a machine's
   * minutes (scripts/gpu-verify.sh). */
  for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
    if (only && *only && !in_list(only, groups[i].name)) continue;
    const uint64_t t0 = conf_now_ns();
    conf_test_clock_start();
    failed += groups[i].run();
    printf("kiln-conformance: group %s took %.1f s\n", groups[i].name,
           (double)(conf_now_ns() - t0) * 1e-9);
  }

  st = conf_release_module();
  if (st == KILN_OK)
    st = kiln_context_destroy(conf.ctx);
  else
    kiln_context_destroy(conf.ctx);
  if (st != KILN_OK && failed == 0) {
    fprintf(stderr,
            "kiln-conformance: releasing the suite's context: %s: "
            "%s\n",
            kiln_status_name(st), kiln_last_error());
    failed++;
  }
  int validation = conf_validation_messages();
  if (validation) {
    fprintf(stderr,
            "kiln-conformance: the Vulkan validation layer reported "
            "%d message(s)\n",
            validation);
    failed++;
  }
  printf("kiln-conformance: %s: %d failure(s)\n",
         kiln_backend_name(conf.backend), failed);
  return failed ? 1 : 0;
}
