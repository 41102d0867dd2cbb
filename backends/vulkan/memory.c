/* Memory: VkBuffers bound to ranges of the memory blocks.c hands out
 * (shared blocks, or memory of their own where the driver asks for it);
 * host memory imported for copies between contexts, and device memory
 * two contexts of one GPU share. */
#include <string.h>
#include <unistd.h>

#include "backends/vulkan/suballoc.h"
#include "backends/vulkan/vulkan.h"

/* A transfer-source and -destination VkBuffer of `size` bytes, used by both
 * the compute and the transfer family where the context has a transfer
 * family of its own (vulkan.h says why not by ownership transfers);
 * `families` holds them and must outlive the struct. */
static VkBufferCreateInfo buffer_info(const kiln_vulkan_context *vc,
                                      VkDeviceSize size,
                                      uint32_t families[2]) {
  families[0] = vc->phys->queue_family;
  families[1] = vc->queues.transfer_family;
  const bool shared = vc->queues.transfer_count > 0;
  return (VkBufferCreateInfo){
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .size = size,
      .usage =
          VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
      .sharingMode =
          shared ? VK_SHARING_MODE_CONCURRENT : VK_SHARING_MODE_EXCLUSIVE,
      .queueFamilyIndexCount = shared ? 2 : 0,
      .pQueueFamilyIndices = shared ? families : NULL,
  };
}

kiln_status kiln_vulkan_allocate(kiln_vulkan_context *vc, VkDeviceSize size,
                                 kiln_vulkan_memory_use use,
                                 bool device_address,
                                 kiln_vulkan_allocation *out) {
  memset(out, 0, sizeof *out);
  if (size > vc->phys->max_allocation_bytes)
    return kiln_set_error(use == KILN_VULKAN_MEMORY_DEVICE
                              ? KILN_ERROR_OUT_OF_DEVICE_MEMORY
                              : KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "%llu bytes is more than the Vulkan device's "
                          "maxMemoryAllocationSize (%llu bytes)",
                          (unsigned long long)size,
                          (unsigned long long)vc->phys->max_allocation_bytes);
  uint32_t families[2];
  VkBufferCreateInfo info = buffer_info(vc, size, families);
  if (device_address)
    info.usage |= VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                  VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
  /* Read once: the buffer and its block must agree. Only buffers of
   * KILN_VULKAN_SHARED_USAGE, the usage device.c found exportable. */
  bool exported = use == KILN_VULKAN_MEMORY_DEVICE && device_address &&
                  atomic_load_explicit(&vc->exporting, memory_order_relaxed);
  VkExternalMemoryBufferCreateInfo external = {
      .sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
      .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
  };
  if (exported) info.pNext = &external;
  VkResult r = vc->vk.vkCreateBuffer(vc->device, &info, NULL, &out->buffer);
  if (r != VK_SUCCESS) {
    out->buffer = VK_NULL_HANDLE;
    return kiln_vulkan_error(r, "vkCreateBuffer");
  }
  /* The driver may want the buffer to have memory of its own (an
   * allocation dedicated to it). */
  VkMemoryDedicatedRequirements dedicated = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_REQUIREMENTS};
  VkMemoryRequirements2 req2 = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2, .pNext = &dedicated};
  VkBufferMemoryRequirementsInfo2 req_info = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_REQUIREMENTS_INFO_2,
      .buffer = out->buffer};
  vc->memory.vkGetBufferMemoryRequirements2(vc->device, &req_info, &req2);
  /* A dedicated allocation may be imported only for a buffer identical to
   * its own, which another context's copy would not make. A preference is
   * only a hint, and NVIDIA's driver prefers it for large buffers (129 MiB
   * and more, not 1 MiB; driver 580 on an H200): an exported buffer gets a
   * block of its own instead, as fast to copy and importable. A buffer
   * that requires it gets ordinary memory (its external creation allows
   * that) and copies through the slots. */
  const bool own = dedicated.requiresDedicatedAllocation ||
                   (dedicated.prefersDedicatedAllocation && !exported);
  exported = exported && !dedicated.requiresDedicatedAllocation;
  VkMemoryDedicatedAllocateInfo own_info = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO,
      .buffer = out->buffer};
  uint32_t type;
  kiln_status st =
      kiln_vulkan_memory_get(vc, &req2.memoryRequirements, use, own,
                             own ? &own_info : NULL, exported, out, &type);
  /* A buffer made for external memory may be bound to ordinary memory:
   * where exportable memory cannot be had, it is a buffer like others,
   * which copies between contexts take through the slots. */
  if (st != KILN_OK && exported) {
    kiln_log(KILN_LOG_INFO,
             "vulkan: a buffer of %llu bytes gets memory that is not "
             "exportable: %s",
             (unsigned long long)size, kiln_last_error());
    st = kiln_vulkan_memory_get(vc, &req2.memoryRequirements, use, own,
                                own ? &own_info : NULL, false, out, &type);
  }
  if (st == KILN_OK &&
      (r = vc->vk.vkBindBufferMemory(vc->device, out->buffer, out->memory,
                                     out->memory_offset)) != VK_SUCCESS)
    st = kiln_vulkan_error(r, "vkBindBufferMemory");
  if (st == KILN_OK && device_address) {
    VkBufferDeviceAddressInfo addr = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
        .buffer = out->buffer,
    };
    out->address = vc->vk.vkGetBufferDeviceAddress(vc->device, &addr);
  }
  out->any_queue = true;
  if (st != KILN_OK) kiln_vulkan_free(vc, out);
  return st;
}

