/* Streams: native HIP streams, all non-blocking so that they never wait
 * for, or hold up, work on the null stream of the program's own HIP code.
 * The context's default stream is one of them. */
#include "backends/hip/hip.h"

kiln_status kiln_hip_stream_init(kiln_stream *s) {
  kiln_hip_device_scope scope;
  kiln_status st = kiln_hip_device_enter(s->base.context, &scope);
  if (st != KILN_OK) return st;
  /* kiln's priority p is HIP's -p (context.c). */
  kiln_hip_stream *hs = kiln_hip_stream_cast(s);
  hipError_t err = kiln_hip_api.hipStreamCreateWithPriority(
      &hs->handle, hipStreamNonBlocking, -(int)s->priority);
  if (err != hipSuccess) {
    kiln_hip_device_leave(&scope);
    return kiln_hip_error(err, "hipStreamCreateWithPriority");
  }
  st = kiln_hip_stream_init_sleeper(hs);
  if (st != KILN_OK) kiln_hip_api.hipStreamDestroy(hs->handle);
  kiln_hip_device_leave(&scope);
  return st;
}

kiln_status kiln_hip_stream_init_sleeper(kiln_hip_stream *s) {
  hipError_t err = kiln_hip_api.hipEventCreateWithFlags(
      &s->sleeper, hipEventBlockingSync | hipEventDisableTiming);
  if (err == hipSuccess) return KILN_OK;
  s->sleeper = NULL;
  return kiln_hip_error(err, "hipEventCreateWithFlags (a stream's wait)");
}

void kiln_hip_stream_deinit(kiln_stream *s) {
  hipError_t err =
      kiln_hip_api.hipEventDestroy(kiln_hip_stream_cast(s)->sleeper);
  if (err != hipSuccess) kiln_hip_warn(err, "hipEventDestroy (a stream's wait)");
  if (s->borrowed) return;
  err = kiln_hip_api.hipStreamDestroy(kiln_hip_stream_handle(s));
  if (err != hipSuccess) kiln_hip_warn(err, "hipStreamDestroy");
}

kiln_status kiln_hip_stream_query(kiln_stream *s) {
  hipError_t err = kiln_hip_api.hipStreamQuery(kiln_hip_stream_handle(s));
  if (err == hipSuccess) return KILN_OK;
  if (err == hipErrorNotReady) return KILN_ERROR_NOT_READY;
  return kiln_hip_error(err, "hipStreamQuery");
}

static kiln_status stream_done(void *s) { return kiln_hip_stream_query(s); }

/* Sleeps until the stream's work so far is done. */
static kiln_status stream_sleep(void *s) {
  kiln_hip_stream *hs = kiln_hip_stream_cast(s);
  hipError_t err = kiln_hip_api.hipEventRecord(hs->sleeper, hs->handle);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipEventRecord (a stream's wait)");
  err = kiln_hip_api.hipEventSynchronize(hs->sleeper);
  if (err != hipSuccess) return kiln_hip_error(err, "hipEventSynchronize");
  return KILN_OK;
}

kiln_status kiln_hip_stream_synchronize(kiln_stream *s, uint64_t timeout_ns) {
  /* hipStreamSynchronize has no bound, and waits as the device's flag
   * (the whole process's) says: kiln polls, or sleeps on an event,
   * itself. */
  if (timeout_ns != KILN_WAIT_FOREVER)
    return kiln_poll_until(stream_done, s, timeout_ns);
  return kiln_wait_as(s->base.context->sync, stream_done, stream_sleep, s);
}
