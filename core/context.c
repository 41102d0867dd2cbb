/* Contexts: creation on the chosen backend and device, destruction with a
 * report of what was still alive, device-wide synchronization. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

kiln_context_options kiln_context_options_default(void) {
  kiln_context_options o;
  o.backend = KILN_BACKEND_AUTO;
  o.device_index = KILN_DEVICE_FROM_ENV;
  return o;
}

static kiln_status init_lock(pthread_mutex_t *lock) {
  /* Recursive: the built-in module is created while the lock is held, and
   * creating it links objects under the same lock. */
  pthread_mutexattr_t attr;
  if (pthread_mutexattr_init(&attr) != 0)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "kiln_context_create: pthread_mutexattr_init "
                          "failed");
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  int rc = pthread_mutex_init(lock, &attr);
  pthread_mutexattr_destroy(&attr);
  if (rc != 0)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "kiln_context_create: pthread_mutex_init failed");
  return KILN_OK;
}

kiln_status kiln_context_create(const kiln_context_options *options,
                                kiln_context **out_context) {
  if (!out_context)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "kiln_context_create: out_context is NULL");
  kiln_context_options defaults = kiln_context_options_default();
  const kiln_backend_ops *ops;
  size_t device;
  kiln_status st =
      kiln_registry_select(options ? options : &defaults, &ops, &device);
  if (st != KILN_OK) return st;

  kiln_context *ctx = calloc(1, ops->context_size);
  if (!ctx)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "kiln_context_create: out of host memory");
  st = init_lock(&ctx->lock);
  if (st != KILN_OK) {
    free(ctx);
    return st;
  }
  ctx->base.magic = KILN_MAGIC(KILN_OBJECT_CONTEXT);
  ctx->base.type = KILN_OBJECT_CONTEXT;
  ctx->base.context = ctx;
  ctx->objects.next = ctx->objects.prev = &ctx->objects;
  ctx->ops = ops;
  ctx->device_index = device;
  atomic_init(&ctx->lost, false);
  memset(&ctx->properties, 0, sizeof ctx->properties);
  st = ops->device_properties(device, &ctx->properties);
  if (st == KILN_OK) {
    ctx->properties.backend = ops->kind;
    st = ops->context_init(ctx);
  }
  if (st != KILN_OK) {
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    return st;
  }
  st = kiln_stream_create_internal(ctx, true, &ctx->default_stream);
  if (st != KILN_OK) {
    ops->context_deinit(ctx);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    return st;
  }
  kiln_log(KILN_LOG_INFO, "context on %s device %zu: %s", ops->name, device,
           ctx->properties.name);
  *out_context = ctx;
  return KILN_OK;
}

static void release_object(kiln_object *o) {
  switch (o->type) {
  case KILN_OBJECT_BUFFER: kiln_buffer_release((kiln_buffer *)o); break;
  case KILN_OBJECT_HOST_BUFFER:
    kiln_host_buffer_release((kiln_host_buffer *)o);
    break;
  case KILN_OBJECT_MODULE: kiln_module_release((kiln_module *)o); break;
  case KILN_OBJECT_STREAM: kiln_stream_release((kiln_stream *)o); break;
  case KILN_OBJECT_EVENT: kiln_event_release((kiln_event *)o); break;
  case KILN_OBJECT_CONTEXT:
  case KILN_OBJECT_KERNEL: break;
  }
}

kiln_status kiln_context_destroy(kiln_context *ctx) {
  if (!ctx) return KILN_OK;
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT,
                                     "kiln_context_destroy", "context");
  if (st != KILN_OK) return st;
  /* Work still queued may use any object: let it finish before freeing.
   * A lost context cannot finish anything; release regardless. */
  if (!atomic_load(&ctx->lost))
    kiln_context_result(ctx, ctx->ops->context_synchronize(ctx));

  size_t alive[KILN_OBJECT_EVENT + 1] = {0};
  size_t total = 0;
  for (kiln_object *o = ctx->objects.next; o != &ctx->objects; o = o->next) {
    if (o->internal) continue;
    alive[o->type]++;
    total++;
  }
  /* By type, users before what they use: an event may refer to its stream,
   * a stream owns a scratch buffer. Within a type, newest first. */
  static const kiln_object_type order[] = {
      KILN_OBJECT_EVENT, KILN_OBJECT_STREAM, KILN_OBJECT_MODULE,
      KILN_OBJECT_HOST_BUFFER, KILN_OBJECT_BUFFER};
  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
    kiln_object *o = ctx->objects.prev;
    while (o != &ctx->objects) {
      kiln_object *prev = o->prev;
      if (o->type == order[i]) {
        release_object(o);
        prev = ctx->objects.prev; /* a release may unlink more than o */
      }
      o = prev;
    }
  }
  ctx->ops->context_deinit(ctx);
  pthread_mutex_destroy(&ctx->lock);
  ctx->base.magic = 0;
  free(ctx);
  if (total == 0) return KILN_OK;
  st = kiln_set_error(KILN_ERROR_OBJECTS_ALIVE,
                      "kiln_context_destroy: %zu object%s still alive and "
                      "released with the context (%zu buffers, %zu host "
                      "buffers, %zu modules, %zu streams, %zu events); their "
                      "handles are now invalid",
                      total, total == 1 ? " was" : "s were",
                      alive[KILN_OBJECT_BUFFER],
                      alive[KILN_OBJECT_HOST_BUFFER],
                      alive[KILN_OBJECT_MODULE], alive[KILN_OBJECT_STREAM],
                      alive[KILN_OBJECT_EVENT]);
  kiln_log(KILN_LOG_WARN, "%s", kiln_last_error());
  return st;
}

kiln_backend kiln_context_backend(const kiln_context *ctx) {
  if (kiln_object_check(ctx, KILN_OBJECT_CONTEXT, "kiln_context_backend",
                        "context") != KILN_OK)
    return KILN_BACKEND_AUTO;
  return ctx->ops->kind;
}

kiln_status kiln_context_get_properties(const kiln_context *ctx,
                                        kiln_device_properties *out) {
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT,
                                     "kiln_context_get_properties",
                                     "context");
  if (st != KILN_OK) return st;
  if (!out)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "kiln_context_get_properties: out_properties is "
                          "NULL");
  *out = ctx->properties;
  return KILN_OK;
}

kiln_status kiln_context_synchronize(kiln_context *ctx) {
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT,
                                     "kiln_context_synchronize", "context");
  if (st != KILN_OK) return st;
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  return kiln_context_result(ctx, ctx->ops->context_synchronize(ctx));
}

kiln_status kiln_context_default_stream(kiln_context *ctx,
                                        kiln_stream **out_stream) {
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT,
                                     "kiln_context_default_stream",
                                     "context");
  if (st != KILN_OK) return st;
  if (!out_stream)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "kiln_context_default_stream: out_stream is NULL");
  *out_stream = ctx->default_stream;
  return KILN_OK;
}
