/* Completion times of traced commands (kiln_set_trace_handler_ex's
 * KILN_TRACE_COMPLETIONS). The door brackets each timed command with two
 * events recorded on its stream through the backend's ops (so they are
 * neither traced nor seen by the guard), and the command waits here until
 * a host wait makes its completion known (kiln_trace_completed). The
 * events are the context's internal objects, reused through a pool, and
 * released with the context. */
#include <stdlib.h>
#include <string.h>

#include "core/submit/trace.h"

/* Each time this many more commands wait to be reported, the door looks
 * for completed ones, so a program that never waits on the host keeps a
 * bounded backlog of events. */
#define BACKLOG 1024

/* Streams a look for completions can tell apart before it reports no more
 * streams. */
#define MAX_BLOCKED 32

typedef struct pending {
  kiln_trace_command t; /* its kernel_name kiln's own copy */
  kiln_event *start, *end;
  const kiln_event *recorded; /* a record's user event, compared only */
} pending;

typedef struct kiln_trace_timing {
  /* Whether the reference was made: if not, the context times nothing.
   * Set before the state is published, never changed. */
  bool can_time;
  pthread_mutex_t lock; /* guards every field below */
  pending *pending;     /* in the order the door queued them */
  size_t count, cap;
  kiln_event **pool; /* done events, free to record again */
  size_t pool_count, pool_cap;
  /* The start event of the command last reported with its time, and that
   * time in nanoseconds since the reference (at first: the reference and
   * 0). Times are measured from it, so that the backend's float
   * milliseconds stay short and keep their precision. */
  kiln_event *anchor;
  double anchor_ns;
  bool warned; /* a failure to time was logged */
} kiln_trace_timing;

static pthread_mutex_t create_lock = PTHREAD_MUTEX_INITIALIZER;

static void warn_once(kiln_trace_timing *tm, const char *what) {
  pthread_mutex_lock(&tm->lock);
  bool first = !tm->warned;
  tm->warned = true;
  pthread_mutex_unlock(&tm->lock);
  if (first)
    kiln_log(KILN_LOG_WARN,
             "trace: %s, so some commands are not timed (their completion is "
             "not reported): %s",
             what, kiln_last_error());
}

static kiln_event *new_event(kiln_context *ctx) {
  kiln_event *e = NULL;
  return kiln_event_internal(ctx, KILN_EVENT_DEFAULT, &e) == KILN_OK ? e
                                                                       : NULL;
}

/* The device time from a to b, where the backend can time. */
static bool elapsed_ms(kiln_context *ctx, kiln_event *a, kiln_event *b,
                       float *out_ms) {
  return ctx->ops->timing &&
         ctx->ops->timing->event_elapsed_ms(a, b, out_ms) == KILN_OK;
}

/* Under tm->lock. An event that does not fit the pool stays the context's
 * until it goes. */
static void give_locked(kiln_trace_timing *tm, kiln_event *e) {
  if (tm->pool_count == tm->pool_cap) {
    size_t cap = tm->pool_cap ? tm->pool_cap * 2 : 16;
    kiln_event **pool = realloc(tm->pool, cap * sizeof *pool);
    if (!pool) return;
    tm->pool = pool;
    tm->pool_cap = cap;
  }
  tm->pool[tm->pool_count++] = e;
}

static void give(kiln_trace_timing *tm, kiln_event *e) {
  pthread_mutex_lock(&tm->lock);
  give_locked(tm, e);
  pthread_mutex_unlock(&tm->lock);
}

/* An event recorded on s, from the pool or new; NULL (and the error set)
 * when that fails. */
static kiln_event *record(kiln_trace_timing *tm, kiln_stream *s) {
  kiln_context *ctx = s->base.context;
  kiln_event *e = NULL;
  pthread_mutex_lock(&tm->lock);
  if (tm->pool_count) e = tm->pool[--tm->pool_count];
  pthread_mutex_unlock(&tm->lock);
  if (!e && !(e = new_event(ctx))) return NULL;
  if (kiln_context_result(ctx, ctx->ops->event_record(e, s)) != KILN_OK) {
    give(tm, e);
    return NULL;
  }
  e->recorded = true;
  return e;
}

