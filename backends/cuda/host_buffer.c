/* Host buffers: page-locked host memory (cuMemHostAlloc) that the copy
 * engines read and write directly, so transfers from and to it are truly
 * asynchronous. Portable, so that it stays pinned for every context in the
 * process, not only the one current when it was made. */
#include "backends/cuda/cuda.h"

kiln_status kiln_cuda_host_buffer_init(kiln_host_buffer *hb, uint32_t flags) {
  (void)flags; /* none are defined for host buffers yet */
  kiln_status st = kiln_cuda_make_current(hb->base.context);
  if (st != KILN_OK) return st;
  void *data = NULL;
  CUresult r = kiln_cuda_api.cuMemHostAlloc(&data, hb->size,
                                            CU_MEMHOSTALLOC_PORTABLE);
  if (r != CUDA_SUCCESS) {
    st = kiln_cuda_error(r, "cuMemHostAlloc of %zu pinned bytes", hb->size);
    /* The memory that ran out is the host's. */
    return st == KILN_ERROR_OUT_OF_DEVICE_MEMORY ? KILN_ERROR_OUT_OF_HOST_MEMORY
                                                 : st;
  }
  hb->data = data;
  return KILN_OK;
}

void kiln_cuda_host_buffer_deinit(kiln_host_buffer *hb) {
  kiln_cuda_make_current_for_deinit(hb->base.context, "freeing a host buffer");
  /* Asynchronous copies on any stream may still read or write it. */
  if (kiln_sync_streams(hb->base.context) != KILN_OK)
    kiln_log(KILN_LOG_WARN, "cuda: waiting for the streams before freeing a "
             "host buffer: %s", kiln_last_error());
  /* A free of pinned memory may wait for the whole device: no gate may
   * close between the wait above and it. */
  kiln_cuda_gates_stay_open(hb->base.context, true);
  CUresult r = kiln_cuda_api.cuMemFreeHost(hb->data);
  kiln_cuda_gates_stay_open(hb->base.context, false);
  if (r != CUDA_SUCCESS) kiln_cuda_warn(r, "cuMemFreeHost");
}
