/* Native handles in and out (core/api/interop.c checked the arguments). kiln's
 * objects are plain driver objects, so exporting is handing them out, and
 * foreign work on the exported CUstream is ordered with kiln's by the stream
 * itself. */
#include "backends/cuda/cuda.h"

kiln_status kiln_cuda_context_native(kiln_context *ctx,
                                     kiln_native_context *out) {
  const kiln_cuda_context *cc = kiln_cuda_context_cast(ctx);
  kiln_cuda_reorder_expose(ctx, NULL);
  out->cuda_device = (int)cc->device;
  out->cuda_context = (void *)cc->handle;
  return KILN_OK;
}

/* The device of `context`, made current for the question and the thread's
 * own current context restored after. */
static kiln_status device_of(CUcontext context, CUdevice *out) {
  CUcontext previous = NULL;
  CUresult r = kiln_cuda_api.cuCtxGetCurrent(&previous);
  if (r == CUDA_SUCCESS) r = kiln_cuda_api.cuCtxSetCurrent(context);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error_as(r, KILN_ERROR_INVALID_ARGUMENT,
                              "making native->cuda_context %p current",
                              (void *)context);
  r = kiln_cuda_api.cuCtxGetDevice(out);
  CUresult back = kiln_cuda_api.cuCtxSetCurrent(previous);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error_as(r, KILN_ERROR_INVALID_ARGUMENT,
                              "cuCtxGetDevice of native->cuda_context %p",
                              (void *)context);
  if (back != CUDA_SUCCESS)
    return kiln_cuda_error(back, "restoring the thread's current context");
  return KILN_OK;
}

kiln_status kiln_cuda_context_import_device(const kiln_native_context *native,
                                            size_t *out_index) {
  if (!native->cuda_context)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "native->cuda_context is NULL");
  CUdevice device;
  kiln_status st = device_of((CUcontext)native->cuda_context, &device);
  if (st != KILN_OK) return st;
  /* A CUdevice is its ordinal, which is kiln's device index. */
  *out_index = (size_t)device;
  return KILN_OK;
}

kiln_status kiln_cuda_context_import(kiln_context *base,
                                     const kiln_native_context *native,
                                     bool adopt) {
  if (adopt)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "kiln does not destroy CUDA contexts it did not "
                          "create (a primary context is shared by the "
                          "process): KILN_NATIVE_ADOPT is refused");
  kiln_cuda_context *ctx = kiln_cuda_context_cast(base);
  CUresult r = kiln_cuda_api.cuDeviceGet(&ctx->device, (int)base->device_index);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuDeviceGet(%zu)", base->device_index);
  ctx->handle = (CUcontext)native->cuda_context;
  ctx->imported = true;
  /* The caller's code may wait on the context itself. */
  ctx->exposed = true;
  kiln_status st = kiln_cuda_make_current(base);
  if (st == KILN_OK) st = kiln_cuda_reorder_check(base);
  return st == KILN_OK ? kiln_cuda_context_priorities(base) : st;
}

kiln_status kiln_cuda_buffer_native(const kiln_buffer *buf,
                                    kiln_native_buffer *out) {
  (void)buf; /* the core's device_address is the CUdeviceptr */
  (void)out;
  return KILN_OK;
}

kiln_status kiln_cuda_buffer_import(kiln_buffer *buf,
                                    const kiln_native_buffer *native,
                                    bool adopt) {
  static const char fn[] = "kiln_buffer_create_from_native";
  kiln_context *ctx = buf->base.context;
  kiln_status st = kiln_cuda_make_current(ctx);
  if (st != KILN_OK) return st;
  /* The plural query answers unknown pointers with zeroes instead of an
   * error that compute-sanitizer would report. */
  CUpointer_attribute attrs[3] = {CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                  CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                  CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  int ordinal = -1;
  CUdeviceptr start = 0;
  size_t range = 0;
  void *data[3] = {&ordinal, &start, &range};
  const CUdeviceptr ptr = (CUdeviceptr)native->device_address;
  CUresult r = kiln_cuda_api.cuPointerGetAttributes(3, attrs, data, ptr);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "%s: cuPointerGetAttributes", fn);
  if (range == 0)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: 0x%llx is not device memory CUDA knows", fn,
                          (unsigned long long)ptr);
  if (ordinal != (int)kiln_cuda_context_cast(ctx)->device)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: 0x%llx is memory of CUDA device %d, the "
                          "context's is %d",
                          fn, (unsigned long long)ptr, ordinal,
                          (int)kiln_cuda_context_cast(ctx)->device);
  if (ptr - start > range || native->size > range - (ptr - start))
    return kiln_set_error(KILN_ERROR_OUT_OF_RANGE,
                          "%s: %zu bytes from 0x%llx pass the end of the "
                          "allocation (0x%llx, %zu bytes)",
                          fn, native->size, (unsigned long long)ptr,
                          (unsigned long long)start, range);
  if (adopt && ptr != start)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: KILN_NATIVE_ADOPT needs the allocation's "
                          "start 0x%llx (cuMemFree frees only that), not "
                          "0x%llx",
                          fn, (unsigned long long)start,
                          (unsigned long long)ptr);
  buf->device_address = native->device_address;
  return KILN_OK;
}

kiln_status kiln_cuda_stream_native(kiln_stream *s, kiln_native_stream *out) {
  kiln_cuda_reorder_expose(s->base.context, s);
  out->stream = (void *)kiln_cuda_stream_cast(s)->handle;
  return KILN_OK;
}

kiln_status kiln_cuda_stream_import(kiln_stream *s,
                                    const kiln_native_stream *native,
                                    bool adopt) {
  static const char fn[] = "kiln_stream_create_from_native";
  (void)adopt; /* the core set s->borrowed */
  if (!native->stream)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: native->stream is NULL, CUDA's legacy default "
                          "stream, which no one may destroy or wrap",
                          fn);
  kiln_status st = kiln_cuda_make_current(s->base.context);
  if (st != KILN_OK) return st;
  CUstream handle = (CUstream)native->stream;
  CUcontext owner = NULL;
  CUresult r = kiln_cuda_api.cuStreamGetCtx(handle, &owner);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error_as(r, KILN_ERROR_INVALID_ARGUMENT,
                              "%s: cuStreamGetCtx(%p)", fn, native->stream);
  CUcontext mine = kiln_cuda_context_cast(s->base.context)->handle;
  if (owner != mine)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: the CUstream belongs to CUcontext %p, the "
                          "kiln context's is %p",
                          fn, (void *)owner, (void *)mine);
  kiln_cuda_stream_cast(s)->handle = handle;
  return KILN_OK;
}

kiln_status kiln_cuda_stream_wait_native(kiln_stream *s, uint64_t handle,
                                         uint64_t value) {
  (void)value; /* 0: the core checked it */
  kiln_status st = kiln_cuda_hold(s);
  if (st == KILN_OK) st = kiln_cuda_make_current(s->base.context);
  if (st != KILN_OK) return st;
  CUresult r = kiln_cuda_api.cuStreamWaitEvent(kiln_cuda_stream_cast(s)->handle,
                                               (CUevent)(uintptr_t)handle, 0);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuStreamWaitEvent on the caller's CUevent");
  return KILN_OK;
}
