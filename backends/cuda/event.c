/* Events: CUevents, timed unless created with KILN_EVENT_NO_TIMING
 * (CU_EVENT_DISABLE_TIMING), waited for by blocking rather than by the
 * context's scheduling flag with KILN_EVENT_BLOCKING
 * (CU_EVENT_BLOCKING_SYNC). */
#include "backends/cuda/cuda.h"

static CUevent handle_of(const kiln_event *e) {
  return kiln_cuda_event_cast_const(e)->handle;
}

static CUstream stream_of(const kiln_stream *s) {
  return kiln_cuda_stream_cast_const(s)->handle;
}

kiln_status kiln_cuda_event_init(kiln_event *base) {
  kiln_cuda_event *e = kiln_cuda_event_cast(base);
  kiln_status st = kiln_cuda_make_current(base->base.context);
  if (st != KILN_OK) return st;
  unsigned flags = CU_EVENT_DEFAULT;
  if (base->flags & KILN_EVENT_NO_TIMING) flags |= CU_EVENT_DISABLE_TIMING;
  /* cuEventSynchronize then sleeps, which the policy's waits that sleep
   * need; spinning policies never call it. */
  const kiln_sync_policy sync = base->base.context->sync;
  if ((base->flags & KILN_EVENT_BLOCKING) || sync == KILN_SYNC_AUTO ||
      sync == KILN_SYNC_BLOCK)
    flags |= CU_EVENT_BLOCKING_SYNC;
  CUresult r = kiln_cuda_api.cuEventCreate(&e->handle, flags);
  if (r != CUDA_SUCCESS) return kiln_cuda_error(r, "cuEventCreate");
  return KILN_OK;
}

void kiln_cuda_event_deinit(kiln_event *e) {
  /* An event still pending is released by the driver once it completes. */
  kiln_cuda_make_current_for_deinit(e->base.context, "destroying an event");
  CUresult r = kiln_cuda_api.cuEventDestroy(handle_of(e));
  if (r != CUDA_SUCCESS) kiln_cuda_warn(r, "cuEventDestroy");
}

kiln_status kiln_cuda_event_record(kiln_event *e, kiln_stream *s) {
  kiln_status st = kiln_cuda_hold(s);
  if (st == KILN_OK) st = kiln_cuda_make_current(e->base.context);
  if (st != KILN_OK) return st;
  /* In a graph's capture, a plain record only joins captured streams; an
   * external one becomes a node that records the event at each replay. */
  CUresult r =
      s->building ? kiln_cuda_api.cuEventRecordWithFlags(
                        handle_of(e), stream_of(s), CU_EVENT_RECORD_EXTERNAL)
                  : kiln_cuda_api.cuEventRecord(handle_of(e), stream_of(s));
  if (r != CUDA_SUCCESS) return kiln_cuda_error(r, "cuEventRecord");
  return KILN_OK;
}

kiln_status kiln_cuda_stream_wait_event(kiln_stream *s, kiln_event *e) {
  kiln_status st = kiln_cuda_hold(s);
  if (st == KILN_OK) st = kiln_cuda_make_current(e->base.context);
  if (st != KILN_OK) return st;
  /* Likewise: an external wait is a node waiting at each replay. */
  CUresult r = kiln_cuda_api.cuStreamWaitEvent(
      stream_of(s), handle_of(e),
      s->building ? CU_EVENT_WAIT_EXTERNAL : CU_EVENT_WAIT_DEFAULT);
  if (r != CUDA_SUCCESS) return kiln_cuda_error(r, "cuStreamWaitEvent");
  return KILN_OK;
}

static kiln_status event_done(void *e) { return kiln_cuda_event_query(e); }

static kiln_status event_sleep(void *e) {
  CUresult r = kiln_cuda_api.cuEventSynchronize(handle_of(e));
  if (r != CUDA_SUCCESS) return kiln_cuda_error(r, "cuEventSynchronize");
  return KILN_OK;
}

kiln_status kiln_cuda_event_synchronize(kiln_event *e, uint64_t timeout_ns) {
  kiln_status st = kiln_cuda_make_current(e->base.context);
  if (st != KILN_OK) return st;
  kiln_cuda_open_gates(e->base.context);
  if (timeout_ns != KILN_WAIT_FOREVER)
    st = kiln_poll_until(event_done, e, timeout_ns);
  else
    st = kiln_wait_as((e->flags & KILN_EVENT_BLOCKING)
                          ? KILN_SYNC_BLOCK
                          : e->base.context->sync,
                      event_done, event_sleep, e);
  /* Device printf's buffer is flushed in a synchronizing call of the
   * driver's, which polling is not (stream.c): the event is done, so this
   * one returns at once. */
  if (st == KILN_OK &&
      atomic_load_explicit(&e->base.context->printing_modules,
                           memory_order_relaxed))
    st = event_sleep(e);
  return st;
}

kiln_status kiln_cuda_event_query(kiln_event *e) {
  kiln_status st = kiln_cuda_make_current(e->base.context);
  if (st != KILN_OK) return st;
  kiln_cuda_open_gates(e->base.context);
  CUresult r = kiln_cuda_api.cuEventQuery(handle_of(e));
  /* Not ready is an answer, worded by the core. */
  if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY)
    return kiln_cuda_status(r, KILN_ERROR_BACKEND);
  return kiln_cuda_error(r, "cuEventQuery");
}

kiln_status kiln_cuda_event_elapsed_ms(kiln_event *start, kiln_event *end,
                                       float *out_ms) {
  kiln_status st = kiln_cuda_make_current(start->base.context);
  if (st != KILN_OK) return st;
  float ms = 0.0f;
  CUresult r = kiln_cuda_api.cuEventElapsedTime(&ms, handle_of(start),
                                                handle_of(end));
  if (r == CUDA_ERROR_NOT_READY) return KILN_ERROR_NOT_READY;
  if (r != CUDA_SUCCESS) return kiln_cuda_error(r, "cuEventElapsedTime");
  *out_ms = ms;
  return KILN_OK;
}
