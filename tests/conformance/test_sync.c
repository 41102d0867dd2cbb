/* Synchronisation policies, stream priorities and event flags: every
 * policy, chosen by the options or by KILN_SYNC, makes a context whose
 * waits return once the work is done, give up at KILN_SYNC_TIMEOUT_MS when
 * set, and spin or sleep as the policy says; streams at both ends of the
 * priority range run work right; untimed events refuse timing and blocking
 * events wait without using the CPU.
 *
 * Over 600 lines: the policies' three effects (the bound, the CPU a wait
 * costs, the work's results) share one set of helpers here, and a split
 * would only move them into a header. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

#include "conformance.h"
#include "timing.h"

enum { WORDS = 1024 };

static const kiln_sync_policy policies[] = {KILN_SYNC_AUTO, KILN_SYNC_SPIN,
                                            KILN_SYNC_YIELD, KILN_SYNC_BLOCK};
static const char *const policy_names[] = {"auto", "spin", "yield", "block"};

/* Sets `name` to `value` (NULL: unsets it); returns the old value to give
 * restore_env. */
static char *swap_env(const char *name, const char *value) {
  const char *was = getenv(name);
  char *saved = was ? strdup(was) : NULL;
  if (value)
    setenv(name, value, 1);
  else
    unsetenv(name);
  return saved;
}

static void restore_env(const char *name, char *saved) {
  if (saved)
    setenv(name, saved, 1);
  else
    unsetenv(name);
  free(saved);
}

/* A context of the suite's backend with `policy` in its options and the
 * environment variables given (NULL: unset) while it is created. */
static kiln_context *context_with(kiln_sync_policy policy, const char *sync_env,
                                  const char *timeout_ms) {
  char *sync_was = swap_env("KILN_SYNC", sync_env);
  char *timeout_was = swap_env("KILN_SYNC_TIMEOUT_MS", timeout_ms);
  kiln_context_options o = {conf.backend, KILN_DEVICE_FROM_ENV, policy};
  kiln_context *ctx = NULL;
  kiln_status st = kiln_context_create(&o, &ctx);
  restore_env("KILN_SYNC", sync_was);
  restore_env("KILN_SYNC_TIMEOUT_MS", timeout_was);
  check_ok(st);
  return ctx;
}

/* conf_busy's `rounds` steps of v -> v * 1664525 + 1013904223 composed
 * into one v -> mul * v + add (mod 2^32). CPU drivers end a loop after
 * 65535 turns (llvmpipe), so launches keep below that. */
#define MAX_ROUNDS 60000u

static void busy_steps(uint32_t rounds, uint32_t *mul, uint32_t *add) {
  *mul = 1;
  *add = 0;
  for (uint32_t r = 0; r < rounds; r++) {
    *mul *= 1664525u;
    *add = *add * 1664525u + 1013904223u;
  }
}

typedef struct work {
  kiln_module *module;
  kiln_kernel *busy, *add;
  kiln_buffer *buf;
  uint32_t host[WORDS];
} work;

static void work_create(kiln_context *ctx, work *w, conf_rng *r) {
  size_t count;
  const kiln_module_image *images = conf_images(&count);
  check_ok(kiln_module_create(ctx, images, count, &w->module));
  check_ok(kiln_module_get_kernel(w->module, "conf_busy", &w->busy));
  check_ok(kiln_module_get_kernel(w->module, "conf_add_u32", &w->add));
  check_ok(kiln_buffer_create(ctx, sizeof w->host, 0, &w->buf));
  conf_random_bytes(r, w->host, sizeof w->host);
  check_ok(kiln_buffer_write(NULL, w->buf, 0, w->host, sizeof w->host));
  /* The write is in the default stream's order only (kiln.h); the tests
   * go on to use the buffer on other streams. The H100 showed it: a
   * 4 KiB write still in flight when a second stream read the words. */
  kiln_stream *def = NULL;
  check_ok(kiln_context_default_stream(ctx, &def));
  check_ok(kiln_stream_synchronize(def));
}

static void work_destroy(work *w) {
  check_ok(kiln_buffer_destroy(w->buf));
  check_ok(kiln_module_destroy(w->module));
}

