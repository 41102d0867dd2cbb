/* Device buffers, and the stream-ordered transfers, copies and fills between
 * host memory, host buffers and device buffers. */
#include "backends/hip/hip.h"

kiln_status kiln_hip_buffer_init(kiln_buffer *buf, uint32_t flags) {
  kiln_hip_device_scope scope;
  kiln_status st = kiln_hip_device_enter(buf->base.context, &scope);
  if (st != KILN_OK) return st;
  void *ptr = NULL;
  hipError_t err = kiln_hip_api.hipMalloc(&ptr, buf->size);
  if (err == hipSuccess && (flags & KILN_BUFFER_ZERO)) {
    /* On the null stream, which kiln's streams (all non-blocking) do not
     * wait for, so it cannot get in the way of queued work; then waited
     * for, so the zeros are there before any stream can use the buffer. */
    err = kiln_hip_api.hipMemsetD8Async(ptr, 0, buf->size, NULL);
    if (err == hipSuccess) err = kiln_hip_api.hipStreamSynchronize(NULL);
    if (err != hipSuccess) {
      st = kiln_hip_error(err,
                          "zeroing a new %zu-byte buffer (hipMemsetD8Async, "
                          "hipStreamSynchronize)",
                          buf->size);
      hipError_t freed = kiln_hip_api.hipFree(ptr);
      if (freed != hipSuccess) kiln_hip_warn(freed, "hipFree");
      kiln_hip_device_leave(&scope);
      return st;
    }
  }
  kiln_hip_device_leave(&scope);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipMalloc of %zu bytes on %s", buf->size,
                          buf->base.context->properties.name);
  buf->device_address = (uint64_t)(uintptr_t)ptr;
  return KILN_OK;
}

void kiln_hip_buffer_deinit(kiln_buffer *buf) {
  /* hipFree waits for the device first, so no queued work still uses the
   * memory when it goes. */
  kiln_hip_device_scope scope;
  if (!kiln_hip_device_enter_for_deinit(buf->base.context, &scope,
                                        "freeing a buffer"))
    return;
  /* A borrowed buffer's memory stays, but kiln's work on it must end. */
  if (buf->borrowed) {
    if (kiln_sync_streams(buf->base.context) != KILN_OK)
      kiln_log(KILN_LOG_WARN, "hip: waiting for the streams before letting "
               "go of a borrowed buffer: %s", kiln_last_error());
    kiln_hip_device_leave(&scope);
    return;
  }
  kiln_hip_gates_stay_open(buf->base.context, true);
  hipError_t err = kiln_hip_api.hipFree(kiln_hip_buffer_ptr(buf, 0));
  kiln_hip_gates_stay_open(buf->base.context, false);
  kiln_hip_device_leave(&scope);
  if (err != hipSuccess) kiln_hip_warn(err, "hipFree");
}

/* `src` must be reusable when this returns. hipMemcpyAsync gives no such
 * promise for pageable memory on every ROCm release, so the copy is
 * waited for. */
kiln_status kiln_hip_buffer_write(kiln_stream *s, kiln_buffer *dst, size_t off,
                                  const void *src, size_t size) {
  kiln_status st = kiln_hip_hold(s);
  if (st != KILN_OK) return st;
  hipStream_t stream = kiln_hip_stream_handle(s);
  /* A copy from pageable memory may wait for the stream inside the
   * runtime's call (to stage it), so held gates open before the call. */
  kiln_hip_open_gates(s->base.context);
  hipError_t err = kiln_hip_api.hipMemcpyAsync(
      kiln_hip_buffer_ptr(dst, off), src, size, hipMemcpyHostToDevice, stream);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipMemcpyAsync of %zu bytes from host memory",
                          size);
  err = kiln_hip_api.hipStreamSynchronize(stream);
  if (err != hipSuccess)
    return kiln_hip_error(err,
                          "hipStreamSynchronize after a write of %zu "
                          "bytes",
                          size);
  return KILN_OK;
}

