/* A few buffers released in stream order on a backend's pool, kept whole
 * for their stream's next create of the same size (kiln.h, "Memory in
 * stream order"; docs/design.md, "Memory in stream order").
 *
 * A loop that makes and releases a temporary on one stream would ask the
 * driver twice per turn (cuMemAllocFromPoolAsync and cuMemFreeAsync cost
 * about 0.6 us a pair on the H200), although the memory it gets back is
 * the memory it just gave. Stream order already makes that memory safe
 * for the releasing stream's next work, so a create on that stream takes
 * the released buffer as it is, as the core's own pool does for its
 * stream (pool.c) and as CuPy's and PyTorch's allocators do per stream.
 * Only that stream may take it: another stream would need the release to
 * be done, which only the backend's pool knows. So what is kept is small
 * and few (REUSE_LARGEST, REUSE_SLOTS, REUSE_BYTES and the pool's keep
 * setting), and goes to the backend's pool, on its own stream, when a
 * newer release on that stream needs its room, before a context's
 * synchronize or destroy waits, at trims, when the device is full and
 * when its stream goes.
 *
 * A release pushes out only buffers kept for its own stream, so that it
 * queues work on no other stream and waits for no other stream's queue.
 * Calls to the backend are made outside the lock, each with the kept
 * buffer's stream pinned (kiln_stream.pins), so that a stream's release,
 * which waits for its pins, never deinitializes it under one. */
#include <stdlib.h>
#include <string.h>

#include "core/memory/reuse.h"

/* Buffers of up to 4 MiB: beyond that the driver's call costs little
 * beside what fills the buffer, and the memory does more good in the
 * backend's pool, where every stream can have it. */
#define REUSE_LARGEST ((size_t)4 << 20)
#define REUSE_SLOTS 8
/* All of them together, as the backend counts them (buffer_pool_bytes):
 * what a pool with room for others may hold back. */
#define REUSE_BYTES ((size_t)16 << 20)

typedef struct slot {
  kiln_buffer *copy;   /* the released buffer's struct; storage kept empty */
  kiln_stream *stream; /* NULL: the slot is empty */
  size_t counted;      /* what the backend's `used` counts for it */
  uint64_t used;       /* when it was kept, for the least recent */
} slot;

struct kiln_reuse {
  pthread_mutex_t lock;
  slot slots[REUSE_SLOTS];
  size_t counted; /* what the backend counts for the buffers kept */
  size_t most;    /* what may be kept: REUSE_BYTES, or less by the keep */
  uint64_t clock;
};

/* A kept buffer taken out of its slot to go back to the backend. */
typedef struct out {
  kiln_buffer *copy;
  kiln_stream *stream; /* pinned until it has gone back */
} out;

kiln_reuse *kiln_reuse_open(void) {
  kiln_reuse *r = calloc(1, sizeof *r);
  if (r && pthread_mutex_init(&r->lock, NULL) != 0) {
    free(r);
    r = NULL;
  }
  if (r) r->most = REUSE_BYTES;
  return r;
}

void kiln_reuse_close(kiln_reuse *r) {
  if (!r) return;
  for (size_t i = 0; i < REUSE_SLOTS; i++) free(r->slots[i].copy);
  pthread_mutex_destroy(&r->lock);
  free(r);
}

void kiln_reuse_detach(kiln_buffer *to, const kiln_buffer *from,
                       size_t bytes) {
  const size_t core = sizeof(kiln_buffer);
  memcpy((char *)to + core, (const char *)from + core, bytes - core);
  memset(to, 0, core);
  to->base.type = from->base.type;
  to->base.context = from->base.context;
  to->size = from->size;
  to->device_address = from->device_address;
  to->stream_ordered = from->stream_ordered;
}

void kiln_reuse_attach(kiln_buffer *to, const kiln_buffer *from,
                       size_t bytes) {
  const size_t core = sizeof(kiln_buffer);
  memcpy((char *)to + core, (const char *)from + core, bytes - core);
  to->device_address = from->device_address;
}

/* Empties slot k into *o, pinning its stream. r->lock held. */
static void take_out(kiln_reuse *r, slot *k, out *o) {
  o->copy = k->copy;
  o->stream = k->stream;
  atomic_fetch_add(&k->stream->pins, 1);
  r->counted -= k->counted;
  k->copy = NULL;
  k->stream = NULL;
}

/* Gives each buffer taken out to the backend's pool on its stream, then
 * unpins the stream; on a lost device the buffer is released as the
 * synchronous destroy releases one, since nothing runs any more. Without
 * r->lock. */