/* Queues conf_busy(rounds) then conf_add_u32(add) on s, and updates the
 * host's copy to what the device will hold. */
static void work_queue(work *w, kiln_stream *s, uint32_t rounds, uint32_t add) {
  assert_true(rounds <= MAX_ROUNDS);
  kiln_launch_config c = kiln_launch_config_1d(WORDS, 64);
  const kiln_arg busy_args[3] = {kiln_arg_buffer(w->buf, 0),
                                 kiln_arg_u32(WORDS), kiln_arg_u32(rounds)};
  const kiln_arg add_args[3] = {kiln_arg_buffer(w->buf, 0), kiln_arg_u32(WORDS),
                                kiln_arg_u32(add)};
  check_ok(kiln_launch(s, w->busy, &c, busy_args, 3));
  check_ok(kiln_launch(s, w->add, &c, add_args, 3));
  uint32_t mul, plus;
  busy_steps(rounds, &mul, &plus);
  for (size_t i = 0; i < WORDS; i++) w->host[i] = w->host[i] * mul + plus + add;
}

/* The device's words must be the host's. */
static void work_check(work *w, const char *what) {
  uint32_t got[WORDS];
  check_ok(kiln_buffer_read(NULL, w->buf, 0, got, sizeof got));
  conf_check_bytes(got, w->host, sizeof got, what);
}

/* Queues an async read of the words into hb on s. Checking hb's memory
 * right after a wait, with no call to kiln between, shows a wait that
 * returned before the work was done, on any device: a read through kiln
 * would be queued behind the work, on one queue (lavapipe's), and see it
 * done whatever the wait did. */
static void work_read_async(work *w, kiln_stream *s, kiln_host_buffer *hb) {
  check_ok(kiln_buffer_read_async(s, w->buf, 0, hb, 0, sizeof w->host));
}

/* Waits of every kind under one context's policy: a stream synchronize, an
 * event synchronize, a context synchronize, each after work that takes a
 * while, and one after no work at all. */
static void waits_work(kiln_context *ctx, kiln_sync_policy want, conf_rng *r) {
  kiln_sync_policy got = KILN_SYNC_DEFAULT;
  check_ok(kiln_context_get_sync_policy(ctx, &got));
  assert_int_equal(got, want);
  work w;
  work_create(ctx, &w, r);
  kiln_stream *s;
  kiln_event *e;
  check_ok(kiln_stream_create(ctx, &s));
  check_ok(kiln_event_create(ctx, &e));
  check_ok(kiln_stream_synchronize(s));
  kiln_host_buffer *hb;
  check_ok(kiln_host_buffer_create(ctx, sizeof w.host, 0, &hb));
  const void *seen = kiln_host_buffer_data(hb);

  work_queue(&w, s, 4000, 1);
  work_read_async(&w, s, hb);
  check_ok(kiln_stream_synchronize(s));
  conf_check_bytes(seen, w.host, sizeof w.host,
                   "the words after a stream synchronize");

  work_queue(&w, s, 4000, 2);
  work_read_async(&w, s, hb);
  check_ok(kiln_event_record(e, s));
  check_ok(kiln_event_synchronize(e));
  conf_check_bytes(seen, w.host, sizeof w.host,
                   "the words after an event synchronize");
  check_ok(kiln_event_query(e));

  work_queue(&w, s, 4000, 3);
  work_read_async(&w, s, hb);
  check_ok(kiln_event_record(e, s));
  check_ok(kiln_context_synchronize(ctx));
  conf_check_bytes(seen, w.host, sizeof w.host,
                   "the words after a context synchronize");
  check_ok(kiln_event_query(e));
  work_check(&w, "the words read back after a context synchronize");

  check_ok(kiln_host_buffer_destroy(hb));
  check_ok(kiln_event_destroy(e));
  check_ok(kiln_stream_destroy(s));
  work_destroy(&w);
}

