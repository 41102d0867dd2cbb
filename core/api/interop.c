/* Native handles in and out (kiln.h, "Native handles"; docs/interop.md):
 * the checks every backend would otherwise repeat, then the backend's op. */
#include <string.h>

#include "core/internal.h"

/* What every import checks first: `native` and the out-parameter given,
 * only known flags, and (for imports into a context, ctx not NULL) a
 * native handle of the context's own backend. */
static kiln_status check_import(const char *fn, kiln_context *ctx,
                                kiln_backend backend, bool have_native,
                                const void *out, const char *out_name,
                                uint32_t flags) {
  if (!have_native || !out)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                          have_native ? out_name : "native");
  if (flags & ~(uint32_t)KILN_NATIVE_ADOPT)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: unknown flags 0x%x (only KILN_NATIVE_ADOPT)", fn,
                          (unsigned)(flags & ~(uint32_t)KILN_NATIVE_ADOPT));
  if (!ctx) return KILN_OK;
  if (backend != ctx->ops->kind)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: native->backend is %s, the context's is %s", fn,
                          kiln_backend_name(backend), ctx->ops->name);
  return KILN_OK;
}

kiln_status kiln_context_get_native_sized(kiln_context *ctx, size_t native_size,
                                          kiln_native_context *out_native) {
  static const char fn[] = "kiln_context_get_native";
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st != KILN_OK) return st;
  if ((st = kiln_struct_out_check(fn, "out_native", out_native, native_size,
                                  KILN_NATIVE_CONTEXT_0_1)) != KILN_OK)
    return st;
  const kiln_interop_ops *interop = ctx->ops->interop;
  if (!interop) return kiln_unsupported(ctx->ops, fn, "native handles", NULL);
  kiln_native_context n;
  memset(&n, 0, sizeof n);
  n.backend = ctx->ops->kind;
  st = kiln_context_result(ctx, interop->context_native(ctx, &n));
  if (st != KILN_OK) return kiln_error_in(fn, st);
  kiln_struct_out(out_native, native_size, &n, sizeof n);
  return KILN_OK;
}

kiln_status kiln_context_create_from_native_sized(
    const kiln_native_context *caller_native, size_t native_size,
    uint32_t flags, kiln_context **out_context) {
  static const char fn[] = "kiln_context_create_from_native";
  kiln_status st =
      check_import(fn, NULL, KILN_BACKEND_AUTO, caller_native != NULL,
                   out_context, "out_context", flags);
  kiln_native_context n;
  if (st == KILN_OK)
    st = kiln_struct_in(fn, "native", &n, sizeof n, KILN_NATIVE_CONTEXT_0_1,
                        caller_native, native_size);
  if (st != KILN_OK) return st;
  const kiln_native_context *native = &n;
  if (native->backend != KILN_BACKEND_CUDA &&
      native->backend != KILN_BACKEND_HIP &&
      native->backend != KILN_BACKEND_VULKAN)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: native->backend is %d; it names the backend "
                          "of the handles (cuda, hip or vulkan)",
                          fn, (int)native->backend);
  const char *reason;
  if (kiln_registry_probe(native->backend, &reason) != KILN_OK)
    return kiln_set_error(KILN_ERROR_UNAVAILABLE,
                          "%s: backend %s is "
                          "unavailable: %s",
                          fn, kiln_backend_name(native->backend), reason);
  const kiln_backend_ops *ops = kiln_registry_get(native->backend);
  if (!ops->interop) return kiln_unsupported(ops, fn, "native handles", NULL);
  size_t device;
  st = ops->interop->context_import_device(native, &device);
  if (st != KILN_OK) return kiln_error_in(fn, st);
  st = kiln_context_open(fn, ops, device, KILN_SYNC_DEFAULT, native,
                         (flags & KILN_NATIVE_ADOPT) != 0, out_context);
  return kiln_error_in(fn, st);
}

kiln_status kiln_buffer_get_native_sized(const kiln_buffer *buf,
                                         size_t native_size,
                                         kiln_native_buffer *out_native) {
  static const char fn[] = "kiln_buffer_get_native";
  kiln_status st = kiln_object_check(buf, KILN_OBJECT_BUFFER, fn, "buffer");
  if (st != KILN_OK) return st;
  if ((st = kiln_struct_out_check(fn, "out_native", out_native, native_size,
                                  KILN_NATIVE_BUFFER_0_1)) != KILN_OK)
    return st;
  kiln_context *ctx = buf->base.context;
  const kiln_interop_ops *interop = ctx->ops->interop;
  if (!interop) return kiln_unsupported(ctx->ops, fn, "native handles", NULL);
  kiln_native_buffer n;
  memset(&n, 0, sizeof n);
  n.backend = ctx->ops->kind;
  n.device_address = buf->device_address + buf->guard;
  n.size = buf->size;
  st = kiln_context_result(ctx, interop->buffer_native(buf, &n));
  if (st != KILN_OK) return kiln_error_in(fn, st);
  kiln_struct_out(out_native, native_size, &n, sizeof n);
  return KILN_OK;
}

