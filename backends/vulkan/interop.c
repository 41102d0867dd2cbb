/* Native handles in and out (core/api/interop.c checked the arguments). A stream
 * is exported as its queue and timeline semaphore: the value of its last
 * submission is the point foreign work waits for, and foreign timeline
 * semaphores join the waits of the stream's next submission, as events of
 * other kiln streams do. */
#include <stdlib.h>
#include <string.h>

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
      (void *)kiln_vulkan_stream_cast(ctx->default_stream)
          ->lanes[KILN_VULKAN_LANE_COMPUTE]
          .queue->handle;
  /* The instance's version (instance.c: 1.2, or 1.3 under
   * KILN_VULKAN_VALIDATION=printf), which caps the device's. */
  out->vk_api_version = kiln_vulkan_instance_api();
  out->vk_get_instance_proc_addr =
      (void (*)(void))kiln_vulkan_lib.vkGetInstanceProcAddr;
  /* What importing the device again needs; valid while the context is. */
  out->vk_queue_count = vc->queues.compute_count;
  out->vk_enabled_features = &vc->enabled;
  return KILN_OK;
}

/* The deviceUUID of the caller's physical device, asked through the
 * caller's instance (a VkPhysicalDevice belongs to one instance). */
static kiln_status device_uuid(const kiln_native_context *native,
                               uint8_t out[VK_UUID_SIZE]) {
  PFN_vkVoidFunction fn = kiln_vulkan_lib.vkGetInstanceProcAddr(
      (VkInstance)native->vk_instance, "vkGetPhysicalDeviceProperties2");
  PFN_vkGetPhysicalDeviceProperties2 get;
  memcpy(&get, &fn, sizeof get);
  if (!get)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "native->vk_instance has no "
                          "vkGetPhysicalDeviceProperties2: kiln needs an "
                          "instance of Vulkan 1.2 or later, made through "
                          "the loader kiln uses");
  VkPhysicalDeviceIDProperties id = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  VkPhysicalDeviceProperties2 props = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &id};
  get((VkPhysicalDevice)native->vk_physical_device, &props);
  memcpy(out, id.deviceUUID, VK_UUID_SIZE);
  return KILN_OK;
}

kiln_status kiln_vulkan_context_import_device(const kiln_native_context *native,
                                              size_t *out_index) {
  if (!native->vk_instance || !native->vk_physical_device || !native->vk_device)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "native->%s is NULL",
                          !native->vk_instance          ? "vk_instance"
                          : !native->vk_physical_device ? "vk_physical_device"
                                                        : "vk_device");
  if (native->vk_api_version < VK_API_VERSION_1_2)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "native->vk_api_version is %u.%u: kiln needs a "
                          "VkInstance of Vulkan 1.2 or later",
                          VK_API_VERSION_MAJOR(native->vk_api_version),
                          VK_API_VERSION_MINOR(native->vk_api_version));
  const size_t count = kiln_vulkan_device_count();
  for (size_t i = 0; i < count; i++)
    if ((void *)kiln_vulkan_physical_device(i)->handle ==
        native->vk_physical_device) {
      *out_index = i;
      return KILN_OK;
    }
  uint8_t uuid[VK_UUID_SIZE];
  kiln_status st = device_uuid(native, uuid);
  if (st != KILN_OK) return st;
  for (size_t i = 0; i < count; i++)
    if (memcmp(kiln_vulkan_physical_device(i)->properties.uuid, uuid,
               VK_UUID_SIZE) == 0) {
      *out_index = i;
      return KILN_OK;
    }
  return kiln_set_error(KILN_ERROR_NOT_FOUND,
                        "native->vk_physical_device is none of the %zu "
                        "Vulkan devices kiln can use (by handle and "
                        "deviceUUID)",
                        count);
}

/* Copies the caller's enabled features into the context's chain, from
 * the structs of the device creation's pNext chain that name them. */
static void take_features(kiln_vulkan_context *vc, const void *chain) {
  for (const VkBaseInStructure *s = chain; s; s = s->pNext) {
    switch (s->sType) {
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2:
      vc->enabled.features =
          ((const VkPhysicalDeviceFeatures2 *)(const void *)s)->features;
      break;
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES: {
      VkPhysicalDeviceVulkan11Features f =
          *(const VkPhysicalDeviceVulkan11Features *)(const void *)s;
      f.pNext = vc->enabled11.pNext;
      vc->enabled11 = f;
      break;
    }
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES: {
      VkPhysicalDeviceVulkan12Features f =
          *(const VkPhysicalDeviceVulkan12Features *)(const void *)s;
      f.pNext = NULL;
      vc->enabled12 = f;
      break;
    }
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES:
      vc->enabled12.bufferDeviceAddress =
          ((const VkPhysicalDeviceBufferDeviceAddressFeatures *)(const void *)s)
              ->bufferDeviceAddress;
      break;
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES:
      vc->enabled12.timelineSemaphore =
          ((const VkPhysicalDeviceTimelineSemaphoreFeatures *)(const void *)s)
              ->timelineSemaphore;
      break;
    default: break;
    }
  }
}

