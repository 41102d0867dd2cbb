/* Memory in stream order, the core's part (kiln.h, "Memory in stream
 * order"): which pool serves a context, and a pool of the core's own where
 * the backend has none (no `memory` table, or one whose device or driver
 * lacks stream-ordered allocation: HIP before hipMallocAsync).
 *
 * The core's pool makes buffers with the backend's ordinary buffer_init,
 * which waits for nothing, and parks each released one with an event
 * recorded at its release: a later create of the same size takes a parked
 * buffer whose event is done (or one released on the creating stream,
 * which stream order already protects), and the others are freed once
 * their events are done, at the synchronizes and at trims. A parked buffer
 * lives on as a copy of its backend struct, detached from the handle
 * registry, so that the released handle is invalid at once while its
 * memory is still in use.
 *
 * In front of a backend's pool, reuse.c keeps a few small released
 * buffers for their own stream's next create, which then asks the driver
 * nothing. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/memory/reuse.h"

typedef struct parked {
  kiln_buffer *buf;    /* the detached copy (malloc'd, ops->buffer_size) */
  kiln_event *done;    /* recorded on `stream` at the release */
  const kiln_stream *stream;
} parked;

struct kiln_pool {
  pthread_mutex_t lock;
  /* 0 until the first use asks the backend; then 1 (the backend's pool)
   * or -1 (the core's). Set once, under the lock; read without it. */
  atomic_int native;
  size_t keep;     /* bytes of released memory kept at a synchronize */
  kiln_reuse *reuse; /* the backend's pool: what its streams may take back */
  size_t used;     /* the core's pool: bytes of live buffers */
  size_t parked_bytes;
  parked *parked;
  size_t count, cap;
  /* Events of parkings that ended, kept for the next: re-recording one
   * waits for nothing, where destroying one still pending would wait
   * for its stream. */
  kiln_event **spare;
  size_t spare_count, spare_cap;
};

kiln_status kiln_pool_open(kiln_context *ctx) {
  kiln_pool *p = calloc(1, sizeof *p);
  if (p && !(p->reuse = kiln_reuse_open())) {
    free(p);
    p = NULL;
  }
  if (p && pthread_mutex_init(&p->lock, NULL) != 0) {
    kiln_reuse_close(p->reuse);
    free(p);
    p = NULL;
  }
  if (!p)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory opening the context's pool");
  p->keep = SIZE_MAX;
  ctx->pool = p;
  return KILN_OK;
}

/* Whether the backend's pool serves ctx, asked once. */
static bool native(kiln_context *ctx, kiln_pool *p) {
  int known = atomic_load(&p->native);
  if (known != 0) return known > 0;
  pthread_mutex_lock(&p->lock);
  if (atomic_load(&p->native) == 0) {
    const kiln_memory_ops *m = ctx->ops->memory;
    kiln_status st = m ? m->supported(ctx) : KILN_ERROR_UNSUPPORTED;
    atomic_store(&p->native, st == KILN_OK ? 1 : -1);
    if (m && st == KILN_OK && p->keep != SIZE_MAX &&
        m->set_keep(ctx, p->keep) != KILN_OK)
      kiln_log(KILN_LOG_WARN, "%s: setting the pool's release threshold: %s",
               ctx->ops->name, kiln_last_error());
    kiln_log(KILN_LOG_DEBUG, "%s: memory in stream order from %s",
             ctx->ops->name,
             st == KILN_OK ? "the backend's pool" : "the core's pool");
  }
  pthread_mutex_unlock(&p->lock);
  return atomic_load(&p->native) > 0;
}

/* Keeps e for a later parking, or, with no room for it, destroys it.
 * p->lock held. */
static void spare_event(kiln_pool *p, kiln_event *e) {
  if (p->spare_count == p->spare_cap) {
    size_t cap = p->spare_cap ? p->spare_cap * 2 : 16;
    kiln_event **more = realloc(p->spare, cap * sizeof *more);
    if (!more) {
      kiln_event_release(e);
      return;
    }
    p->spare = more;
    p->spare_cap = cap;
  }
  p->spare[p->spare_count++] = e;
}

/* A spare event, or a new one without timing (its record then orders
 * nothing on other streams). p->lock held. */
static kiln_status take_event(kiln_context *ctx, kiln_pool *p,
                              kiln_event **out) {
  if (p->spare_count > 0) {
    *out = p->spare[--p->spare_count];
    return KILN_OK;
  }
  return kiln_event_internal(ctx, KILN_EVENT_NO_TIMING, out);
}

/* Frees parked[i] (its event done, or the device idle) and drops it from
 * the list, keeping the rest in order. p->lock held. */
