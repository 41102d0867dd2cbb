/* Bounded waits: KILN_SYNC_TIMEOUT_MS as kiln_context_create reads it, every
 * wait that returns KILN_ERROR_TIMEOUT in words, destroys that time out and
 * keep their object, a context destroy that abandons its context, and the
 * polling loop that bounds waits for drivers without a timed wait. The fake
 * backend's work never finishes while fb.hung is set. Times are one-sided
 * and generous, so a loaded machine cannot fail them.
 *
 * Over 600 lines: every bounded wait's case shares the hung fake backend's
 * set-up. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fake_backend.h"
#include "kiln_check.h"

#define LIMIT_MS 50
#define LIMIT_NS ((uint64_t)LIMIT_MS * 1000000u)
#define LIMIT_WORDS "(the limit: KILN_SYNC_TIMEOUT_MS=50)"
/* How late a wait may end on a loaded machine (about 1 ms late on an idle
 * one): generous, yet a bound read in the wrong unit still fails. */
#define SLACK_NS ((uint64_t)2000 * 1000000u)
#define ENV "KILN_SYNC_TIMEOUT_MS"

static const char image_text[] = "k(p):8";
static const kiln_launch_config one_block = {{1, 1, 1}, {1, 1, 1}, 0};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static kiln_context *create_context(void) {
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  kiln_context *ctx = NULL;
  check_ok(kiln_context_create(&o, &ctx));
  return ctx;
}

/* A context created with KILN_SYNC_TIMEOUT_MS=value, the variable unset
 * again afterwards (the context keeps what it read). */
static kiln_context *create_with(const char *value) {
  setenv(ENV, value, 1);
  kiln_context *ctx = create_context();
  unsetenv(ENV);
  return ctx;
}

static kiln_module *load(kiln_context *ctx) {
  kiln_module_image img = fake_image(image_text);
  kiln_module *m = NULL;
  check_ok(kiln_module_create(ctx, &img, 1, &m));
  return m;
}

/* The message starts with the call's name and says what was waited for,
 * the bound, and what the timeout leaves behind. */
static void check_words(const char *fn, const char *subject,
                        const char *limit, const char *after) {
  const char *msg = kiln_last_error();
  if (strncmp(msg, fn, strlen(fn)) != 0 || msg[strlen(fn)] != ':')
    fail_msg("the message \"%s\" does not start with \"%s:\"", msg, fn);
  check_message_has(subject);
  check_message_has("still had work running after");
  check_message_has(limit);
  check_message_has(after);
}

/* The call returns KILN_ERROR_TIMEOUT once the bound has passed, not long
 * after, in words. */
#define check_times_out(call, fn, subject, after)                              \
  do {                                                                         \
    uint64_t t0_ = now_ns();                                                   \
    check_fails(call, KILN_ERROR_TIMEOUT);                                     \
    uint64_t waited_ = now_ns() - t0_;                                         \
    if (waited_ < LIMIT_NS || waited_ > LIMIT_NS + SLACK_NS)                   \
      fail_msg("%s returned after %.1f ms; the bound is %d ms", #call,        \
               (double)waited_ / 1e6, LIMIT_MS);                               \
    check_words(fn, subject, LIMIT_WORDS, after);                              \
  } while (0)

/* How the core names the fixture's context, and what a timeout that
 * changed nothing says. */
#define CONTEXT_WORDS "the vulkan context on device 0 (fake vulkan discrete GPU 0)"
#define USABLE_WORDS "the context stays usable"

/* ---- KILN_SYNC_TIMEOUT_MS -------------------------------------------------- */