/* The queue family's properties, on kiln's handle of the same device. */
static bool family_of(const kiln_vulkan_physical *p, uint32_t family,
                      VkQueueFamilyProperties *out) {
  /* Devices have a handful of families; more than this many is absurd. */
  VkQueueFamilyProperties all[64];
  uint32_t n = 64;
  kiln_vulkan_lib.vkGetPhysicalDeviceQueueFamilyProperties(p->handle, &n, all);
  if (family >= n) return false;
  *out = all[family];
  return true;
}

kiln_status kiln_vulkan_context_import(kiln_context *ctx,
                                       const kiln_native_context *native,
                                       bool adopt) {
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(ctx);
  kiln_status allowed = kiln_vulkan_context_allowed(ctx);
  if (allowed != KILN_OK) return allowed;
  vc->imported_phys = *kiln_vulkan_physical_device(ctx->device_index);
  kiln_vulkan_physical *p = &vc->imported_phys;
  VkQueueFamilyProperties family;
  if (!family_of(p, native->vk_queue_family, &family))
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "native->vk_queue_family %u is not a queue family "
                          "of %s",
                          native->vk_queue_family, p->properties.name);
  if (!(family.queueFlags & VK_QUEUE_COMPUTE_BIT))
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "native->vk_queue_family %u has no compute queues",
                          native->vk_queue_family);
  if (native->vk_queue_count == 0 || native->vk_queue_count > family.queueCount)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "native->vk_queue_count is %u; queue family %u has "
                          "%u queue(s), and the device was created with at "
                          "least one of them",
                          native->vk_queue_count, native->vk_queue_family,
                          family.queueCount);
  memset(&vc->enabled, 0, sizeof vc->enabled);
  memset(&vc->enabled11, 0, sizeof vc->enabled11);
  memset(&vc->enabled12, 0, sizeof vc->enabled12);
  vc->enabled.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  vc->enabled.pNext = &vc->enabled11;
  vc->enabled11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  vc->enabled11.pNext = &vc->enabled12;
  take_features(vc, native->vk_enabled_features);
  vc->enabled12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  char missing[160] = "";
  if (!vc->enabled12.bufferDeviceAddress)
    strcat(missing, " bufferDeviceAddress (Vulkan 1.2)");
  if (!vc->enabled12.timelineSemaphore)
    strcat(missing, " timelineSemaphore (Vulkan 1.2)");
  if (!vc->enabled.features.shaderInt64)
    strcat(missing, " shaderInt64 (VkPhysicalDeviceFeatures)");
  if (missing[0])
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "the VkDevice lacks features kiln needs:%s; enable "
                          "them in its VkDeviceCreateInfo and list them in "
                          "native->vk_enabled_features",
                          missing);
  /* Kernels may use what the caller enabled, and no more. */
  p->features = vc->enabled;
  p->features.pNext = NULL;
  p->features11 = vc->enabled11;
  p->features11.pNext = NULL;
  p->features12 = vc->enabled12;
  p->features12.pNext = NULL;
  kiln_vulkan_optional_take(&p->optional, native->vk_enabled_features);
  kiln_vulkan_optional_report(kiln_vulkan_instance(), p,
                              &vc->base.properties);
  p->queue_family = native->vk_queue_family;
  p->queue_count = native->vk_queue_count;
  p->timestamp_valid_bits = family.timestampValidBits;
  vc->phys = p;
  /* Which extensions the caller enabled is not given: only Vulkan 1.3 on
   * both its instance and its device says SPV_KHR_non_semantic_info is
   * taken. */
  vc->non_semantic = native->vk_api_version >= VK_API_VERSION_1_3 &&
                     p->api_version >= VK_API_VERSION_1_3;
  vc->queues.compute_count = native->vk_queue_count < KILN_VULKAN_MAX_QUEUES
                                 ? native->vk_queue_count
                                 : KILN_VULKAN_MAX_QUEUES;
  vc->base.properties.stream_queues = vc->queues.compute_count;
  vc->device = (VkDevice)native->vk_device;
  /* kiln creates no queues on a caller's device: copies stay on the
   * compute queues it was given. */
  vc->queues.transfer_mode = KILN_VULKAN_TRANSFER_OFF;
  vc->queues.transfer_family = UINT32_MAX;
  vc->queues.transfer_count = 0;
  /* A failed import leaves the device to the caller, adopted or not. */
  vc->owns_device = false;
  kiln_status st = kiln_vulkan_context_setup(vc);
  if (st == KILN_OK) vc->owns_device = adopt;
  return st;
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
  /* The caller's own submissions may wait for the value handed out: held
   * by KILN_DEBUG=reorder, its signal would come after them in the queue,
   * and a queue that runs one submission after another would block. */
  if (status == KILN_OK && st->ctx->reorder.on)
    status =
        kiln_vulkan_release(st->ctx, st->timeline->semaphore, st->submitted);
  if (status == KILN_OK) {
    out->vk_queue = (void *)st->lanes[KILN_VULKAN_LANE_COMPUTE].queue->handle;
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
  for (uint32_t i = 0; i < vc->queues.compute_count; i++)
    if ((void *)vc->queues.compute[i].handle == native->vk_queue)
      return kiln_vulkan_stream_setup(vc, kiln_vulkan_stream_cast(s),
                                      &vc->queues.compute[i]);
  return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                        "%s: native->vk_queue %p is none of the %u queues of "
                        "family %u that the context uses",
                        fn, native->vk_queue, vc->queues.compute_count,
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
