/* Contexts: creation on the chosen backend and device, destruction with a
 * report of what was still alive (bounded by KILN_SYNC_TIMEOUT_MS),
 * device-wide synchronization. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/internal.h"

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

/* KILN_SYNC_TIMEOUT_MS as nanoseconds: KILN_WAIT_FOREVER when unset or 0. */
static kiln_status sync_timeout_from_env(uint64_t *out_ns) {
  bool given;
  uint64_t ms = 0;
  *out_ns = KILN_WAIT_FOREVER;
  kiln_status st = kiln_env_uint(
      "KILN_SYNC_TIMEOUT_MS", UINT64_MAX / 1000000u,
      "a time in milliseconds (unset or 0: waits have no limit)", &given, &ms);
  if (st == KILN_OK && given && ms > 0) *out_ns = ms * 1000000u;
  return st;
}

static const char *const sync_names[] = {
    [KILN_SYNC_AUTO] = "auto",
    [KILN_SYNC_SPIN] = "spin",
    [KILN_SYNC_YIELD] = "yield",
    [KILN_SYNC_BLOCK] = "block",
};

/* The policy in force: the options' unless DEFAULT, else KILN_SYNC's, else
 * AUTO. KILN_SYNC is checked even when the options decide, so that a typo
 * in it never goes unseen. */
static kiln_status sync_policy(const char *fn, kiln_sync_policy asked,
                               kiln_sync_policy *out) {
  kiln_sync_policy env = KILN_SYNC_AUTO;
  const char *v = kiln_getenv("KILN_SYNC");
  if (v) {
    int i = KILN_SYNC_AUTO;
    while (i <= KILN_SYNC_BLOCK && strcasecmp(v, sync_names[i]) != 0) i++;
    if (i > KILN_SYNC_BLOCK)
      return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                            "%s: KILN_SYNC=\"%s\" is no sync policy; it "
                            "takes auto, spin, yield or block (unset or "
                            "empty: auto)",
                            fn, v);
    env = (kiln_sync_policy)i;
  }
  if ((unsigned)asked > KILN_SYNC_BLOCK)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: options->sync is %d, which is "
                          "no kiln_sync_policy (KILN_SYNC_DEFAULT, _AUTO, "
                          "_SPIN, _YIELD or _BLOCK)",
                          fn, (int)asked);
  *out = asked == KILN_SYNC_DEFAULT ? env : asked;
  return KILN_OK;
}

kiln_status kiln_context_create_sized(const kiln_context_options *options,
                                      size_t options_size,
                                      kiln_context **out_context) {
  static const char fn[] = "kiln_context_create";
  if (!out_context)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: out_context is NULL", fn);
  kiln_context_options o = kiln_context_options_default();
  kiln_status st = KILN_OK;
  if (options &&
      (st = kiln_struct_in(fn, "options", &o, sizeof o,
                           KILN_CONTEXT_OPTIONS_0_1, options, options_size)) !=
          KILN_OK)
    return st;
  const kiln_backend_ops *ops;
  size_t device;
  if ((st = kiln_registry_select(&o, &ops, &device)) != KILN_OK) return st;
  return kiln_context_open(fn, ops, device, o.sync, NULL, false, out_context);
}

/* KILN_DEBUG=guard's state, and the stream of its reads and writes: kiln's
 * own, so not reported as alive; the context's release of its streams
 * releases it. */
static kiln_status guard_init(kiln_context *ctx) {
  kiln_stream *s;
  kiln_status st = kiln_stream_create_internal(ctx, false, 0, &s);
  if (st != KILN_OK) return st;
  s->base.internal = true;
  if ((st = kiln_guard_init(ctx, s)) != KILN_OK) kiln_stream_release(s);
  return st;
}

