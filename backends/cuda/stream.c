/* Streams: one CUstream each, created non-blocking so that kiln's work
 * never waits on, or holds up, the legacy NULL stream that other CUDA code
 * in the process may use. The context's default kiln stream is one of
 * these too. */
#include "backends/cuda/cuda.h"

kiln_status kiln_cuda_stream_init(kiln_stream *base) {
  kiln_cuda_stream *s = kiln_cuda_stream_cast(base);
  kiln_status st = kiln_cuda_make_current(base->base.context);
  if (st != KILN_OK) return st;
  /* kiln's priority p is CUDA's -p (context.c). */
  CUresult r = kiln_cuda_api.cuStreamCreateWithPriority(
      &s->handle, CU_STREAM_NON_BLOCKING, -(int)base->priority);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuStreamCreateWithPriority(%d)",
                           -(int)base->priority);
  st = kiln_cuda_reorder_stream_init(base);
  if (st != KILN_OK) kiln_cuda_api.cuStreamDestroy(s->handle);
  return st;
}

void kiln_cuda_stream_deinit(kiln_stream *base) {
  kiln_cuda_reorder_stream_deinit(base);
  if (base->borrowed) return;
  /* The core has synchronized the stream; cuStreamDestroy would defer the
   * release past pending work anyway. */
  kiln_cuda_make_current_for_deinit(base->base.context,
                                    "destroying a stream");
  CUresult r =
      kiln_cuda_api.cuStreamDestroy(kiln_cuda_stream_cast(base)->handle);
  if (r != CUDA_SUCCESS) kiln_cuda_warn(r, "cuStreamDestroy");
}

kiln_status kiln_cuda_stream_query(kiln_stream *base) {
  CUresult r = kiln_cuda_api.cuStreamQuery(kiln_cuda_stream_cast(base)->handle);
  if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY)
    return kiln_cuda_status(r, KILN_ERROR_BACKEND);
  return kiln_cuda_error(r, "cuStreamQuery");
}

static kiln_status stream_done(void *base) {
  return kiln_cuda_stream_query(base);
}

/* Sleeps until the stream's work so far is done, on an event of its own
 * (CU_EVENT_BLOCKING_SYNC): the policy is kiln's, not the primary
 * context's scheduling flag, which is the whole process's, and an event
 * per wait keeps two threads' waits on one stream apart. */
static kiln_status stream_sleep(void *base) {
  CUevent e;
  CUresult r = kiln_cuda_api.cuEventCreate(
      &e, CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuEventCreate (a stream's wait)");
  r = kiln_cuda_api.cuEventRecord(e, kiln_cuda_stream_cast(base)->handle);
  if (r == CUDA_SUCCESS) r = kiln_cuda_api.cuEventSynchronize(e);
  kiln_status st = r == CUDA_SUCCESS
                       ? KILN_OK
                       : kiln_cuda_error(r, "waiting for a stream's event");
  r = kiln_cuda_api.cuEventDestroy(e);
  if (r != CUDA_SUCCESS && st == KILN_OK)
    st = kiln_cuda_error(r, "cuEventDestroy (a stream's wait)");
  return st;
}

/* Device printf's buffer reaches stdout only in a synchronizing call of
 * the driver's (cuStreamSynchronize, cuEventSynchronize, ...), which the
 * polling of kiln's waits (cuStreamQuery) is not. Where a module of the
 * context may print (kiln_module's `prints`), a stream's wait records an
 * event as it begins and ends with cuEventSynchronize on it: done by then,
 * so it returns at once, yet flushes; and it covers the wait's work only,
 * not work other threads queue meanwhile, so a bounded wait stays bounded.
 * *out_mark stays NULL where nothing prints. */
static kiln_status printf_mark(kiln_stream *base, CUevent *out_mark) {
  *out_mark = NULL;
  if (!atomic_load_explicit(&base->base.context->printing_modules,
                            memory_order_relaxed))
    return KILN_OK;
  CUresult r = kiln_cuda_api.cuEventCreate(out_mark, CU_EVENT_DISABLE_TIMING);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuEventCreate (to flush device printf)");
  r = kiln_cuda_api.cuEventRecord(*out_mark,
                                  kiln_cuda_stream_cast(base)->handle);
  if (r == CUDA_SUCCESS) return KILN_OK;
  kiln_cuda_api.cuEventDestroy(*out_mark);
  *out_mark = NULL;
  return kiln_cuda_error(r, "cuEventRecord (to flush device printf)");
}

/* Ends a wait that returned `st`: flushes printf at `mark` after a wait
 * that succeeded, and frees it. */
static kiln_status printf_flush(CUevent mark, kiln_status st) {
  if (!mark) return st;
  CUresult r =
      st == KILN_OK ? kiln_cuda_api.cuEventSynchronize(mark) : CUDA_SUCCESS;
  if (r != CUDA_SUCCESS)
    st = kiln_cuda_error(r, "cuEventSynchronize (to flush device printf)");
  r = kiln_cuda_api.cuEventDestroy(mark);
  if (r != CUDA_SUCCESS) kiln_cuda_warn(r, "cuEventDestroy");
  return st;
}

kiln_status kiln_cuda_stream_synchronize(kiln_stream *base,
                                         uint64_t timeout_ns) {
  kiln_status st = kiln_cuda_make_current(base->base.context);
  if (st != KILN_OK) return st;
  kiln_cuda_open_gates(base->base.context);
  CUevent mark;
  if ((st = printf_mark(base, &mark)) != KILN_OK) return st;
  /* cuStreamSynchronize has no bound, and waits as the primary context's
   * scheduling flag says: kiln polls, or sleeps on an event, itself. */
  if (timeout_ns != KILN_WAIT_FOREVER)
    st = kiln_poll_until(stream_done, base, timeout_ns);
  else
    st = kiln_wait_as(base->base.context->sync, stream_done, stream_sleep,
                      base);
  return printf_flush(mark, st);
}
