/* Device buffers (cuMemAlloc) and the stream-ordered transfers, copies and
 * fills on them.
 *
 * kiln_buffer_write promises that the caller may reuse `src` as soon as it
 * returns, yet it is queued with cuMemcpyHtoDAsync and does not wait for
 * the stream. That is safe because of how the driver copies from pageable
 * memory: it cannot DMA from pages it has not pinned, so it first copies the
 * bytes into pinned staging memory and returns only once all of them are
 * staged ("the function will return once the pageable buffer has been copied
 * to the staging memory for DMA transfer to device memory", CUDA driver API,
 * API synchronization behavior). The device then reads the staging copy, in
 * stream order. The one case where the driver reads the caller's memory
 * later is memory it already has pinned or mapped (a kiln host buffer's
 * data, cuMemHostRegister'ed or managed memory): for such a `src` the write
 * waits for the stream before returning. */
#include <stdint.h>

#include "backends/cuda/cuda.h"

static CUstream stream_of(const kiln_stream *s) {
  return kiln_cuda_stream_cast_const(s)->handle;
}

kiln_status kiln_cuda_buffer_init(kiln_buffer *buf, uint32_t flags) {
  kiln_context *ctx = buf->base.context;
  kiln_status st = kiln_cuda_make_current(ctx);
  if (st != KILN_OK) return st;
  CUdeviceptr ptr = 0;
  CUresult r = kiln_cuda_api.cuMemAlloc(&ptr, buf->size);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuMemAlloc of %zu bytes on %s", buf->size,
                           ctx->properties.name);
  if (flags & KILN_BUFFER_ZERO) {
    /* Any stream may read the buffer next, so the zeroes must be in memory
     * before it is handed out, not merely queued on one stream. */
    CUstream s = stream_of(ctx->default_stream);
    kiln_cuda_open_gates(ctx);
    r = kiln_cuda_api.cuMemsetD8Async(ptr, 0, buf->size, s);
    if (r == CUDA_SUCCESS) r = kiln_cuda_api.cuStreamSynchronize(s);
    if (r != CUDA_SUCCESS) {
      st = kiln_cuda_error(r,
                           "zeroing a new %zu-byte buffer (cuMemsetD8Async, "
                           "cuStreamSynchronize)",
                           buf->size);
      kiln_cuda_api.cuMemFree(ptr);
      return st;
    }
  }
  buf->device_address = (uint64_t)ptr;
  return KILN_OK;
}

void kiln_cuda_buffer_deinit(kiln_buffer *buf) {
  kiln_cuda_make_current_for_deinit(buf->base.context, "freeing a buffer");
  /* Queued work on any stream may still use the buffer. cuMemFree "may"
   * synchronize; kiln's promise to wait must not rest on a may. */
  if (kiln_sync_streams(buf->base.context) != KILN_OK)
    kiln_log(KILN_LOG_WARN, "cuda: waiting for the streams before freeing a "
             "buffer: %s", kiln_last_error());
  if (buf->borrowed) return;
  kiln_cuda_gates_stay_open(buf->base.context, true);
  CUresult r = kiln_cuda_api.cuMemFree(kiln_cuda_address(buf, 0));
  kiln_cuda_gates_stay_open(buf->base.context, false);
  if (r != CUDA_SUCCESS) kiln_cuda_warn(r, "cuMemFree");
}

/* Whether the driver knows `p` (pinned, registered or managed memory), in
 * which case a copy from it runs asynchronously, reading it later. The
 * plural query answers 0 for ordinary pageable memory instead of failing
 * with CUDA_ERROR_INVALID_VALUE, which tools such as compute-sanitizer
 * would report as an API error on every write. */
static bool driver_owns(const void *p) {
  CUpointer_attribute attr = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
  unsigned type = 0;
  void *data = &type;
  return kiln_cuda_api.cuPointerGetAttributes(1, &attr, &data,
                                              (CUdeviceptr)(uintptr_t)p) ==
             CUDA_SUCCESS &&
         type != 0;
}

kiln_status kiln_cuda_buffer_write(kiln_stream *s, kiln_buffer *dst,
                                   size_t off, const void *src, size_t size) {
  kiln_status st = kiln_cuda_hold(s);
  if (st == KILN_OK) st = kiln_cuda_make_current(s->base.context);
  if (st != KILN_OK) return st;
  /* A copy from pageable memory may wait for the stream inside the
   * driver's call (to stage it), so held gates open before the call, not
   * after. */
  const bool pinned = driver_owns(src);
  if (!pinned) kiln_cuda_open_gates(s->base.context);
  CUresult r = kiln_cuda_api.cuMemcpyHtoDAsync(kiln_cuda_address(dst, off), src,
                                               size, stream_of(s));
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuMemcpyHtoDAsync of %zu bytes from host memory",
                           size);
  if (pinned) {
    kiln_cuda_open_gates(s->base.context);
    r = kiln_cuda_api.cuStreamSynchronize(stream_of(s));
    if (r != CUDA_SUCCESS)
      return kiln_cuda_error(
          r, "cuStreamSynchronize after a write of %zu bytes", size);
  }
  return KILN_OK;
}

