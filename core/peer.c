/* Copies between buffers of two contexts (two devices, or two contexts on
 * one device), ordered on a stream of each, and whether such copies go
 * device to device. */
#include "core/internal.h"

/* A stream argument: NULL is the context's default stream, else a live
 * stream of that context (a stream of the other context is the caller's
 * likeliest mistake, and is KILN_ERROR_WRONG_CONTEXT). */
static kiln_status resolve(kiln_stream *stream, kiln_context *ctx,
                           const char *fn, const char *what,
                           kiln_stream **out) {
  if (!stream) {
    *out = ctx->default_stream;
    return KILN_OK;
  }
  kiln_status st = kiln_object_check_in(stream, KILN_OBJECT_STREAM, ctx, fn,
                                        what);
  if (st == KILN_OK) *out = stream;
  return st;
}

/* Makes `later` wait for the work queued so far on `earlier`, a stream of
 * the same context, through an internal event released at once (a backend
 * without stream_wait_event waits on the host instead). */
static kiln_status order_after(kiln_stream *later, kiln_stream *earlier) {
  kiln_context *ctx = earlier->base.context;
  const kiln_backend_ops *ops = ctx->ops;
  kiln_event *e =
      kiln_object_alloc(ctx, KILN_OBJECT_EVENT, ops->event_size, true);
  if (!e) return KILN_ERROR_OUT_OF_HOST_MEMORY;
  kiln_status st = ops->event_init(e);
  if (st != KILN_OK) {
    kiln_object_free(e);
    return st;
  }
  st = ops->event_record(e, earlier);
  if (st == KILN_OK) {
    e->recorded = true;
    st = ops->stream_wait_event ? ops->stream_wait_event(later, e)
                                : ops->event_synchronize(e, KILN_WAIT_FOREVER);
  }
  kiln_event_release(e);
  return st;
}

/* One context: an ordinary copy on dst_s, fenced with src_s both ways. */
static kiln_status copy_within(kiln_stream *dst_s, kiln_buffer *dst,
                               size_t dst_off, kiln_stream *src_s,
                               const kiln_buffer *src, size_t src_off,
                               size_t size) {
  kiln_status st = KILN_OK;
  if (src_s != dst_s) st = order_after(dst_s, src_s);
  if (st == KILN_OK)
    st = kiln_copy_native(dst_s, dst, dst_off, src, src_off, size);
  if (st == KILN_OK && src_s != dst_s) st = order_after(src_s, dst_s);
  return st;
}

kiln_status kiln_buffer_copy_peer(kiln_stream *dst_stream, kiln_buffer *dst,
                                  size_t dst_offset, kiln_stream *src_stream,
                                  const kiln_buffer *src, size_t src_offset,
                                  size_t size) {
  static const char fn[] = "kiln_buffer_copy_peer";
  kiln_status st =
      kiln_object_check(dst, KILN_OBJECT_BUFFER, fn, "the destination buffer");
  if (st == KILN_OK)
    st = kiln_object_check(src, KILN_OBJECT_BUFFER, fn, "the source buffer");
  if (st != KILN_OK) return st;
  kiln_context *dctx = dst->base.context, *sctx = src->base.context;
  if ((st = kiln_context_check_usable(dctx)) != KILN_OK ||
      (st = kiln_context_check_usable(sctx)) != KILN_OK)
    return st;
  if (dctx->ops != sctx->ops)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "%s: the destination buffer is of a %s context and "
                          "the source buffer of a %s one; kiln copies "
                          "between contexts of one backend",
                          fn, dctx->ops->name, sctx->ops->name);
  kiln_stream *ds, *ss;
  if ((st = resolve(dst_stream, dctx, fn,
                    "dst_stream (a stream of the destination buffer's "
                    "context)",
                    &ds)) != KILN_OK ||
      (st = resolve(src_stream, sctx, fn,
                    "src_stream (a stream of the source buffer's context)",
                    &ss)) != KILN_OK)
    return st;
  if ((st = kiln_check_range(dst_offset, size, dst->size, fn,
                             "the destination buffer")) != KILN_OK ||
      (st = kiln_check_range(src_offset, size, src->size, fn,
                             "the source buffer")) != KILN_OK)
    return st;
  if (src == dst && size && src_offset < dst_offset + size &&
      dst_offset < src_offset + size)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: source [%zu, %zu) and destination [%zu, %zu) "
                          "overlap in the same buffer",
                          fn, src_offset, src_offset + size, dst_offset,
                          dst_offset + size);
  if ((st = kiln_capture_refuse(ds, fn)) != KILN_OK ||
      (st = kiln_capture_refuse(ss, fn)) != KILN_OK)
    return st;
  if (size == 0) return KILN_OK;
  const kiln_backend_ops *ops = dctx->ops;
  dst_offset += dst->guard;
  src_offset += src->guard;
  if (dctx == sctx) {
    if (!ops->buffer_copy)
      return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                            "%s: the %s backend cannot copy between buffers",
                            fn, ops->name);
    return kiln_error_in(fn, kiln_context_result(
                                 dctx, copy_within(ds, dst, dst_offset, ss,
                                                   src, src_offset, size)));
  }
  if (!ops->buffer_copy_peer)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "%s: the %s backend cannot copy between contexts",
                          fn, ops->name);
  static const char after[] =
      "nothing was copied; the work goes on and the contexts stay usable";
  if (ops->peer_copy_waits &&
      ((kiln_waits_bounded(sctx) &&
        (st = kiln_stream_wait(ss, fn, after)) != KILN_OK) ||
       (kiln_waits_bounded(dctx) &&
        (st = kiln_stream_wait(ds, fn, after)) != KILN_OK)))
    return st;
  return kiln_error_in(
      fn, kiln_context_result(dctx, ops->buffer_copy_peer(ds, dst, dst_offset,
                                                          ss, src, src_offset,
                                                          size)));
}

kiln_status kiln_context_can_copy_peer(const kiln_context *a,
                                       const kiln_context *b,
                                       bool *out_direct) {
  static const char fn[] = "kiln_context_can_copy_peer";
  kiln_status st = kiln_object_check(a, KILN_OBJECT_CONTEXT, fn, "context a");
  if (st == KILN_OK)
    st = kiln_object_check(b, KILN_OBJECT_CONTEXT, fn, "context b");
  if (st != KILN_OK) return st;
  if (!out_direct)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: out_direct is NULL", fn);
  if (a->ops != b->ops)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "%s: context a is a %s context and context b a %s "
                          "one; kiln copies between contexts of one backend",
                          fn, a->ops->name, b->ops->name);
  bool direct = a == b;
  if (!direct && a->ops->peer_direct &&
      (st = a->ops->peer_direct(a, b, &direct)) != KILN_OK)
    return kiln_error_in(fn, st);
  *out_direct = direct;
  return KILN_OK;
}