static void timeout_from_the_environment(void **state) {
  fake_fixture *f = *state;
  char *saved = getenv(ENV) ? strdup(getenv(ENV)) : NULL;
  static const struct {
    const char *value;
    uint64_t ns;
  } good[] = {
      {NULL, KILN_WAIT_FOREVER},
      {"", KILN_WAIT_FOREVER},
      {"0", KILN_WAIT_FOREVER},
      {"1", 1000000u},
      {"150", 150000000u},
      {"18446744073709", UINT64_C(18446744073709) * 1000000u},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    if (good[i].value)
      setenv(ENV, good[i].value, 1);
    else
      unsetenv(ENV);
    kiln_context *ctx = create_context();
    assert_int_equal(ctx->sync_timeout_ns, good[i].ns);
    kiln_stream *s;
    check_ok(kiln_context_default_stream(ctx, &s));
    check_ok(kiln_stream_synchronize(s));
    /* What the backend was asked to wait for at most. */
    assert_int_equal(f->fb.last_timeout_ns, good[i].ns);
    check_ok(kiln_context_destroy(ctx));
  }
  static const char *const bad[] = {
      "abc",  "-5",   " 5",  "5 ", "+5",  "1.5",
      "0x10", "50ms", "1e3", "18446744073710", "99999999999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv(ENV, bad[i], 1);
    kiln_context *ctx = f->ctx; /* must stay untouched */
    kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
    check_fails(kiln_context_create(&o, &ctx), KILN_ERROR_INVALID_ARGUMENT);
    assert_ptr_equal(ctx, f->ctx);
    check_message_has(ENV);
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\"", bad[i]);
    check_message_has(quoted);
  }
  if (saved)
    setenv(ENV, saved, 1);
  else
    unsetenv(ENV);
  free(saved);
}

/* ---- Each wait ---------------------------------------------------------- */

static int bounded_setup(void **state) {
  setenv(ENV, "50", 1);
  int rc = fake_fixture_setup(state);
  unsetenv(ENV);
  return rc;
}

static int bounded_teardown(void **state) {
  fake_fixture *f = *state;
  f->fb.hung = false;
  return fake_fixture_teardown(state);
}

static void every_wait_times_out_in_words(void **state) {
  fake_fixture *f = *state;
  kiln_stream *def, *s;
  kiln_event *e;
  kiln_buffer *b;
  check_ok(kiln_context_default_stream(f->ctx, &def));
  check_ok(kiln_stream_create(f->ctx, &s));
  check_ok(kiln_event_create(f->ctx, &e));
  check_ok(kiln_buffer_create(f->ctx, 64, KILN_BUFFER_ZERO, &b));
  check_ok(kiln_event_record(e, s));
  f->fb.hung = true;
  char stream_words[160], event_words[160];
  snprintf(stream_words, sizeof stream_words, "stream %p of " CONTEXT_WORDS,
           (void *)s);
  snprintf(event_words, sizeof event_words,
           "the work before event %p of " CONTEXT_WORDS, (void *)e);

  check_times_out(kiln_stream_synchronize(def), "kiln_stream_synchronize",
                  "the default stream of " CONTEXT_WORDS, USABLE_WORDS);
  check_times_out(kiln_stream_synchronize(s), "kiln_stream_synchronize",
                  stream_words, USABLE_WORDS);
  check_times_out(kiln_context_synchronize(f->ctx), "kiln_context_synchronize",
                  CONTEXT_WORDS, USABLE_WORDS);
  check_times_out(kiln_event_synchronize(e), "kiln_event_synchronize",
                  event_words, USABLE_WORDS);
  check_fails(kiln_event_query(e), KILN_ERROR_NOT_READY);

  /* Reads and writes wait for their stream's earlier work within the bound
   * before the backend's own unbounded wait, and then touch nothing. */
  const unsigned writes = f->fb.calls[FAKE_OP_WRITE];
  const unsigned reads = f->fb.calls[FAKE_OP_READ];
  unsigned char bytes[64];
  memset(bytes, 0xab, sizeof bytes);
  check_times_out(kiln_buffer_write(NULL, b, 0, bytes, 64), "kiln_buffer_write",
                  "the default stream of " CONTEXT_WORDS,
                  "nothing was transferred");
  check_times_out(kiln_buffer_read(s, b, 0, bytes, 64), "kiln_buffer_read",
                  stream_words, "nothing was transferred");
  assert_int_equal(f->fb.calls[FAKE_OP_WRITE], writes);
  assert_int_equal(f->fb.calls[FAKE_OP_READ], reads);
  for (size_t i = 0; i < sizeof bytes; i++) assert_int_equal(bytes[i], 0xab);

  /* Once the work is done, everything goes on. */
  f->fb.hung = false;
  check_ok(kiln_stream_synchronize(def));
  check_ok(kiln_context_synchronize(f->ctx));
  check_ok(kiln_event_query(e));
  check_ok(kiln_buffer_read(s, b, 0, bytes, 64));
  for (size_t i = 0; i < sizeof bytes; i++) assert_int_equal(bytes[i], 0);
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_event_destroy(e));
  check_ok(kiln_stream_destroy(s));
}

