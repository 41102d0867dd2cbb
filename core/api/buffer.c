/* Device buffers: creation, and the checks of the stream-ordered
 * transfers, copies and fills between host memory, host buffers and device
 * buffers, each then a command for the door (core/submit/submit.c). */
#include <string.h>

#include "core/internal.h"

static kiln_status create(kiln_context *ctx, size_t size, uint32_t flags,
                          bool internal, kiln_buffer **out) {
  const size_t guard = ctx->guard ? KILN_GUARD_BYTES : 0;
  if (size > SIZE_MAX - 2 * guard)
    return kiln_set_error(KILN_ERROR_OUT_OF_DEVICE_MEMORY,
                          "kiln_buffer_create: %zu bytes and the 2 x %zu "
                          "guard bytes of KILN_DEBUG=guard exceed the "
                          "address space",
                          size, guard);
  kiln_buffer *buf = kiln_object_alloc(ctx, KILN_OBJECT_BUFFER,
                                       ctx->ops->buffer_size, internal);
  if (!buf) return KILN_ERROR_OUT_OF_HOST_MEMORY;
  buf->guard = guard;
  buf->size = size + 2 * guard; /* what buffer_init allocates */
  kiln_status st = kiln_context_result(ctx, ctx->ops->buffer_init(buf, flags));
  buf->size = size;
  if (st == KILN_OK && guard && (st = kiln_guard_arm(buf)) != KILN_OK)
    ctx->ops->buffer_deinit(buf);
  if (st != KILN_OK) {
    kiln_object_free(buf);
    return st;
  }
  *out = buf;
  return KILN_OK;
}

kiln_status kiln_buffer_check_create(const char *fn, size_t size,
                                     uint32_t flags, kiln_buffer **out_buffer) {
  if (!out_buffer)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: out_buffer is NULL",
                          fn);
  if (size == 0)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: size is 0; a buffer holds at least one byte",
                          fn);
  if (flags & ~(uint32_t)KILN_BUFFER_ZERO)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: unknown flags 0x%x", fn,
                          (unsigned)(flags & ~(uint32_t)KILN_BUFFER_ZERO));
  return KILN_OK;
}

kiln_status kiln_buffer_create(kiln_context *ctx, size_t size, uint32_t flags,
                               kiln_buffer **out_buffer) {
  static const char fn[] = "kiln_buffer_create";
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st != KILN_OK ||
      (st = kiln_buffer_check_create(fn, size, flags, out_buffer)) != KILN_OK)
    return st;
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  return kiln_error_in(fn, create(ctx, size, flags, false, out_buffer));
}

kiln_status kiln_buffer_create_internal(kiln_context *ctx, size_t size,
                                        kiln_buffer **out) {
  return create(ctx, size, 0, true, out);
}

void kiln_buffer_release(kiln_buffer *buf) {
  if (buf->guard) kiln_guard_forget(buf);
  if (buf->stream_ordered) kiln_pool_forget(buf);
  buf->base.context->ops->buffer_deinit(buf);
  kiln_object_free(buf);
}

kiln_status kiln_buffer_destroy(kiln_buffer *buf) {
  static const char fn[] = "kiln_buffer_destroy";
  if (!buf) return KILN_OK;
  kiln_status st = kiln_object_check(buf, KILN_OBJECT_BUFFER, fn, "buffer");
  if (st != KILN_OK) return st;
  if (buf->module)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: the buffer is the global variable '%.96s' of a "
                          "module, which owns it; it is released with the "
                          "module (kiln_module_destroy)",
                          fn, buf->global_name);
  if ((st = kiln_check_not_held(buf, fn, "buffer")) != KILN_OK) return st;
  /* The backend waits for every stream before it frees the memory; the
   * guard check needs that wait first. */
  kiln_context *ctx = buf->base.context;
  if ((kiln_waits_bounded(ctx) || ctx->guard) && !atomic_load(&ctx->lost) &&
      kiln_context_wait(ctx, fn,
                        "the buffer was not destroyed: destroy it again once "
                        "the work is done, or destroy the context") ==
          KILN_ERROR_TIMEOUT)
    return KILN_ERROR_TIMEOUT;
  st = ctx->guard ? kiln_guard_check_buffer(buf, fn) : KILN_OK;
  kiln_buffer_release(buf);
  return st;
}

