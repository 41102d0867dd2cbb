/* Streams: in-order queues of work; each context has a default one. */
#include <time.h>

#include "core/internal.h"

kiln_status kiln_stream_create_internal(kiln_context *ctx, bool is_default,
                                        uint32_t priority, kiln_stream **out) {
  kiln_stream *s = kiln_object_alloc(ctx, KILN_OBJECT_STREAM,
                                     ctx->ops->stream_size, is_default);
  if (!s) return KILN_ERROR_OUT_OF_HOST_MEMORY;
  s->is_default = is_default;
  s->priority = priority;
  kiln_status st = kiln_context_result(ctx, ctx->ops->stream_init(s));
  if (st != KILN_OK) {
    kiln_object_free(s);
    return st;
  }
  kiln_stream_set_ready(s, true);
  *out = s;
  return KILN_OK;
}

void kiln_stream_set_ready(kiln_stream *s, bool ready) {
  kiln_context *ctx = s->base.context;
  pthread_mutex_lock(&ctx->lock);
  s->ready = ready;
  pthread_mutex_unlock(&ctx->lock);
}

static kiln_status create_stream(const char *fn, kiln_context *ctx,
                                 const kiln_stream_options *options,
                                 size_t options_size,
                                 kiln_stream **out_stream) {
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st != KILN_OK) return st;
  if (!out_stream)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: out_stream is NULL",
                          fn);
  kiln_stream_options o;
  if ((st = kiln_struct_in(fn, "options", &o, sizeof o, KILN_STREAM_OPTIONS_0_1,
                           options, options_size)) != KILN_OK)
    return st;
  uint32_t priority = o.priority;
  uint32_t max = ctx->properties.max_stream_priority;
  if (priority > max)
    return kiln_set_error(
        KILN_ERROR_OUT_OF_RANGE,
        "%s: priority %u is beyond this device's range, 0 "
        "to %u (max_stream_priority of the context's "
        "properties%s)",
        fn, (unsigned)priority, (unsigned)max,
        max == 0 ? "; the device has no stream priorities" : "");
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  return kiln_stream_create_internal(ctx, false, priority, out_stream);
}

kiln_status kiln_stream_create_with_options_sized(
    kiln_context *ctx, const kiln_stream_options *options, size_t options_size,
    kiln_stream **out_stream) {
  return create_stream("kiln_stream_create_with_options", ctx, options,
                       options_size, out_stream);
}

kiln_status kiln_stream_create(kiln_context *ctx, kiln_stream **out_stream) {
  return create_stream("kiln_stream_create", ctx, NULL, 0, out_stream);
}

void kiln_stream_release(kiln_stream *s) {
  kiln_context *ctx = s->base.context;
  /* Queued on s, so that the wait below sees them done. */
  kiln_pool_flush(ctx, s);
  if (!atomic_load(&ctx->lost))
    kiln_context_result(ctx,
                        ctx->ops->stream_synchronize(s, KILN_WAIT_FOREVER));
  kiln_trace_stream_release(s);
  /* A graph that captured a helper on s still uses its workspace, which
   * then stays, internal, until the context goes. */
  for (int i = 0; i < KILN_SCRATCH_USES; i++)
    if (s->scratch[i] && !atomic_load(&s->scratch[i]->base.graph_refs))
      kiln_buffer_release(s->scratch[i]);
  kiln_stream_set_ready(s, false);
  /* A walk that pinned the stream before it stopped being ready may still
   * be waiting on it (its work is done: that wait ends at once). */
  while (atomic_load(&s->pins)) {
    const struct timespec nap = {0, 50000};
    nanosleep(&nap, NULL);
  }
  ctx->ops->stream_deinit(s);
  kiln_object_free(s);
}

kiln_status kiln_stream_destroy(kiln_stream *s) {
  static const char fn[] = "kiln_stream_destroy";
  if (!s) return KILN_OK;
  kiln_status st = kiln_object_check(s, KILN_OBJECT_STREAM, fn, "stream");
  if (st != KILN_OK) return st;
  if (s->is_default)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: the default stream belongs to its context and "
                          "is released with it",
                          fn);
  if ((st = kiln_capture_refuse(s, fn)) != KILN_OK) return st;
  kiln_context *ctx = s->base.context;
  if ((kiln_waits_bounded(ctx) || ctx->guard) && !atomic_load(&ctx->lost) &&
      kiln_stream_wait(s, fn,
                       "the stream was not destroyed: destroy it again once "
                       "its work is done, or destroy the context") ==
          KILN_ERROR_TIMEOUT)
    return KILN_ERROR_TIMEOUT;
  /* The last point at which the stream's launches can be told apart. */
  st = ctx->guard ? kiln_guard_check_stream(s, fn) : KILN_OK;
  kiln_stream_release(s);
  return st;
}

kiln_status kiln_stream_synchronize(kiln_stream *s) {
  static const char fn[] = "kiln_stream_synchronize";
  kiln_status st = kiln_object_check(s, KILN_OBJECT_STREAM, fn, "stream");
  if (st != KILN_OK) return st;
  if ((st = kiln_context_check_usable(s->base.context)) != KILN_OK) return st;
  if ((st = kiln_capture_refuse(s, fn)) != KILN_OK) return st;
  st = kiln_stream_wait(s, fn, NULL);
  if (st == KILN_OK && s->base.context->guard)
    st = kiln_guard_check_stream(s, fn);
  return st;
}

kiln_status kiln_stream_synchronize_timeout(kiln_stream *s,
                                            uint64_t timeout_ns) {
  static const char fn[] = "kiln_stream_synchronize_timeout";
  kiln_status st = kiln_object_check(s, KILN_OBJECT_STREAM, fn, "stream");
  if (st != KILN_OK) return st;
  if ((st = kiln_context_check_usable(s->base.context)) != KILN_OK) return st;
  if ((st = kiln_capture_refuse(s, fn)) != KILN_OK) return st;
  st = kiln_stream_wait_timeout(s, timeout_ns, fn);
  if (st == KILN_OK && s->base.context->guard)
    st = kiln_guard_check_stream(s, fn);
  return st;
}