kiln_status kiln_cuda_buffer_read(kiln_stream *s, const kiln_buffer *src,
                                  size_t off, void *dst, size_t size) {
  kiln_status st = kiln_cuda_hold(s);
  if (st == KILN_OK) st = kiln_cuda_make_current(s->base.context);
  if (st != KILN_OK) return st;
  /* A copy into pageable memory waits for the stream inside the driver's
   * call: held gates open before it. */
  kiln_cuda_open_gates(s->base.context);
  CUresult r = kiln_cuda_api.cuMemcpyDtoHAsync(dst, kiln_cuda_address(src, off),
                                               size, stream_of(s));
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuMemcpyDtoHAsync of %zu bytes to host memory",
                           size);
  r = kiln_cuda_api.cuStreamSynchronize(stream_of(s));
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuStreamSynchronize after a read of %zu bytes",
                           size);
  return KILN_OK;
}

kiln_status kiln_cuda_buffer_copy(kiln_stream *s, kiln_buffer *dst,
                                  size_t dst_off, const kiln_buffer *src,
                                  size_t src_off, size_t size) {
  kiln_status st = kiln_cuda_hold(s);
  if (st == KILN_OK) st = kiln_cuda_make_current(s->base.context);
  if (st != KILN_OK) return st;
  CUresult r = kiln_cuda_api.cuMemcpyDtoDAsync(
      kiln_cuda_address(dst, dst_off), kiln_cuda_address(src, src_off), size,
      stream_of(s));
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuMemcpyDtoDAsync of %zu bytes between buffers",
                           size);
  return KILN_OK;
}

kiln_status kiln_cuda_buffer_fill(kiln_stream *s, kiln_buffer *dst,
                                  size_t off, size_t size, uint64_t pattern,
                                  size_t pattern_size) {
  kiln_status st = kiln_cuda_hold(s);
  if (st == KILN_OK) st = kiln_cuda_make_current(s->base.context);
  if (st != KILN_OK) return st;
  /* 1, 2 or 4 bytes (fill_sizes: the copy engine has no 8-byte fill); off
   * is a multiple of pattern_size and allocations are 256-byte
   * aligned, so the address suits each element size. The pattern's bytes
   * are in memory order; read back as an integer on the (little-endian)
   * host they are the value whose device bytes are the same. */
  CUdeviceptr p = kiln_cuda_address(dst, off);
  CUresult r;
  switch (pattern_size) {
  case 1:
    r = kiln_cuda_api.cuMemsetD8Async(p, (unsigned char)pattern, size,
                                      stream_of(s));
    break;
  case 2:
    r = kiln_cuda_api.cuMemsetD16Async(p, (unsigned short)pattern, size / 2,
                                       stream_of(s));
    break;
  default:
    r = kiln_cuda_api.cuMemsetD32Async(p, (unsigned int)pattern, size / 4,
                                       stream_of(s));
    break;
  }
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuMemsetD%zuAsync of %zu bytes",
                           pattern_size * 8, size);
  return KILN_OK;
}

kiln_status kiln_cuda_buffer_write_async(kiln_stream *s, kiln_buffer *dst,
                                         size_t dst_off,
                                         const kiln_host_buffer *src,
                                         size_t src_off, size_t size) {
  kiln_status st = kiln_cuda_hold(s);
  if (st == KILN_OK) st = kiln_cuda_make_current(s->base.context);
  if (st != KILN_OK) return st;
  const unsigned char *from = (const unsigned char *)src->data + src_off;
  CUresult r = kiln_cuda_api.cuMemcpyHtoDAsync(kiln_cuda_address(dst, dst_off),
                                               from, size, stream_of(s));
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuMemcpyHtoDAsync of %zu bytes from a host "
                              "buffer", size);
  return KILN_OK;
}

kiln_status kiln_cuda_buffer_read_async(kiln_stream *s,
                                        const kiln_buffer *src,
                                        size_t src_off, kiln_host_buffer *dst,
                                        size_t dst_off, size_t size) {
  kiln_status st = kiln_cuda_hold(s);
  if (st == KILN_OK) st = kiln_cuda_make_current(s->base.context);
  if (st != KILN_OK) return st;
  CUresult r = kiln_cuda_api.cuMemcpyDtoHAsync(
      (unsigned char *)dst->data + dst_off, kiln_cuda_address(src, src_off),
      size, stream_of(s));
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuMemcpyDtoHAsync of %zu bytes to a host "
                              "buffer", size);
  return KILN_OK;
}