size_t kiln_buffer_size(const kiln_buffer *buf) {
  if (kiln_object_check(buf, KILN_OBJECT_BUFFER, "kiln_buffer_size",
                        "buffer") != KILN_OK)
    return 0;
  return buf->size;
}

/* The checks every transfer shares: a live buffer, a usable context, a
 * stream of that context, and the byte range. */
static kiln_status check_transfer(const kiln_buffer *buf, size_t offset,
                                  size_t size, kiln_stream *stream,
                                  const char *fn, const char *what,
                                  kiln_stream **out_stream) {
  kiln_status st = kiln_object_check(buf, KILN_OBJECT_BUFFER, fn, what);
  if (st != KILN_OK) return st;
  kiln_context *ctx = buf->base.context;
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  if ((st = kiln_stream_resolve(stream, ctx, fn, out_stream)) != KILN_OK)
    return st;
  return kiln_check_range(offset, size, buf->size, fn, what);
}

kiln_status kiln_buffer_write(kiln_stream *stream, kiln_buffer *dst,
                              size_t dst_offset, const void *src, size_t size) {
  static const char fn[] = "kiln_buffer_write";
  kiln_stream *s;
  kiln_status st = check_transfer(dst, dst_offset, size, stream, fn,
                                  "the destination buffer", &s);
  if (st != KILN_OK) return st;
  if (!src && size)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: src is NULL", fn);
  const kiln_command c = {.kind = KILN_COMMAND_WRITE,
                          .fn = fn,
                          .dst = dst,
                          .dst_offset = dst->guard + dst_offset,
                          .size = size,
                          .from = src};
  return kiln_submit(s, &c);
}

kiln_status kiln_buffer_read(kiln_stream *stream, const kiln_buffer *src,
                             size_t src_offset, void *dst, size_t size) {
  static const char fn[] = "kiln_buffer_read";
  kiln_stream *s;
  kiln_status st = check_transfer(src, src_offset, size, stream, fn,
                                  "the source buffer", &s);
  if (st != KILN_OK) return st;
  if (!dst && size)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: dst is NULL", fn);
  const kiln_command c = {.kind = KILN_COMMAND_READ,
                          .fn = fn,
                          .src = src,
                          .src_offset = src->guard + src_offset,
                          .size = size,
                          .to = dst};
  return kiln_submit(s, &c);
}

kiln_status kiln_buffer_copy(kiln_stream *stream, kiln_buffer *dst,
                             size_t dst_offset, const kiln_buffer *src,
                             size_t src_offset, size_t size) {
  static const char fn[] = "kiln_buffer_copy";
  kiln_stream *s;
  kiln_status st = check_transfer(dst, dst_offset, size, stream, fn,
                                  "the destination buffer", &s);
  if (st != KILN_OK) return st;
  kiln_context *ctx = dst->base.context;
  st = kiln_object_check_in(src, KILN_OBJECT_BUFFER, ctx, fn,
                            "the source buffer");
  if (st != KILN_OK) return st;
  st = kiln_check_range(src_offset, size, src->size, fn, "the source buffer");
  if (st != KILN_OK) return st;
  if (src == dst && size && src_offset < dst_offset + size &&
      dst_offset < src_offset + size)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: source [%zu, %zu) and destination [%zu, %zu) "
                          "overlap in the same buffer",
                          fn, src_offset, src_offset + size, dst_offset,
                          dst_offset + size);
  if (size == 0) return KILN_OK;
  const kiln_command c = {.kind = KILN_COMMAND_COPY,
                          .fn = fn,
                          .dst = dst,
                          .dst_offset = dst->guard + dst_offset,
                          .src = src,
                          .src_offset = src->guard + src_offset,
                          .size = size};
  return kiln_submit(s, &c);
}

/* The narrowest pattern that describes `*pattern` of `size` bytes: one
 * whose halves are equal is its half repeated (0 as an 8-byte pattern is a
 * byte fill). Offset and size stay multiples of the smaller size. */