static void free_parked(kiln_context *ctx, kiln_pool *p, size_t i) {
  parked *k = &p->parked[i];
  p->parked_bytes -= k->buf->size;
  ctx->ops->buffer_deinit(k->buf);
  free(k->buf);
  spare_event(p, k->done);
  memmove(k, k + 1, (p->count - i - 1) * sizeof *k);
  p->count--;
}

static bool parked_done(const parked *k) {
  return k->done->base.context->ops->event_query(k->done) == KILN_OK;
}

/* Frees parked buffers whose releases are done, oldest first, until at
 * most `keep` bytes stay parked. p->lock held. */
static void trim_parked(kiln_context *ctx, kiln_pool *p, size_t keep) {
  for (size_t i = 0; i < p->count && p->parked_bytes > keep;) {
    if (parked_done(&p->parked[i]))
      free_parked(ctx, p, i);
    else
      i++;
  }
}

/* A parked buffer of exactly `size` bytes that `s` may take: released on
 * s (stream order covers it) or done. SIZE_MAX when none. */
static size_t find_parked(kiln_pool *p, const kiln_stream *s, size_t size) {
  for (size_t i = 0; i < p->count; i++) {
    const parked *k = &p->parked[i];
    if (k->buf->size == size && (k->stream == s || parked_done(k))) return i;
  }
  return SIZE_MAX;
}

/* Moves the backend's part of parked[i] into `buf` (whose core fields the
 * caller set) and drops the copy. p->lock held. */
static void take_parked(kiln_context *ctx, kiln_pool *p, size_t i,
                        kiln_buffer *buf) {
  parked *k = &p->parked[i];
  kiln_reuse_attach(buf, k->buf, ctx->ops->buffer_size);
  p->parked_bytes -= k->buf->size;
  free(k->buf);
  spare_event(p, k->done);
  memmove(k, k + 1, (p->count - i - 1) * sizeof *k);
  p->count--;
}

kiln_status kiln_pool_alloc(kiln_stream *s, kiln_buffer *buf, uint32_t flags,
                            bool *out_zero) {
  kiln_context *ctx = s->base.context;
  kiln_pool *p = ctx->pool;
  *out_zero = false;
  if (native(ctx, p)) {
    if (kiln_reuse_take(p->reuse, ctx, s, buf)) {
      *out_zero = (flags & KILN_BUFFER_ZERO) != 0;
      return KILN_OK;
    }
    const kiln_memory_ops *m = ctx->ops->memory;
    kiln_status st = m->buffer_init_async(buf, s, flags);
    /* The backend gave back what its pool holds; what is kept goes too. */
    if (st == KILN_ERROR_OUT_OF_DEVICE_MEMORY &&
        kiln_reuse_counted(p->reuse) > 0) {
      kiln_reuse_flush(p->reuse, ctx, NULL);
      st = m->buffer_init_async(buf, s, flags);
    }
    return st;
  }
  pthread_mutex_lock(&p->lock);
  size_t i = find_parked(p, s, buf->size);
  if (i != SIZE_MAX) {
    take_parked(ctx, p, i, buf);
    p->used += buf->size;
    pthread_mutex_unlock(&p->lock);
    /* The zeroes come in stream order, after what used it before. */
    *out_zero = (flags & KILN_BUFFER_ZERO) != 0;
    return KILN_OK;
  }
  kiln_status st = ctx->ops->buffer_init(buf, flags);
  if (st == KILN_ERROR_OUT_OF_DEVICE_MEMORY && p->count) {
    /* Give back what is parked and done, then try once more. */
    trim_parked(ctx, p, 0);
    st = ctx->ops->buffer_init(buf, flags);
  }
  if (st == KILN_OK) p->used += buf->size;
  pthread_mutex_unlock(&p->lock);
  return st;
}

/* The core's pool parks `buf`: a copy of it, and an event recorded on s. */
static kiln_status park(kiln_context *ctx, kiln_pool *p, kiln_stream *s,
                        kiln_buffer *buf) {
  const kiln_backend_ops *ops = ctx->ops;
  if (p->count == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 16;
    parked *more = realloc(p->parked, cap * sizeof *more);
    if (!more) goto no_memory;
    p->parked = more;
    p->cap = cap;
  }
  kiln_buffer *copy = malloc(ops->buffer_size);
  if (!copy) goto no_memory;
  kiln_event *e = NULL;
  kiln_status st = take_event(ctx, p, &e);
  if (st == KILN_OK && (st = ops->event_record(e, s)) != KILN_OK)
    spare_event(p, e);
  if (st != KILN_OK) {
    free(copy);
    return st;
  }
  kiln_reuse_detach(copy, buf, ops->buffer_size);
  p->parked[p->count++] = (parked){.buf = copy, .done = e, .stream = s};
  p->parked_bytes += buf->size;
  p->used -= buf->size;
  return KILN_OK;
no_memory:
  return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                        "out of host memory keeping a released buffer of "
                        "%zu bytes until its stream is done with it",
                        buf->size);
}

