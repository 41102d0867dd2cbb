/* Host buffers: pinned host memory from hipHostMalloc, which the device
 * reaches directly, so transfers from and to it are truly asynchronous. */
#include "backends/hip/hip.h"

kiln_status kiln_hip_host_buffer_init(kiln_host_buffer *hb, uint32_t flags) {
  (void)flags;
  kiln_hip_device_scope scope;
  kiln_status st = kiln_hip_device_enter(hb->base.context, &scope);
  if (st != KILN_OK) return st;
  void *ptr = NULL;
  hipError_t err = kiln_hip_api.hipHostMalloc(&ptr, hb->size,
                                              hipHostMallocDefault);
  kiln_hip_device_leave(&scope);
  if (err != hipSuccess) {
    st = kiln_hip_error(err, "hipHostMalloc of %zu pinned bytes", hb->size);
    /* The memory that ran out is the host's. */
    return st == KILN_ERROR_OUT_OF_DEVICE_MEMORY ? KILN_ERROR_OUT_OF_HOST_MEMORY
                                                 : st;
  }
  hb->data = ptr;
  return KILN_OK;
}

void kiln_hip_host_buffer_deinit(kiln_host_buffer *hb) {
  /* hipHostFree waits for the (current) device first, so no queued
   * transfer still uses the memory when it goes. */
  kiln_hip_device_scope scope;
  if (!kiln_hip_device_enter_for_deinit(hb->base.context, &scope,
                                        "freeing a host buffer"))
    return;
  kiln_hip_gates_stay_open(hb->base.context, true);
  hipError_t err = kiln_hip_api.hipHostFree(hb->data);
  kiln_hip_gates_stay_open(hb->base.context, false);
  kiln_hip_device_leave(&scope);
  if (err != hipSuccess) kiln_hip_warn(err, "hipHostFree");
}