static void give_back(kiln_context *ctx, out *outs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    out *o = &outs[i];
    kiln_status st = KILN_OK;
    if (atomic_load(&ctx->lost))
      ctx->ops->buffer_deinit(o->copy);
    else
      st = kiln_context_result(
          ctx, ctx->ops->memory->buffer_deinit_async(o->copy, o->stream));
    if (st != KILN_OK)
      kiln_log(KILN_LOG_WARN,
               "%s: giving a kept %zu-byte buffer back to the pool: %s; its "
               "memory stays reserved until the context goes",
               ctx->ops->name, o->copy->size, kiln_last_error());
    atomic_fetch_sub(&o->stream->pins, 1);
    free(o->copy);
  }
}

bool kiln_reuse_take(kiln_reuse *r, const kiln_context *ctx,
                     const kiln_stream *s, kiln_buffer *buf) {
  if (buf->size > REUSE_LARGEST) return false;
  bool taken = false;
  pthread_mutex_lock(&r->lock);
  if (r->counted > 0) {
    slot *best = NULL;
    for (size_t i = 0; i < REUSE_SLOTS; i++) {
      slot *k = &r->slots[i];
      /* The most recent: its lines are the likeliest still cached. */
      if (k->stream == s && k->copy->size == buf->size &&
          (!best || k->used > best->used))
        best = k;
    }
    if (best) {
      kiln_reuse_attach(buf, best->copy, ctx->ops->buffer_size);
      r->counted -= best->counted;
      best->stream = NULL;
      taken = true;
    }
  }
  pthread_mutex_unlock(&r->lock);
  return taken;
}

/* The least recently kept occupied slot, of stream s where s is not
 * NULL; NULL if none. */
static slot *oldest(kiln_reuse *r, const kiln_stream *s) {
  slot *o = NULL;
  for (size_t i = 0; i < REUSE_SLOTS; i++) {
    slot *k = &r->slots[i];
    if (k->stream && (!s || k->stream == s) && (!o || k->used < o->used))
      o = k;
  }
  return o;
}

/* An empty slot, one with storage first; NULL if none. */
static slot *empty(kiln_reuse *r) {
  slot *e = NULL;
  for (size_t i = 0; i < REUSE_SLOTS; i++) {
    slot *k = &r->slots[i];
    if (!k->stream && (!e || (k->copy && !e->copy))) e = k;
  }
  return e;
}

bool kiln_reuse_keep(kiln_reuse *r, kiln_context *ctx, kiln_stream *s,
                     const kiln_buffer *buf) {
  if (buf->size > REUSE_LARGEST) return false;
  const size_t counted = ctx->ops->memory->buffer_pool_bytes(buf);
  out pushed[REUSE_SLOTS];
  size_t n = 0;
  bool kept = false;
  pthread_mutex_lock(&r->lock);
  while (counted <= r->most) {
    slot *e = empty(r);
    if (e && r->counted + counted <= r->most) {
      if (!e->copy && !(e->copy = malloc(ctx->ops->buffer_size))) break;
      kiln_reuse_detach(e->copy, buf, ctx->ops->buffer_size);
      e->stream = s;
      e->counted = counted;
      e->used = ++r->clock;
      r->counted += counted;
      kept = true;
      break;
    }
    /* Only this stream's: another's would queue work on that stream. */
    slot *o = oldest(r, s);
    if (!o) break;
    take_out(r, o, &pushed[n++]);
  }
  pthread_mutex_unlock(&r->lock);
  give_back(ctx, pushed, n);
  return kept;
}

void kiln_reuse_set_keep(kiln_reuse *r, kiln_context *ctx, size_t keep) {
  out pushed[REUSE_SLOTS];
  size_t n = 0;
  pthread_mutex_lock(&r->lock);
  r->most = keep < REUSE_BYTES ? keep : REUSE_BYTES;
  for (slot *o; r->counted > r->most && (o = oldest(r, NULL));)
    take_out(r, o, &pushed[n++]);
  pthread_mutex_unlock(&r->lock);
  give_back(ctx, pushed, n);
}

void kiln_reuse_flush(kiln_reuse *r, kiln_context *ctx, const kiln_stream *s) {
  out pushed[REUSE_SLOTS];
  size_t n = 0;
  pthread_mutex_lock(&r->lock);
  for (size_t i = 0; i < REUSE_SLOTS; i++) {
    slot *k = &r->slots[i];
    if (k->stream && (!s || k->stream == s)) take_out(r, k, &pushed[n++]);
  }
  pthread_mutex_unlock(&r->lock);
  give_back(ctx, pushed, n);
}

size_t kiln_reuse_counted(kiln_reuse *r) {
  pthread_mutex_lock(&r->lock);
  const size_t counted = r->counted;
  pthread_mutex_unlock(&r->lock);
  return counted;
}
