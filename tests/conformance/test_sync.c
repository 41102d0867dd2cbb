/* Synchronisation policies, stream priorities and event flags: every
 * policy, chosen by the options or by KILN_SYNC, makes a context whose
 * waits return once the work is done (and bounded by KILN_SYNC_TIMEOUT_MS
 * when set); streams at both ends of the priority range run work right;
 * untimed events refuse timing and blocking events wait. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "conformance.h"

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
 * 65535 turns (llvmpipe), so launches there keep below that. */
#define MAX_ROUNDS 60000u
/* On a GPU, long launches: a few of them hold the device for the test's
 * 300 ms, where short ones would be thousands, more than the driver's
 * launch queue holds (the host then waits in the launch calls, and the
 * work left when the wait starts may be done within its bound). */
#define GPU_ROUNDS (64u * MAX_ROUNDS)

static uint32_t long_rounds(void) {
  return conf.props.type == KILN_DEVICE_TYPE_CPU ? MAX_ROUNDS : GPU_ROUNDS;
}
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
  assert_true(rounds <= long_rounds());
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

/* The device's words must be the host's: read without a wait of the
 * stream's own first, so a wait that returned early shows. */
static void work_check(work *w, const char *what) {
  uint32_t got[WORDS];
  check_ok(kiln_buffer_read(NULL, w->buf, 0, got, sizeof got));
  conf_check_bytes(got, w->host, sizeof got, what);
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

  work_queue(&w, s, 4000, 1);
  check_ok(kiln_stream_synchronize(s));
  uint32_t got_words[WORDS];
  /* An async read, so that nothing but the synchronize waited. */
  kiln_host_buffer *hb;
  check_ok(kiln_host_buffer_create(ctx, sizeof got_words, 0, &hb));
  check_ok(kiln_buffer_read_async(s, w.buf, 0, hb, 0, sizeof got_words));
  check_ok(kiln_stream_synchronize(s));
  conf_check_bytes(kiln_host_buffer_data(hb), w.host, sizeof got_words,
                   "the words after a stream synchronize");

  work_queue(&w, s, 4000, 2);
  check_ok(kiln_event_record(e, s));
  check_ok(kiln_event_synchronize(e));
  check_ok(kiln_event_query(e));

  work_queue(&w, s, 4000, 3);
  check_ok(kiln_event_record(e, s));
  check_ok(kiln_context_synchronize(ctx));
  check_ok(kiln_event_query(e));
  work_check(&w, "the words after a context synchronize");

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

/* How many work_queue(long_rounds()) take about `ms` on this device, timed
 * on the device (host time would count the launches' own cost, and a fast
 * GPU would then finish the work within the bound). */
static uint32_t launches_for_ms(kiln_context *ctx, work *w, double ms) {
  enum { TIMED = 8 };
  kiln_stream *s;
  kiln_event *start, *end;
  check_ok(kiln_stream_create(ctx, &s));
  check_ok(kiln_event_create(ctx, &start));
  check_ok(kiln_event_create(ctx, &end));
  work_queue(w, s, long_rounds(), 0); /* the first compiles its pipeline */
  check_ok(kiln_event_record(start, s));
  for (int i = 0; i < TIMED; i++) work_queue(w, s, long_rounds(), 0);
  check_ok(kiln_event_record(end, s));
  /* Unbounded whatever KILN_SYNC_TIMEOUT_MS says. */
  check_ok(kiln_stream_synchronize_timeout(s, UINT64_MAX));
  float took = 0;
  check_ok(kiln_event_elapsed_ms(start, end, &took));
  check_ok(kiln_event_destroy(start));
  check_ok(kiln_event_destroy(end));
  check_ok(kiln_stream_destroy(s));
  const double each = took / TIMED;
  double n = ms / (each > 0.0005 ? each : 0.0005) + 1;
  return n > 200000 ? 200000u : (uint32_t)n;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Under every policy a wait bounded by KILN_SYNC_TIMEOUT_MS returns
 * KILN_ERROR_TIMEOUT while the work runs, near the bound, and an unbounded
 * one then sees it done. A bounded wait may also rightly return KILN_OK,
 * when the work ends within the bound: on a GPU that other processes share,
 * the calibration can overstate a launch's time (the H100 showed it with
 * three suites at once). Such a round is tried again with twice the work;
 * KILN_OK after more than the bound fails at once. */
static void every_policy_keeps_the_bound(void **state) {
  (void)state;
  enum { TRIES = 4 };
  conf_rng r = conf_rng_for(__func__);
  for (size_t i = 0; i < 4; i++) {
    kiln_context *ctx = context_with(policies[i], NULL, "20");
    work w;
    work_create(ctx, &w, &r);
    uint32_t launches = launches_for_ms(ctx, &w, 300.0);
    kiln_stream *s;
    check_ok(kiln_stream_create(ctx, &s));
    kiln_event *queued;
    check_ok(kiln_event_create(ctx, &queued));
    bool shown = false, blocking = false;
    for (int t = 0; t < TRIES && !shown; t++, launches *= 2) {
      printf("  sync policy %s, KILN_SYNC_TIMEOUT_MS=20, %u launches\n",
             policy_names[i], launches);
      for (uint32_t l = 0; l < launches; l++)
        work_queue(&w, s, long_rounds(), l);
      check_ok(kiln_event_record(queued, s));
      if (kiln_event_query(queued) == KILN_OK) {
        /* Launches that return only once their kernel is done (as under
         * compute-sanitizer, which runs kernels one at a time) leave
         * nothing for a bounded wait to give up on. */
        print_message("the %u launches were all done when the last "
                      "returned: launches block here (a tool such as "
                      "compute-sanitizer serializes them), so no bound can "
                      "be shown\n",
                      launches);
        blocking = true;
        break;
      }
      const double start = now_ms();
      const kiln_status st = kiln_stream_synchronize(s);
      const double took = now_ms() - start;
      if (st == KILN_ERROR_TIMEOUT) {
        check_message_has("KILN_SYNC_TIMEOUT_MS=20");
        /* The bound itself, give or take a scheduler's slice or two. */
        if (took < 19.0 || took > 250.0)
          fail_msg("sync policy %s: the wait bounded to 20 ms gave up "
                   "after %.1f ms",
                   policy_names[i], took);
        shown = true;
      } else if (st != KILN_OK) {
        fail_msg("sync policy %s: the bounded wait: %s: %s", policy_names[i],
                 kiln_status_name(st), kiln_last_error());
      } else if (took > 40.0) {
        fail_msg("sync policy %s: the wait bounded to 20 ms returned KILN_OK "
                 "after %.1f ms",
                 policy_names[i], took);
      } else {
        print_message("the work ended within the bound (%.1f ms): the "
                      "device ran faster than timed; again with twice the "
                      "work\n",
                      took);
      }
      check_ok(kiln_stream_synchronize_timeout(s, UINT64_MAX));
    }
    check_ok(kiln_event_query(queued));
    if (!shown && !blocking)
      fail_msg("sync policy %s: in %d tries, up to %u launches, the work "
               "always ended within the 20 ms bound",
               policy_names[i], TRIES, launches / 2);
    check_ok(kiln_event_destroy(queued));
    check_ok(kiln_stream_destroy(s));
    work_check(&w, "the words after a timed-out wait and a full one");
    work_destroy(&w);
    check_ok(kiln_context_destroy(ctx));
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
  kiln_event *e;
  check_ok(kiln_event_create(conf.ctx, &e));
  for (uint32_t round = 0; round < 8; round++) {
    kiln_stream *first = round % 2 ? low : high, *then = round % 2 ? high : low;
    work_queue(&w, first, 500, round);
    check_ok(kiln_event_record(e, first));
    check_ok(kiln_stream_wait_event(then, e));
    work_queue(&w, then, 500, round + 100);
    check_ok(kiln_event_record(e, then));
    check_ok(kiln_stream_wait_event(first, e));
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
  check_ok(kiln_event_destroy(e));
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
      CONF_TEST(a_zero_bound_finds_finished_work),
      CONF_TEST(priorities_at_both_ends),
      CONF_TEST(untimed_and_blocking_events),
  };
  return cmocka_run_group_tests_name("sync", tests, NULL, NULL);
}
