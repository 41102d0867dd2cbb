/* Copies between buffers of two contexts (two devices, or two contexts on
 * one device), ordered on a stream of each: their checks, then a command
 * for the door (core/submit/submit.c, which also fences two streams of one
 * context); and whether such copies go device to device. */
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
  const kiln_command c = {.kind = KILN_COMMAND_COPY_PEER,
                          .fn = fn,
                          .dst = dst,
                          .dst_offset = dst->guard + dst_offset,
                          .src = src,
                          .src_offset = src->guard + src_offset,
                          .size = size,
                          .src_stream = ss};
  return kiln_submit(ds, &c);
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
  if (!direct && !a->ops->peers)
    return kiln_unsupported(a->ops, fn, "copies between contexts", NULL);
  if (!direct && (st = a->ops->peers->peer_direct(a, b, &direct)) != KILN_OK)
    return kiln_error_in(fn, st);
  *out_direct = direct;
  return KILN_OK;
}
