/* Memory: VkBuffers with memory of their own, of the type that serves
 * their use best within the heaps' budgets; host memory imported for
 * copies between contexts, and device memory two contexts of one GPU
 * share. */
#include <string.h>
#include <unistd.h>

#include "backends/vulkan/vulkan.h"

/* Lower is better; -1 when the type cannot serve `use`. */
static int memory_rank(const kiln_vulkan_physical *p,
                       VkMemoryPropertyFlags flags,
                       kiln_vulkan_memory_use use) {
  const VkMemoryPropertyFlags unusable =
      VK_MEMORY_PROPERTY_PROTECTED_BIT |
      VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT |
      VK_MEMORY_PROPERTY_DEVICE_COHERENT_BIT_AMD |
      VK_MEMORY_PROPERTY_DEVICE_UNCACHED_BIT_AMD |
      VK_MEMORY_PROPERTY_RDMA_CAPABLE_BIT_NV;
  const VkMemoryPropertyFlags mappable = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                         VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  if (flags & unusable) return -1;
  bool local = flags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  bool host = (flags & mappable) == mappable;
  bool cached = flags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
  bool discrete = p->type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  if (use == KILN_VULKAN_MEMORY_DEVICE) {
    if (!local) return 4;
    /* A discrete GPU's host-visible window (BAR) is scarce and slow to
     * read from the host; on shared memory a mapping is free and lets
     * transfers skip the queue. */
    if (discrete) return host ? 1 : 0;
    return host ? 0 : 1;
  }
  if (!host) return -1;
  /* Cached memory is fast for the host to read back; video memory is
   * better left to buffers. */
  return (cached ? 0 : 1) + (discrete && local ? 2 : 0);
}

/* The heaps' budgets and what this process uses of them, or false where
 * the device does not say. */
static bool memory_budget(kiln_vulkan_context *vc,
                          VkPhysicalDeviceMemoryBudgetPropertiesEXT *out) {
  if (!vc->memory.budget) return false;
  *out = (VkPhysicalDeviceMemoryBudgetPropertiesEXT){
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
  VkPhysicalDeviceMemoryProperties2 props = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
      .pNext = out};
  kiln_vulkan_lib.vkGetPhysicalDeviceMemoryProperties2(vc->phys->handle,
                                                       &props);
  return true;
}

