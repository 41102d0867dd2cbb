/*
 * Bounded waits on a real device, the body of tests/cuda/test_bounded_waits.c
 * and of its twin tests/hip/test_bounded_waits.c, which each give the
 * backend and an image of kiln_test_spin(unsigned *flag, unsigned *done):
 * a kernel that spins until *flag is not 0, then stores it in *done.
 *
 * Under each sync policy, with KILN_SYNC_TIMEOUT_MS=100: while the kernel
 * spins, every wait on it returns KILN_ERROR_TIMEOUT, in words, no sooner
 * than its bound and not long after (kiln_stream_synchronize_timeout with
 * its own bound too), a destroy that times out keeps its object, and the
 * kernel is still running; the test then releases the flag from another
 * stream, the kernel ends, and the context works again. Nothing is
 * calibrated: the kernel runs until the test lets it stop. A watchdog
 * thread releases it should a wait outlast its bound and the slack, so
 * that a wait that ignores its bound fails in words instead of hanging.
 * Needs a device of the backend; the program exits 77 (skipped) without
 * one. Include after <cmocka.h>.
 */
#ifndef KILN_TESTS_BOUNDED_WAITS_H
#define KILN_TESTS_BOUNDED_WAITS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/kiln_check.h"

#define BW_ENV "KILN_SYNC_TIMEOUT_MS"
#define BW_LIMIT_NS ((uint64_t)100 * 1000000u)
#define BW_LIMIT_WORDS "(the limit: KILN_SYNC_TIMEOUT_MS=100)"
/* kiln_stream_synchronize_timeout's own bound, shorter than the context's
 * so that the wait shows which one it kept. */
#define BW_OWN_NS ((uint64_t)30 * 1000000u)
#define BW_OWN_WORDS "(the limit: 30.000 ms)"
/* How late a wait may come back on a busy machine (a few ms late on an
 * idle one): generous, yet a bound read in the wrong unit still fails. */
#define BW_SLACK_NS ((uint64_t)2000 * 1000000u)
/* How long the released kernel may take to end: it sees the flag within
 * microseconds; this only keeps a failure from hanging. */
#define BW_FINISH_NS ((uint64_t)10000 * 1000000u)
/* The flag's value once released, which the kernel stores in *done. */
#define BW_RELEASE 7u

static kiln_backend bw_backend;
static kiln_module_image bw_image;

static uint64_t bw_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A context of one policy, the kernel, its flag and result, two streams
 * (`work` runs the kernel, `side` releases it), and the watchdog. */
typedef struct bw_fixture {
  kiln_sync_policy policy;
  kiln_context *ctx;
  kiln_module *module;
  kiln_kernel *spin;
  kiln_buffer *flag, *done;
  kiln_stream *work, *side;
  kiln_arg args[2];
  pthread_t watchdog;
  pthread_mutex_t lock;
  pthread_cond_t wake;  /* on CLOCK_MONOTONIC, bw_now_ns's clock */
  uint64_t deadline;    /* when the watchdog releases the kernel; 0: never */
  bool quit, fired;
} bw_fixture;

/* Lets the kernel end. Only kiln's calls, which are thread-safe: the
 * watchdog calls this too, and cmocka's checks are for the main thread. */
static kiln_status bw_release(bw_fixture *f) {
  const uint32_t release = BW_RELEASE;
  kiln_status st = kiln_buffer_write(f->side, f->flag, 0, &release, 4);
  return st == KILN_OK ? kiln_stream_synchronize(f->side) : st;
}

static void *bw_watch(void *arg) {
  bw_fixture *f = arg;
  pthread_mutex_lock(&f->lock);
  while (!f->quit) {
    if (f->deadline == 0) {
      pthread_cond_wait(&f->wake, &f->lock);
    } else if (bw_now_ns() < f->deadline) {
      const struct timespec until = {(time_t)(f->deadline / 1000000000u),
                                     (long)(f->deadline % 1000000000u)};
      pthread_cond_timedwait(&f->wake, &f->lock, &until);
    } else {
      f->deadline = 0;
      f->fired = true;
      pthread_mutex_unlock(&f->lock);
      bw_release(f);
      pthread_mutex_lock(&f->lock);
    }
  }
  pthread_mutex_unlock(&f->lock);
  return NULL;
}

/* The watchdog releases the kernel `ns` from now, unless disarmed first. */
static void bw_arm(bw_fixture *f, uint64_t ns) {
  pthread_mutex_lock(&f->lock);
  f->deadline = bw_now_ns() + ns;
  f->fired = false;
  pthread_cond_signal(&f->wake);
  pthread_mutex_unlock(&f->lock);
}

/* Whether the watchdog released the kernel since it was armed. */
static bool bw_disarm(bw_fixture *f) {
  pthread_mutex_lock(&f->lock);
  f->deadline = 0;
  bool fired = f->fired;
  pthread_mutex_unlock(&f->lock);
  return fired;
}

