/* Waiting for the device: the services backends call for drivers whose
 * waits have no bound or no policy (backend.h), and the core's bounded
 * waits, whose timeouts name what was waited for and what it means. */
#include <sched.h>
#include <stdio.h>
#include <time.h>

#include "core/internal.h"

uint64_t kiln_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define SPIN_NS 50000u
#define FIRST_NAP_NS 10000u
#define LAST_NAP_NS 1000000u

kiln_status kiln_poll_until(kiln_status (*done)(void *arg), void *arg,
                            uint64_t timeout_ns) {
  const uint64_t start = kiln_now_ns();
  uint64_t nap = FIRST_NAP_NS;
  for (;;) {
    kiln_status st = done(arg);
    if (st != KILN_ERROR_NOT_READY) return st;
    uint64_t waited = kiln_now_ns() - start;
    if (waited >= timeout_ns)
      return kiln_set_error(KILN_ERROR_TIMEOUT,
                            "the work was still running after %.1f ms",
                            (double)waited / 1e6);
    if (waited < SPIN_NS) continue;
    uint64_t ns = timeout_ns - waited < nap ? timeout_ns - waited : nap;
    struct timespec ts = {(time_t)(ns / 1000000000u),
                          (long)(ns % 1000000000u)};
    nanosleep(&ts, NULL);
    if (nap < LAST_NAP_NS) nap *= 2;
  }
}

typedef struct streams_poll {
  kiln_context *ctx;
  kiln_status (*query)(kiln_stream *s);
} streams_poll;

static kiln_status streams_done(void *arg) {
  const streams_poll *p = arg;
  kiln_status st = KILN_OK;
  pthread_mutex_lock(&p->ctx->lock);
  for (kiln_object *o = p->ctx->streams.next;
       st == KILN_OK && o != &p->ctx->streams; o = o->next)
    if (((kiln_stream *)o)->ready)
      st = p->query((kiln_stream *)o);
  pthread_mutex_unlock(&p->ctx->lock);
  return st;
}

kiln_status kiln_sync_streams(kiln_context *ctx) {
  /* Stream by stream, not the driver's device-wide wait: that one waits
   * for the device to be idle, which other threads that keep launching
   * can put off for as long as they launch. The waits happen outside the
   * context's lock, which every create and destroy takes: the stream
   * waited on is pinned instead (a stream's release waits for its pins to
   * go), and stays in the list, so the walk goes on from it. */
  kiln_status first = KILN_OK;
  kiln_stream *s = NULL;
  for (;;) {
    pthread_mutex_lock(&ctx->lock);
    kiln_object *o = s ? s->base.next : ctx->streams.next;
    while (o != &ctx->streams && !((kiln_stream *)o)->ready) o = o->next;
    kiln_stream *next = o != &ctx->streams ? (kiln_stream *)o : NULL;
    if (next) atomic_fetch_add(&next->pins, 1);
    if (s) atomic_fetch_sub(&s->pins, 1);
    pthread_mutex_unlock(&ctx->lock);
    if (!(s = next)) return first;
    kiln_status st = kiln_context_result(
        ctx, ctx->ops->stream_synchronize(s, KILN_WAIT_FOREVER));
    if (first == KILN_OK) first = st;
  }
}

kiln_status kiln_wait_as(kiln_sync_policy policy,
                         kiln_status (*query)(void *arg),
                         kiln_status (*sleep)(void *arg), void *arg) {
  if (policy == KILN_SYNC_BLOCK) return sleep(arg);
  const uint64_t start = kiln_now_ns();
  for (;;) {
    kiln_status st = query(arg);
    if (st != KILN_ERROR_NOT_READY) return st;
    if (policy == KILN_SYNC_YIELD) sched_yield();
    if (policy == KILN_SYNC_AUTO) {
      const uint64_t waited = kiln_now_ns() - start;
      if (waited >= KILN_SYNC_AUTO_YIELD_NS) return sleep(arg);
      if (waited >= KILN_SYNC_AUTO_SPIN_NS) sched_yield();
    }
  }
}