static size_t narrow_pattern(uint64_t *pattern, size_t size) {
  while (size > 1) {
    unsigned bits = (unsigned)(size * 4);
    uint64_t low = *pattern & ((UINT64_C(1) << bits) - 1);
    if (*pattern >> bits != low) break;
    *pattern = low;
    size /= 2;
  }
  return size;
}

kiln_status kiln_buffer_fill(kiln_stream *stream, kiln_buffer *dst,
                             size_t offset, size_t size, const void *pattern,
                             size_t pattern_size) {
  static const char fn[] = "kiln_buffer_fill";
  kiln_stream *s;
  kiln_status st = check_transfer(dst, offset, size, stream, fn,
                                  "the destination buffer", &s);
  if (st != KILN_OK) return st;
  if (!pattern)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: pattern is NULL",
                          fn);
  if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4 &&
      pattern_size != 8)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: pattern_size is %zu; it must be 1, 2, 4 or 8",
                          fn, pattern_size);
  if (offset % pattern_size || size % pattern_size)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: offset %zu and size %zu must be multiples of "
                          "the %zu-byte pattern",
                          fn, offset, size, pattern_size);
  if (size == 0) return KILN_OK;
  uint64_t p = 0;
  memcpy(&p, pattern, pattern_size);
  size_t width = narrow_pattern(&p, pattern_size);
  /* A module global's address may not be a multiple of 4, where the copy
   * engine's wider stores and kiln_fill's words would be misaligned. */
  const bool host = dst->module && dst->device_address % 4;
  const kiln_command c = {
      .kind = host ? KILN_COMMAND_FILL_HOST : KILN_COMMAND_FILL,
      .fn = fn,
      .dst = dst,
      .dst_offset = dst->guard + offset,
      .size = size,
      .pattern = p,
      .pattern_size = width};
  return kiln_submit(s, &c);
}

kiln_status kiln_buffer_write_async(kiln_stream *stream, kiln_buffer *dst,
                                    size_t dst_offset,
                                    const kiln_host_buffer *src,
                                    size_t src_offset, size_t size) {
  static const char fn[] = "kiln_buffer_write_async";
  kiln_stream *s;
  kiln_status st = check_transfer(dst, dst_offset, size, stream, fn,
                                  "the destination buffer", &s);
  if (st != KILN_OK) return st;
  kiln_context *ctx = dst->base.context;
  st = kiln_object_check_in(src, KILN_OBJECT_HOST_BUFFER, ctx, fn,
                            "the source host buffer");
  if (st != KILN_OK) return st;
  st = kiln_check_range(src_offset, size, src->size, fn,
                        "the source host buffer");
  if (st != KILN_OK) return st;
  const kiln_command c = {.kind = KILN_COMMAND_WRITE_ASYNC,
                          .fn = fn,
                          .dst = dst,
                          .dst_offset = dst->guard + dst_offset,
                          .size = size,
                          .host_from = src,
                          .host_offset = src_offset};
  return kiln_submit(s, &c);
}

kiln_status kiln_buffer_read_async(kiln_stream *stream, const kiln_buffer *src,
                                   size_t src_offset, kiln_host_buffer *dst,
                                   size_t dst_offset, size_t size) {
  static const char fn[] = "kiln_buffer_read_async";
  kiln_stream *s;
  kiln_status st = check_transfer(src, src_offset, size, stream, fn,
                                  "the source buffer", &s);
  if (st != KILN_OK) return st;
  kiln_context *ctx = src->base.context;
  st = kiln_object_check_in(dst, KILN_OBJECT_HOST_BUFFER, ctx, fn,
                            "the destination host buffer");
  if (st != KILN_OK) return st;
  st = kiln_check_range(dst_offset, size, dst->size, fn,
                        "the destination host buffer");
  if (st != KILN_OK) return st;
  const kiln_command c = {.kind = KILN_COMMAND_READ_ASYNC,
                          .fn = fn,
                          .src = src,
                          .src_offset = src->guard + src_offset,
                          .size = size,
                          .host_to = dst,
                          .host_offset = dst_offset};
  return kiln_submit(s, &c);
}