static int bw_setup(void **state) {
  bw_fixture *f = *state;
  kiln_context_options o = kiln_context_options_default();
  o.backend = bw_backend;
  o.sync = f->policy;
  setenv(BW_ENV, "100", 1);
  kiln_status st = kiln_context_create(&o, &f->ctx);
  unsetenv(BW_ENV);
  check_ok(st);
  check_ok(kiln_module_create(f->ctx, &bw_image, 1, &f->module));
  check_ok(kiln_module_get_kernel(f->module, "kiln_test_spin", &f->spin));
  check_ok(kiln_buffer_create(f->ctx, 4, KILN_BUFFER_ZERO, &f->flag));
  check_ok(kiln_buffer_create(f->ctx, 4, KILN_BUFFER_ZERO, &f->done));
  check_ok(kiln_stream_create(f->ctx, &f->work));
  check_ok(kiln_stream_create(f->ctx, &f->side));
  f->args[0] = kiln_arg_buffer(f->flag, 0);
  f->args[1] = kiln_arg_buffer(f->done, 0);
  pthread_condattr_t attr;
  assert_int_equal(pthread_condattr_init(&attr), 0);
  assert_int_equal(pthread_condattr_setclock(&attr, CLOCK_MONOTONIC), 0);
  assert_int_equal(pthread_cond_init(&f->wake, &attr), 0);
  pthread_condattr_destroy(&attr);
  assert_int_equal(pthread_mutex_init(&f->lock, NULL), 0);
  f->deadline = 0;
  f->quit = f->fired = false;
  assert_int_equal(pthread_create(&f->watchdog, NULL, bw_watch, f), 0);
  return 0;
}

/* Releases the kernel first, should a failed check have left it spinning
 * (the events of a failed test are then left to the context). */
static int bw_teardown(void **state) {
  bw_fixture *f = *state;
  if (!f->ctx) return 0;
  /* The watchdog is between kiln calls, each bounded, or asleep. */
  pthread_mutex_lock(&f->lock);
  f->quit = true;
  pthread_cond_signal(&f->wake);
  pthread_mutex_unlock(&f->lock);
  pthread_join(f->watchdog, NULL);
  pthread_cond_destroy(&f->wake);
  pthread_mutex_destroy(&f->lock);
  kiln_status st = bw_release(f);
  if (st == KILN_OK)
    st = kiln_stream_synchronize_timeout(f->work, BW_FINISH_NS);
  if (st == KILN_OK) st = kiln_stream_destroy(f->side);
  if (st == KILN_OK) st = kiln_stream_destroy(f->work);
  if (st == KILN_OK) st = kiln_buffer_destroy(f->done);
  if (st == KILN_OK) st = kiln_buffer_destroy(f->flag);
  if (st == KILN_OK) st = kiln_module_destroy(f->module);
  if (st != KILN_OK)
    print_message("releasing the test's objects: %s\n", kiln_last_error());
  st = kiln_context_destroy(f->ctx);
  f->ctx = NULL;
  return st == KILN_OK ? 0 : -1;
}

/* The call returns KILN_ERROR_TIMEOUT no sooner than `bound` and not long
 * after, its message naming the call and the limit. */
