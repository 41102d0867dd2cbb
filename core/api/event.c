/* Events: marks in a stream to wait on, from the host or another stream,
 * and to time the work between. */
#include "core/internal.h"

static kiln_status create_event(const char *fn, kiln_context *ctx,
                                uint32_t flags, kiln_event **out_event) {
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st != KILN_OK) return st;
  if (!out_event)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: out_event is NULL",
                          fn);
  const uint32_t known = KILN_EVENT_NO_TIMING | KILN_EVENT_BLOCKING;
  if (flags & ~known)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: flags 0x%x has bits that are no "
                          "kiln_event_flags (0x%x); known: "
                          "KILN_EVENT_NO_TIMING, KILN_EVENT_BLOCKING",
                          fn, (unsigned)flags, (unsigned)(flags & ~known));
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  kiln_event *e =
      kiln_object_alloc(ctx, KILN_OBJECT_EVENT, ctx->ops->event_size, false);
  if (!e) return KILN_ERROR_OUT_OF_HOST_MEMORY;
  e->flags = flags;
  st = kiln_context_result(ctx, ctx->ops->event_init(e));
  if (st != KILN_OK) {
    kiln_object_free(e);
    return st;
  }
  *out_event = e;
  return KILN_OK;
}

kiln_status kiln_event_create_with_flags(kiln_context *ctx, uint32_t flags,
                                         kiln_event **out_event) {
  return create_event("kiln_event_create_with_flags", ctx, flags, out_event);
}

kiln_status kiln_event_create(kiln_context *ctx, kiln_event **out_event) {
  return create_event("kiln_event_create", ctx, KILN_EVENT_DEFAULT, out_event);
}

kiln_status kiln_event_destroy(kiln_event *e) {
  static const char fn[] = "kiln_event_destroy";
  if (!e) return KILN_OK;
  kiln_status st = kiln_object_check(e, KILN_OBJECT_EVENT, fn, "event");
  if (st == KILN_OK) st = kiln_check_not_held(e, fn, "event");
  if (st != KILN_OK) return st;
  /* A backend may wait for the event's mark before it frees it. */
  kiln_context *ctx = e->base.context;
  if (e->recorded && kiln_waits_bounded(ctx) && !atomic_load(&ctx->lost) &&
      kiln_event_wait(e, fn,
                      "the event was not destroyed: destroy it again once "
                      "its work is done, or destroy the context") ==
          KILN_ERROR_TIMEOUT)
    return KILN_ERROR_TIMEOUT;
  kiln_event_release(e);
  return KILN_OK;
}

/* A live, recorded event of a usable context. */
static kiln_status check_recorded(kiln_event *e, const char *fn,
                                  const char *what) {
  kiln_status st = kiln_object_check(e, KILN_OBJECT_EVENT, fn, what);
  if (st != KILN_OK) return st;
  if ((st = kiln_context_check_usable(e->base.context)) != KILN_OK) return st;
  if (!e->recorded)
    return kiln_set_error(KILN_ERROR_INVALID_STATE,
                          "%s: %s was never recorded (kiln_event_record)", fn,
                          what);
  return KILN_OK;
}

kiln_status kiln_event_record(kiln_event *e, kiln_stream *stream) {
  static const char fn[] = "kiln_event_record";
  kiln_status st = kiln_object_check(e, KILN_OBJECT_EVENT, fn, "event");
  if (st != KILN_OK) return st;
  kiln_context *ctx = e->base.context;
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  kiln_stream *s;
  if ((st = kiln_stream_resolve(stream, ctx, fn, &s)) != KILN_OK) return st;
  const kiln_command c = {.kind = KILN_COMMAND_RECORD, .fn = fn, .event = e};
  return kiln_submit(s, &c);
}

kiln_status kiln_stream_wait_event(kiln_stream *s, kiln_event *e) {
  static const char fn[] = "kiln_stream_wait_event";
  kiln_status st = kiln_object_check(e, KILN_OBJECT_EVENT, fn, "event");
  if (st != KILN_OK) return st;
  kiln_context *ctx = e->base.context;
  if ((st = kiln_stream_resolve(s, ctx, fn, &s)) != KILN_OK) return st;
  /* A record in a capture is made only at replay; a wait on it joins the
   * capture (or, in it, is an edge of the graph). */
  if (!kiln_capture_records(e) &&
      (st = check_recorded(e, fn, "event")) != KILN_OK)
    return st;
  const kiln_command c = {.kind = KILN_COMMAND_WAIT, .fn = fn, .event = e};
  return kiln_submit(s, &c);
}

kiln_status kiln_event_synchronize(kiln_event *e) {
  static const char fn[] = "kiln_event_synchronize";
  kiln_status st = check_recorded(e, fn, "event");
  if (st != KILN_OK) return st;
  st = kiln_event_wait(e, fn, NULL);
  if (st == KILN_OK && e->base.context->guard)
    st = kiln_guard_check_event(e, fn);
  return st;
}

kiln_status kiln_event_query(kiln_event *e) {
  kiln_status st = check_recorded(e, "kiln_event_query", "event");
  if (st != KILN_OK) return st;
  st = e->base.context->ops->event_query(e);
  if (st == KILN_ERROR_NOT_READY) /* an answer, not a failure */
    return kiln_set_error(st, "kiln_event_query: the event's work has not "
                              "completed yet");
  return kiln_context_result(e->base.context, st);
}

kiln_status kiln_event_elapsed_ms(kiln_event *start, kiln_event *end,
                                  float *out_ms) {
  static const char fn[] = "kiln_event_elapsed_ms";
  kiln_status st = check_recorded(start, fn, "the start event");
  if (st != KILN_OK) return st;
  if ((st = check_recorded(end, fn, "the end event")) != KILN_OK) return st;
  kiln_context *ctx = start->base.context;
  if (end->base.context != ctx)
    return kiln_set_error(KILN_ERROR_WRONG_CONTEXT,
                          "%s: the two events belong to different contexts",
                          fn);
  if (!out_ms)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: out_ms is NULL",
                          fn);
  if ((start->flags | end->flags) & KILN_EVENT_NO_TIMING)
    return kiln_set_error(
        KILN_ERROR_INVALID_STATE,
        "%s: the %s event was created with "
        "KILN_EVENT_NO_TIMING and has no timestamp",
        fn, start->flags & KILN_EVENT_NO_TIMING ? "start" : "end");
  if (!ctx->ops->timing)
    return kiln_unsupported(ctx->ops, fn, "event timing", NULL);
  st = ctx->ops->timing->event_elapsed_ms(start, end, out_ms);
  if (st == KILN_ERROR_NOT_READY)
    return kiln_set_error(st, "%s: an event's work has not completed yet; "
                              "synchronize on the end event first",
                          fn);
  return kiln_context_result(ctx, st);
}