/* The reference: an event recorded on a stream of its own, which nothing
 * else uses, and waited for; every command timed later began after it. */
static kiln_event *reference(kiln_context *ctx) {
  kiln_event *ref = new_event(ctx);
  if (!ref) return NULL;
  /* Made through the backend's ops, as the events are: this room stands
   * below the public layer's streams (core/api/stream.c), and the stream
   * is never ready for the core's walks over the context's streams. */
  kiln_status st = KILN_ERROR_OUT_OF_HOST_MEMORY;
  kiln_stream *s = kiln_object_alloc(ctx, KILN_OBJECT_STREAM,
                                     ctx->ops->stream_size, true);
  if (s) {
    st = kiln_context_result(ctx, ctx->ops->stream_init(s));
    if (st == KILN_OK) {
      st = kiln_context_result(ctx, ctx->ops->event_record(ref, s));
      if (st == KILN_OK) {
        ref->recorded = true;
        st = kiln_context_result(
            ctx, ctx->ops->event_synchronize(ref, ctx->sync_timeout_ns));
      }
      if (!atomic_load(&ctx->lost))
        kiln_context_result(
            ctx, ctx->ops->stream_synchronize(s, KILN_WAIT_FOREVER));
      ctx->ops->stream_deinit(s);
    }
    kiln_object_free(s);
  }
  if (st == KILN_OK) return ref;
  kiln_event_release(ref);
  return NULL;
}

/* The context's state, made by its first timed command. NULL only when
 * the host is out of memory. */
static kiln_trace_timing *timing_of(kiln_context *ctx) {
  kiln_trace_timing *tm =
      atomic_load_explicit(&ctx->trace, memory_order_acquire);
  if (tm) return tm;
  pthread_mutex_lock(&create_lock);
  tm = atomic_load_explicit(&ctx->trace, memory_order_acquire);
  if (!tm && (tm = calloc(1, sizeof *tm)) != NULL) {
    if (pthread_mutex_init(&tm->lock, NULL) != 0) {
      free(tm);
      tm = NULL;
    } else {
      tm->anchor = reference(ctx);
      tm->can_time = tm->anchor != NULL;
      if (!tm->can_time)
        warn_once(tm, "the context's reference event could not be made");
      atomic_store_explicit(&ctx->trace, tm, memory_order_release);
    }
  }
  pthread_mutex_unlock(&create_lock);
  return tm;
}

kiln_event *kiln_timing_start(kiln_stream *s) {
  kiln_trace_timing *tm = timing_of(s->base.context);
  if (!tm || !tm->can_time) return NULL;
  kiln_event *e = record(tm, s);
  if (!e) warn_once(tm, "an event to time a command could not be recorded");
  return e;
}

void kiln_timing_drop(kiln_stream *s, kiln_event *start) {
  give(atomic_load_explicit(&s->base.context->trace, memory_order_acquire),
       start);
}

bool kiln_timing_end(kiln_stream *s, kiln_event *start,
                     const kiln_trace_command *t, const kiln_event *recorded) {
  kiln_trace_timing *tm =
      atomic_load_explicit(&s->base.context->trace, memory_order_acquire);
  pending p = {*t, start, record(tm, s), recorded};
  if (!p.end) {
    warn_once(tm, "an event to time a command could not be recorded");
    give(tm, start);
    return false;
  }
  if (t->kernel_name && !(p.t.kernel_name = strdup(t->kernel_name))) {
    give(tm, start);
    give(tm, p.end);
    return false;
  }
  pthread_mutex_lock(&tm->lock);
  bool kept = true;
  if (tm->count == tm->cap) {
    size_t cap = tm->cap ? tm->cap * 2 : 64;
    pending *grown = realloc(tm->pending, cap * sizeof *grown);
    if (grown) {
      tm->pending = grown;
      tm->cap = cap;
    } else {
      kept = false;
    }
  }
  if (kept) tm->pending[tm->count++] = p;
  size_t count = tm->count;
  pthread_mutex_unlock(&tm->lock);
  if (!kept) {
    free((char *)(uintptr_t)p.t.kernel_name);
    give(tm, start);
    give(tm, p.end);
  }
  return kept && count % BACKLOG == 0;
}

static uint64_t clamp_ns(double ns) { return ns > 0 ? (uint64_t)ns : 0; }