/* On a backend without asynchronous transfers or device-side event waits,
 * the core does them on the host, and bounds those waits too. */
static void host_side_waits_time_out(void **state) {
  (void)state;
  fake_backend fb;
  fake_init(&fb, KILN_BACKEND_VULKAN);
  fb.ops.async_transfers = NULL;
  fb.ops.event_waits = NULL;
  fake_backend *list[] = {&fb};
  fake_install(list, 1);
  kiln_context *ctx = create_with("50");
  kiln_stream *s;
  kiln_event *e;
  kiln_buffer *b;
  kiln_host_buffer *hb;
  check_ok(kiln_stream_create(ctx, &s));
  check_ok(kiln_event_create(ctx, &e));
  check_ok(kiln_buffer_create(ctx, 64, 0, &b));
  check_ok(kiln_host_buffer_create(ctx, 64, 0, &hb));
  check_ok(kiln_event_record(e, NULL));
  fb.hung = true;
  check_times_out(kiln_buffer_write_async(s, b, 0, hb, 0, 64),
                  "kiln_buffer_write_async", "stream ",
                  "nothing was transferred");
  check_times_out(kiln_buffer_read_async(NULL, b, 0, hb, 0, 64),
                  "kiln_buffer_read_async", "the default stream of ",
                  "nothing was transferred");
  check_times_out(kiln_stream_wait_event(s, e), "kiln_stream_wait_event",
                  "the work before event ", USABLE_WORDS);
  assert_int_equal(fb.calls[FAKE_OP_WRITE] + fb.calls[FAKE_OP_READ], 0);
  fb.hung = false;
  check_ok(kiln_buffer_write_async(s, b, 0, hb, 0, 64));
  check_ok(kiln_stream_wait_event(s, e));
  check_ok(kiln_host_buffer_destroy(hb));
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_event_destroy(e));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_context_destroy(ctx));
  assert_int_equal(fake_live_objects(&fb), 0);
}

/* A destroy that times out leaves its object alive and usable; destroyed
 * again once the work is done, it goes. */