kiln_status kiln_context_open(const char *fn, const kiln_backend_ops *ops,
                              size_t device, kiln_sync_policy asked,
                              const kiln_native_context *native, bool adopt,
                              kiln_context **out_context) {
  uint64_t timeout_ns;
  unsigned debug;
  kiln_sync_policy sync = KILN_SYNC_AUTO;
  unsigned trace_sinks;
  kiln_status st = sync_timeout_from_env(&timeout_ns);
  if (st != KILN_OK || (st = kiln_debug_from_env(&debug)) != KILN_OK ||
      (st = kiln_trace_from_env(ops, &trace_sinks)) != KILN_OK ||
      (st = sync_policy(fn, asked, &sync)) != KILN_OK)
    return kiln_error_in(fn, st);
  kiln_context *ctx =
      kiln_object_alloc(NULL, KILN_OBJECT_CONTEXT, ops->context_size, false);
  if (!ctx) return KILN_ERROR_OUT_OF_HOST_MEMORY;
  st = init_lock(&ctx->lock);
  if (st != KILN_OK) {
    kiln_object_free(ctx);
    return st;
  }
  ctx->base.context = ctx;
  ctx->sync_timeout_ns = timeout_ns;
  ctx->sync = sync;
  ctx->debug = debug;
  ctx->objects.next = ctx->objects.prev = &ctx->objects;
  ctx->streams.next = ctx->streams.prev = &ctx->streams;
  ctx->ops = ops;
  ctx->device_index = device;
  atomic_init(&ctx->lost, false);
  memset(&ctx->properties, 0, sizeof ctx->properties);
  st = ops->device_properties(device, &ctx->properties);
  if (st == KILN_OK) {
    ctx->properties.backend = ops->kind;
    st = native ? ops->interop->context_import(ctx, native, adopt)
                : ops->context_init(ctx);
  }
  if (st != KILN_OK) {
    pthread_mutex_destroy(&ctx->lock);
    kiln_object_free(ctx);
    return st;
  }
  st = kiln_pool_open(ctx);
  if (st == KILN_OK &&
      (st = kiln_stream_create_internal(ctx, true, 0, &ctx->default_stream)) ==
          KILN_OK &&
      (debug & KILN_DEBUG_GUARD) && (st = guard_init(ctx)) != KILN_OK)
    kiln_stream_release(ctx->default_stream);
  if (st != KILN_OK) {
    kiln_pool_close(ctx);
    ops->context_deinit(ctx);
    pthread_mutex_destroy(&ctx->lock);
    kiln_object_free(ctx);
    return st;
  }
  kiln_trace_context_open(ctx, trace_sinks);
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
  case KILN_OBJECT_GRAPH: kiln_graph_release((kiln_graph *)o); break;
  case KILN_OBJECT_CONTEXT:
  case KILN_OBJECT_KERNEL: break;
  }
}

/* Contexts that kiln_context_destroy gave up waiting for, chained through
 * base.next: kept, with every object in them, until the process ends,
 * since the device may still use any of it. */
static pthread_mutex_t abandoned_lock = PTHREAD_MUTEX_INITIALIZER;
static kiln_context *abandoned;

/* Invalidates every handle of the context and lets the backend release
 * what the running work cannot touch; frees nothing else. */
static void abandon(kiln_context *ctx) {
  ctx->abandoned = true;
  kiln_trace_context_close(ctx);
  for (kiln_object *o = ctx->objects.next; o != &ctx->objects; o = o->next) {
    if (o->type == KILN_OBJECT_MODULE)
      for (kiln_kernel *k = ((kiln_module *)o)->kernels; k; k = k->next)
        kiln_object_forget(k);
    kiln_object_forget(o);
  }
  for (kiln_object *o = ctx->streams.next; o != &ctx->streams; o = o->next)
    kiln_object_forget(o);
  kiln_object_forget(ctx);
  ctx->ops->context_deinit(ctx);
  pthread_mutex_lock(&abandoned_lock);
  ctx->base.next = abandoned ? &abandoned->base : NULL;
  abandoned = ctx;
  pthread_mutex_unlock(&abandoned_lock);
}

