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

/* Device printf's output arrives only in a synchronizing call of the
 * runtime's (hipStreamSynchronize, hipEventSynchronize, ...), which the
 * polling of kiln's waits (hipStreamQuery) is not. Where a module of the
 * context may print (kiln_module's `prints`), a stream's wait records an
 * event as it begins and ends with hipEventSynchronize on it: done by
 * then, so it returns at once, yet flushes; and it covers the wait's work
 * only, so a bounded wait stays bounded. *out_mark stays NULL where
 * nothing prints. */
static kiln_status printf_mark(kiln_stream *s, hipEvent_t *out_mark) {
  *out_mark = NULL;
  if (!atomic_load_explicit(&s->base.context->printing_modules,
                            memory_order_relaxed))
    return KILN_OK;
  kiln_hip_device_scope scope;
  kiln_status st = kiln_hip_device_enter(s->base.context, &scope);
  if (st != KILN_OK) return st;
  hipError_t err =
      kiln_hip_api.hipEventCreateWithFlags(out_mark, hipEventDisableTiming);
  kiln_hip_device_leave(&scope);
  if (err != hipSuccess)
    return kiln_hip_error(err,
                          "hipEventCreateWithFlags (to flush device printf)");
  err = kiln_hip_api.hipEventRecord(*out_mark, kiln_hip_stream_handle(s));
  if (err == hipSuccess) return KILN_OK;
  kiln_hip_api.hipEventDestroy(*out_mark);
  *out_mark = NULL;
  return kiln_hip_error(err, "hipEventRecord (to flush device printf)");
}

/* Ends a wait that returned `st`: flushes printf at `mark` after a wait
 * that succeeded, and frees it. */
static kiln_status printf_flush(hipEvent_t mark, kiln_status st) {
  if (!mark) return st;
  hipError_t err =
      st == KILN_OK ? kiln_hip_api.hipEventSynchronize(mark) : hipSuccess;
  if (err != hipSuccess)
    st = kiln_hip_error(err, "hipEventSynchronize (to flush device printf)");
  err = kiln_hip_api.hipEventDestroy(mark);
  if (err != hipSuccess) kiln_hip_warn(err, "hipEventDestroy");
  return st;
}

kiln_status kiln_hip_stream_synchronize(kiln_stream *s, uint64_t timeout_ns) {
  /* hipStreamSynchronize has no bound, and waits as the device's flag
   * (the whole process's) says: kiln polls, or sleeps on an event,
   * itself. */
  kiln_hip_open_gates(s->base.context);
  hipEvent_t mark;
  kiln_status st = printf_mark(s, &mark);
  if (st != KILN_OK) return st;
  if (timeout_ns != KILN_WAIT_FOREVER)
    st = kiln_poll_until(stream_done, s, timeout_ns);
  else
    st = kiln_wait_as(s->base.context->sync, stream_done, stream_sleep, s);
  return printf_flush(mark, st);
}