static void destroys_that_time_out_keep_the_object(void **state) {
  fake_fixture *f = *state;
  kiln_buffer *b;
  kiln_host_buffer *hb;
  kiln_stream *s;
  kiln_event *e, *never_recorded;
  kiln_module *m = load(f->ctx);
  kiln_kernel *k;
  check_ok(kiln_module_get_kernel(m, "k", &k));
  check_ok(kiln_buffer_create(f->ctx, 64, KILN_BUFFER_ZERO, &b));
  check_ok(kiln_host_buffer_create(f->ctx, 64, 0, &hb));
  check_ok(kiln_stream_create(f->ctx, &s));
  check_ok(kiln_event_create(f->ctx, &e));
  check_ok(kiln_event_create(f->ctx, &never_recorded));
  check_ok(kiln_event_record(e, s));
  const long live = fake_live_objects(&f->fb);
  f->fb.hung = true;

  check_times_out(kiln_buffer_destroy(b), "kiln_buffer_destroy", CONTEXT_WORDS,
                  "the buffer was not destroyed");
  check_times_out(kiln_host_buffer_destroy(hb), "kiln_host_buffer_destroy",
                  CONTEXT_WORDS, "the host buffer was not destroyed");
  check_times_out(kiln_stream_destroy(s), "kiln_stream_destroy", "stream ",
                  "the stream was not destroyed");
  check_times_out(kiln_event_destroy(e), "kiln_event_destroy",
                  "the work before event ", "the event was not destroyed");
  check_times_out(kiln_module_destroy(m), "kiln_module_destroy", CONTEXT_WORDS,
                  "the module was not destroyed");
  assert_int_equal(fake_live_objects(&f->fb), live);
  assert_int_equal(kiln_buffer_size(b), 64);
  assert_int_equal(kiln_host_buffer_size(hb), 64);
  assert_string_equal(kiln_kernel_name(k), "k");
  /* An event never recorded marks no work: it goes at once. */
  check_ok(kiln_event_destroy(never_recorded));

  f->fb.hung = false;
  const uint32_t v = 0x5eed;
  uint32_t got = 0;
  check_ok(kiln_buffer_write(s, b, 0, &v, 4));
  kiln_arg a = kiln_arg_buffer(b, 0);
  check_ok(kiln_launch(s, k, &one_block, &a, 1));
  check_ok(kiln_event_record(e, s));
  check_ok(kiln_event_synchronize(e));
  check_ok(kiln_buffer_read(s, b, 0, &got, 4));
  assert_int_equal(got, v);
  check_ok(kiln_event_destroy(e));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_module_destroy(m));
  check_ok(kiln_host_buffer_destroy(hb));
  check_ok(kiln_buffer_destroy(b));
}

/* kiln_stream_synchronize_timeout has its own bound, whatever
 * KILN_SYNC_TIMEOUT_MS says; 0 only looks. */
static void synchronize_with_a_timeout(void **state) {
  fake_fixture *f = *state; /* bounded: 50 ms */
  kiln_stream *s;
  check_ok(kiln_stream_create(f->ctx, &s));
  check_fails(kiln_stream_synchronize_timeout(NULL, 0),
              KILN_ERROR_INVALID_HANDLE);
  check_ok(kiln_stream_synchronize_timeout(s, 0));
  assert_int_equal(f->fb.last_timeout_ns, 0);
  f->fb.hung = true;

  /* What the backend was asked for tells the bound in force, not how soon
   * the call came back, which a loaded machine puts off. */
  const unsigned syncs = f->fb.calls[FAKE_OP_STREAM_SYNCHRONIZE];
  uint64_t t0 = now_ns();
  check_fails(kiln_stream_synchronize_timeout(s, 0), KILN_ERROR_TIMEOUT);
  uint64_t waited = now_ns() - t0;
  assert_int_equal(f->fb.last_timeout_ns, 0);
  assert_int_equal(f->fb.calls[FAKE_OP_STREAM_SYNCHRONIZE], syncs + 1);
  if (waited > SLACK_NS)
    fail_msg("a look took %.1f ms", (double)waited / 1e6);
  check_words("kiln_stream_synchronize_timeout", "stream ",
              "(the limit: 0.000 ms)", USABLE_WORDS);

  /* 20 ms, less than the context's 50: its own bound, not the context's. */
  t0 = now_ns();
  check_fails(kiln_stream_synchronize_timeout(s, 20000000u),
              KILN_ERROR_TIMEOUT);
  waited = now_ns() - t0;
  assert_int_equal(f->fb.last_timeout_ns, 20000000u);
  if (waited < 20000000u || waited > 20000000u + SLACK_NS)
    fail_msg("a 20 ms bound ended after %.1f ms", (double)waited / 1e6);
  check_words("kiln_stream_synchronize_timeout", "stream ",
              "(the limit: 20.000 ms)", USABLE_WORDS);

  f->fb.hung = false;
  check_ok(kiln_stream_synchronize_timeout(s, UINT64_MAX));
  assert_int_equal(f->fb.last_timeout_ns, KILN_WAIT_FOREVER);
  check_ok(kiln_stream_destroy(s));
}

