/* Memory in stream order (the backend's memory table, core/backend.h):
 * the pool is the sub-allocator that every Vulkan buffer takes its range
 * from (blocks.c), so a buffer made in a stream's order is an ordinary
 * buffer whose memory no pending work can touch, zeroed in the stream's
 * order when asked; its release hands the range (and its VkBuffer) back
 * once the stream's timeline passes what was queued before it, and the
 * pool hands it out again only then. */
#include "backends/vulkan/vulkan.h"

kiln_status kiln_vulkan_pool_supported(kiln_context *ctx) {
  (void)ctx;
  return KILN_OK;
}

kiln_status kiln_vulkan_buffer_init_async(kiln_buffer *buf, kiln_stream *s,
                                          uint32_t flags) {
  kiln_status st =
      kiln_vulkan_buffer_init(buf, flags & ~(uint32_t)KILN_BUFFER_ZERO);
  if (st != KILN_OK || !(flags & KILN_BUFFER_ZERO)) return st;
  /* buffer_init made the buffer of whole 32-bit words. */
  const size_t words = (buf->size + 3) & ~(size_t)3;
  st = kiln_vulkan_buffer_fill(s, buf, 0, words, 0, 4);
  if (st != KILN_OK)
    kiln_vulkan_free(kiln_vulkan_context_cast(buf->base.context),
                     &kiln_vulkan_buffer_cast(buf)->alloc);
  return st;
}

kiln_status kiln_vulkan_buffer_deinit_async(kiln_buffer *buf, kiln_stream *s) {
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(buf->base.context);
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  kiln_vulkan_stream_lock(st);
  /* What is recorded and not yet submitted needs a value of its own to
   * wait for. */
  kiln_status status = kiln_vulkan_stream_flush(st);
  if (status == KILN_OK)
    kiln_vulkan_free_after(vc, &kiln_vulkan_buffer_cast(buf)->alloc,
                           st->timeline, st->submitted);
  kiln_vulkan_stream_unlock(st);
  return status;
}

/* The sub-allocator counts a buffer's whole range, rounded up to its
 * alignment (memory.c). */
size_t kiln_vulkan_buffer_pool_bytes(const kiln_buffer *buf) {
  return kiln_vulkan_counted_bytes(&kiln_vulkan_buffer_cast_const(buf)->alloc,
                                   buf->size);
}

kiln_status kiln_vulkan_pool_trim(kiln_context *ctx, size_t keep_bytes) {
  kiln_vulkan_memory_trim(kiln_vulkan_context_cast(ctx), keep_bytes);
  return KILN_OK;
}

kiln_status kiln_vulkan_pool_usage(kiln_context *ctx, size_t *out_reserved,
                                   size_t *out_used) {
  kiln_vulkan_memory_usage(kiln_vulkan_context_cast(ctx), out_reserved,
                           out_used);
  return KILN_OK;
}

kiln_status kiln_vulkan_pool_set_keep(kiln_context *ctx, size_t keep_bytes) {
  kiln_vulkan_memory_set_keep(kiln_vulkan_context_cast(ctx),
                              keep_bytes == SIZE_MAX ? UINT64_MAX : keep_bytes);
  return KILN_OK;
}