#define bw_check_times_out(f, call, fn, bound, limit_words)                    \
  do {                                                                         \
    kiln_clear_error();                                                        \
    bw_arm((f), (bound) + BW_SLACK_NS);                                        \
    uint64_t t0_ = bw_now_ns();                                                \
    kiln_status st_ = (call);                                                  \
    uint64_t waited_ = bw_now_ns() - t0_;                                      \
    if (bw_disarm(f))                                                          \
      fail_msg("%s was still waiting %.1f ms past its %.1f ms bound, when "   \
               "the test released the kernel; it returned %s",                 \
               #call, (double)BW_SLACK_NS / 1e6, (double)(bound) / 1e6,        \
               kiln_status_name(st_));                                         \
    if (st_ != KILN_ERROR_TIMEOUT)                                             \
      fail_msg("%s returned %s, expected KILN_ERROR_TIMEOUT (message: "        \
               "\"%s\")",                                                      \
               #call, kiln_status_name(st_), kiln_last_error());               \
    if (waited_ < (bound) || waited_ > (bound) + BW_SLACK_NS)                  \
      fail_msg("%s returned after %.1f ms; the bound is %.1f ms", #call,       \
               (double)waited_ / 1e6, (double)(bound) / 1e6);                  \
    if (strncmp(kiln_last_error(), fn ":", strlen(fn ":")) != 0)               \
      fail_msg("the message \"%s\" does not start with \"%s:\"",               \
               kiln_last_error(), fn);                                         \
    check_message_has("still had work running after");                         \
    check_message_has(limit_words);                                            \
  } while (0)

static uint32_t bw_read_done(bw_fixture *f) {
  uint32_t done = 0xdeadu;
  check_ok(kiln_buffer_read(f->side, f->done, 0, &done, 4));
  return done;
}

static void spin_until_released(void **state) {
  bw_fixture *f = *state;
  kiln_sync_policy policy;
  check_ok(kiln_context_get_sync_policy(f->ctx, &policy));
  assert_int_equal(policy, f->policy);
  kiln_event *e, *spare;
  check_ok(kiln_event_create(f->ctx, &e));
  check_ok(kiln_event_create(f->ctx, &spare));
  const kiln_launch_config one = kiln_launch_config_1d(1, 1);
  check_ok(kiln_launch(f->work, f->spin, &one, f->args, 2));
  check_ok(kiln_event_record(e, f->work));
  check_ok(kiln_event_record(spare, f->work));

  /* Every wait on the spinning kernel times out near its bound. */
  bw_check_times_out(f, kiln_stream_synchronize(f->work),
                     "kiln_stream_synchronize", BW_LIMIT_NS, BW_LIMIT_WORDS);
  bw_check_times_out(f, kiln_event_synchronize(e), "kiln_event_synchronize",
                     BW_LIMIT_NS, BW_LIMIT_WORDS);
  bw_check_times_out(f, kiln_context_synchronize(f->ctx),
                     "kiln_context_synchronize", BW_LIMIT_NS, BW_LIMIT_WORDS);
  bw_check_times_out(f, kiln_stream_synchronize_timeout(f->work, BW_OWN_NS),
                     "kiln_stream_synchronize_timeout", BW_OWN_NS,
                     BW_OWN_WORDS);
  uint32_t word = 0xdeadu;
  bw_check_times_out(f, kiln_buffer_read(f->work, f->done, 0, &word, 4),
                     "kiln_buffer_read", BW_LIMIT_NS, BW_LIMIT_WORDS);
  check_message_has("nothing was transferred");
  assert_int_equal(word, 0xdeadu);
  bw_check_times_out(f, kiln_event_destroy(spare), "kiln_event_destroy",
                     BW_LIMIT_NS, BW_LIMIT_WORDS);
  check_message_has("the event was not destroyed");
  check_fails(kiln_event_query(e), KILN_ERROR_NOT_READY);
  check_fails(kiln_event_query(spare), KILN_ERROR_NOT_READY);
  /* The kernel is running, not failed: it has stored nothing yet. */
  assert_int_equal(bw_read_done(f), 0);

  /* Released from the side stream, which has nothing to wait for, the
   * kernel ends, storing what it saw. */
  const uint32_t release = BW_RELEASE;
  check_ok(kiln_buffer_write(f->side, f->flag, 0, &release, 4));
  check_ok(kiln_stream_synchronize(f->side));
  check_ok(kiln_stream_synchronize_timeout(f->work, BW_FINISH_NS));
  check_ok(kiln_event_synchronize(e));
  check_ok(kiln_event_query(e));
  check_ok(kiln_event_destroy(spare));
  check_ok(kiln_event_destroy(e));
  assert_int_equal(bw_read_done(f), BW_RELEASE);

  /* The context works again: the kernel, its flag already set, on the
   * default stream, then the bounded waits. */
  const uint32_t zero = 0;
  check_ok(kiln_buffer_write(NULL, f->done, 0, &zero, 4));
  check_ok(kiln_launch(NULL, f->spin, &one, f->args, 2));
  check_ok(kiln_context_synchronize(f->ctx));
  check_ok(kiln_stream_synchronize(f->work));
  check_ok(kiln_buffer_read(NULL, f->done, 0, &word, 4));
  assert_int_equal(word, BW_RELEASE);
}

/* Runs the test under each policy on `backend`, the kernel from `image`;
 * 77 (skipped, saying why) where the backend cannot run. */
static int bounded_waits_main(kiln_backend backend,
                              const kiln_module_image *image,
                              const char *group) {
  const char *reason = NULL;
  if (kiln_backend_available(backend, &reason) != KILN_OK) {
    printf("kiln-skip: (all): the %s backend is unavailable: %s\n",
           kiln_backend_name(backend), reason);
    return 77;
  }
  bw_backend = backend;
  bw_image = *image;
  static bw_fixture fixtures[] = {{.policy = KILN_SYNC_AUTO},
                                  {.policy = KILN_SYNC_SPIN},
                                  {.policy = KILN_SYNC_YIELD},
                                  {.policy = KILN_SYNC_BLOCK}};
#define BW_TEST(name, i)                                                       \
  {name, spin_until_released, bw_setup, bw_teardown, &fixtures[i]}
  const struct CMUnitTest tests[] = {
      BW_TEST("spin_until_released_auto", 0),
      BW_TEST("spin_until_released_spin", 1),
      BW_TEST("spin_until_released_yield", 2),
      BW_TEST("spin_until_released_block", 3),
  };
#undef BW_TEST
  return cmocka_run_group_tests_name(group, tests, NULL, NULL);
}

#endif /* KILN_TESTS_BOUNDED_WAITS_H */