kiln_status kiln_buffer_create_from_native_sized(
    kiln_context *ctx, const kiln_native_buffer *caller_native,
    size_t native_size, uint32_t flags, kiln_buffer **out_buffer) {
  static const char fn[] = "kiln_buffer_create_from_native";
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st != KILN_OK) return st;
  kiln_native_buffer n;
  if ((st = kiln_struct_in(fn, "native", &n, sizeof n, KILN_NATIVE_BUFFER_0_1,
                           caller_native, native_size)) != KILN_OK ||
      (st = check_import(fn, ctx, n.backend, caller_native != NULL, out_buffer,
                         "out_buffer", flags)) != KILN_OK)
    return st;
  const kiln_native_buffer *native = &n;
  if (native->size == 0)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: native->size is 0; a buffer holds at least one "
                          "byte",
                          fn);
  if (native->device_address > UINT64_MAX - native->size)
    return kiln_set_error(KILN_ERROR_OVERFLOW,
                          "%s: native->device_address 0x%llx plus size %zu "
                          "passes the end of the address space",
                          fn, (unsigned long long)native->device_address,
                          native->size);
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  const kiln_interop_ops *interop = ctx->ops->interop;
  if (!interop) return kiln_unsupported(ctx->ops, fn, "native handles", NULL);
  kiln_buffer *buf =
      kiln_object_alloc(ctx, KILN_OBJECT_BUFFER, ctx->ops->buffer_size, false);
  if (!buf) return KILN_ERROR_OUT_OF_HOST_MEMORY;
  /* No guard bytes: the memory around foreign memory is not kiln's. */
  buf->size = native->size;
  const bool adopt = (flags & KILN_NATIVE_ADOPT) != 0;
  buf->borrowed = !adopt;
  st = kiln_context_result(ctx, interop->buffer_import(buf, native, adopt));
  if (st != KILN_OK) {
    kiln_object_free(buf);
    return kiln_error_in(fn, st);
  }
  *out_buffer = buf;
  return KILN_OK;
}

kiln_status kiln_stream_get_native_sized(kiln_stream *s, size_t native_size,
                                         kiln_native_stream *out_native) {
  static const char fn[] = "kiln_stream_get_native";
  kiln_status st = kiln_object_check(s, KILN_OBJECT_STREAM, fn, "stream");
  if (st != KILN_OK) return st;
  if ((st = kiln_struct_out_check(fn, "out_native", out_native, native_size,
                                  KILN_NATIVE_STREAM_0_1)) != KILN_OK)
    return st;
  kiln_context *ctx = s->base.context;
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  /* Foreign work ordered on a capturing stream would land in no graph. */
  if ((st = kiln_capture_refuse(s, fn)) != KILN_OK) return st;
  const kiln_interop_ops *interop = ctx->ops->interop;
  if (!interop) return kiln_unsupported(ctx->ops, fn, "native handles", NULL);
  kiln_native_stream n;
  memset(&n, 0, sizeof n);
  n.backend = ctx->ops->kind;
  st = kiln_context_result(ctx, interop->stream_native(s, &n));
  if (st != KILN_OK) return kiln_error_in(fn, st);
  kiln_struct_out(out_native, native_size, &n, sizeof n);
  return KILN_OK;
}

kiln_status kiln_stream_create_from_native_sized(
    kiln_context *ctx, const kiln_native_stream *caller_native,
    size_t native_size, uint32_t flags, kiln_stream **out_stream) {
  static const char fn[] = "kiln_stream_create_from_native";
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st != KILN_OK) return st;
  kiln_native_stream n;
  if ((st = kiln_struct_in(fn, "native", &n, sizeof n, KILN_NATIVE_STREAM_0_1,
                           caller_native, native_size)) != KILN_OK ||
      (st = check_import(fn, ctx, n.backend, caller_native != NULL, out_stream,
                         "out_stream", flags)) != KILN_OK)
    return st;
  const kiln_native_stream *native = &n;
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  const kiln_interop_ops *interop = ctx->ops->interop;
  if (!interop) return kiln_unsupported(ctx->ops, fn, "native handles", NULL);
  kiln_stream *s =
      kiln_object_alloc(ctx, KILN_OBJECT_STREAM, ctx->ops->stream_size, false);
  if (!s) return KILN_ERROR_OUT_OF_HOST_MEMORY;
  const bool adopt = (flags & KILN_NATIVE_ADOPT) != 0;
  s->borrowed = !adopt;
  st = kiln_context_result(ctx, interop->stream_import(s, native, adopt));
  if (st != KILN_OK) {
    kiln_object_free(s);
    return kiln_error_in(fn, st);
  }
  kiln_stream_set_ready(s, true);
  *out_stream = s;
  return KILN_OK;
}

kiln_status kiln_stream_wait_native(kiln_stream *s, uint64_t handle,
                                    uint64_t value) {
  static const char fn[] = "kiln_stream_wait_native";
  kiln_status st = kiln_object_check(s, KILN_OBJECT_STREAM, fn, "stream");
  if (st != KILN_OK) return st;
  kiln_context *ctx = s->base.context;
  if (handle == 0)
    return kiln_set_error(
        KILN_ERROR_INVALID_ARGUMENT,
        "%s: handle is 0; it names the %s to wait for", fn,
        ctx->ops->kind == KILN_BACKEND_VULKAN ? "timeline semaphore" : "event");
  if (value != 0 && ctx->ops->kind != KILN_BACKEND_VULKAN)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: value is %llu; on %s the event alone says "
                          "when, and value must be 0",
                          fn, (unsigned long long)value, ctx->ops->name);
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  const kiln_command c = {.kind = KILN_COMMAND_WAIT_NATIVE,
                          .fn = fn,
                          .handle = handle,
                          .value = value};
  return kiln_submit(s, &c);
}