static void every_policy_from_the_options(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  for (size_t i = 0; i < 4; i++) {
    printf("  sync policy %s from the options\n", policy_names[i]);
    /* KILN_SYNC says otherwise: the options win. */
    kiln_context *ctx =
        context_with(policies[i], policy_names[(i + 1) % 4], NULL);
    waits_work(ctx, policies[i], &r);
    check_ok(kiln_context_destroy(ctx));
  }
}

static void every_policy_from_env_with_a_bound(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  for (size_t i = 0; i < 4; i++) {
    printf("  KILN_SYNC=%s, KILN_SYNC_TIMEOUT_MS=60000\n", policy_names[i]);
    kiln_context *ctx =
        context_with(KILN_SYNC_DEFAULT, policy_names[i], "60000");
    waits_work(ctx, policies[i], &r);
    check_ok(kiln_context_destroy(ctx));
  }
}

static double ms_since(uint64_t t0) {
  return (double)(conf_now_ns() - t0) / 1e6;
}

/* The bound every_policy_keeps_the_bound gives KILN_SYNC_TIMEOUT_MS, and
 * how much later than that a wait may give up on a loaded machine (it
 * should give up within a millisecond or two). */
#define BOUND_MS 20
#define BOUND_SLACK_MS 2000.0
/* When a gate opens by itself if the test has not opened it: long after
 * everything the test does while it is closed (a second at most on a
 * loaded machine), and short enough that a wait which ignores its bound
 * fails the test in seconds rather than hangs it. */
#define GATE_DEADLINE_MS 20000u

/* A wait bounded by KILN_SYNC_TIMEOUT_MS, on work held behind a gate, must
 * give up with KILN_ERROR_TIMEOUT, in words, no earlier than the bound and
 * not much later. */
static void expect_timeout(kiln_status st, double took, const char *policy,
                           const char *wait) {
  if (st != KILN_ERROR_TIMEOUT)
    fail_msg("sync policy %s: %s on work held behind a closed gate, bounded "
             "by KILN_SYNC_TIMEOUT_MS=%d, returned %s after %.1f ms: %s",
             policy, wait, BOUND_MS, kiln_status_name(st), took,
             kiln_last_error());
  char limit[64];
  snprintf(limit, sizeof limit, "KILN_SYNC_TIMEOUT_MS=%d", BOUND_MS);
  check_message_has(limit);
  if (took < BOUND_MS - 1.0 || took > BOUND_MS + BOUND_SLACK_MS)
    fail_msg("sync policy %s: %s bounded to %d ms gave up after %.1f ms",
             policy, wait, BOUND_MS, took);
}

/* Under every policy the waits bounded by KILN_SYNC_TIMEOUT_MS (a stream's,
 * an event's, the context's) give up on work that cannot be done yet: it
 * waits behind a gate that the test opens only afterwards, so no device is
 * too fast for the bound to show. The work then runs to its end. Were
 * kiln_launch to wait for its kernel, the launch behind the gate would
 * give up or return only when the gate opens by itself, 20 s later,
 * and the work would be done before the waits: either way a failure. */