kiln_status kiln_vulkan_import_host(kiln_vulkan_context *vc, void *host,
                                    VkDeviceSize size,
                                    kiln_vulkan_allocation *out) {
  memset(out, 0, sizeof *out);
  const VkExternalMemoryHandleTypeFlagBits type =
      VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  VkMemoryHostPointerPropertiesEXT props = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
  VkResult r = vc->memory.vkGetMemoryHostPointerPropertiesEXT(vc->device, type,
                                                              host, &props);
  if (r != VK_SUCCESS)
    return kiln_vulkan_error(r, "vkGetMemoryHostPointerPropertiesEXT");
  VkExternalMemoryBufferCreateInfo external = {
      .sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
      .handleTypes = type,
  };
  uint32_t families[2];
  VkBufferCreateInfo info = buffer_info(vc, size, families);
  info.pNext = &external;
  r = vc->vk.vkCreateBuffer(vc->device, &info, NULL, &out->buffer);
  if (r != VK_SUCCESS) {
    out->buffer = VK_NULL_HANDLE;
    return kiln_vulkan_error(r, "vkCreateBuffer for imported host memory");
  }
  VkMemoryRequirements req;
  vc->vk.vkGetBufferMemoryRequirements(vc->device, out->buffer, &req);
  const uint32_t types = req.memoryTypeBits & props.memoryTypeBits;
  uint32_t index = 0;
  while (index < vc->phys->memory.memoryTypeCount && !(types >> index & 1))
    index++;
  kiln_status st = KILN_OK;
  if (index == vc->phys->memory.memoryTypeCount) {
    st = kiln_set_error(KILN_ERROR_UNSUPPORTED,
                        "no Vulkan memory type can import host memory for "
                        "a buffer (host pointer types 0x%x, buffer 0x%x)",
                        props.memoryTypeBits, req.memoryTypeBits);
  } else {
    VkImportMemoryHostPointerInfoEXT import = {
        .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
        .handleType = type,
        .pHostPointer = host,
    };
    VkMemoryAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .pNext = &import,
        .allocationSize = size,
        .memoryTypeIndex = index,
    };
    r = vc->vk.vkAllocateMemory(vc->device, &alloc, NULL, &out->memory);
    if (r != VK_SUCCESS) {
      out->memory = VK_NULL_HANDLE;
      st = kiln_vulkan_error(r, "vkAllocateMemory importing %llu bytes of "
                             "host memory",
                             (unsigned long long)size);
    } else if ((r = vc->vk.vkBindBufferMemory(vc->device, out->buffer,
                                              out->memory, 0)) != VK_SUCCESS) {
      st = kiln_vulkan_error(r, "vkBindBufferMemory");
    }
  }
  if (st != KILN_OK) {
    kiln_vulkan_free(vc, out);
    return st;
  }
  out->any_queue = true;
  return KILN_OK;
}