static kiln_status allocate_memory(
    kiln_vulkan_context *vc, const VkMemoryRequirements *req,
    kiln_vulkan_memory_use use, bool device_address, const void *next,
    VkDeviceMemory *out, VkMemoryPropertyFlags *out_flags, uint32_t *out_type) {
  const VkPhysicalDeviceMemoryProperties *mem = &vc->phys->memory;
  VkMemoryAllocateFlagsInfo flags_info = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
      .pNext = next,
      .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT,
  };
  VkMemoryAllocateInfo info = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .pNext = device_address ? &flags_info : next,
      .allocationSize = req->size,
  };
  VkPhysicalDeviceMemoryBudgetPropertiesEXT budget;
  const bool budgeted = memory_budget(vc, &budget);
  VkResult last = VK_ERROR_OUT_OF_DEVICE_MEMORY;
  bool tried = false;
  int full_heap = -1;
  for (int rank = 0; rank <= 4; rank++) {
    /* Device memory that did not fit in video memory is refused rather
     * than placed in system memory behind the caller's back. */
    if (rank == 4 && (tried || full_heap >= 0)) break;
    for (uint32_t i = 0; i < mem->memoryTypeCount; i++) {
      const VkMemoryType *type = &mem->memoryTypes[i];
      const uint32_t heap = type->heapIndex;
      if (!(req->memoryTypeBits & (1u << i)) ||
          memory_rank(vc->phys, type->propertyFlags, use) != rank ||
          mem->memoryHeaps[heap].size < req->size)
        continue;
      if (budgeted && (budget.heapUsage[heap] > budget.heapBudget[heap] ||
                       req->size > budget.heapBudget[heap] -
                                       budget.heapUsage[heap])) {
        full_heap = (int)heap;
        continue;
      }
      info.memoryTypeIndex = i;
      tried = true;
      last = vc->vk.vkAllocateMemory(vc->device, &info, NULL, out);
      if (last == VK_SUCCESS) {
        *out_flags = type->propertyFlags;
        *out_type = i;
        return KILN_OK;
      }
      /* Another type, in another heap, may still have room. */
      if (last != VK_ERROR_OUT_OF_DEVICE_MEMORY)
        return kiln_vulkan_error(last, "vkAllocateMemory");
    }
  }
  if (!tried && full_heap >= 0)
    return kiln_set_error(
        use == KILN_VULKAN_MEMORY_DEVICE ? KILN_ERROR_OUT_OF_DEVICE_MEMORY
                                         : KILN_ERROR_OUT_OF_HOST_MEMORY,
        "%llu bytes do not fit in the budget of the Vulkan device's memory "
        "heap %d: %llu of its %llu bytes are in use (VK_EXT_memory_budget)",
        (unsigned long long)req->size, full_heap,
        (unsigned long long)budget.heapUsage[full_heap],
        (unsigned long long)budget.heapBudget[full_heap]);
  if (!tried)
    return kiln_set_error(
        use == KILN_VULKAN_MEMORY_DEVICE ? KILN_ERROR_OUT_OF_DEVICE_MEMORY
                                         : KILN_ERROR_UNSUPPORTED,
        "no Vulkan memory type can hold %llu bytes of %s "
        "memory",
        (unsigned long long)req->size,
        use == KILN_VULKAN_MEMORY_DEVICE ? "device" : "host-visible");
  return kiln_vulkan_error(last, "vkAllocateMemory");
}

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
  VkResult r = vc->vk.vkCreateBuffer(vc->device, &info, NULL, &out->buffer);
  if (r != VK_SUCCESS) {
    out->buffer = VK_NULL_HANDLE;
    return kiln_vulkan_error(r, "vkCreateBuffer");
  }
  VkMemoryRequirements req;
  vc->vk.vkGetBufferMemoryRequirements(vc->device, out->buffer, &req);
  VkMemoryPropertyFlags flags = 0;
  uint32_t type = 0;
  kiln_status st = allocate_memory(vc, &req, use, device_address, NULL,
                                   &out->memory, &flags, &type);
  if (st == KILN_OK &&
      (r = vc->vk.vkBindBufferMemory(vc->device, out->buffer, out->memory,
                                     0)) != VK_SUCCESS)
    st = kiln_vulkan_error(r, "vkBindBufferMemory");
  const VkMemoryPropertyFlags mappable = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                         VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  if (st == KILN_OK && (flags & mappable) == mappable) {
    void *map = NULL;
    r = vc->vk.vkMapMemory(vc->device, out->memory, 0, VK_WHOLE_SIZE, 0, &map);
    if (r == VK_SUCCESS) {
      out->map = map;
      out->cached = flags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    } else if (use == KILN_VULKAN_MEMORY_HOST) {
      st = kiln_vulkan_error(r, "vkMapMemory");
    }
  }
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
  VkMemoryPropertyFlags flags;
  uint32_t type = 0;
  st = allocate_memory(from, &req, KILN_VULKAN_MEMORY_DEVICE, true, &export,
                       &on_from->memory, &flags, &type);
  if (st == KILN_OK) st = bind_shared(from, on_from);
  int fd = -1;
  if (st == KILN_OK) {
    VkMemoryGetFdInfoKHR get = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR,
        .memory = on_from->memory,
        .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
    };
    VkResult r = from->memory.vkGetMemoryFdKHR(from->device, &get, &fd);
    if (r != VK_SUCCESS) st = kiln_vulkan_error(r, "vkGetMemoryFdKHR");
  }
  if (st == KILN_OK) st = import_shared(to, fd, size, req.size, type, on_to);
  if (st != KILN_OK) kiln_vulkan_free(from, on_from);
  return st;
}

void kiln_vulkan_free(kiln_vulkan_context *vc, kiln_vulkan_allocation *alloc) {
  if (alloc->buffer) vc->vk.vkDestroyBuffer(vc->device, alloc->buffer, NULL);
  /* Freeing mapped memory unmaps it. */
  if (alloc->memory) vc->vk.vkFreeMemory(vc->device, alloc->memory, NULL);
  memset(alloc, 0, sizeof *alloc);
}