/* Makes `later` wait for the work queued so far on `earlier`, streams of
 * two contexts, perhaps of two devices: cuStreamWaitEvent takes an event of
 * another context. The event is destroyed at once; the driver keeps what
 * the wait needs until it is done. */
static kiln_status order_after(kiln_stream *later, kiln_stream *earlier) {
  kiln_status st = kiln_cuda_make_current(earlier->base.context);
  if (st != KILN_OK) return st;
  CUevent e;
  CUresult r = kiln_cuda_api.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuEventCreate (ordering a copy between "
                              "contexts)");
  r = kiln_cuda_api.cuEventRecord(e, stream_of(earlier));
  if (r != CUDA_SUCCESS) {
    st = kiln_cuda_error(r, "cuEventRecord (ordering a copy between "
                            "contexts)");
  } else if ((st = kiln_cuda_make_current(later->base.context)) == KILN_OK) {
    r = kiln_cuda_api.cuStreamWaitEvent(stream_of(later), e, 0);
    if (r != CUDA_SUCCESS)
      st = kiln_cuda_error(r, "cuStreamWaitEvent (ordering a copy between "
                              "contexts)");
  }
  r = kiln_cuda_api.cuEventDestroy(e);
  if (r != CUDA_SUCCESS && st == KILN_OK)
    st = kiln_cuda_error(r, "cuEventDestroy (ordering a copy between "
                            "contexts)");
  return st;
}

/* Lets dst's context (current) reach src's device's memory, so that
 * cuMemcpyPeerAsync copies device to device instead of through host
 * memory, where the hardware allows it; once per pair of kiln contexts
 * (another user of the primary context may have done it already). Where
 * it cannot be enabled the driver's staged copy is still correct. */
static void enable_peer(kiln_cuda_context *dst, const kiln_cuda_context *src) {
  uint_least64_t bit = src->device < 64 ? (uint_least64_t)1 << src->device : 0;
  if (!bit || (atomic_load(&dst->peers) & bit)) return;
  int can = 0;
  CUresult r = kiln_cuda_api.cuDeviceCanAccessPeer(&can, dst->device,
                                                   src->device);
  if (r != CUDA_SUCCESS || !can) return;
  r = kiln_cuda_api.cuCtxEnablePeerAccess(src->handle, 0);
  if (r == CUDA_SUCCESS || r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
    atomic_fetch_or(&dst->peers, bit);
  else
    kiln_cuda_warn(r, "cuCtxEnablePeerAccess from CUDA device %d to %d (the "
                      "copy goes through host memory)",
                   (int)dst->device, (int)src->device);
}

kiln_status kiln_cuda_buffer_copy_peer(kiln_stream *dst_s, kiln_buffer *dst,
                                       size_t dst_off, kiln_stream *src_s,
                                       const kiln_buffer *src, size_t src_off,
                                       size_t size) {
  kiln_cuda_context *dc = kiln_cuda_context_cast(dst_s->base.context);
  const kiln_cuda_context *sc =
      kiln_cuda_context_cast_const(src_s->base.context);
  kiln_status st = kiln_cuda_hold(dst_s);
  if (st == KILN_OK) st = kiln_cuda_hold(src_s);
  if (st == KILN_OK) st = order_after(dst_s, src_s);
  if (st == KILN_OK) st = kiln_cuda_make_current(&dc->base);
  if (st != KILN_OK) return st;
  CUresult r;
  /* Two kiln contexts on one device share its primary context. */
  if (dc->handle == sc->handle) {
    r = kiln_cuda_api.cuMemcpyDtoDAsync(kiln_cuda_address(dst, dst_off),
                                        kiln_cuda_address(src, src_off), size,
                                        stream_of(dst_s));
    if (r != CUDA_SUCCESS)
      return kiln_cuda_error(r, "cuMemcpyDtoDAsync of %zu bytes between two "
                                "contexts on one device",
                             size);
  } else {
    enable_peer(dc, sc);
    r = kiln_cuda_api.cuMemcpyPeerAsync(
        kiln_cuda_address(dst, dst_off), dc->handle,
        kiln_cuda_address(src, src_off), sc->handle, size, stream_of(dst_s));
    if (r != CUDA_SUCCESS)
      return kiln_cuda_error(r, "cuMemcpyPeerAsync of %zu bytes from CUDA "
                                "device %d to %d",
                             size, (int)sc->device, (int)dc->device);
  }
  return order_after(src_s, dst_s);
}