static void *finish_work_later(void *arg) {
  fake_backend *fb = arg;
  struct timespec ts = {0, 40000000};
  nanosleep(&ts, NULL);
  fb->hung = false;
  return NULL;
}

/* Without KILN_SYNC_TIMEOUT_MS a wait lasts as long as the work, and the
 * destroys do not wait first through the bounded path. */
static void unbounded_waits_last_until_the_work_ends(void **state) {
  fake_fixture *f = *state;
  kiln_stream *s;
  kiln_buffer *b;
  check_ok(kiln_stream_create(f->ctx, &s));
  check_ok(kiln_buffer_create(f->ctx, 16, 0, &b));
  f->fb.hung = true;
  const unsigned ctx_syncs = f->fb.calls[FAKE_OP_CONTEXT_SYNCHRONIZE];
  check_ok(kiln_buffer_destroy(b));
  assert_int_equal(f->fb.calls[FAKE_OP_CONTEXT_SYNCHRONIZE], ctx_syncs);
  pthread_t t;
  /* Taken before the thread starts, whose 40 ms may begin at once: the
   * wait then lasts at least 40 ms from here (TSan builds once returned
   * from pthread_create 3.3 ms into them). */
  uint64_t t0 = now_ns();
  assert_int_equal(pthread_create(&t, NULL, finish_work_later, &f->fb), 0);
  check_ok(kiln_stream_synchronize(s));
  uint64_t waited = now_ns() - t0;
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_int_equal(f->fb.last_timeout_ns, KILN_WAIT_FOREVER);
  if (waited < 40000000u)
    fail_msg("the wait ended after %.1f ms, before the work (40 ms)",
             (double)waited / 1e6);
  check_ok(kiln_stream_destroy(s));
}

/* ---- Abandoning a context ------------------------------------------------ */

static void a_context_destroy_that_times_out_abandons(void **state) {
  (void)state;
  fake_backend fb;
  fake_init(&fb, KILN_BACKEND_VULKAN);
  fake_backend *list[] = {&fb};
  fake_install(list, 1);
  kiln_context *ctx = create_with("50");
  kiln_buffer *b;
  kiln_host_buffer *hb;
  kiln_stream *s, *def;
  kiln_event *e;
  kiln_module *m = load(ctx);
  kiln_kernel *k;
  check_ok(kiln_module_get_kernel(m, "k", &k));
  check_ok(kiln_buffer_create(ctx, 64, 0, &b));
  check_ok(kiln_host_buffer_create(ctx, 64, 0, &hb));
  check_ok(kiln_stream_create(ctx, &s));
  check_ok(kiln_context_default_stream(ctx, &def));
  check_ok(kiln_event_create(ctx, &e));
  kiln_arg a = kiln_arg_buffer(b, 0);
  check_ok(kiln_launch(s, k, &one_block, &a, 1));
  check_ok(kiln_event_record(e, s));
  const long live = fake_live_objects(&fb);
  fb.hung = true;

  check_times_out(kiln_context_destroy(ctx), "kiln_context_destroy",
                  CONTEXT_WORDS, "released all the same");
  /* The backend was told, and nothing the work may use was released. */
  assert_int_equal(fb.abandoned, 1);
  assert_int_equal(fake_live_objects(&fb), live - 1);
  assert_int_equal(fb.live[KILN_OBJECT_BUFFER], 1);

  /* Every handle of it is dead, the kernel's and default stream's too. */
  unsigned char bytes[4] = {0};
  check_fails(kiln_context_synchronize(ctx), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_context_destroy(ctx), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_buffer_create(ctx, 4, 0, &(kiln_buffer *){NULL}),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_buffer_write(NULL, b, 0, bytes, 4),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_buffer_destroy(b), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_host_buffer_destroy(hb), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_stream_synchronize(s), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_stream_synchronize(def), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_stream_destroy(s), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_event_query(e), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_event_destroy(e), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_module_destroy(m), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_launch(NULL, k, &one_block, &a, 1),
              KILN_ERROR_INVALID_HANDLE);
  assert_string_equal(kiln_kernel_name(k), "");

  /* A new context works, on the same backend and device. */
  fb.hung = false;
  const long before = fake_live_objects(&fb);
  kiln_context *fresh = create_context();
  kiln_module *m2 = load(fresh);
  kiln_kernel *k2;
  kiln_buffer *b2;
  check_ok(kiln_module_get_kernel(m2, "k", &k2));
  check_ok(kiln_buffer_create(fresh, 4, 0, &b2));
  const uint32_t v = 0xfeed;
  uint32_t got = 0;
  check_ok(kiln_buffer_write(NULL, b2, 0, &v, 4));
  a = kiln_arg_buffer(b2, 0);
  check_ok(kiln_launch(NULL, k2, &one_block, &a, 1));
  check_ok(kiln_buffer_read(NULL, b2, 0, &got, 4));
  assert_int_equal(got, v);
  check_ok(kiln_buffer_destroy(b2));
  check_ok(kiln_module_destroy(m2));
  check_ok(kiln_context_destroy(fresh));
  assert_int_equal(fake_live_objects(&fb), before);
}

