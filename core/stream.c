/* Streams: in-order queues of work; each context has a default one. And the
 * bounded waits that every call waiting for the device goes through. */
#include <sched.h>
#include <stdio.h>
#include <time.h>

#include "core/internal.h"

/* ---- Bounded waits --------------------------------------------------------- */

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
  for (kiln_object *o = p->ctx->objects.next;
       st == KILN_OK && o != &p->ctx->objects; o = o->next)
    if (o->type == KILN_OBJECT_STREAM && ((kiln_stream *)o)->ready)
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
    kiln_object *o = s ? s->base.next : ctx->objects.next;
    while (o != &ctx->objects &&
           !(o->type == KILN_OBJECT_STREAM && ((kiln_stream *)o)->ready))
      o = o->next;
    kiln_stream *next = o != &ctx->objects ? (kiln_stream *)o : NULL;
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
    if (policy == KILN_SYNC_AUTO &&
        kiln_now_ns() - start >= KILN_SYNC_AUTO_SPIN_NS)
      return sleep(arg);
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
  if (st != KILN_ERROR_TIMEOUT) return st;
  char where[384], subject[448];
  describe_context(ctx, where, sizeof where);
  snprintf(subject, sizeof subject, "the work before event %p of %s",
           (void *)e, where);
  return timed_out(fn, subject, kiln_now_ns() - start, ctx->sync_timeout_ns,
                   true, after);
}

/* ---- Streams --------------------------------------------------------------- */

kiln_status kiln_stream_create_internal(kiln_context *ctx, bool is_default,
                                        uint32_t priority, kiln_stream **out) {
  kiln_stream *s = kiln_object_alloc(ctx, KILN_OBJECT_STREAM,
                                     ctx->ops->stream_size, is_default);
  if (!s) return KILN_ERROR_OUT_OF_HOST_MEMORY;
  s->is_default = is_default;
  s->priority = priority;
  kiln_status st = kiln_context_result(ctx, ctx->ops->stream_init(s));
  if (st != KILN_OK) {
    kiln_object_free(s);
    return st;
  }
  kiln_stream_set_ready(s, true);
  *out = s;
  return KILN_OK;
}

void kiln_stream_set_ready(kiln_stream *s, bool ready) {
  kiln_context *ctx = s->base.context;
  pthread_mutex_lock(&ctx->lock);
  s->ready = ready;
  pthread_mutex_unlock(&ctx->lock);
}

static kiln_status create_stream(const char *fn, kiln_context *ctx,
                                 const kiln_stream_options *options,
                                 kiln_stream **out_stream) {
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st != KILN_OK) return st;
  if (!out_stream)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: out_stream is NULL",
                          fn);
  uint32_t priority = options ? options->priority : 0;
  uint32_t max = ctx->properties.max_stream_priority;
  if (priority > max)
    return kiln_set_error(
        KILN_ERROR_OUT_OF_RANGE,
        "%s: priority %u is beyond this device's range, 0 "
        "to %u (max_stream_priority of the context's "
        "properties%s)",
        fn, (unsigned)priority, (unsigned)max,
        max == 0 ? "; the device has no stream priorities" : "");
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  return kiln_stream_create_internal(ctx, false, priority, out_stream);
}

kiln_status kiln_stream_create_with_options(kiln_context *ctx,
                                            const kiln_stream_options *options,
                                            kiln_stream **out_stream) {
  return create_stream("kiln_stream_create_with_options", ctx, options,
                       out_stream);
}

kiln_status kiln_stream_create(kiln_context *ctx, kiln_stream **out_stream) {
  return create_stream("kiln_stream_create", ctx, NULL, out_stream);
}

void kiln_stream_release(kiln_stream *s) {
  kiln_context *ctx = s->base.context;
  if (!atomic_load(&ctx->lost))
    kiln_context_result(ctx,
                        ctx->ops->stream_synchronize(s, KILN_WAIT_FOREVER));
  /* A graph that captured a helper on s still uses its workspace, which
   * then stays, internal, until the context goes. */
  for (int i = 0; i < KILN_SCRATCH_USES; i++)
    if (s->scratch[i] && !atomic_load(&s->scratch[i]->base.graph_refs))
      kiln_buffer_release(s->scratch[i]);
  kiln_stream_set_ready(s, false);
  /* A walk that pinned the stream before it stopped being ready may still
   * be waiting on it (its work is done: that wait ends at once). */
  while (atomic_load(&s->pins)) {
    const struct timespec nap = {0, 50000};
    nanosleep(&nap, NULL);
  }
  ctx->ops->stream_deinit(s);
  kiln_object_free(s);
}

kiln_status kiln_stream_destroy(kiln_stream *s) {
  static const char fn[] = "kiln_stream_destroy";
  if (!s) return KILN_OK;
  kiln_status st = kiln_object_check(s, KILN_OBJECT_STREAM, fn, "stream");
  if (st != KILN_OK) return st;
  if (s->is_default)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: the default stream belongs to its context and "
                          "is released with it",
                          fn);
  if ((st = kiln_capture_refuse(s, fn)) != KILN_OK) return st;
  kiln_context *ctx = s->base.context;
  if ((kiln_waits_bounded(ctx) || ctx->guard) && !atomic_load(&ctx->lost) &&
      kiln_stream_wait(s, fn,
                       "the stream was not destroyed: destroy it again once "
                       "its work is done, or destroy the context") ==
          KILN_ERROR_TIMEOUT)
    return KILN_ERROR_TIMEOUT;
  /* The last point at which the stream's launches can be told apart. */
  st = ctx->guard ? kiln_guard_check_stream(s, fn) : KILN_OK;
  kiln_stream_release(s);
  return st;
}

kiln_status kiln_stream_synchronize(kiln_stream *s) {
  static const char fn[] = "kiln_stream_synchronize";
  kiln_status st = kiln_object_check(s, KILN_OBJECT_STREAM, fn, "stream");
  if (st != KILN_OK) return st;
  if ((st = kiln_context_check_usable(s->base.context)) != KILN_OK) return st;
  if ((st = kiln_capture_refuse(s, fn)) != KILN_OK) return st;
  st = kiln_stream_wait(s, fn, NULL);
  if (st == KILN_OK && s->base.context->guard)
    st = kiln_guard_check_stream(s, fn);
  return st;
}

kiln_status kiln_stream_synchronize_timeout(kiln_stream *s,
                                            uint64_t timeout_ns) {
  static const char fn[] = "kiln_stream_synchronize_timeout";
  kiln_status st = kiln_object_check(s, KILN_OBJECT_STREAM, fn, "stream");
  if (st != KILN_OK) return st;
  if ((st = kiln_context_check_usable(s->base.context)) != KILN_OK) return st;
  if ((st = kiln_capture_refuse(s, fn)) != KILN_OK) return st;
  st = stream_wait(s, timeout_ns, false, fn, NULL);
  if (st == KILN_OK && s->base.context->guard)
    st = kiln_guard_check_stream(s, fn);
  return st;
}