/* ---- Device memory two contexts of one GPU share ----------------------- */

bool kiln_vulkan_can_share_memory(const kiln_vulkan_context *a,
                                  const kiln_vulkan_context *b) {
  return a->memory.vkGetMemoryFdKHR && b->memory.vkGetMemoryFdKHR &&
         memcmp(a->phys->properties.uuid, b->phys->properties.uuid,
                VK_UUID_SIZE) == 0 &&
         memcmp(a->phys->driver_uuid, b->phys->driver_uuid, VK_UUID_SIZE) == 0;
}

/* A VkBuffer of `size` bytes that external memory can back, with
 * out->buffer set; *req what it needs of that memory. */
static kiln_status shared_buffer(kiln_vulkan_context *vc, VkDeviceSize size,
                                 kiln_vulkan_allocation *out,
                                 VkMemoryRequirements *req) {
  memset(out, 0, sizeof *out);
  VkExternalMemoryBufferCreateInfo external = {
      .sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
      .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
  };
  uint32_t families[2];
  VkBufferCreateInfo info = buffer_info(vc, size, families);
  info.pNext = &external;
  info.usage = KILN_VULKAN_SHARED_USAGE;
  VkResult r = vc->vk.vkCreateBuffer(vc->device, &info, NULL, &out->buffer);
  if (r != VK_SUCCESS) {
    out->buffer = VK_NULL_HANDLE;
    return kiln_vulkan_error(r, "vkCreateBuffer for shared device memory");
  }
  vc->vk.vkGetBufferMemoryRequirements(vc->device, out->buffer, req);
  return KILN_OK;
}

/* Binds out->memory to out->buffer and takes the buffer's address. */
static kiln_status bind_shared(kiln_vulkan_context *vc,
                               kiln_vulkan_allocation *out) {
  VkResult r =
      vc->vk.vkBindBufferMemory(vc->device, out->buffer, out->memory, 0);
  if (r != VK_SUCCESS) return kiln_vulkan_error(r, "vkBindBufferMemory");
  VkBufferDeviceAddressInfo addr = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
      .buffer = out->buffer,
  };
  out->address = vc->vk.vkGetBufferDeviceAddress(vc->device, &addr);
  out->any_queue = true;
  return KILN_OK;
}

/* Imports into `to` the memory behind `fd`, which `to` then owns, or which
 * is closed on failure. An opaque fd is imported with the allocation size
 * and memory type it was exported with (VUID-VkMemoryAllocateInfo-
 * allocationSize-01742): one index names one type on one physical
 * device. */
static kiln_status import_shared(kiln_vulkan_context *to, int fd,
                                 VkDeviceSize size, VkDeviceSize bytes,
                                 uint32_t type, kiln_vulkan_allocation *out) {
  VkMemoryRequirements req;
  kiln_status st = shared_buffer(to, size, out, &req);
  if (st == KILN_OK && (!(req.memoryTypeBits >> type & 1) || req.size > bytes))
    st = kiln_set_error(KILN_ERROR_UNSUPPORTED,
                        "the Vulkan device cannot import shared memory of "
                        "type %u and %llu bytes for a buffer (types 0x%x, "
                        "%llu bytes)",
                        type, (unsigned long long)bytes, req.memoryTypeBits,
                        (unsigned long long)req.size);
  if (st != KILN_OK) {
    close(fd);
    kiln_vulkan_free(to, out);
    return st;
  }
  VkMemoryDedicatedAllocateInfo dedicated = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO,
      .buffer = out->buffer,
  };
  VkImportMemoryFdInfoKHR import = {
      .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
      .pNext = to->phys->memory_fd_dedicated ? &dedicated : NULL,
      .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
      .fd = fd,
  };
  VkMemoryAllocateFlagsInfo flags = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
      .pNext = &import,
      .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT,
  };
  VkMemoryAllocateInfo info = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .pNext = &flags,
      .allocationSize = bytes,
      .memoryTypeIndex = type,
  };
  VkResult r = to->vk.vkAllocateMemory(to->device, &info, NULL, &out->memory);
  if (r != VK_SUCCESS) {
    out->memory = VK_NULL_HANDLE;
    close(fd);
    st = kiln_vulkan_error(r,
                           "vkAllocateMemory importing %llu bytes of "
                           "another context's device memory",
                           (unsigned long long)bytes);
  }
  if (st == KILN_OK) st = bind_shared(to, out);
  if (st != KILN_OK) kiln_vulkan_free(to, out);
  return st;
}