kiln_status kiln_hip_buffer_read(kiln_stream *s, const kiln_buffer *src,
                                 size_t off, void *dst, size_t size) {
  kiln_status st = kiln_hip_hold(s);
  if (st != KILN_OK) return st;
  hipStream_t stream = kiln_hip_stream_handle(s);
  /* A copy into pageable memory waits for the stream inside the runtime's
   * call: held gates open before it. */
  kiln_hip_open_gates(s->base.context);
  hipError_t err = kiln_hip_api.hipMemcpyAsync(
      dst, kiln_hip_buffer_ptr(src, off), size, hipMemcpyDeviceToHost, stream);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipMemcpyAsync of %zu bytes to host memory",
                          size);
  err = kiln_hip_api.hipStreamSynchronize(stream);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipStreamSynchronize after a read of %zu bytes",
                          size);
  return KILN_OK;
}

kiln_status kiln_hip_buffer_copy(kiln_stream *s, kiln_buffer *dst,
                                 size_t dst_off, const kiln_buffer *src,
                                 size_t src_off, size_t size) {
  kiln_status st = kiln_hip_hold(s);
  if (st != KILN_OK) return st;
  hipError_t err = kiln_hip_api.hipMemcpyAsync(
      kiln_hip_buffer_ptr(dst, dst_off), kiln_hip_buffer_ptr(src, src_off),
      size, hipMemcpyDeviceToDevice, kiln_hip_stream_handle(s));
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipMemcpyAsync of %zu bytes between buffers",
                          size);
  return KILN_OK;
}

kiln_status kiln_hip_buffer_fill(kiln_stream *s, kiln_buffer *dst, size_t off,
                                 size_t size, uint64_t pattern,
                                 size_t pattern_size) {
  kiln_status st = kiln_hip_hold(s);
  if (st != KILN_OK) return st;
  /* 1, 2 or 4 bytes (fill_sizes: HIP has no 8-byte memset). */
  void *ptr = kiln_hip_buffer_ptr(dst, off);
  hipStream_t stream = kiln_hip_stream_handle(s);
  hipError_t err;
  switch (pattern_size) {
  case 1:
    err = kiln_hip_api.hipMemsetD8Async(ptr, (unsigned char)pattern, size,
                                        stream);
    break;
  case 2:
    err = kiln_hip_api.hipMemsetD16Async(ptr, (unsigned short)pattern,
                                         size / 2, stream);
    break;
  default:
    err = kiln_hip_api.hipMemsetD32Async(ptr, (int)(uint32_t)pattern,
                                         size / 4, stream);
    break;
  }
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipMemsetD%zuAsync of %zu bytes",
                          pattern_size * 8, size);
  return KILN_OK;
}

kiln_status kiln_hip_buffer_write_async(kiln_stream *s, kiln_buffer *dst,
                                        size_t dst_off,
                                        const kiln_host_buffer *src,
                                        size_t src_off, size_t size) {
  kiln_status st = kiln_hip_hold(s);
  if (st != KILN_OK) return st;
  hipError_t err = kiln_hip_api.hipMemcpyAsync(
      kiln_hip_buffer_ptr(dst, dst_off),
      (const unsigned char *)src->data + src_off, size, hipMemcpyHostToDevice,
      kiln_hip_stream_handle(s));
  if (err != hipSuccess)
    return kiln_hip_error(err,
                          "hipMemcpyAsync of %zu bytes from a host "
                          "buffer",
                          size);
  return KILN_OK;
}

kiln_status kiln_hip_buffer_read_async(kiln_stream *s, const kiln_buffer *src,
                                       size_t src_off, kiln_host_buffer *dst,
                                       size_t dst_off, size_t size) {
  kiln_status st = kiln_hip_hold(s);
  if (st != KILN_OK) return st;
  hipError_t err = kiln_hip_api.hipMemcpyAsync(
      (unsigned char *)dst->data + dst_off, kiln_hip_buffer_ptr(src, src_off),
      size, hipMemcpyDeviceToHost, kiln_hip_stream_handle(s));
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipMemcpyAsync of %zu bytes to a host buffer",
                          size);
  return KILN_OK;
}

/* Makes `later` wait for the work queued so far on `earlier`, streams of
 * two contexts, perhaps of two devices: hipStreamWaitEvent takes an event
 * of another device. The event is destroyed at once; the runtime keeps
 * what the wait needs until it is done. */
