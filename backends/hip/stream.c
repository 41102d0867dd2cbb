/* Streams: native HIP streams, all non-blocking so that they never wait
 * for, or hold up, work on the null stream of the program's own HIP code.
 * The context's default stream is one of them. */
#include "backends/hip/hip.h"

kiln_status kiln_hip_stream_init(kiln_stream *s) {
  kiln_hip_device_scope scope;
  kiln_status st = kiln_hip_device_enter(s->base.context, &scope);
  if (st != KILN_OK) return st;
  hipError_t err = kiln_hip_api.hipStreamCreateWithFlags(
      &kiln_hip_stream_cast(s)->handle, hipStreamNonBlocking);
  kiln_hip_device_leave(&scope);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipStreamCreateWithFlags");
  return KILN_OK;
}

void kiln_hip_stream_deinit(kiln_stream *s) {
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

kiln_status kiln_hip_stream_synchronize(kiln_stream *s, uint64_t timeout_ns) {
  /* hipStreamSynchronize has no bound; polling has, and is used only then
   * (as on CUDA, where each NOT_READY is a sanitizer-reported API error). */
  if (timeout_ns != KILN_WAIT_FOREVER)
    return kiln_poll_until(stream_done, s, timeout_ns);
  hipError_t err =
      kiln_hip_api.hipStreamSynchronize(kiln_hip_stream_handle(s));
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipStreamSynchronize");
  return KILN_OK;
}