kiln_status kiln_pool_release(kiln_stream *s, kiln_buffer *buf) {
  kiln_context *ctx = s->base.context;
  kiln_pool *p = ctx->pool;
  if (native(ctx, p)) {
    if (kiln_reuse_keep(p->reuse, ctx, s, buf)) return KILN_OK;
    return ctx->ops->memory->buffer_deinit_async(buf, s);
  }
  pthread_mutex_lock(&p->lock);
  kiln_status st = park(ctx, p, s, buf);
  pthread_mutex_unlock(&p->lock);
  return st;
}

/* At debug level, what the pool holds (kiln_context_pool_usage's two
 * figures), `when` saying at which point; only once the pool has served
 * and while the device can answer. */
static void log_usage(kiln_context *ctx, const char *when) {
  if (kiln_get_log_level() < KILN_LOG_DEBUG ||
      atomic_load(&ctx->pool->native) == 0 || atomic_load(&ctx->lost))
    return;
  size_t reserved = 0, used = 0;
  if (kiln_pool_usage(ctx, &reserved, &used) == KILN_OK)
    kiln_log(KILN_LOG_DEBUG,
             "%s: the stream-ordered pool %s: %zu bytes reserved, %zu of "
             "them in use by live buffers",
             ctx->ops->name, when, reserved, used);
}

void kiln_pool_synchronized(kiln_context *ctx) {
  kiln_pool *p = ctx->pool;
  if (!p) return;
  pthread_mutex_lock(&p->lock);
  if (atomic_load(&p->native) < 0) trim_parked(ctx, p, p->keep);
  pthread_mutex_unlock(&p->lock);
  log_usage(ctx, "at a synchronize of the context");
}

kiln_status kiln_pool_usage(kiln_context *ctx, size_t *reserved,
                            size_t *used) {
  kiln_pool *p = ctx->pool;
  if (native(ctx, p)) {
    /* What is kept is released, though the backend still counts it. */
    const size_t kept = kiln_reuse_counted(p->reuse);
    kiln_status st = ctx->ops->memory->usage(ctx, reserved, used);
    if (st == KILN_OK) *used = *used > kept ? *used - kept : 0;
    return st;
  }
  pthread_mutex_lock(&p->lock);
  *reserved = p->used + p->parked_bytes;
  *used = p->used;
  pthread_mutex_unlock(&p->lock);
  return KILN_OK;
}

kiln_status kiln_pool_set_keep(kiln_context *ctx, size_t bytes) {
  kiln_pool *p = ctx->pool;
  pthread_mutex_lock(&p->lock);
  p->keep = bytes;
  kiln_reuse_set_keep(p->reuse, ctx, bytes);
  kiln_status st = KILN_OK;
  /* Before the first use the backend learns it when asked (native()). */
  if (atomic_load(&p->native) > 0)
    st = ctx->ops->memory->set_keep(ctx, bytes);
  pthread_mutex_unlock(&p->lock);
  return st;
}

kiln_status kiln_pool_trim(kiln_context *ctx, size_t keep_bytes) {
  kiln_pool *p = ctx->pool;
  pthread_mutex_lock(&p->lock);
  kiln_status st = KILN_OK;
  if (atomic_load(&p->native) > 0) {
    kiln_reuse_flush(p->reuse, ctx, NULL);
    st = ctx->ops->memory->trim(ctx, keep_bytes);
  } else
    trim_parked(ctx, p, keep_bytes);
  pthread_mutex_unlock(&p->lock);
  if (st == KILN_OK) log_usage(ctx, "after a trim");
  return st;
}

void kiln_pool_close(kiln_context *ctx) {
  kiln_pool *p = ctx->pool;
  if (!p) return;
  log_usage(ctx, "at the context's end");
  /* The streams are done (the context's teardown waited for them), or
   * the device is lost: nothing parked is in use. */
  while (p->count > 0) free_parked(ctx, p, p->count - 1);
  while (p->spare_count > 0) kiln_event_release(p->spare[--p->spare_count]);
  kiln_reuse_close(p->reuse);
  free(p->spare);
  free(p->parked);
  pthread_mutex_destroy(&p->lock);
  free(p);
  ctx->pool = NULL;
}

void kiln_pool_forget(kiln_buffer *buf) {
  kiln_pool *p = buf->base.context->pool;
  if (!p || buf->graph_owned || buf->base.context->guard ||
      atomic_load(&p->native) > 0)
    return;
  pthread_mutex_lock(&p->lock);
  p->used -= buf->size;
  pthread_mutex_unlock(&p->lock);
}

void kiln_pool_flush(kiln_context *ctx, const kiln_stream *s) {
  kiln_pool *p = ctx->pool;
  if (p && atomic_load(&p->native) > 0) kiln_reuse_flush(p->reuse, ctx, s);
}