static kiln_status order_after(kiln_stream *later, kiln_stream *earlier) {
  kiln_hip_device_scope scope;
  kiln_status st = kiln_hip_device_enter(earlier->base.context, &scope);
  if (st != KILN_OK) return st;
  hipEvent_t e;
  hipError_t err = kiln_hip_api.hipEventCreateWithFlags(&e, hipEventDefault);
  if (err != hipSuccess) {
    kiln_hip_device_leave(&scope);
    return kiln_hip_error(err, "hipEventCreateWithFlags (ordering a copy "
                               "between contexts)");
  }
  err = kiln_hip_api.hipEventRecord(e, kiln_hip_stream_handle(earlier));
  if (err != hipSuccess) {
    st = kiln_hip_error(err,
                        "hipEventRecord (ordering a copy between "
                        "contexts)");
  } else {
    err = kiln_hip_api.hipStreamWaitEvent(kiln_hip_stream_handle(later), e, 0);
    if (err != hipSuccess)
      st = kiln_hip_error(err,
                          "hipStreamWaitEvent (ordering a copy between "
                          "contexts)");
  }
  err = kiln_hip_api.hipEventDestroy(e);
  if (err != hipSuccess && st == KILN_OK)
    st = kiln_hip_error(err, "hipEventDestroy (ordering a copy between "
                             "contexts)");
  kiln_hip_device_leave(&scope);
  return st;
}

/* Lets dst's device (current) reach src's device's memory, so that
 * hipMemcpyPeerAsync copies device to device instead of through host
 * memory, where the hardware allows it; once per pair of kiln contexts
 * (other code may have done it already). Where it cannot be enabled the
 * runtime's staged copy is still correct. */
static void enable_peer(kiln_hip_context *dst, const kiln_hip_context *src) {
  uint_least64_t bit =
      src->device >= 0 && src->device < 64 ? (uint_least64_t)1 << src->device
                                           : 0;
  if (!bit || (atomic_load(&dst->peers) & bit)) return;
  int can = 0;
  hipError_t err =
      kiln_hip_api.hipDeviceCanAccessPeer(&can, dst->device, src->device);
  if (err != hipSuccess || !can) return;
  err = kiln_hip_api.hipDeviceEnablePeerAccess(src->device, 0);
  if (err == hipSuccess || err == hipErrorPeerAccessAlreadyEnabled)
    atomic_fetch_or(&dst->peers, bit);
  else
    kiln_hip_warn(err, "hipDeviceEnablePeerAccess from HIP device %d to %d "
                       "(the copy goes through host memory)",
                  dst->device, src->device);
}

kiln_status kiln_hip_buffer_copy_peer(kiln_stream *dst_s, kiln_buffer *dst,
                                      size_t dst_off, kiln_stream *src_s,
                                      const kiln_buffer *src, size_t src_off,
                                      size_t size) {
  kiln_hip_context *dc = kiln_hip_context_cast(dst_s->base.context);
  const kiln_hip_context *sc = kiln_hip_context_cast_const(src_s->base.context);
  kiln_status st = kiln_hip_hold(dst_s);
  if (st == KILN_OK) st = kiln_hip_hold(src_s);
  if (st == KILN_OK) st = order_after(dst_s, src_s);
  if (st != KILN_OK) return st;
  kiln_hip_device_scope scope;
  if ((st = kiln_hip_device_enter(&dc->base, &scope)) != KILN_OK) return st;
  hipError_t err;
  void *to = kiln_hip_buffer_ptr(dst, dst_off);
  const void *from = kiln_hip_buffer_ptr(src, src_off);
  /* Two kiln contexts on one device share its address space. */
  if (dc->device == sc->device) {
    err = kiln_hip_api.hipMemcpyAsync(to, from, size, hipMemcpyDeviceToDevice,
                                      kiln_hip_stream_handle(dst_s));
    if (err != hipSuccess)
      st = kiln_hip_error(err, "hipMemcpyAsync of %zu bytes between two "
                               "contexts on one device",
                          size);
  } else {
    enable_peer(dc, sc);
    err = kiln_hip_api.hipMemcpyPeerAsync(to, dc->device, from, sc->device,
                                          size, kiln_hip_stream_handle(dst_s));
    if (err != hipSuccess)
      st = kiln_hip_error(err, "hipMemcpyPeerAsync of %zu bytes from HIP "
                               "device %d to %d",
                          size, sc->device, dc->device);
  }
  kiln_hip_device_leave(&scope);
  if (st != KILN_OK) return st;
  return order_after(src_s, dst_s);
}
