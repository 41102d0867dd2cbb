/* Host buffers: host-visible memory mapped for the caller, which the
 * device copies from and to without staging, so transfers can be
 * asynchronous. */
#include <string.h>

#include "backends/vulkan/vulkan.h"

kiln_status kiln_vulkan_host_buffer_init(kiln_host_buffer *hb, uint32_t flags) {
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(hb->base.context);
  kiln_vulkan_host_buffer *vh = kiln_vulkan_host_buffer_cast(hb);
  kiln_status s = kiln_vulkan_allocate(vc, hb->size, KILN_VULKAN_MEMORY_HOST,
                                       false, &vh->alloc);
  if (s != KILN_OK) return s;
  hb->data = vh->alloc.map;
  if (flags & KILN_BUFFER_ZERO) memset(hb->data, 0, hb->size);
  return KILN_OK;
}

void kiln_vulkan_host_buffer_deinit(kiln_host_buffer *hb) {
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(hb->base.context);
  kiln_vulkan_quiesce_for_deinit(vc, "freeing a host buffer");
  kiln_vulkan_free(vc, &kiln_vulkan_host_buffer_cast(hb)->alloc);
}

kiln_status kiln_vulkan_buffer_write_async(kiln_stream *s, kiln_buffer *dst,
                                           size_t dst_off,
                                           const kiln_host_buffer *src,
                                           size_t src_off, size_t size) {
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  kiln_vulkan_stream_lock(st);
  const kiln_vulkan_buffer *d = kiln_vulkan_buffer_cast(dst);
  const kiln_vulkan_allocation *from =
      &kiln_vulkan_host_buffer_cast_const(src)->alloc;
  kiln_status status = kiln_vulkan_record_copy(
      st, kiln_vulkan_copy_lane(st, &d->alloc, from, true), d->alloc.buffer,
      d->offset + dst_off, from->buffer, src_off, size);
  kiln_vulkan_stream_unlock(st);
  return status;
}

kiln_status kiln_vulkan_buffer_read_async(kiln_stream *s,
                                          const kiln_buffer *src,
                                          size_t src_off, kiln_host_buffer *dst,
                                          size_t dst_off, size_t size) {
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  kiln_vulkan_stream_lock(st);
  const kiln_vulkan_buffer *from = kiln_vulkan_buffer_cast_const(src);
  const kiln_vulkan_allocation *to = &kiln_vulkan_host_buffer_cast(dst)->alloc;
  kiln_status status = kiln_vulkan_record_copy(
      st, kiln_vulkan_copy_lane(st, to, &from->alloc, true), to->buffer,
      dst_off, from->alloc.buffer, from->offset + src_off, size);
  kiln_vulkan_stream_unlock(st);
  return status;
}