static void every_policy_keeps_the_bound(void **state) {
  (void)state;
  const char *why_not = conf_gate_why_not(conf.ctx);
  if (why_not) kiln_skip("%s", why_not);
  conf_rng r = conf_rng_for(__func__);
  char bound[16];
  snprintf(bound, sizeof bound, "%d", BOUND_MS);
  for (size_t i = 0; i < 4; i++) {
    printf("  sync policy %s, KILN_SYNC_TIMEOUT_MS=%d\n", policy_names[i],
           BOUND_MS);
    kiln_context *ctx = context_with(policies[i], NULL, bound);
    work w;
    work_create(ctx, &w, &r);
    kiln_stream *s;
    check_ok(kiln_stream_create(ctx, &s));
    kiln_event *queued;
    check_ok(kiln_event_create(ctx, &queued));
    conf_gate *gate = conf_gate_close(ctx, s, GATE_DEADLINE_MS);
    work_queue(&w, s, 1000, (uint32_t)i + 1);
    check_ok(kiln_event_record(queued, s));
    kiln_status st = kiln_event_query(queued);
    if (st != KILN_ERROR_NOT_READY)
      fail_msg("sync policy %s: the work behind the closed gate: "
               "kiln_event_query gave %s, not KILN_ERROR_NOT_READY (did "
               "kiln_launch wait for the device?)",
               policy_names[i], kiln_status_name(st));

    uint64_t t0 = conf_now_ns();
    st = kiln_stream_synchronize(s);
    expect_timeout(st, ms_since(t0), policy_names[i],
                   "kiln_stream_synchronize");
    t0 = conf_now_ns();
    st = kiln_event_synchronize(queued);
    expect_timeout(st, ms_since(t0), policy_names[i], "kiln_event_synchronize");
    t0 = conf_now_ns();
    st = kiln_context_synchronize(ctx);
    expect_timeout(st, ms_since(t0), policy_names[i],
                   "kiln_context_synchronize");

    if (!conf_gate_open(gate))
      fail_msg("sync policy %s: the gate opened by itself after %u ms, "
               "before the test's waits were done (did kiln_launch wait for "
               "the device?)",
               policy_names[i], GATE_DEADLINE_MS);
    conf_gate_free(gate);
    check_ok(kiln_event_query(queued));
    work_check(&w, "the words after timed-out waits and a full one");
    check_ok(kiln_event_destroy(queued));
    check_ok(kiln_stream_destroy(s));
    work_destroy(&w);
    check_ok(kiln_context_destroy(ctx));
  }
}

/* ---- What a wait costs the host ------------------------------------------ */

/* How long a gate holds the work a measured wait waits for. */
#define HOLD_MS 250u
/* A wait that sleeps may use at most this share of a core; one that spins
 * gets at least a third of what spinning gets on this machine just before
 * it (measured, so that a loaded machine, where spinning gets less of a
 * core, fails neither). Sleeping costs a few wake-ups, well under 1%. */
#define SLEEP_MAX_SHARE 0.25
#define REFERENCE_MIN_SHARE 0.3

typedef enum wait_kind {
  WAIT_STREAM,
  WAIT_EVENT,
  WAIT_BLOCKING_EVENT
} wait_kind;
static const char *const wait_names[] = {
    "kiln_stream_synchronize", "kiln_event_synchronize",
    "kiln_event_synchronize of a KILN_EVENT_BLOCKING event"};

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The share of a core this thread gets while it spins for 100 ms. */
static double spinning_share(void) {
  const uint64_t t0 = conf_now_ns(), c0 = thread_cpu_ns();
  uint64_t t = t0;
  while (t - t0 < 100000000u) t = conf_now_ns();
  return (double)(thread_cpu_ns() - c0) / (double)(t - t0);
}

/* A wait of `kind` for work held behind a gate that another thread opens
 * HOLD_MS after the wait starts; the share of a core the waiting thread
 * used. It must not return before the gate opened. */
static double gated_wait_share(kiln_context *ctx, work *w, wait_kind kind,
                               const char *policy) {
  kiln_stream *s;
  kiln_event *e;
  check_ok(kiln_stream_create(ctx, &s));
  check_ok(kiln_event_create_with_flags(
      ctx, kind == WAIT_BLOCKING_EVENT ? KILN_EVENT_BLOCKING : 0, &e));
  conf_gate *gate = conf_gate_close(ctx, s, GATE_DEADLINE_MS);
  work_queue(w, s, 100, 7);
  check_ok(kiln_event_record(e, s));
  conf_gate_open_in(gate, HOLD_MS);
  const uint64_t t0 = conf_now_ns(), c0 = thread_cpu_ns();
  const kiln_status st = kind == WAIT_STREAM ? kiln_stream_synchronize(s)
                                             : kiln_event_synchronize(e);
  const uint64_t cpu = thread_cpu_ns() - c0, t1 = conf_now_ns();
  check_ok(st);
  const uint64_t opened = conf_gate_opened_at(gate);
  if (!opened || t1 < opened)
    fail_msg("sync policy %s: %s returned before the gate opened", policy,
             wait_names[kind]);
  conf_gate_free(gate);
  work_check(w, "the words after a measured wait");
  check_ok(kiln_event_destroy(e));
  check_ok(kiln_stream_destroy(s));
  const double share = (double)cpu / (double)(t1 - t0);
  printf("  sync policy %s, %s: %.1f ms of CPU in %.1f ms (%.0f%%)\n", policy,
         wait_names[kind], (double)cpu / 1e6, (double)(t1 - t0) / 1e6,
         100.0 * share);
  return share;
}