kiln_status kiln_context_destroy(kiln_context *ctx) {
  static const char fn[] = "kiln_context_destroy";
  if (!ctx) return KILN_OK;
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st != KILN_OK) return st;
  /* What the pool kept for reuse goes back on its streams, before the
   * wait that sees every stream done. */
  kiln_pool_flush(ctx, NULL);
  /* Work still queued may use any object: let it finish before freeing.
   * A lost context cannot finish anything; release regardless. Work that
   * outlasts KILN_SYNC_TIMEOUT_MS is left running, and all it may use. */
  if (!atomic_load(&ctx->lost) &&
      kiln_context_wait(ctx, fn,
                        "the context was released all the same, but for "
                        "what the running work may still use") ==
          KILN_ERROR_TIMEOUT) {
    kiln_context_mark_lost(ctx, kiln_last_error());
    abandon(ctx);
    kiln_log(KILN_LOG_WARN, "%s", kiln_last_error());
    return KILN_ERROR_TIMEOUT;
  }
  /* The guards' last check, before anything is released; its report
   * outranks that of objects left alive. */
  char guard_report[1024] = "";
  kiln_status guard_st = ctx->guard ? kiln_guard_check_all(ctx, fn) : KILN_OK;
  if (guard_st != KILN_OK)
    kiln_strlcpy(guard_report, kiln_last_error(), sizeof guard_report);
  kiln_trace_context_close(ctx);
  /* What the core's pool parked is done with (the wait above, or the
   * device is lost); it holds events of the context, released next. */
  kiln_pool_close(ctx);

  size_t alive[KILN_OBJECT_GRAPH + 1] = {0};
  size_t total = 0;
  kiln_object *const lists[] = {&ctx->objects, &ctx->streams};
  for (size_t l = 0; l < 2; l++)
    for (kiln_object *o = lists[l]->next; o != lists[l]; o = o->next) {
      if (o->internal) continue;
      alive[o->type]++;
      total++;
    }
  /* By type, users before what they use: a graph holds buffers, modules
   * and events, an event may refer to its stream, a stream owns a scratch
   * buffer. Within a type, newest first. */
  static const kiln_object_type order[] = {
      KILN_OBJECT_GRAPH,  KILN_OBJECT_EVENT,       KILN_OBJECT_STREAM,
      KILN_OBJECT_MODULE, KILN_OBJECT_HOST_BUFFER, KILN_OBJECT_BUFFER};
  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
    kiln_object *list = lists[order[i] == KILN_OBJECT_STREAM];
    kiln_object *o = list->prev;
    while (o != list) {
      kiln_object *prev = o->prev;
      if (o->type == order[i]) {
        release_object(o);
        prev = list->prev; /* a release may unlink more than o */
      }
      o = prev;
    }
  }
  if (ctx->guard) kiln_guard_deinit(ctx);
  ctx->ops->context_deinit(ctx);
  pthread_mutex_destroy(&ctx->lock);
  kiln_object_free(ctx);
  if (guard_st != KILN_OK) return kiln_set_error(guard_st, "%s", guard_report);
  if (total == 0) return KILN_OK;
  st = kiln_set_error(KILN_ERROR_OBJECTS_ALIVE,
                      "kiln_context_destroy: %zu object%s still alive and "
                      "released with the context (%zu buffers, %zu host "
                      "buffers, %zu modules, %zu streams, %zu events, %zu "
                      "graphs); their handles are now invalid",
                      total, total == 1 ? " was" : "s were",
                      alive[KILN_OBJECT_BUFFER], alive[KILN_OBJECT_HOST_BUFFER],
                      alive[KILN_OBJECT_MODULE], alive[KILN_OBJECT_STREAM],
                      alive[KILN_OBJECT_EVENT], alive[KILN_OBJECT_GRAPH]);
  kiln_log(KILN_LOG_WARN, "%s", kiln_last_error());
  return st;
}

kiln_backend kiln_context_backend(const kiln_context *ctx) {
  if (kiln_object_check(ctx, KILN_OBJECT_CONTEXT, "kiln_context_backend",
                        "context") != KILN_OK)
    return KILN_BACKEND_AUTO;
  return ctx->ops->kind;
}

kiln_status kiln_context_get_properties_sized(const kiln_context *ctx,
                                              size_t properties_size,
                                              kiln_device_properties *out) {
  static const char fn[] = "kiln_context_get_properties";
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st == KILN_OK)
    st = kiln_struct_out_check(fn, "out_properties", out, properties_size,
                               KILN_DEVICE_PROPERTIES_0_1);
  if (st != KILN_OK) return st;
  kiln_struct_out(out, properties_size, &ctx->properties,
                  sizeof ctx->properties);
  return KILN_OK;
}

kiln_status kiln_context_synchronize(kiln_context *ctx) {
  static const char fn[] = "kiln_context_synchronize";
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st != KILN_OK) return st;
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  /* Queued first, so that the wait sees them done and the pool's keep
   * setting and trims then cover them. */
  kiln_pool_flush(ctx, NULL);
  st = kiln_context_wait(ctx, fn, NULL);
  if (st == KILN_OK) kiln_pool_synchronized(ctx);
  if (st == KILN_OK && ctx->guard) st = kiln_guard_check_launched(ctx, fn);
  return st;
}

kiln_status kiln_context_get_sync_policy(const kiln_context *ctx,
                                         kiln_sync_policy *out_policy) {
  static const char fn[] = "kiln_context_get_sync_policy";
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st != KILN_OK) return st;
  if (!out_policy)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: out_policy is NULL",
                          fn);
  *out_policy = ctx->sync;
  return KILN_OK;
}

kiln_status kiln_context_default_stream(kiln_context *ctx,
                                        kiln_stream **out_stream) {
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT,
                                     "kiln_context_default_stream", "context");
  if (st != KILN_OK) return st;
  if (!out_stream)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "kiln_context_default_stream: out_stream is NULL");
  *out_stream = ctx->default_stream;
  return KILN_OK;
}