/* ---- The polling loop ---------------------------------------------------- */

typedef struct poll_state {
  unsigned calls;
  unsigned ready_after; /* answers NOT_READY this many times, then `end` */
  kiln_status end;
  uint64_t ready_at;  /* and NOT_READY before this time too (now_ns) */
  uint64_t last_look; /* when it was last asked */
} poll_state;

static kiln_status poll_once(void *arg) {
  poll_state *p = arg;
  p->last_look = now_ns();
  if (p->calls++ < p->ready_after || p->last_look < p->ready_at)
    return KILN_ERROR_NOT_READY;
  if (p->end == KILN_ERROR_LAUNCH_FAILED)
    return kiln_set_error(p->end, "the test's own failure");
  return p->end;
}

/* Every time below is a floor, or a ceiling with SLACK_NS to spare: a
 * loaded machine makes naps overrun, never end early. */
static void poll_until_ends_after_its_bound_without_spinning(void **state) {
  (void)state;
  const uint64_t bound = 100000000u;
  poll_state p = {0, UINT32_MAX, KILN_OK, 0, 0};
  const uint64_t cpu0 = cpu_ns(), t0 = now_ns();
  kiln_status st = kiln_poll_until(poll_once, &p, bound);
  const uint64_t wall = now_ns() - t0, cpu = cpu_ns() - cpu0;
  print_message("kiln_poll_until(%.0f ms): returned after %.2f ms, %.2f ms "
                "of CPU, %u looks\n",
                (double)bound / 1e6, (double)wall / 1e6, (double)cpu / 1e6,
                p.calls);
  assert_int_equal(st, KILN_ERROR_TIMEOUT);
  check_message_has("still running after");
  /* It gives up only on a look taken once the bound has passed. */
  if (p.last_look - t0 < bound)
    fail_msg("the last look was %.2f ms in, before the %.0f ms bound",
             (double)(p.last_look - t0) / 1e6, (double)bound / 1e6);
  if (wall > bound + SLACK_NS)
    fail_msg("a %.0f ms bound ended after %.2f ms", (double)bound / 1e6,
             (double)wall / 1e6);
  /* Spinning costs the whole wait in CPU, or the share of it a loaded
   * machine leaves; napping costs a few looks. */
  if (cpu > wall / 4)
    fail_msg("%.2f ms of CPU in a %.2f ms wait", (double)cpu / 1e6,
             (double)wall / 1e6);

  /* It keeps looking throughout: work that ends 50 ms into a 10 s bound
   * is seen long before the bound, not on a last look at its end. */
  const uint64_t long_bound = UINT64_C(10000000000), after = 50000000u;
  p = (poll_state){0, 0, KILN_OK, now_ns() + after, 0};
  const uint64_t t1 = now_ns();
  assert_int_equal(kiln_poll_until(poll_once, &p, long_bound), KILN_OK);
  const uint64_t seen_after = now_ns() - t1;
  if (seen_after > after + SLACK_NS)
    fail_msg("work done after %.0f ms was seen after %.2f ms",
             (double)after / 1e6, (double)seen_after / 1e6);

  p = (poll_state){0, 0, KILN_OK, 0, 0};
  assert_int_equal(kiln_poll_until(poll_once, &p, 0), KILN_OK);
  assert_int_equal(p.calls, 1);
  p = (poll_state){0, UINT32_MAX, KILN_OK, 0, 0};
  assert_int_equal(kiln_poll_until(poll_once, &p, 0), KILN_ERROR_TIMEOUT);
  assert_int_equal(p.calls, 1);
  p = (poll_state){0, 200, KILN_OK, 0, 0};
  assert_int_equal(kiln_poll_until(poll_once, &p, KILN_WAIT_FOREVER), KILN_OK);
  assert_int_equal(p.calls, 201);
  /* A failure ends the wait as it is, with its own message. */
  p = (poll_state){0, 3, KILN_ERROR_LAUNCH_FAILED, 0, 0};
  kiln_clear_error();
  assert_int_equal(kiln_poll_until(poll_once, &p, bound),
                   KILN_ERROR_LAUNCH_FAILED);
  assert_string_equal(kiln_last_error(), "the test's own failure");
}