/* The Khronos layer's synchronization validation before 1.3.296 holds one
 * lock through a wait: a gate opened by another thread while the test's
 * thread waits in the layer stalls both for the layer's 10 s timeout (with
 * a message that calls it "most likely a validation bug"). Where it is on,
 * the measurement runs in a child with the layer's core checks only. */
static bool sync_validation_on(void) {
  const char *v = getenv("KILN_VULKAN_VALIDATION");
  return conf.backend == KILN_BACKEND_VULKAN && v && strcmp(v, "0") != 0 &&
         strcmp(v, "core") != 0;
}

/* Set in that child, which exits with CPU_CHILD_BUSY where the machine
 * was too busy to measure (the parent then skips, saying so). */
#define CPU_CHILD "KILN_CONF_CPU_CHILD"
#define CPU_CHILD_BUSY 77

/* Runs waits_use_the_cpu_their_policy_says alone in a child of this
 * program with KILN_VULKAN_VALIDATION=core; its exit status. */
static int cpu_test_in_a_child(void) {
  static const char *const dropped[] = {"KILN_CONF_SKIP", "KILN_CONF_CHILD",
                                        NULL};
  static const char *const set[] = {
      "KILN_VULKAN_VALIDATION=core", "KILN_CONF_GROUPS=sync",
      "KILN_CONF_FILTER=waits_use_the_cpu_their_policy_says", CPU_CHILD "=1",
      NULL};
  const pid_t pid = conf_spawn(dropped, set);
  const int status = conf_wait_child(pid, "the CPU-time test's child");
  if (WIFSIGNALED(status))
    fail_msg("the CPU-time test's child was killed by signal %d (%s)",
             WTERMSIG(status), strsignal(WTERMSIG(status)));
  return WEXITSTATUS(status);
}

/* The share of a core spinning gets, the lower of two measures, before and
 * after a wait: a load that changed during the wait shows in one. */
static double lower(double a, double b) { return a < b ? a : b; }

/* The policies do what kiln.h says with the host's CPU while a thread
 * waits a long time: SPIN polls, a core busy throughout; BLOCK, and AUTO
 * past its first 100 us, sleep in the driver; an event made with
 * KILN_EVENT_BLOCKING sleeps whatever the policy. YIELD is not measured:
 * what it costs depends on whether other threads want the core. */
