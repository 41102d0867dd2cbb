/* The object header every handle starts with: checks, allocation, the
 * context's list of live objects. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

static const char *type_name(kiln_object_type type) {
  switch (type) {
  case KILN_OBJECT_CONTEXT: return "context";
  case KILN_OBJECT_BUFFER: return "buffer";
  case KILN_OBJECT_HOST_BUFFER: return "host buffer";
  case KILN_OBJECT_MODULE: return "module";
  case KILN_OBJECT_KERNEL: return "kernel";
  case KILN_OBJECT_STREAM: return "stream";
  case KILN_OBJECT_EVENT: return "event";
  }
  return "object";
}

kiln_status kiln_object_check(const void *obj, kiln_object_type type,
                              const char *fn, const char *what) {
  if (!obj)
    return kiln_set_error(KILN_ERROR_INVALID_HANDLE, "%s: %s is NULL", fn,
                          what);
  const kiln_object *o = obj;
  if (o->magic != KILN_MAGIC(type))
    return kiln_set_error(KILN_ERROR_INVALID_HANDLE,
                          "%s: %s is not a live kiln %s (destroyed, or not "
                          "a %s handle)",
                          fn, what, type_name(type), type_name(type));
  return KILN_OK;
}

kiln_status kiln_object_check_in(const void *obj, kiln_object_type type,
                                 const kiln_context *ctx, const char *fn,
                                 const char *what) {
  kiln_status st = kiln_object_check(obj, type, fn, what);
  if (st != KILN_OK) return st;
  const kiln_object *o = obj;
  if (o->context != ctx)
    return kiln_set_error(KILN_ERROR_WRONG_CONTEXT,
                          "%s: %s belongs to another context (%s device "
                          "%zu) than the operation's (%s device %zu)",
                          fn, what, o->context->ops->name,
                          o->context->device_index, ctx->ops->name,
                          ctx->device_index);
  return KILN_OK;
}

kiln_status kiln_context_check_usable(kiln_context *ctx) {
  if (!atomic_load_explicit(&ctx->lost, memory_order_acquire))
    return KILN_OK;
  return kiln_set_error(KILN_ERROR_DEVICE_LOST,
                        "the context is unusable after an earlier device "
                        "fault (%s); destroy it and create a new one",
                        ctx->lost_message);
}

kiln_status kiln_context_result(kiln_context *ctx, kiln_status status) {
  if (status == KILN_ERROR_DEVICE_LOST) {
    bool expected = false;
    pthread_mutex_lock(&ctx->lock);
    if (!atomic_load(&ctx->lost)) {
      kiln_strlcpy(ctx->lost_message, kiln_last_error(),
                   sizeof ctx->lost_message);
      atomic_compare_exchange_strong(&ctx->lost, &expected, true);
    }
    pthread_mutex_unlock(&ctx->lock);
  }
  return status;
}

/* Contexts are the list; kernels belong to their module's list. */
static bool in_context_list(kiln_object_type type) {
  return type != KILN_OBJECT_CONTEXT && type != KILN_OBJECT_KERNEL;
}

void *kiln_object_alloc(kiln_context *ctx, kiln_object_type type, size_t size,
                        bool internal) {
  kiln_object *o = calloc(1, size);
  if (!o) {
    kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                   "out of host memory allocating a %zu-byte %s object",
                   size, type_name(type));
    return NULL;
  }
  o->magic = KILN_MAGIC(type);
  o->type = type;
  o->context = ctx;
  o->internal = internal;
  if (in_context_list(type)) {
    pthread_mutex_lock(&ctx->lock);
    o->prev = ctx->objects.prev;
    o->next = &ctx->objects;
    ctx->objects.prev->next = o;
    ctx->objects.prev = o;
    pthread_mutex_unlock(&ctx->lock);
  }
  return o;
}

void kiln_object_free(void *obj) {
  kiln_object *o = obj;
  /* Decided by type: o->prev may be rewritten by a neighbour's unlink. */
  if (in_context_list(o->type)) {
    kiln_context *ctx = o->context;
    pthread_mutex_lock(&ctx->lock);
    o->prev->next = o->next;
    o->next->prev = o->prev;
    pthread_mutex_unlock(&ctx->lock);
  }
  o->magic = 0;
  free(o);
}

kiln_status kiln_stream_resolve(kiln_stream *stream, kiln_context *ctx,
                                const char *fn, kiln_stream **out) {
  if (!stream) {
    *out = ctx->default_stream;
    return KILN_OK;
  }
  kiln_status st =
      kiln_object_check_in(stream, KILN_OBJECT_STREAM, ctx, fn, "stream");
  if (st == KILN_OK) *out = stream;
  return st;
}

kiln_status kiln_check_range(size_t offset, size_t size, size_t total,
                             const char *fn, const char *what) {
  if (size > SIZE_MAX - offset)
    return kiln_set_error(KILN_ERROR_OVERFLOW,
                          "%s: offset %zu + size %zu overflows size_t", fn,
                          offset, size);
  if (offset > total || size > total - offset)
    return kiln_set_error(KILN_ERROR_OUT_OF_RANGE,
                          "%s: bytes [%zu, %zu) are outside %s of %zu bytes",
                          fn, offset, offset + size, what, total);
  return KILN_OK;
}
