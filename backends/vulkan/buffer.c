/* Device buffers and their transfers, copies and fills; transfers to and
 * from memory the host cannot map go through the stream's staging ring
 * (staging.c). */
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vulkan.h"

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* n <= KILN_VULKAN_STAGING_CHUNK bytes of the ring for the batch being
 * recorded, waiting for older batches to free them if needed. With
 * `hold`, the range stays taken until released, and *out_taken is false
 * instead of waiting when only a held range is in the way. */
static kiln_status staging_take(kiln_vulkan_stream *st, size_t n, bool hold,
                                size_t *out, bool *out_taken) {
  kiln_status s = kiln_vulkan_staging_ready(st);
  if (s != KILN_OK) return s;
  for (;;) {
    uint64_t until = 0;
    if ((s = kiln_vulkan_staging_try(st, n, hold, out, &until)) != KILN_OK)
      return s;
    if (until == 0 || until == KILN_VULKAN_HELD) {
      *out_taken = until == 0;
      return KILN_OK;
    }
    if ((s = kiln_vulkan_stream_wait(st, until)) != KILN_OK) return s;
  }
}

/* ---- Buffers
 * ---------------------------------------------------------------------- */

kiln_status kiln_vulkan_record_copy(kiln_vulkan_stream *st,
                                    kiln_vulkan_lane lane, VkBuffer dst,
                                    size_t dst_off, VkBuffer src,
                                    size_t src_off, size_t size) {
  VkCommandBuffer cmd;
  kiln_status s = kiln_vulkan_stream_command(st, lane, &cmd);
  if (s != KILN_OK) return s;
  VkBufferCopy region = {
      .srcOffset = src_off, .dstOffset = dst_off, .size = size};
  st->ctx->vk.vkCmdCopyBuffer(cmd, src, dst, 1, &region);
  return kiln_vulkan_stream_recorded(st);
}

static kiln_status record_fill(kiln_vulkan_stream *st, VkBuffer dst, size_t off,
                               VkDeviceSize size, uint32_t word) {
  VkCommandBuffer cmd;
  kiln_status s =
      kiln_vulkan_stream_command(st, KILN_VULKAN_LANE_COMPUTE, &cmd);
  if (s != KILN_OK) return s;
  st->ctx->vk.vkCmdFillBuffer(cmd, dst, off, size, word);
  return kiln_vulkan_stream_recorded(st);
}

kiln_status kiln_vulkan_buffer_init(kiln_buffer *buf, uint32_t flags) {
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(buf->base.context);
  kiln_vulkan_buffer *vb = kiln_vulkan_buffer_cast(buf);
  /* Whole 32-bit words: kiln_fill's edge words and vkCmdFillBuffer over
   * the whole buffer stay inside it. A size near SIZE_MAX would round to
   * 0, so the limit is checked first. */
  VkDeviceSize limit = vc->phys->max_allocation_bytes;
  if (buf->size > limit || buf->size > UINT64_MAX - 3)
    return kiln_set_error(KILN_ERROR_OUT_OF_DEVICE_MEMORY,
                          "kiln_buffer_create: %zu bytes is more than the "
                          "Vulkan device's maxMemoryAllocationSize (%llu "
                          "bytes)",
                          buf->size, (unsigned long long)limit);
  VkDeviceSize size = ((VkDeviceSize)buf->size + 3) & ~(VkDeviceSize)3;
  kiln_status s = kiln_vulkan_allocate(vc, size, KILN_VULKAN_MEMORY_DEVICE,
                                       true, &vb->alloc);
  if (s != KILN_OK) return s;
  buf->device_address = vb->alloc.address;
  if (flags & KILN_BUFFER_ZERO) {
    if (vb->alloc.map) {
      memset(vb->alloc.map, 0, size);
    } else {
      /* Zeroed before any stream can see the buffer, so that every stream
       * may use it at once. */
      kiln_vulkan_stream_lock(vc->streams.util);
      s = record_fill(vc->streams.util, vb->alloc.buffer, 0, VK_WHOLE_SIZE, 0);
      if (s == KILN_OK) s = kiln_vulkan_stream_finish(vc->streams.util);
      kiln_vulkan_stream_unlock(vc->streams.util);
      if (s != KILN_OK) kiln_vulkan_free(vc, &vb->alloc);
    }
  }
  return s;
}