static void waits_use_the_cpu_their_policy_says(void **state) {
  (void)state;
  const char *why_not = conf_gate_why_not(conf.ctx);
  if (why_not) kiln_skip("%s", why_not);
  if (sync_validation_on()) {
    const int rc = cpu_test_in_a_child();
    if (rc == CPU_CHILD_BUSY)
      kiln_skip("the machine was too busy for a thread that spins to get "
                "%.0f%% of a core (the child's figures are above)",
                100.0 * REFERENCE_MIN_SHARE);
    if (rc != 0)
      fail_msg("the CPU-time test's child, with KILN_VULKAN_VALIDATION=core, "
               "exited with %d: its output above says which check failed",
               rc);
    return;
  }
  static const struct {
    size_t policy; /* in policies[] */
    wait_kind kind;
    bool spins;
  } cases[] = {
      {1, WAIT_STREAM, true},          {1, WAIT_EVENT, true},
      {1, WAIT_BLOCKING_EVENT, false}, {3, WAIT_STREAM, false},
      {3, WAIT_EVENT, false},          {0, WAIT_STREAM, false},
      {0, WAIT_BLOCKING_EVENT, false},
  };
  enum { TRIES = 3 };
  conf_rng r = conf_rng_for(__func__);
  kiln_context *ctx = NULL;
  work w;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *policy = policy_names[cases[i].policy];
    const char *wait = wait_names[cases[i].kind];
    if (!ctx) {
      ctx = context_with(policies[cases[i].policy], NULL, NULL);
      work_create(ctx, &w, &r);
      /* Pipelines made before the gate, so that none is made while the
       * wait's time runs. */
      kiln_stream *def;
      check_ok(kiln_context_default_stream(ctx, &def));
      work_queue(&w, def, 100, 0);
      check_ok(kiln_stream_synchronize(def));
    }
    if (cases[i].spins) {
      double share = 0, reference = 0;
      for (int t = 0; t < TRIES && reference < REFERENCE_MIN_SHARE; t++) {
        const double before = spinning_share();
        share = gated_wait_share(ctx, &w, cases[i].kind, policy);
        reference = lower(before, spinning_share());
      }
      if (reference < REFERENCE_MIN_SHARE) {
        printf("  a thread spinning for 100 ms got %.0f%% of a core\n",
               100.0 * reference);
        if (getenv(CPU_CHILD)) {
          fflush(stdout);
          _Exit(CPU_CHILD_BUSY);
        }
        kiln_skip("a thread spinning for 100 ms got %.0f%% of a core, %d "
                  "times: the machine is too busy to tell a spinning wait "
                  "from a sleeping one",
                  100.0 * reference, TRIES);
      }
      if (share < reference / 3)
        fail_msg("sync policy %s: %s used %.0f%% of a core, where spinning "
                 "got %.0f%%: it did not spin",
                 policy, wait, 100.0 * share, 100.0 * reference);
    } else {
      const double share = gated_wait_share(ctx, &w, cases[i].kind, policy);
      if (share > SLEEP_MAX_SHARE)
        fail_msg("sync policy %s: %s used %.0f%% of a core while the device "
                 "was held for %u ms: it did not sleep",
                 policy, wait, 100.0 * share, HOLD_MS);
    }
    if (i + 1 == sizeof cases / sizeof cases[0] ||
        cases[i + 1].policy != cases[i].policy) {
      work_destroy(&w);
      check_ok(kiln_context_destroy(ctx));
      ctx = NULL;
    }
  }
}

/* A wait of 0 only looks: for work done long before, it is KILN_OK under
 * every policy (the Vulkan loop once checked its deadline before looking,
 * and a bound of 0, or one already spent, gave KILN_ERROR_TIMEOUT). */
static void a_zero_bound_finds_finished_work(void **state) {
  (void)state;
  for (size_t i = 0; i < 4; i++) {
    kiln_context *ctx = context_with(policies[i], NULL, NULL);
    kiln_stream *s;
    kiln_buffer *b;
    kiln_event *e;
    check_ok(kiln_stream_create(ctx, &s));
    check_ok(kiln_buffer_create(ctx, 4096, 0, &b));
    check_ok(kiln_event_create(ctx, &e));
    const uint32_t pattern = 7;
    check_ok(kiln_buffer_fill(s, b, 0, 4096, &pattern, 4));
    check_ok(kiln_event_record(e, s));
    check_ok(kiln_event_synchronize(e));
    const struct timespec later = {0, 50000000};
    nanosleep(&later, NULL);
    kiln_status st = kiln_stream_synchronize_timeout(s, 0);
    if (st != KILN_OK)
      fail_msg("sync policy %s: kiln_stream_synchronize_timeout(s, 0) after "
               "the work was done: %s: %s",
               policy_names[i], kiln_status_name(st), kiln_last_error());
    check_ok(kiln_event_destroy(e));
    check_ok(kiln_buffer_destroy(b));
    check_ok(kiln_stream_destroy(s));
    check_ok(kiln_context_destroy(ctx));
  }
}

/* Streams at both ends of the range, joined by an event: the work of each
 * is right, and the wait orders them. */
