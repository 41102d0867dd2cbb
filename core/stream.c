/* Streams: in-order queues of work; each context has a default one. */
#include "core/internal.h"

kiln_status kiln_stream_create_internal(kiln_context *ctx, bool is_default,
                                        kiln_stream **out) {
  kiln_stream *s = kiln_object_alloc(ctx, KILN_OBJECT_STREAM,
                                     ctx->ops->stream_size, is_default);
  if (!s) return KILN_ERROR_OUT_OF_HOST_MEMORY;
  s->is_default = is_default;
  kiln_status st = kiln_context_result(ctx, ctx->ops->stream_init(s));
  if (st != KILN_OK) {
    kiln_object_free(s);
    return st;
  }
  *out = s;
  return KILN_OK;
}

kiln_status kiln_stream_create(kiln_context *ctx, kiln_stream **out_stream) {
  static const char fn[] = "kiln_stream_create";
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st != KILN_OK) return st;
  if (!out_stream)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: out_stream is NULL",
                          fn);
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  return kiln_stream_create_internal(ctx, false, out_stream);
}

void kiln_stream_release(kiln_stream *s) {
  kiln_context *ctx = s->base.context;
  if (!atomic_load(&ctx->lost))
    kiln_context_result(ctx, ctx->ops->stream_synchronize(s));
  if (s->scratch) kiln_buffer_release(s->scratch);
  ctx->ops->stream_deinit(s);
  kiln_object_free(s);
}

kiln_status kiln_stream_destroy(kiln_stream *s) {
  if (!s) return KILN_OK;
  kiln_status st = kiln_object_check(s, KILN_OBJECT_STREAM,
                                     "kiln_stream_destroy", "stream");
  if (st != KILN_OK) return st;
  if (s->is_default)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "kiln_stream_destroy: the default stream belongs "
                          "to its context and is released with it");
  kiln_stream_release(s);
  return KILN_OK;
}

kiln_status kiln_stream_synchronize(kiln_stream *s) {
  kiln_status st = kiln_object_check(s, KILN_OBJECT_STREAM,
                                     "kiln_stream_synchronize", "stream");
  if (st != KILN_OK) return st;
  kiln_context *ctx = s->base.context;
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  return kiln_context_result(ctx, ctx->ops->stream_synchronize(s));
}