typedef struct streams_seen {
  kiln_stream *seen[8];
  size_t count;
  kiln_stream *pending; /* answers NOT_READY */
} streams_seen;

static streams_seen seen;

static kiln_status query_stream(kiln_stream *s) {
  if (seen.count < 8) seen.seen[seen.count++] = s;
  return s == seen.pending ? KILN_ERROR_NOT_READY : KILN_OK;
}

/* kiln_poll_streams looks at every stream of the context, the default one
 * included, until all are done or the bound has passed. */
static void poll_streams_covers_every_stream(void **state) {
  fake_fixture *f = *state;
  kiln_stream *a, *b, *def;
  check_ok(kiln_stream_create(f->ctx, &a));
  check_ok(kiln_stream_create(f->ctx, &b));
  check_ok(kiln_context_default_stream(f->ctx, &def));
  memset(&seen, 0, sizeof seen);
  check_ok(kiln_poll_streams(f->ctx, query_stream, 0));
  assert_int_equal(seen.count, 3);
  kiln_stream *want[] = {def, a, b};
  for (size_t i = 0; i < 3; i++) {
    bool found = false;
    for (size_t j = 0; j < seen.count; j++) found |= seen.seen[j] == want[i];
    assert_true(found);
  }
  memset(&seen, 0, sizeof seen);
  seen.pending = b;
  uint64_t t0 = now_ns();
  assert_int_equal(kiln_poll_streams(f->ctx, query_stream, 30000000u),
                   KILN_ERROR_TIMEOUT);
  assert_true(now_ns() - t0 >= 30000000u);
  check_ok(kiln_stream_destroy(b));
  check_ok(kiln_stream_destroy(a));
}

int main(void) {
#define T(name)                                                                \
  cmocka_unit_test_setup_teardown(name, fake_fixture_setup,                    \
                                  fake_fixture_teardown)
#define BOUNDED(name)                                                          \
  cmocka_unit_test_setup_teardown(name, bounded_setup, bounded_teardown)
  const struct CMUnitTest tests[] = {
      T(timeout_from_the_environment),
      BOUNDED(every_wait_times_out_in_words),
      cmocka_unit_test(host_side_waits_time_out),
      BOUNDED(destroys_that_time_out_keep_the_object),
      BOUNDED(synchronize_with_a_timeout),
      T(unbounded_waits_last_until_the_work_ends),
      cmocka_unit_test(a_context_destroy_that_times_out_abandons),
      cmocka_unit_test(poll_until_ends_after_its_bound_without_spinning),
      T(poll_streams_covers_every_stream),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