static void priorities_at_both_ends(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  const uint32_t max = conf.props.max_stream_priority;
  printf("  max_stream_priority %u\n", max);
  work w;
  work_create(conf.ctx, &w, &r);
  kiln_stream *low, *high;
  check_ok(kiln_stream_create_with_options(conf.ctx, &(kiln_stream_options){0},
                                           &low));
  check_ok(kiln_stream_create_with_options(conf.ctx,
                                           &(kiln_stream_options){max}, &high));
  /* An event for each hop: recording an event again may wait on the host
   * for its last mark (Vulkan reuses its timestamp query), which would
   * order the streams whether the waits did or not. */
  enum { ROUNDS = 8 };
  kiln_event *e[2 * ROUNDS];
  for (int i = 0; i < 2 * ROUNDS; i++)
    check_ok(kiln_event_create(conf.ctx, &e[i]));
  for (uint32_t round = 0; round < ROUNDS; round++) {
    kiln_stream *first = round % 2 ? low : high, *then = round % 2 ? high : low;
    work_queue(&w, first, 500, round);
    check_ok(kiln_event_record(e[2 * round], first));
    check_ok(kiln_stream_wait_event(then, e[2 * round]));
    work_queue(&w, then, 500, round + 100);
    check_ok(kiln_event_record(e[2 * round + 1], then));
    check_ok(kiln_stream_wait_event(first, e[2 * round + 1]));
  }
  check_ok(kiln_stream_synchronize(low));
  check_ok(kiln_stream_synchronize(high));
  work_check(&w, "the words after work on streams of priority 0 and max");
  kiln_stream *s = NULL;
  check_fails(kiln_stream_create_with_options(
                  conf.ctx, &(kiln_stream_options){max + 1}, &s),
              KILN_ERROR_OUT_OF_RANGE);
  check_message_has("kiln_stream_create_with_options");
  assert_null(s);
  for (int i = 0; i < 2 * ROUNDS; i++) check_ok(kiln_event_destroy(e[i]));
  check_ok(kiln_stream_destroy(low));
  check_ok(kiln_stream_destroy(high));
  work_destroy(&w);
}

static void untimed_and_blocking_events(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  work w;
  work_create(conf.ctx, &w, &r);
  kiln_stream *a, *b;
  check_ok(kiln_stream_create(conf.ctx, &a));
  check_ok(kiln_stream_create(conf.ctx, &b));
  kiln_event *timed, *untimed, *blocking;
  check_ok(kiln_event_create(conf.ctx, &timed));
  check_ok(
      kiln_event_create_with_flags(conf.ctx, KILN_EVENT_NO_TIMING, &untimed));
  check_ok(kiln_event_create_with_flags(
      conf.ctx, KILN_EVENT_BLOCKING | KILN_EVENT_NO_TIMING, &blocking));

  check_ok(kiln_event_record(timed, a));
  work_queue(&w, a, 4000, 1);
  check_ok(kiln_event_record(untimed, a));
  /* Joins b to a through the untimed event, then waits on b's blocking
   * one: the words must be complete when it returns. */
  check_ok(kiln_stream_wait_event(b, untimed));
  work_queue(&w, b, 4000, 2);
  check_ok(kiln_event_record(blocking, b));
  check_ok(kiln_event_synchronize(blocking));
  check_ok(kiln_event_query(blocking));
  check_ok(kiln_event_query(untimed));
  check_ok(kiln_event_synchronize(untimed));

  float ms = 0;
  check_fails(kiln_event_elapsed_ms(timed, untimed, &ms),
              KILN_ERROR_INVALID_STATE);
  check_message_has("KILN_EVENT_NO_TIMING");
  check_fails(kiln_event_elapsed_ms(blocking, timed, &ms),
              KILN_ERROR_INVALID_STATE);
  work_check(&w, "the words after a blocking event's wait");
  check_ok(kiln_event_destroy(timed));
  check_ok(kiln_event_destroy(untimed));
  check_ok(kiln_event_destroy(blocking));
  check_ok(kiln_stream_destroy(a));
  check_ok(kiln_stream_destroy(b));
  work_destroy(&w);
}

int conf_run_sync_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(every_policy_from_the_options),
      CONF_TEST(every_policy_from_env_with_a_bound),
      CONF_TEST(every_policy_keeps_the_bound),
      CONF_TEST(waits_use_the_cpu_their_policy_says),
      CONF_TEST(a_zero_bound_finds_finished_work),
      CONF_TEST(priorities_at_both_ends),
      CONF_TEST(untimed_and_blocking_events),
  };
  return cmocka_run_group_tests_name("sync", tests, NULL, NULL);
}