void kiln_vulkan_buffer_deinit(kiln_buffer *buf) {
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(buf->base.context);
  /* Any recorded kernel may use any buffer through its address. */
  kiln_vulkan_quiesce_for_deinit(vc, "freeing a buffer");
  if (!buf->borrowed) kiln_vulkan_free(vc, &kiln_vulkan_buffer_cast(buf)->alloc);
}

kiln_status kiln_vulkan_buffer_write(kiln_stream *s, kiln_buffer *dst,
                                     size_t off, const void *src, size_t size) {
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  kiln_vulkan_buffer *vb = kiln_vulkan_buffer_cast(dst);
  const unsigned char *from = src;
  kiln_vulkan_stream_lock(st);
  kiln_status status = KILN_OK;
  if (vb->alloc.map) {
    if (!st->cmd) status = kiln_vulkan_stream_poll(st);
    /* With no work recorded or running anywhere, nothing can touch the
     * buffer: copy straight into it, and later submissions see the bytes
     * (vkQueueSubmit makes earlier host writes visible). */
    if (status == KILN_OK && atomic_load(&st->ctx->streams.busy) == 0) {
      memcpy(vb->alloc.map + off, from, size);
      kiln_vulkan_stream_unlock(st);
      return KILN_OK;
    }
  }
  while (status == KILN_OK && size > 0) {
    size_t n = min_size(size, KILN_VULKAN_STAGING_CHUNK), at;
    bool taken = false;
    /* A range is free again once the batch being recorded completes, so
     * that batch must be the one that will copy out of it: open on the
     * copy's lane before the range is taken. */
    kiln_vulkan_lane lane = KILN_VULKAN_LANE_COMPUTE;
    VkCommandBuffer open;
    status = kiln_vulkan_staging_ready(st);
    if (status == KILN_OK) {
      lane = kiln_vulkan_copy_lane(st, &vb->alloc, &st->staging.alloc, true);
      status = kiln_vulkan_stream_command(st, lane, &open);
    }
    if (status == KILN_OK) status = staging_take(st, n, false, &at, &taken);
    if (status != KILN_OK) break;
    memcpy(st->staging.alloc.map + at, from, n);
    status = kiln_vulkan_record_copy(st, lane, vb->alloc.buffer,
                                     vb->offset + off, st->staging.alloc.buffer,
                                     at, n);
    from += n;
    off += n;
    size -= n;
    /* Lets the device copy this chunk while the host fills the next. */
    if (status == KILN_OK && size > 0) status = kiln_vulkan_stream_flush(st);
  }
  if (status == KILN_OK) status = kiln_vulkan_stream_publish_writes(st);
  kiln_vulkan_stream_unlock(st);
  return status;
}

typedef struct pending_read {
  size_t at, size;
  unsigned char *to;
  uint64_t value;
} pending_read;

/* Copies the oldest chunk out once the device has put it in the ring. */
static kiln_status finish_read(kiln_vulkan_stream *st, pending_read *p,
                               size_t *count) {
  kiln_status s = kiln_vulkan_stream_wait(st, p[0].value);
  if (s == KILN_OK)
    kiln_vulkan_copy_from_device(p[0].to, st->staging.alloc.map + p[0].at,
                                 p[0].size);
  kiln_vulkan_staging_unhold(st, p[0].at);
  p[0] = p[1];
  (*count)--;
  return s;
}

/* Reads through the ring, two chunks at a time: the device fills one while
 * the host copies the other out. */