kiln_status kiln_poll_streams(kiln_context *ctx,
                              kiln_status (*query)(kiln_stream *s),
                              uint64_t timeout_ns) {
  streams_poll p = {ctx, query};
  return kiln_poll_until(streams_done, &p, timeout_ns);
}

/* "the vulkan context on device 0 (llvmpipe ...)" */
static void describe_context(const kiln_context *ctx, char *buf,
                             size_t size) {
  snprintf(buf, size, "the %s context on device %zu (%s)", ctx->ops->name,
           ctx->device_index, ctx->properties.name);
}

/* Words a timeout: "<fn>: <subject> still had work running after 100.3 ms
 * (the limit: KILN_SYNC_TIMEOUT_MS=100); <after>". */
static kiln_status timed_out(const char *fn, const char *subject,
                             uint64_t waited_ns, uint64_t limit_ns,
                             bool from_env, const char *after) {
  char limit[64];
  if (from_env)
    snprintf(limit, sizeof limit, "KILN_SYNC_TIMEOUT_MS=%llu",
             (unsigned long long)(limit_ns / 1000000u));
  else
    snprintf(limit, sizeof limit, "%.3f ms", (double)limit_ns / 1e6);
  return kiln_set_error(
      KILN_ERROR_TIMEOUT,
      "%s: %s still had work running after %.1f ms (the limit: %s); %s", fn,
      subject, (double)waited_ns / 1e6, limit,
      after ? after
            : "the work goes on and the context stays usable: wait again, "
              "or destroy the context");
}

kiln_status kiln_context_wait(kiln_context *ctx, const char *fn,
                              const char *after) {
  const uint64_t start = kiln_now_ns();
  kiln_status st = kiln_context_result(
      ctx, ctx->ops->context_synchronize(ctx, ctx->sync_timeout_ns));
  if (st == KILN_OK) kiln_trace_waited(ctx, NULL, NULL);
  if (st != KILN_ERROR_TIMEOUT) return st;
  char subject[384];
  describe_context(ctx, subject, sizeof subject);
  return timed_out(fn, subject, kiln_now_ns() - start, ctx->sync_timeout_ns,
                   true, after);
}

static kiln_status stream_wait(kiln_stream *s, uint64_t timeout_ns,
                               bool from_env, const char *fn,
                               const char *after) {
  kiln_context *ctx = s->base.context;
  const uint64_t start = kiln_now_ns();
  kiln_status st =
      kiln_context_result(ctx, ctx->ops->stream_synchronize(s, timeout_ns));
  if (st == KILN_OK) kiln_trace_waited(ctx, s, NULL);
  if (st != KILN_ERROR_TIMEOUT) return st;
  char where[384], subject[448];
  describe_context(ctx, where, sizeof where);
  if (s->is_default)
    snprintf(subject, sizeof subject, "the default stream of %s", where);
  else
    snprintf(subject, sizeof subject, "stream %p of %s", (void *)s, where);
  return timed_out(fn, subject, kiln_now_ns() - start, timeout_ns, from_env,
                   after);
}

kiln_status kiln_stream_wait(kiln_stream *s, const char *fn,
                             const char *after) {
  return stream_wait(s, s->base.context->sync_timeout_ns, true, fn, after);
}

kiln_status kiln_event_wait(kiln_event *e, const char *fn,
                            const char *after) {
  kiln_context *ctx = e->base.context;
  const uint64_t start = kiln_now_ns();
  kiln_status st = kiln_context_result(
      ctx, ctx->ops->event_synchronize(e, ctx->sync_timeout_ns));
  if (st == KILN_OK) kiln_trace_waited(ctx, NULL, e);
  if (st != KILN_ERROR_TIMEOUT) return st;
  char where[384], subject[448];
  describe_context(ctx, where, sizeof where);
  snprintf(subject, sizeof subject, "the work before event %p of %s",
           (void *)e, where);
  return timed_out(fn, subject, kiln_now_ns() - start, ctx->sync_timeout_ns,
                   true, after);
}

kiln_status kiln_stream_wait_timeout(kiln_stream *s, uint64_t timeout_ns,
                                     const char *fn) {
  return stream_wait(s, timeout_ns, false, fn, NULL);
}