/* Whether p's command is done; if so, under tm->lock, its completed
 * report in p->t, and its events back in the pool (its start kept as the
 * new anchor when it got a time). */
static bool finish(kiln_context *ctx, kiln_trace_timing *tm, pending *p) {
  if (ctx->ops->event_query(p->end) != KILN_OK) return false;
  /* Both events are done (the end is, and the others came before it). */
  float from_anchor, length;
  p->t.phase = KILN_TRACE_COMPLETED;
  p->t.timed = elapsed_ms(ctx, tm->anchor, p->start, &from_anchor) &&
               elapsed_ms(ctx, p->start, p->end, &length);
  if (p->t.timed) {
    double start = tm->anchor_ns + (double)from_anchor * 1e6;
    p->t.start_ns = clamp_ns(start);
    p->t.end_ns = p->t.start_ns + clamp_ns((double)length * 1e6);
    give_locked(tm, tm->anchor);
    tm->anchor = p->start;
    tm->anchor_ns = start;
  } else {
    give_locked(tm, p->start);
  }
  give_locked(tm, p->end);
  return true;
}

static bool among(const kiln_stream *const *list, size_t n,
                  const kiln_stream *s) {
  for (size_t i = 0; i < n; i++)
    if (list[i] == s) return true;
  return false;
}

size_t kiln_timing_collect(kiln_context *ctx, const kiln_stream *s,
                           const kiln_event *e, kiln_trace_command **out) {
  kiln_trace_timing *tm =
      atomic_load_explicit(&ctx->trace, memory_order_acquire);
  if (!tm) return 0;
  pthread_mutex_lock(&tm->lock);
  /* An event's wait covers its stream up to its last record. */
  size_t limit = tm->count;
  if (e) {
    while (limit > 0 && tm->pending[limit - 1].recorded != e) limit--;
    if (limit > 0) s = tm->pending[limit - 1].t.stream;
  }
  kiln_trace_command *done =
      limit ? malloc(limit * sizeof *done) : NULL;
  if (!done) {
    pthread_mutex_unlock(&tm->lock);
    free(done);
    return 0;
  }
  /* A stream's first command not done holds back the ones after it. */
  const kiln_stream *blocked[MAX_BLOCKED];
  size_t nblocked = 0, kept = 0, n = 0;
  for (size_t i = 0; i < tm->count; i++) {
    pending *p = &tm->pending[i];
    bool candidate = i < limit && (!s || p->t.stream == s) &&
                     nblocked < MAX_BLOCKED &&
                     !among(blocked, nblocked, p->t.stream);
    if (candidate && finish(ctx, tm, p)) {
      done[n++] = p->t;
      continue;
    }
    if (candidate) blocked[nblocked++] = p->t.stream;
    tm->pending[kept++] = *p;
  }
  tm->count = kept;
  pthread_mutex_unlock(&tm->lock);
  if (n == 0) {
    free(done);
    return 0;
  }
  *out = done;
  return n;
}

void kiln_timing_free(kiln_trace_command *list, size_t count) {
  for (size_t i = 0; i < count; i++)
    free((char *)(uintptr_t)list[i].kernel_name);
  free(list);
}

void kiln_timing_forget_stream(const kiln_stream *s) {
  kiln_trace_timing *tm =
      atomic_load_explicit(&s->base.context->trace, memory_order_acquire);
  if (!tm) return;
  pthread_mutex_lock(&tm->lock);
  size_t kept = 0;
  for (size_t i = 0; i < tm->count; i++) {
    if (tm->pending[i].t.stream == s)
      free((char *)(uintptr_t)tm->pending[i].t.kernel_name);
    else
      tm->pending[kept++] = tm->pending[i];
  }
  tm->count = kept;
  pthread_mutex_unlock(&tm->lock);
}

void kiln_timing_close(kiln_context *ctx) {
  kiln_trace_timing *tm = atomic_exchange(&ctx->trace, NULL);
  if (!tm) return;
  for (size_t i = 0; i < tm->count; i++)
    free((char *)(uintptr_t)tm->pending[i].t.kernel_name);
  free(tm->pending);
  free(tm->pool);
  pthread_mutex_destroy(&tm->lock);
  free(tm);
}