/* An opaque fd of `memory`, which from allocated exportable; the caller
 * owns it. */
static kiln_status export_fd(kiln_vulkan_context *from, VkDeviceMemory memory,
                             int *out_fd) {
  VkMemoryGetFdInfoKHR get = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR,
      .memory = memory,
      .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
  };
  VkResult r = from->memory.vkGetMemoryFdKHR(from->device, &get, out_fd);
  return r == VK_SUCCESS ? KILN_OK : kiln_vulkan_error(r, "vkGetMemoryFdKHR");
}

kiln_status kiln_vulkan_share_memory(kiln_vulkan_context *from,
                                     kiln_vulkan_context *to, VkDeviceSize size,
                                     kiln_vulkan_allocation *on_from,
                                     kiln_vulkan_allocation *on_to) {
  memset(on_to, 0, sizeof *on_to);
  VkMemoryRequirements req;
  kiln_status st = shared_buffer(from, size, on_from, &req);
  if (st != KILN_OK) return st;
  VkMemoryDedicatedAllocateInfo dedicated = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO,
      .buffer = on_from->buffer,
  };
  VkExportMemoryAllocateInfo export = {
      .sType = VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO,
      .pNext = from->phys->memory_fd_dedicated ? &dedicated : NULL,
      .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
  };
  uint32_t type = 0;
  st = kiln_vulkan_memory_get(from, &req, KILN_VULKAN_MEMORY_DEVICE, true,
                              &export, false, on_from, &type);
  if (st == KILN_OK) st = bind_shared(from, on_from);
  int fd = -1;
  if (st == KILN_OK) st = export_fd(from, on_from->memory, &fd);
  if (st == KILN_OK)
    st = import_shared(to, fd, size, req.size, type, on_to);
  if (st != KILN_OK) kiln_vulkan_free(from, on_from);
  return st;
}

kiln_status kiln_vulkan_import_block(kiln_vulkan_context *from,
                                     const kiln_vulkan_allocation *in,
                                     kiln_vulkan_context *to,
                                     kiln_vulkan_allocation *out) {
  memset(out, 0, sizeof *out);
  const kiln_vulkan_suballoc_block *block = in->range->block;
  int fd = -1;
  kiln_status st = export_fd(from, in->memory, &fd);
  if (st != KILN_OK) return st;
  /* Exported blocks exist only where the driver exports more than
   * dedicated allocations (memory.export_blocks): imported as a block. */
  return import_shared(to, fd, block->size, block->size, block->type, out);
}

void kiln_vulkan_free(kiln_vulkan_context *vc, kiln_vulkan_allocation *alloc) {
  if (alloc->buffer) vc->vk.vkDestroyBuffer(vc->device, alloc->buffer, NULL);
  if (alloc->range)
    kiln_vulkan_memory_put(vc, alloc);
  else if (alloc->memory)
    vc->vk.vkFreeMemory(vc->device, alloc->memory, NULL);
  memset(alloc, 0, sizeof *alloc);
}

void kiln_vulkan_free_after(kiln_vulkan_context *vc,
                            kiln_vulkan_allocation *alloc,
                            kiln_vulkan_timeline *timeline, uint64_t value) {
  kiln_vulkan_memory_put_after(vc, alloc, timeline, value);
  memset(alloc, 0, sizeof *alloc);
}

/* noinline: its name must be on the stack of the copy. TSan cannot see
 * what orders the device's write before this read on lavapipe, whose
 * threads write device memory and whose fences the wait polls with plain
 * loads: tests/tsan.supp names this function, and only it, to suppress
 * that report. */
__attribute__((noinline)) void kiln_vulkan_copy_from_device(void *dst,
                                                            const void *src,
                                                            size_t size) {
  memcpy(dst, src, size);
}
