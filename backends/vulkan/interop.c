/* Native handles in and out (core/interop.c checked the arguments). A stream
 * is exported as its queue and timeline semaphore: the value of its last
 * submission is the point foreign work waits for, and foreign timeline
 * semaphores join the waits of the stream's next submission, as events of
 * other kiln streams do. */
#include <stdlib.h>

#include "backends/vulkan/vulkan.h"

/* Non-dispatchable handles are pointers on 64-bit platforms and uint64_t
 * elsewhere; kiln.h carries them as uint64_t everywhere. */
#if VK_USE_64_BIT_PTR_DEFINES == 1
#define TO_U64(h) ((uint64_t)(uintptr_t)(h))
#define FROM_U64(type, v) ((type)(uintptr_t)(v))
#else
#define TO_U64(h) ((uint64_t)(h))
#define FROM_U64(type, v) ((type)(v))
#endif

kiln_status kiln_vulkan_context_native(kiln_context *ctx,
                                       kiln_native_context *out) {
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(ctx);
  out->vk_instance = (void *)kiln_vulkan_instance();
  out->vk_physical_device = (void *)vc->phys->handle;
  out->vk_device = (void *)vc->device;
  out->vk_queue_family = vc->phys->queue_family;
  out->vk_queue =
      (void *)kiln_vulkan_stream_cast(ctx->default_stream)->queue->handle;
  /* The instance asks for 1.2 (device.c), which caps the device's. */
  out->vk_api_version = VK_API_VERSION_1_2;
  out->vk_get_instance_proc_addr =
      (void (*)(void))kiln_vulkan_lib.vkGetInstanceProcAddr;
  return KILN_OK;
}

kiln_status kiln_vulkan_buffer_native(const kiln_buffer *buf,
                                      kiln_native_buffer *out) {
  const kiln_vulkan_buffer *vb = kiln_vulkan_buffer_cast_const(buf);
  out->vk_buffer = TO_U64(vb->alloc.buffer);
  out->vk_memory = TO_U64(vb->alloc.memory);
  out->vk_offset = vb->offset + buf->guard;
  return KILN_OK;
}

kiln_status kiln_vulkan_buffer_import(kiln_buffer *buf,
                                      const kiln_native_buffer *native,
                                      bool adopt) {
  static const char fn[] = "kiln_buffer_create_from_native";
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(buf->base.context);
  kiln_vulkan_buffer *vb = kiln_vulkan_buffer_cast(buf);
  VkBuffer handle = FROM_U64(VkBuffer, native->vk_buffer);
  if (handle == VK_NULL_HANDLE)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: native->vk_buffer is 0 (VK_NULL_HANDLE)", fn);
  /* vkCmdFillBuffer, and kiln's fill kernel at the edges, work in whole
   * 4-byte words of the buffer. */
  if (native->vk_offset % 4 || native->size % 4)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: native->vk_offset (%llu) and native->size "
                          "(%zu) must be multiples of 4 on Vulkan",
                          fn, (unsigned long long)native->vk_offset,
                          native->size);
  VkMemoryRequirements req;
  vc->vk.vkGetBufferMemoryRequirements(vc->device, handle, &req);
  if (native->vk_offset > req.size ||
      native->size > req.size - native->vk_offset)
    return kiln_set_error(KILN_ERROR_OUT_OF_RANGE,
                          "%s: native->vk_offset %llu plus size %zu passes "
                          "the end of the VkBuffer, which needs %llu bytes",
                          fn, (unsigned long long)native->vk_offset,
                          native->size, (unsigned long long)req.size);
  VkBufferDeviceAddressInfo info = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, .buffer = handle};
  const uint64_t address =
      vc->vk.vkGetBufferDeviceAddress(vc->device, &info) + native->vk_offset;
  if (native->device_address && native->device_address != address)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: native->device_address is 0x%llx, but the "
                          "VkBuffer's address plus vk_offset is 0x%llx",
                          fn, (unsigned long long)native->device_address,
                          (unsigned long long)address);
  vb->alloc.buffer = handle;
  vb->alloc.memory =
      adopt ? FROM_U64(VkDeviceMemory, native->vk_memory) : VK_NULL_HANDLE;
  vb->alloc.address = address - native->vk_offset;
  vb->offset = native->vk_offset;
  buf->device_address = address;
  return KILN_OK;
}

kiln_status kiln_vulkan_stream_native(kiln_stream *s, kiln_native_stream *out) {
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  kiln_vulkan_stream_lock(st);
  kiln_status status = kiln_vulkan_stream_flush(st);
  if (status == KILN_OK) {
    out->vk_queue = (void *)st->queue->handle;
    out->vk_queue_family = st->ctx->phys->queue_family;
    out->vk_semaphore = TO_U64(st->timeline->semaphore);
    out->vk_semaphore_value = st->submitted;
  }
  kiln_vulkan_stream_unlock(st);
  return status;
}

kiln_status kiln_vulkan_stream_import(kiln_stream *s,
                                      const kiln_native_stream *native,
                                      bool adopt) {
  static const char fn[] = "kiln_stream_create_from_native";
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(s->base.context);
  if (adopt)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: a VkQueue belongs to its VkDevice and cannot "
                          "be adopted (KILN_NATIVE_ADOPT)",
                          fn);
  for (uint32_t i = 0; i < vc->queue_count; i++)
    if ((void *)vc->queues[i].handle == native->vk_queue)
      return kiln_vulkan_stream_setup(vc, kiln_vulkan_stream_cast(s),
                                      &vc->queues[i]);
  return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                        "%s: native->vk_queue %p is none of the %u queues of "
                        "family %u that the context uses",
                        fn, native->vk_queue, vc->queue_count,
                        vc->phys->queue_family);
}

kiln_status kiln_vulkan_stream_wait_native(kiln_stream *s, uint64_t handle,
                                           uint64_t value) {
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  kiln_vulkan_timeline *tl = calloc(1, sizeof *tl);
  if (!tl)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory adding a stream wait");
  tl->semaphore = FROM_U64(VkSemaphore, handle);
  tl->foreign = true;
  atomic_init(&tl->refs, 1);
  kiln_vulkan_stream_lock(st);
  /* Work queued before the call must not wait too: submit it first. */
  kiln_status status = kiln_vulkan_stream_flush(st);
  if (status == KILN_OK) status = kiln_vulkan_stream_add_wait(st, tl, value);
  kiln_vulkan_stream_unlock(st);
  kiln_vulkan_timeline_release(st->ctx, tl);
  return status;
}
