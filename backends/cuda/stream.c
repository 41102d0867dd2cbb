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
  /* The core has synchronized the stream; cuStreamDestroy would defer the
   * release past pending work anyway. */
  kiln_cuda_make_current(base->base.context);
  kiln_cuda_api.cuStreamDestroy(kiln_cuda_stream_cast(base)->handle);
}

kiln_status kiln_cuda_stream_synchronize(kiln_stream *base) {
  kiln_status st = kiln_cuda_make_current(base->base.context);
  if (st != KILN_OK) return st;
  CUresult r =
      kiln_cuda_api.cuStreamSynchronize(kiln_cuda_stream_cast(base)->handle);
  if (r != CUDA_SUCCESS) return kiln_cuda_error(r, "cuStreamSynchronize");
  return KILN_OK;
}
