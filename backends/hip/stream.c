/* Streams: native HIP streams, all non-blocking so that they never wait
 * for, or hold up, work on the null stream of the program's own HIP code.
 * The context's default stream is one of them. */
#include "backends/hip/hip.h"

kiln_status kiln_hip_stream_init(kiln_stream *s) {
  kiln_hip_device_scope scope;
  kiln_status st = kiln_hip_device_enter(s->base.context, &scope);
  if (st != KILN_OK) return st;
  /* kiln's priority p is HIP's -p (context.c). */
  hipError_t err = kiln_hip_api.hipStreamCreateWithPriority(
      &kiln_hip_stream_cast(s)->handle, hipStreamNonBlocking,
      -(int)s->priority);
  kiln_hip_device_leave(&scope);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipStreamCreateWithPriority(%d)",
                          -(int)s->priority);
  st = kiln_hip_reorder_stream_init(s);
  if (st != KILN_OK) kiln_hip_api.hipStreamDestroy(kiln_hip_stream_handle(s));
  return st;
}

void kiln_hip_stream_deinit(kiln_stream *s) {
  kiln_hip_reorder_stream_deinit(s);
  if (s->borrowed) return;
  hipError_t err = kiln_hip_api.hipStreamDestroy(kiln_hip_stream_handle(s));
  if (err != hipSuccess) kiln_hip_warn(err, "hipStreamDestroy");
}

kiln_status kiln_hip_stream_query(kiln_stream *s) {
  hipError_t err = kiln_hip_api.hipStreamQuery(kiln_hip_stream_handle(s));
  if (err == hipSuccess) return KILN_OK;
  if (err == hipErrorNotReady) return KILN_ERROR_NOT_READY;
  return kiln_hip_error(err, "hipStreamQuery");
}

static kiln_status stream_done(void *s) { return kiln_hip_stream_query(s); }

/* Sleeps until the stream's work so far is done, on an event of its own
 * (hipEventBlockingSync), made on the stream's device: the policy is
 * kiln's, not hipSetDeviceFlags', which is the whole process's, and an
 * event per wait keeps two threads' waits on one stream apart. */
static kiln_status stream_sleep(void *s) {
  kiln_stream *base = s;
  kiln_hip_device_scope scope;
  kiln_status st = kiln_hip_device_enter(base->base.context, &scope);
  if (st != KILN_OK) return st;
  hipEvent_t e;
  hipError_t err = kiln_hip_api.hipEventCreateWithFlags(
      &e, hipEventBlockingSync | hipEventDisableTiming);
  kiln_hip_device_leave(&scope);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipEventCreateWithFlags (a stream's wait)");
  err = kiln_hip_api.hipEventRecord(e, kiln_hip_stream_handle(base));
  if (err == hipSuccess) err = kiln_hip_api.hipEventSynchronize(e);
  st = err == hipSuccess ? KILN_OK
                         : kiln_hip_error(err, "waiting for a stream's event");
  err = kiln_hip_api.hipEventDestroy(e);
  if (err != hipSuccess && st == KILN_OK)
    st = kiln_hip_error(err, "hipEventDestroy (a stream's wait)");
  return st;
}

kiln_status kiln_hip_stream_synchronize(kiln_stream *s, uint64_t timeout_ns) {
  /* hipStreamSynchronize has no bound, and waits as the device's flag
   * (the whole process's) says: kiln polls, or sleeps on an event,
   * itself. */
  kiln_hip_open_gates(s->base.context);
  if (timeout_ns != KILN_WAIT_FOREVER)
    return kiln_poll_until(stream_done, s, timeout_ns);
  return kiln_wait_as(s->base.context->sync, stream_done, stream_sleep, s);
}
