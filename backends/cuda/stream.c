/* Streams: one CUstream each, created non-blocking so that kiln's work
 * never waits on, or holds up, the legacy NULL stream that other CUDA code
 * in the process may use. The context's default kiln stream is one of
 * these too. */
#include "backends/cuda/cuda.h"

kiln_status kiln_cuda_stream_init(kiln_stream *base) {
  kiln_cuda_stream *s = kiln_cuda_stream_cast(base);
  kiln_status st = kiln_cuda_make_current(base->base.context);
  if (st != KILN_OK) return st;
  CUresult r = kiln_cuda_api.cuStreamCreate(&s->handle, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) return kiln_cuda_error(r, "cuStreamCreate");
  return KILN_OK;
}

void kiln_cuda_stream_deinit(kiln_stream *base) {
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

kiln_status kiln_cuda_stream_synchronize(kiln_stream *base,
                                         uint64_t timeout_ns) {
  kiln_status st = kiln_cuda_make_current(base->base.context);
  if (st != KILN_OK) return st;
  /* cuStreamSynchronize has no bound; polling has, and is used only then,
   * since each NOT_READY it meets is an API error in compute-sanitizer's
   * report. */
  if (timeout_ns != KILN_WAIT_FOREVER)
    return kiln_poll_until(stream_done, base, timeout_ns);
  CUresult r =
      kiln_cuda_api.cuStreamSynchronize(kiln_cuda_stream_cast(base)->handle);
  if (r != CUDA_SUCCESS) return kiln_cuda_error(r, "cuStreamSynchronize");
  return KILN_OK;
}