static kiln_status staged_read(kiln_vulkan_stream *st,
                               const kiln_vulkan_buffer *vb, size_t off,
                               unsigned char *to, size_t size) {
  pending_read pending[2];
  size_t count = 0;
  kiln_status s = KILN_OK;
  while (s == KILN_OK && (size > 0 || count > 0)) {
    if (size > 0 && count < 2) {
      size_t n = min_size(size, KILN_VULKAN_STAGING_CHUNK), at;
      bool taken = false;
      s = staging_take(st, n, true, &at, &taken);
      if (s != KILN_OK) break;
      if (taken) {
        s = kiln_vulkan_record_copy(
            st,
            kiln_vulkan_copy_lane(st, &st->staging.alloc, &vb->alloc, true),
            st->staging.alloc.buffer, at, vb->alloc.buffer, vb->offset + off,
            n);
        if (s == KILN_OK) s = kiln_vulkan_stream_flush(st);
        if (s != KILN_OK) {
          kiln_vulkan_staging_unhold(st, at);
          break;
        }
        pending[count++] = (pending_read){at, n, to, st->submitted};
        off += n;
        to += n;
        size -= n;
        continue;
      }
      if (count == 0) {
        s = kiln_set_error(KILN_ERROR_BACKEND,
                           "the staging ring is held by no pending read");
        break;
      }
    }
    s = finish_read(st, pending, &count);
  }
  while (count > 0) {
    kiln_vulkan_staging_unhold(st, pending[0].at);
    pending[0] = pending[1];
    count--;
  }
  return s;
}

kiln_status kiln_vulkan_buffer_read(kiln_stream *s, const kiln_buffer *src,
                                    size_t off, void *dst, size_t size) {
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  const kiln_vulkan_buffer *vb = kiln_vulkan_buffer_cast_const(src);
  kiln_vulkan_stream_lock(st);
  kiln_status status;
  /* Uncached mappings (a discrete GPU's BAR) are far slower for the host
   * to read than a copy into cached staging memory. */
  if (vb->alloc.map && vb->alloc.cached) {
    /* No copy of its own to order it behind other streams' staged
     * writes: wait for them explicitly. */
    status = kiln_vulkan_stream_collect_writes(st);
    if (status == KILN_OK) status = kiln_vulkan_stream_finish(st);
    if (status == KILN_OK)
      kiln_vulkan_copy_from_device(dst, vb->alloc.map + off, size);
  } else {
    status = staged_read(st, vb, off, dst, size);
  }
  kiln_vulkan_stream_unlock(st);
  return status;
}

kiln_status kiln_vulkan_buffer_copy(kiln_stream *s, kiln_buffer *dst,
                                    size_t dst_off, const kiln_buffer *src,
                                    size_t src_off, size_t size) {
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  kiln_vulkan_stream_lock(st);
  const kiln_vulkan_buffer *d = kiln_vulkan_buffer_cast(dst);
  const kiln_vulkan_buffer *from = kiln_vulkan_buffer_cast_const(src);
  kiln_status status = kiln_vulkan_record_copy(
      st, kiln_vulkan_copy_lane(st, &d->alloc, &from->alloc, false),
      d->alloc.buffer, d->offset + dst_off, from->alloc.buffer,
      from->offset + src_off, size);
  kiln_vulkan_stream_unlock(st);
  return status;
}

kiln_status kiln_vulkan_buffer_fill(kiln_stream *s, kiln_buffer *dst,
                                    size_t off, size_t size, uint64_t pattern,
                                    size_t pattern_size) {
  /* vkCmdFillBuffer repeats one 4-byte word at 4-byte aligned offset and
   * size (fill_sizes); the core has made every other fill its kernel's. */
  (void)pattern_size;
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  kiln_vulkan_stream_lock(st);
  const kiln_vulkan_buffer *d = kiln_vulkan_buffer_cast(dst);
  kiln_status status = record_fill(st, d->alloc.buffer, d->offset + off, size,
                                   (uint32_t)pattern);
  kiln_vulkan_stream_unlock(st);
  return status;
}
