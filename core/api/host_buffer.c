/* Host buffers: memory the device reaches directly, mapped for the caller. */
#include "core/internal.h"

kiln_status kiln_host_buffer_create(kiln_context *ctx, size_t size,
                                    uint32_t flags,
                                    kiln_host_buffer **out_buffer) {
  static const char fn[] = "kiln_host_buffer_create";
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st != KILN_OK) return st;
  if (!out_buffer)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: out_buffer is NULL",
                          fn);
  if (size == 0)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: size is 0; a host buffer holds at least one "
                          "byte",
                          fn);
  if (flags != 0)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: unknown flags 0x%x (none are defined yet)", fn,
                          (unsigned)flags);
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  const kiln_host_buffer_ops *ops = ctx->ops->host_buffers;
  if (!ops) return kiln_unsupported(ctx->ops, fn, "host buffers", NULL);
  kiln_host_buffer *hb = kiln_object_alloc(ctx, KILN_OBJECT_HOST_BUFFER,
                                           ops->host_buffer_size, false);
  if (!hb) return KILN_ERROR_OUT_OF_HOST_MEMORY;
  hb->size = size;
  st = kiln_context_result(ctx,
                           kiln_error_in(fn, ops->host_buffer_init(hb, flags)));
  if (st != KILN_OK) {
    kiln_object_free(hb);
    return st;
  }
  *out_buffer = hb;
  return KILN_OK;
}

void kiln_host_buffer_release(kiln_host_buffer *hb) {
  hb->base.context->ops->host_buffers->host_buffer_deinit(hb);
  kiln_object_free(hb);
}

kiln_status kiln_host_buffer_destroy(kiln_host_buffer *hb) {
  static const char fn[] = "kiln_host_buffer_destroy";
  if (!hb) return KILN_OK;
  kiln_status st =
      kiln_object_check(hb, KILN_OBJECT_HOST_BUFFER, fn, "host buffer");
  if (st != KILN_OK) return st;
  /* The backend waits for every stream before it frees the memory. */
  kiln_context *ctx = hb->base.context;
  if (kiln_waits_bounded(ctx) && !atomic_load(&ctx->lost) &&
      kiln_context_wait(ctx, fn,
                        "the host buffer was not destroyed: destroy it "
                        "again once the work is done, or destroy the "
                        "context") == KILN_ERROR_TIMEOUT)
    return KILN_ERROR_TIMEOUT;
  kiln_host_buffer_release(hb);
  return KILN_OK;
}

void *kiln_host_buffer_data(kiln_host_buffer *hb) {
  if (kiln_object_check(hb, KILN_OBJECT_HOST_BUFFER, "kiln_host_buffer_data",
                        "host buffer") != KILN_OK)
    return NULL;
  return hb->data;
}

size_t kiln_host_buffer_size(const kiln_host_buffer *hb) {
  if (kiln_object_check(hb, KILN_OBJECT_HOST_BUFFER, "kiln_host_buffer_size",
                        "host buffer") != KILN_OK)
    return 0;
  return hb->size;
}
