/* A few buffers released in stream order on a backend's pool, kept whole
 * for their stream's next create of the same size (kiln.h, "Memory in
 * stream order"; docs/design.md, "Reuse on the releasing stream").
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
 * setting), and
 * goes to the backend's pool, on its own stream, when it is pushed out,
 * when its stream goes, at trims, when the device is full and at the
 * context's end.
 *
 * Every call to the backend happens under the lock, so that a stream's
 * destroy, which flushes its buffers first, never races a release on it. */
#include <stdlib.h>
#include <string.h>

#include "core/memory/reuse.h"

/* Buffers of up to 4 MiB: beyond that the driver's call costs little
 * beside what fills the buffer, and the memory does more good in the
 * backend's pool, where every stream can have it. */
#define REUSE_LARGEST ((size_t)4 << 20)
#define REUSE_SLOTS 8
/* All of them together: what a pool with room for others may hold back. */
#define REUSE_BYTES ((size_t)16 << 20)

typedef struct slot {
  kiln_buffer *copy;  /* the released buffer's struct; storage kept empty */
  kiln_stream *stream; /* NULL: the slot is empty */
  uint64_t used;       /* when it was kept, for the least recent */
} slot;

struct kiln_reuse {
  pthread_mutex_t lock;
  slot slots[REUSE_SLOTS];
  size_t bytes;
  size_t most; /* what may be kept: REUSE_BYTES, or less by the keep */
  uint64_t clock;
};

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

/* Gives slot k's buffer to the backend's pool on its stream; on a lost
 * device the memory goes with the device. r->lock held. */
static void release(kiln_reuse *r, kiln_context *ctx, slot *k) {
  kiln_status st =
      atomic_load(&ctx->lost)
          ? KILN_OK
          : ctx->ops->memory->buffer_deinit_async(k->copy, k->stream);
  if (st != KILN_OK)
    kiln_log(KILN_LOG_WARN,
             "%s: giving a kept %zu-byte buffer back to the pool: %s; its "
             "memory stays reserved until the context goes",
             ctx->ops->name, k->copy->size, kiln_last_error());
  r->bytes -= k->copy->size;
  k->stream = NULL;
}

bool kiln_reuse_take(kiln_reuse *r, const kiln_context *ctx,
                     const kiln_stream *s, kiln_buffer *buf) {
  if (buf->size > REUSE_LARGEST) return false;
  bool taken = false;
  pthread_mutex_lock(&r->lock);
  if (r->bytes > 0) {
    slot *best = NULL;
    for (size_t i = 0; i < REUSE_SLOTS; i++) {
      slot *k = &r->slots[i];
      /* The most recent: its lines are the likeliest still cached. */
      if (k->stream == s && k->copy->size == buf->size &&
          (!best || k->used > best->used))
        best = k;
    }
    if (best) {
      const size_t core = sizeof(kiln_buffer);
      memcpy((char *)buf + core, (char *)best->copy + core,
             ctx->ops->buffer_size - core);
      buf->device_address = best->copy->device_address;
      r->bytes -= buf->size;
      best->stream = NULL;
      taken = true;
    }
  }
  pthread_mutex_unlock(&r->lock);
  return taken;
}

/* The least recently kept occupied slot; NULL if none. */
static slot *oldest(kiln_reuse *r) {
  slot *o = NULL;
  for (size_t i = 0; i < REUSE_SLOTS; i++)
    if (r->slots[i].stream && (!o || r->slots[i].used < o->used))
      o = &r->slots[i];
  return o;
}

bool kiln_reuse_keep(kiln_reuse *r, kiln_context *ctx, kiln_stream *s,
                     const kiln_buffer *buf) {
  if (buf->size > REUSE_LARGEST) return false;
  pthread_mutex_lock(&r->lock);
  if (buf->size > r->most) {
    pthread_mutex_unlock(&r->lock);
    return false;
  }
  slot *free_slot = NULL;
  for (;;) {
    for (size_t i = 0; i < REUSE_SLOTS && !free_slot; i++)
      if (!r->slots[i].stream) free_slot = &r->slots[i];
    if (free_slot && r->bytes + buf->size <= r->most) break;
    slot *o = oldest(r);
    release(r, ctx, o);
    if (!free_slot) free_slot = o;
  }
  if (!free_slot->copy && !(free_slot->copy = malloc(ctx->ops->buffer_size))) {
    pthread_mutex_unlock(&r->lock);
    return false;
  }
  kiln_reuse_detach(free_slot->copy, buf, ctx->ops->buffer_size);
  free_slot->stream = s;
  free_slot->used = ++r->clock;
  r->bytes += buf->size;
  pthread_mutex_unlock(&r->lock);
  return true;
}

void kiln_reuse_set_keep(kiln_reuse *r, kiln_context *ctx, size_t keep) {
  pthread_mutex_lock(&r->lock);
  r->most = keep < REUSE_BYTES ? keep : REUSE_BYTES;
  for (slot *o; r->bytes > r->most && (o = oldest(r));) release(r, ctx, o);
  pthread_mutex_unlock(&r->lock);
}

void kiln_reuse_flush(kiln_reuse *r, kiln_context *ctx, const kiln_stream *s) {
  pthread_mutex_lock(&r->lock);
  for (size_t i = 0; i < REUSE_SLOTS && r->bytes > 0; i++) {
    slot *k = &r->slots[i];
    if (k->stream && (!s || k->stream == s)) release(r, ctx, k);
  }
  pthread_mutex_unlock(&r->lock);
}

size_t kiln_reuse_bytes(kiln_reuse *r) {
  pthread_mutex_lock(&r->lock);
  const size_t bytes = r->bytes;
  pthread_mutex_unlock(&r->lock);
  return bytes;
}
