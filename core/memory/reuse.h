/* What core/memory/pool.c asks of reuse.c: a few buffers released in
 * stream order, kept whole for their stream's next create of the same
 * size. Private to the two. */
#ifndef KILN_CORE_MEMORY_REUSE_H
#define KILN_CORE_MEMORY_REUSE_H

#include "core/internal.h"

typedef struct kiln_reuse kiln_reuse;

/* NULL when out of host memory. Closing frees what is kept without giving
 * it back to the backend: call kiln_reuse_flush first unless the device
 * is gone. */
kiln_reuse *kiln_reuse_open(void);
void kiln_reuse_close(kiln_reuse *r);

/* Writes into `to` (`bytes`: the backend's buffer_size) what the backend
 * needs of `from` to release it later: the backend's part, the address,
 * size and context. Not the core's list links, which other threads'
 * creates and destroys change under the context's lock while `from` is
 * still on the list. */
void kiln_reuse_detach(kiln_buffer *to, const kiln_buffer *from,
                       size_t bytes);
/* The other way: gives `to` (its core fields set by the caller) the
 * backend's part and the address of `from`, a copy made by detach. */
void kiln_reuse_attach(kiln_buffer *to, const kiln_buffer *from,
                       size_t bytes);

/* Whether `buf` (size set, backend part not) took a buffer released on s
 * of buf->size bytes: then its backend part and address are that buffer's,
 * which no stream but s can still be using. */
bool kiln_reuse_take(kiln_reuse *r, const kiln_context *ctx,
                     const kiln_stream *s, kiln_buffer *buf);

/* Keeps `buf`, released on s, for s's next create of its size, unless it
 * is too large or there is no room: false then, and the caller releases
 * it. Room is made only by giving back the buffers kept for s, least
 * recent first (on s, as the caller's release would be): another stream's
 * would queue work on that stream, which may be full. */
bool kiln_reuse_keep(kiln_reuse *r, kiln_context *ctx, kiln_stream *s,
                     const kiln_buffer *buf);

/* The pool's keep setting (kiln_context_set_pool_keep), which bounds what
 * is kept here too; kept buffers past it are released at once. */
void kiln_reuse_set_keep(kiln_reuse *r, kiln_context *ctx, size_t keep);

/* Releases to the backend's pool, each on its own stream, what is kept
 * for s, or for every stream where s is NULL. */
void kiln_reuse_flush(kiln_reuse *r, kiln_context *ctx, const kiln_stream *s);

/* What the backend's `used` figure counts for the buffers kept
 * (buffer_pool_bytes of each): the measure of every bound here. */
size_t kiln_reuse_counted(kiln_reuse *r);

#endif /* KILN_CORE_MEMORY_REUSE_H */
