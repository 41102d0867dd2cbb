/* Memory in stream order (kiln.h): the checks of the stream-ordered create
 * and release, each then a command for the door (core/submit/submit.c),
 * and the context's pool settings; the pools are core/memory/pool.c's. */
#include "core/internal.h"

/* Inside a capture: the graph's buffer, made now and once, which every
 * replay reuses (the door keeps the command that holds it, and zeroes it
 * at each replay for KILN_BUFFER_ZERO). Not the context's to count among
 * live objects: the graph releases it when it goes. */
static kiln_status create_captured(kiln_stream *s, size_t size,
                                   uint32_t flags, kiln_buffer **out) {
  static const char fn[] = "kiln_buffer_create_async";
  kiln_buffer *buf;
  kiln_status st = kiln_buffer_create_internal(s->base.context, size, &buf);
  if (st != KILN_OK) return kiln_error_in(fn, st);
  buf->stream_ordered = true;
  buf->graph_owned = true;
  const kiln_command c = {.kind = KILN_COMMAND_ALLOC,
                          .fn = fn,
                          .dst = buf,
                          .size = size,
                          .flags = flags};
  if ((st = kiln_submit(s, &c)) != KILN_OK) {
    /* A zero fill that could not be kept leaves the graph holding it. */
    if (!atomic_load(&buf->base.graph_refs)) kiln_buffer_release(buf);
    return kiln_error_in(fn, st);
  }
  *out = buf;
  return KILN_OK;
}

kiln_status kiln_buffer_create_async(kiln_stream *stream, size_t size,
                                     uint32_t flags, kiln_buffer **out_buffer) {
  static const char fn[] = "kiln_buffer_create_async";
  kiln_status st = kiln_object_check(stream, KILN_OBJECT_STREAM, fn, "stream");
  if (st != KILN_OK ||
      (st = kiln_buffer_check_create(fn, size, flags, out_buffer)) != KILN_OK)
    return st;
  kiln_context *ctx = stream->base.context;
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  if (kiln_stream_capturing(stream))
    return create_captured(stream, size, flags, out_buffer);
  /* The guard's bytes are checked when the host knows the kernels are
   * done, which a release in stream order never learns: under
   * KILN_DEBUG=guard both calls are the synchronous ones. */
  if (ctx->guard) {
    st = kiln_buffer_create(ctx, size, flags, out_buffer);
    if (st == KILN_OK) (*out_buffer)->stream_ordered = true;
    return kiln_error_in(fn, st);
  }
  kiln_buffer *buf = kiln_object_alloc(ctx, KILN_OBJECT_BUFFER,
                                       ctx->ops->buffer_size, false);
  if (!buf) return KILN_ERROR_OUT_OF_HOST_MEMORY;
  buf->size = size;
  buf->stream_ordered = true;
  kiln_command c = {
      .kind = KILN_COMMAND_ALLOC, .fn = fn, .dst = buf, .size = size,
      .flags = flags};
  if ((st = kiln_submit(stream, &c)) != KILN_OK) {
    kiln_object_free(buf);
    return kiln_error_in(fn, st);
  }
  *out_buffer = buf;
  return KILN_OK;
}

kiln_status kiln_buffer_destroy_async(kiln_stream *stream,
                                      kiln_buffer *buffer) {
  static const char fn[] = "kiln_buffer_destroy_async";
  if (!buffer) return KILN_OK;
  kiln_status st = kiln_object_check(buffer, KILN_OBJECT_BUFFER, fn, "buffer");
  if (st != KILN_OK) return st;
  kiln_context *ctx = buffer->base.context;
  kiln_stream *s;
  if ((st = kiln_stream_resolve(stream, ctx, fn, &s)) != KILN_OK) return st;
  if (!buffer->stream_ordered)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: the buffer was made by %s, not by "
                          "kiln_buffer_create_async; release it with "
                          "kiln_buffer_destroy; nothing was freed",
                          fn,
                          buffer->module ? "a module (a global variable)"
                                         : "kiln_buffer_create");
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  kiln_command c = {.kind = KILN_COMMAND_FREE, .fn = fn, .dst = buffer,
                    .size = buffer->size};
  /* In a capture the door checks that the capture made the buffer, which
   * its graph then holds; the buffer stays the graph's. */
  if (kiln_stream_capturing(s)) return kiln_error_in(fn, kiln_submit(s, &c));
  if ((st = kiln_check_not_held(buffer, fn, "buffer")) != KILN_OK) return st;
  if (ctx->guard) return kiln_buffer_destroy(buffer);
  if ((st = kiln_submit(s, &c)) != KILN_OK) return kiln_error_in(fn, st);
  kiln_object_free(buffer);
  return KILN_OK;
}

kiln_status kiln_context_pool_usage(kiln_context *ctx, size_t *out_reserved,
                                    size_t *out_used) {
  static const char fn[] = "kiln_context_pool_usage";
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st != KILN_OK) return st;
  size_t reserved = 0, used = 0;
  if ((st = kiln_pool_usage(ctx, &reserved, &used)) != KILN_OK)
    return kiln_error_in(fn, st);
  if (out_reserved) *out_reserved = reserved;
  if (out_used) *out_used = used;
  return KILN_OK;
}

kiln_status kiln_context_set_pool_keep(kiln_context *ctx, size_t bytes) {
  static const char fn[] = "kiln_context_set_pool_keep";
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st != KILN_OK) return st;
  return kiln_error_in(fn, kiln_pool_set_keep(ctx, bytes));
}

kiln_status kiln_context_trim_pool(kiln_context *ctx, size_t keep_bytes) {
  static const char fn[] = "kiln_context_trim_pool";
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st != KILN_OK) return st;
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  return kiln_error_in(fn, kiln_pool_trim(ctx, keep_bytes));
}
