/* Events: native HIP events, recorded on and waited for by streams; timed
 * unless made with KILN_EVENT_NO_TIMING (hipEventDisableTiming), and
 * waited for by blocking with KILN_EVENT_BLOCKING (hipEventBlockingSync). */
#include "backends/hip/hip.h"

kiln_status kiln_hip_event_init(kiln_event *e) {
  kiln_hip_device_scope scope;
  kiln_status st = kiln_hip_device_enter(e->base.context, &scope);
  if (st != KILN_OK) return st;
  unsigned flags = hipEventDefault;
  if (e->flags & KILN_EVENT_NO_TIMING) flags |= hipEventDisableTiming;
  /* hipEventSynchronize then sleeps, which the policy's waits that sleep
   * need; spinning policies never call it. */
  const kiln_sync_policy sync = e->base.context->sync;
  if ((e->flags & KILN_EVENT_BLOCKING) || sync == KILN_SYNC_AUTO ||
      sync == KILN_SYNC_BLOCK)
    flags |= hipEventBlockingSync;
  hipError_t err = kiln_hip_api.hipEventCreateWithFlags(
      &kiln_hip_event_cast(e)->handle, flags);
  kiln_hip_device_leave(&scope);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipEventCreateWithFlags");
  return KILN_OK;
}

void kiln_hip_event_deinit(kiln_event *e) {
  /* The runtime releases a recorded event once its work is done. */
  hipError_t err = kiln_hip_api.hipEventDestroy(kiln_hip_event_handle(e));
  if (err != hipSuccess) kiln_hip_warn(err, "hipEventDestroy");
}

kiln_status kiln_hip_event_record(kiln_event *e, kiln_stream *s) {
  kiln_status st = kiln_hip_hold(s);
  if (st != KILN_OK) return st;
  /* In a graph's capture, an external record is a node of its own that
   * records the event at each replay (graph.c checked it is there). */
  hipError_t err =
      s->building
          ? kiln_hip_api.hipEventRecordWithFlags(kiln_hip_event_handle(e),
                                                 kiln_hip_stream_handle(s),
                                                 hipEventRecordExternal)
          : kiln_hip_api.hipEventRecord(kiln_hip_event_handle(e),
                                        kiln_hip_stream_handle(s));
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipEventRecord");
  return KILN_OK;
}

kiln_status kiln_hip_stream_wait_event(kiln_stream *s, kiln_event *e) {
  kiln_status st = kiln_hip_hold(s);
  if (st != KILN_OK) return st;
  /* Likewise: an external wait is a node waiting at each replay. */
  hipError_t err = kiln_hip_api.hipStreamWaitEvent(
      kiln_hip_stream_handle(s), kiln_hip_event_handle(e),
      s->building ? hipEventWaitExternal : 0);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipStreamWaitEvent");
  return KILN_OK;
}

static kiln_status event_done(void *e) { return kiln_hip_event_query(e); }

static kiln_status event_sleep(void *e) {
  hipError_t err = kiln_hip_api.hipEventSynchronize(kiln_hip_event_handle(e));
  if (err != hipSuccess) return kiln_hip_error(err, "hipEventSynchronize");
  return KILN_OK;
}

kiln_status kiln_hip_event_synchronize(kiln_event *e, uint64_t timeout_ns) {
  kiln_hip_open_gates(e->base.context);
  kiln_status st;
  if (timeout_ns != KILN_WAIT_FOREVER)
    st = kiln_poll_until(event_done, e, timeout_ns);
  else
    st = kiln_wait_as((e->flags & KILN_EVENT_BLOCKING)
                          ? KILN_SYNC_BLOCK
                          : e->base.context->sync,
                      event_done, event_sleep, e);
  /* Device printf's output arrives in a synchronizing call of the
   * runtime's, which polling is not (stream.c): the event is done, so this
   * one returns at once. */
  if (st == KILN_OK &&
      atomic_load_explicit(&e->base.context->printing_modules,
                           memory_order_relaxed))
    st = event_sleep(e);
  return st;
}

kiln_status kiln_hip_event_query(kiln_event *e) {
  kiln_hip_open_gates(e->base.context);
  hipError_t err = kiln_hip_api.hipEventQuery(kiln_hip_event_handle(e));
  if (err == hipSuccess) return KILN_OK;
  /* An answer, not a failure: the core words it. */
  if (err == hipErrorNotReady) return KILN_ERROR_NOT_READY;
  return kiln_hip_error(err, "hipEventQuery");
}

kiln_status kiln_hip_event_elapsed_ms(kiln_event *start, kiln_event *end,
                                      float *out_ms) {
  float ms = 0.0f;
  hipError_t err = kiln_hip_api.hipEventElapsedTime(
      &ms, kiln_hip_event_handle(start), kiln_hip_event_handle(end));
  if (err == hipErrorNotReady) return KILN_ERROR_NOT_READY;
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipEventElapsedTime");
  *out_ms = ms;
  return KILN_OK;
}
