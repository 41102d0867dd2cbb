/* Native handles in and out (core/api/interop.c checked the arguments). kiln's
 * objects are plain HIP objects, so exporting is handing them out, and
 * foreign work on the exported hipStream_t is ordered with kiln's by the
 * stream itself. */
#include "backends/hip/hip.h"

kiln_status kiln_hip_context_native(kiln_context *ctx,
                                    kiln_native_context *out) {
  kiln_hip_reorder_expose(ctx, NULL);
  out->hip_device = kiln_hip_context_cast(ctx)->device;
  return KILN_OK;
}

kiln_status kiln_hip_context_import_device(const kiln_native_context *native,
                                           size_t *out_index) {
  const size_t count = kiln_hip_device_count();
  if (native->hip_device < 0 || (size_t)native->hip_device >= count)
    return kiln_set_error(KILN_ERROR_NOT_FOUND,
                          "native->hip_device is %d; HIP has %zu device(s)",
                          native->hip_device, count);
  *out_index = (size_t)native->hip_device;
  return KILN_OK;
}

kiln_status kiln_hip_context_import(kiln_context *ctx,
                                    const kiln_native_context *native,
                                    bool adopt) {
  (void)native; /* its device is ctx->device_index */
  if (adopt)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "a HIP device is no object to own: "
                          "KILN_NATIVE_ADOPT means nothing for it");
  /* The caller's code may wait on the device itself. */
  kiln_hip_context_cast(ctx)->exposed = true;
  return kiln_hip_context_init(ctx);
}

kiln_status kiln_hip_buffer_native(const kiln_buffer *buf,
                                   kiln_native_buffer *out) {
  (void)buf; /* the core's device_address is the device pointer */
  (void)out;
  return KILN_OK;
}

kiln_status kiln_hip_buffer_import(kiln_buffer *buf,
                                   const kiln_native_buffer *native,
                                   bool adopt) {
  static const char fn[] = "kiln_buffer_create_from_native";
  kiln_hip_device_scope scope;
  kiln_status st = kiln_hip_device_enter(buf->base.context, &scope);
  if (st != KILN_OK) return st;
  void *ptr = (void *)(uintptr_t)native->device_address;
  hipDeviceptr_t start = NULL;
  size_t range = 0;
  hipError_t err = kiln_hip_api.hipMemGetAddressRange(&start, &range, ptr);
  kiln_hip_device_leave(&scope);
  if (err != hipSuccess) {
    /* Whatever code the runtime picks for a pointer it does not know, the
     * caller passed a bad one; only a lost device says more. */
    st = kiln_hip_error_as(err, KILN_ERROR_INVALID_ARGUMENT,
                           "%s: hipMemGetAddressRange(%p): not device memory "
                           "HIP knows",
                           fn, ptr);
    return st == KILN_ERROR_DEVICE_LOST ? st : KILN_ERROR_INVALID_ARGUMENT;
  }
  const uintptr_t at = (uintptr_t)ptr - (uintptr_t)start;
  if (at > range || native->size > range - at)
    return kiln_set_error(KILN_ERROR_OUT_OF_RANGE,
                          "%s: %zu bytes from %p pass the end of the "
                          "allocation (%p, %zu bytes)",
                          fn, native->size, ptr, start, range);
  if (adopt && at != 0)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: KILN_NATIVE_ADOPT needs the allocation's "
                          "start %p (hipFree frees only that), not %p",
                          fn, start, ptr);
  buf->device_address = native->device_address;
  return KILN_OK;
}

kiln_status kiln_hip_stream_native(kiln_stream *s, kiln_native_stream *out) {
  kiln_hip_reorder_expose(s->base.context, s);
  out->stream = (void *)kiln_hip_stream_handle(s);
  return KILN_OK;
}

kiln_status kiln_hip_stream_import(kiln_stream *s,
                                   const kiln_native_stream *native,
                                   bool adopt) {
  (void)adopt; /* the core set s->borrowed */
  if (!native->stream)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "kiln_stream_create_from_native: native->stream is "
                          "NULL, HIP's default stream, which no one may "
                          "destroy or wrap");
  kiln_hip_stream_cast(s)->handle = (hipStream_t)native->stream;
  return KILN_OK;
}

kiln_status kiln_hip_stream_wait_native(kiln_stream *s, uint64_t handle,
                                        uint64_t value) {
  (void)value; /* 0: the core checked it */
  kiln_status st = kiln_hip_hold(s);
  if (st != KILN_OK) return st;
  hipError_t err = kiln_hip_api.hipStreamWaitEvent(
      kiln_hip_stream_handle(s), (hipEvent_t)(uintptr_t)handle, 0);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipStreamWaitEvent on the caller's hipEvent_t");
  return KILN_OK;
}
