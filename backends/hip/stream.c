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
    return kiln_hip_error(err, KILN_ERROR_BACKEND, "hipStreamCreateWithFlags");
  return KILN_OK;
}

void kiln_hip_stream_deinit(kiln_stream *s) {
  hipError_t err = kiln_hip_api.hipStreamDestroy(kiln_hip_stream_handle(s));
  if (err != hipSuccess) kiln_hip_warn(err, "hipStreamDestroy");
}

kiln_status kiln_hip_stream_synchronize(kiln_stream *s) {
  hipError_t err =
      kiln_hip_api.hipStreamSynchronize(kiln_hip_stream_handle(s));
  if (err != hipSuccess)
    return kiln_hip_error(err, KILN_ERROR_BACKEND, "hipStreamSynchronize");
  return KILN_OK;
}
