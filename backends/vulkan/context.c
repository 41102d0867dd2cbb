/* Contexts: one VkDevice with its queues, the features and extensions it
 * is created with, and context-wide waits. Memory is memory.c's, the
 * pipeline cache pipeline_cache.c's. */
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vulkan.h"
#include "core/internal.h"

/* Required features, plus the shader features user kernels commonly need
 * (16/8-bit storage, float64, int64 atomics, ...), each enabled only where
 * the device has it: a kernel using a capability that was not enabled is
 * invalid, and enabling an unused one costs nothing. */
static void choose_features(const kiln_vulkan_physical *p,
                            VkPhysicalDeviceFeatures2 *f,
                            VkPhysicalDeviceVulkan11Features *f11,
                            VkPhysicalDeviceVulkan12Features *f12) {
  memset(f, 0, sizeof *f);
  memset(f11, 0, sizeof *f11);
  memset(f12, 0, sizeof *f12);
  f->sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  f->pNext = f11;
  f11->sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  f11->pNext = f12;
  f12->sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;

  f->features.shaderInt64 = VK_TRUE;
  f12->bufferDeviceAddress = VK_TRUE;
  f12->timelineSemaphore = VK_TRUE;

  const VkPhysicalDeviceFeatures *s = &p->features.features;
  const VkPhysicalDeviceVulkan11Features *s11 = &p->features11;
  const VkPhysicalDeviceVulkan12Features *s12 = &p->features12;
  f->features.shaderFloat64 = s->shaderFloat64;
  f->features.shaderInt16 = s->shaderInt16;
  f11->storageBuffer16BitAccess = s11->storageBuffer16BitAccess;
  f11->uniformAndStorageBuffer16BitAccess =
      s11->uniformAndStorageBuffer16BitAccess;
  f11->storagePushConstant16 = s11->storagePushConstant16;
  f11->variablePointersStorageBuffer = s11->variablePointersStorageBuffer;
  f11->variablePointers = s11->variablePointers;
  f12->storageBuffer8BitAccess = s12->storageBuffer8BitAccess;
  f12->uniformAndStorageBuffer8BitAccess =
      s12->uniformAndStorageBuffer8BitAccess;
  f12->storagePushConstant8 = s12->storagePushConstant8;
  f12->shaderBufferInt64Atomics = s12->shaderBufferInt64Atomics;
  f12->shaderSharedInt64Atomics = s12->shaderSharedInt64Atomics;
  f12->shaderFloat16 = s12->shaderFloat16;
  f12->shaderInt8 = s12->shaderInt8;
  f12->scalarBlockLayout = s12->scalarBlockLayout;
  f12->uniformBufferStandardLayout = s12->uniformBufferStandardLayout;
  f12->vulkanMemoryModel = s12->vulkanMemoryModel;
  f12->vulkanMemoryModelDeviceScope = s12->vulkanMemoryModelDeviceScope;
  f12->subgroupBroadcastDynamicId = s12->subgroupBroadcastDynamicId;
}

/* KILN_VULKAN_TRANSFER: auto (host<->device copies on a transfer family
 * where the device has one), all (device<->device copies too), off, or
 * compute (the transfer lane on the compute queues, to test it). */
static kiln_status choose_transfer(kiln_vulkan_context *vc) {
  const kiln_vulkan_physical *p = vc->phys;
  const char *v = kiln_getenv("KILN_VULKAN_TRANSFER");
  const bool has = p->transfer_family != UINT32_MAX;
  if (!v || strcmp(v, "auto") == 0)
    vc->queues.transfer_mode =
        has ? KILN_VULKAN_TRANSFER_HOST : KILN_VULKAN_TRANSFER_OFF;
  else if (strcmp(v, "all") == 0)
    vc->queues.transfer_mode =
        has ? KILN_VULKAN_TRANSFER_ALL : KILN_VULKAN_TRANSFER_OFF;
  else if (strcmp(v, "off") == 0)
    vc->queues.transfer_mode = KILN_VULKAN_TRANSFER_OFF;
  else if (strcmp(v, "compute") == 0)
    vc->queues.transfer_mode = KILN_VULKAN_TRANSFER_COMPUTE;
  else
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "KILN_VULKAN_TRANSFER=\"%s\" is not one of auto, "
                          "all, off or compute",
                          v);
  vc->queues.transfer_family = UINT32_MAX;
  vc->queues.transfer_count = 0;
  if (vc->queues.transfer_mode == KILN_VULKAN_TRANSFER_COMPUTE) {
    vc->queues.transfer_family = p->queue_family;
  } else if (vc->queues.transfer_mode != KILN_VULKAN_TRANSFER_OFF) {
    vc->queues.transfer_family = p->transfer_family;
    vc->queues.transfer_count =
        p->transfer_queue_count < KILN_VULKAN_MAX_TRANSFER
            ? p->transfer_queue_count
            : KILN_VULKAN_MAX_TRANSFER;
  }
  return KILN_OK;
}

/* KILN_VULKAN_PEER: auto (two contexts on one GPU share device memory for
 * copies between them where the driver can: the destination imports the
 * source's own blocks, or copies through slots both see), slots (only
 * the slots: the way a buffer made before the second context goes, that
 * way testable alone), or host (they go through host memory, as between
 * two GPUs: that way, testable on one device). */
static kiln_status choose_peer_memory(bool *share, bool *blocks) {
  const char *v = kiln_getenv("KILN_VULKAN_PEER");
  *blocks = !v || strcmp(v, "auto") == 0;
  *share = *blocks || strcmp(v, "slots") == 0;
  if (*share || strcmp(v, "host") == 0) return KILN_OK;
  return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                        "KILN_VULKAN_PEER=\"%s\" is not one of auto, slots "
                        "or host",
                        v);
}

static kiln_status create_device(kiln_vulkan_context *vc) {
  const kiln_vulkan_physical *p = vc->phys;
  kiln_status st = choose_transfer(vc);
  if (st != KILN_OK) return st;
  bool share = false, blocks = false;
  if ((st = choose_peer_memory(&share, &blocks)) != KILN_OK) return st;
  share = share && p->memory_fd;
  vc->memory.export_blocks = share && blocks && !p->memory_fd_dedicated;
  vc->queues.compute_count = p->queue_count < KILN_VULKAN_MAX_QUEUES
                                 ? p->queue_count
                                 : KILN_VULKAN_MAX_QUEUES;
  /* The last queue takes the streams of priority 1, at a higher queue
   * priority than the others (device.c reports the range). */
  float priorities[KILN_VULKAN_MAX_QUEUES];
  for (uint32_t i = 0; i < vc->queues.compute_count; i++)
    priorities[i] =
        vc->queues.compute_count >= 2 && i + 1 < vc->queues.compute_count
            ? 0.5f
            : 1.0f;
  const float transfer_priorities[KILN_VULKAN_MAX_TRANSFER] = {1, 1, 1, 1};
  VkDeviceQueueCreateInfo queue_info[2] = {
      {
          .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
          .queueFamilyIndex = p->queue_family,
          .queueCount = vc->queues.compute_count,
          .pQueuePriorities = priorities,
      },
      {
          .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
          .queueFamilyIndex = vc->queues.transfer_family,
          .queueCount = vc->queues.transfer_count,
          .pQueuePriorities = transfer_priorities,
      },
  };
  choose_features(p, &vc->enabled, &vc->enabled11, &vc->enabled12);
  const char *extensions[5 + KILN_VULKAN_MAX_OPTIONAL];
  uint32_t extension_count = 0;
  /* The spec requires enabling it on the drivers that offer it. */
  if (p->portability_subset)
    extensions[extension_count++] = "VK_KHR_portability_subset";
  /* Some drivers (NVIDIA's) let device-local allocations go on past the
   * heap's size, evicting to system memory; the budget is how kiln knows
   * when the device is full. */
  if (p->memory_budget)
    extensions[extension_count++] = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
  /* Copies between two contexts go through host memory both import. */
  if (p->host_import)
    extensions[extension_count++] = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
  /* Two contexts on one GPU share device memory for them instead. */
  if (share)
    extensions[extension_count++] = VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
  /* Free to enable, and what lets a kernel that calls debugPrintfEXT be
   * made at all (its text is the layer's, under printf). */
  if (p->non_semantic_info)
    extensions[extension_count++] =
        VK_KHR_SHADER_NON_SEMANTIC_INFO_EXTENSION_NAME;
  const uint32_t required = extension_count;
  void *chain = NULL;
  extension_count += kiln_vulkan_optional_enable(
      &p->optional, &vc->enabled_optional, extensions + extension_count,
      &chain);
  vc->enabled12.pNext = chain;
  VkDeviceCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
      .pNext = &vc->enabled,
      .queueCreateInfoCount = vc->queues.transfer_count > 0 ? 2 : 1,
      .pQueueCreateInfos = queue_info,
      .enabledExtensionCount = extension_count,
      .ppEnabledExtensionNames = extension_count ? extensions : NULL,
  };
  VkResult r =
      kiln_vulkan_lib.vkCreateDevice(p->handle, &info, NULL, &vc->device);
  if (r != VK_SUCCESS && extension_count > required) {
    /* The optional features are the user's kernels' to want, not kiln's:
     * a driver that refuses them still gives a device, without them. */
    kiln_log(KILN_LOG_WARN,
             "vulkan: vkCreateDevice with the optional features (float "
             "atomics, subgroup size control, integer dot products, "
             "cooperative matrices) failed (%d); the device is created "
             "without them",
             (int)r);
    memset(&vc->enabled_optional, 0, sizeof vc->enabled_optional);
    vc->enabled12.pNext = NULL;
    info.enabledExtensionCount = required;
    info.ppEnabledExtensionNames = required ? extensions : NULL;
    r = kiln_vulkan_lib.vkCreateDevice(p->handle, &info, NULL, &vc->device);
    /* The context reports what it has: the device without them. */
    kiln_vulkan_physical plain = *p;
    memset(&plain.optional, 0, sizeof plain.optional);
    kiln_vulkan_optional_report(kiln_vulkan_instance(), &plain,
                                &vc->base.properties);
  }
  if (r != VK_SUCCESS) {
    vc->device = VK_NULL_HANDLE;
    return kiln_vulkan_error(r, "vkCreateDevice");
  }
  vc->memory.budget = p->memory_budget;
  vc->non_semantic = p->non_semantic_info ||
                     (p->api_version >= VK_API_VERSION_1_3 &&
                      kiln_vulkan_instance_api() >= VK_API_VERSION_1_3);
  if (p->host_import) {
    PFN_vkVoidFunction fn = kiln_vulkan_lib.vkGetDeviceProcAddr(
        vc->device, "vkGetMemoryHostPointerPropertiesEXT");
    memcpy(&vc->memory.vkGetMemoryHostPointerPropertiesEXT, &fn, sizeof fn);
  }
  if (share) {
    PFN_vkVoidFunction fn =
        kiln_vulkan_lib.vkGetDeviceProcAddr(vc->device, "vkGetMemoryFdKHR");
    memcpy(&vc->memory.vkGetMemoryFdKHR, &fn, sizeof fn);
  }
  return KILN_OK;
}

static void destroy_queues(kiln_vulkan_context *vc, uint32_t count,
                           uint32_t transfer_count) {
  for (uint32_t i = 0; i < count; i++)
    pthread_mutex_destroy(&vc->queues.compute[i].lock);
  for (uint32_t i = 0; i < transfer_count; i++)
    pthread_mutex_destroy(&vc->queues.transfer[i].lock);
}


kiln_status kiln_vulkan_context_allowed(const kiln_context *ctx) {
  const char *problem = kiln_vulkan_validation_problem();
  if (problem) return kiln_set_error(KILN_ERROR_UNAVAILABLE, "%s", problem);
  /* Reorder holds submissions back on the host, while the layer's printf
   * waits for the queue inside each one: a held signal would never come. */
  if (kiln_vulkan_printf_on() && (ctx->debug & KILN_DEBUG_REORDER))
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "KILN_DEBUG=reorder and KILN_VULKAN_VALIDATION="
                          "printf do not go together: reorder holds "
                          "submissions back on the host, and the layer's "
                          "printf waits for the queue inside every "
                          "submission; set one of them");
  return KILN_OK;
}

kiln_status kiln_vulkan_context_init(kiln_context *ctx) {
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(ctx);
  kiln_status st = kiln_vulkan_context_allowed(ctx);
  if (st != KILN_OK) return st;
  vc->phys = kiln_vulkan_physical_device(ctx->device_index);
  st = create_device(vc);
  if (st != KILN_OK) return st;
  vc->owns_device = true;
  return kiln_vulkan_context_setup(vc);
}

kiln_status kiln_vulkan_context_setup(kiln_vulkan_context *vc) {
  kiln_status st = kiln_vulkan_load_device(vc->device, &vc->vk);
  if (st != KILN_OK) {
    if (!vc->owns_device) return st;
    /* Without the table there is no vkDestroyDevice to call either; ask
     * the loader for it directly. */
    PFN_vkVoidFunction fn =
        kiln_vulkan_lib.vkGetDeviceProcAddr(vc->device, "vkDestroyDevice");
    PFN_vkDestroyDevice destroy;
    memcpy(&destroy, &fn, sizeof destroy);
    if (destroy) destroy(vc->device, NULL);
    return st;
  }
  uint32_t queues = 0;
  for (; queues < vc->queues.compute_count; queues++) {
    vc->vk.vkGetDeviceQueue(vc->device, vc->phys->queue_family, queues,
                            &vc->queues.compute[queues].handle);
    if (pthread_mutex_init(&vc->queues.compute[queues].lock, NULL) != 0) {
      st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "pthread_mutex_init failed for a Vulkan queue");
      break;
    }
  }
  uint32_t transfers = 0;
  for (; st == KILN_OK && transfers < vc->queues.transfer_count; transfers++) {
    vc->vk.vkGetDeviceQueue(vc->device, vc->queues.transfer_family, transfers,
                            &vc->queues.transfer[transfers].handle);
    if (pthread_mutex_init(&vc->queues.transfer[transfers].lock, NULL) != 0) {
      st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "pthread_mutex_init failed for a Vulkan queue");
      break;
    }
  }
  PFN_vkVoidFunction requirements = kiln_vulkan_lib.vkGetDeviceProcAddr(
      vc->device, "vkGetBufferMemoryRequirements2");
  memcpy(&vc->memory.vkGetBufferMemoryRequirements2, &requirements,
         sizeof requirements);
  bool memory = false;
  if (st == KILN_OK && !requirements)
    st = kiln_set_error(KILN_ERROR_UNSUPPORTED,
                        "the Vulkan device has no "
                        "vkGetBufferMemoryRequirements2 (Vulkan 1.1)");
  vc->memory.exported_block_gone = kiln_vulkan_imports_forget_block;
  if (st == KILN_OK) memory = (st = kiln_vulkan_memory_init(vc)) == KILN_OK;
  atomic_init(&vc->queues.next_compute, 0);
  atomic_init(&vc->queues.next_transfer, 0);
  atomic_init(&vc->exporting, false);
  atomic_init(&vc->streams.busy, 0);
  bool streams_lock = false;
  if (st == KILN_OK) st = kiln_vulkan_pipeline_cache_create(vc);
  atomic_init(&vc->writes.epoch, 0);
  vc->reorder.on = (vc->base.debug & KILN_DEBUG_REORDER) != 0;
  bool writes_lock = false, held_lock = false;
  if (st == KILN_OK) {
    if (pthread_mutex_init(&vc->streams.lock, NULL) == 0)
      streams_lock = true;
    else
      st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "pthread_mutex_init failed for the stream list");
  }
  if (st == KILN_OK) {
    if (pthread_mutex_init(&vc->writes.lock, NULL) == 0)
      writes_lock = true;
    else
      st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "pthread_mutex_init failed for the write list");
  }
  if (st == KILN_OK) {
    if (pthread_mutex_init(&vc->reorder.lock, NULL) == 0)
      held_lock = true;
    else
      st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "pthread_mutex_init failed for the held work");
  }
  if (st == KILN_OK) {
    vc->streams.util = calloc(1, sizeof *vc->streams.util);
    if (!vc->streams.util)
      st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory creating a Vulkan context");
    else if ((st = kiln_vulkan_stream_setup(
                  vc, vc->streams.util, &vc->queues.compute[0])) != KILN_OK) {
      free(vc->streams.util);
      vc->streams.util = NULL;
    }
  }
  if (st != KILN_OK) {
    if (held_lock) pthread_mutex_destroy(&vc->reorder.lock);
    if (writes_lock) pthread_mutex_destroy(&vc->writes.lock);
    if (streams_lock) pthread_mutex_destroy(&vc->streams.lock);
    if (vc->pipeline_cache.handle)
      vc->vk.vkDestroyPipelineCache(vc->device, vc->pipeline_cache.handle,
                                    NULL);
    if (memory) kiln_vulkan_memory_deinit(vc);
    destroy_queues(vc, queues, transfers);
    if (vc->owns_device) vc->vk.vkDestroyDevice(vc->device, NULL);
    return st;
  }
  kiln_vulkan_imports_join(vc);
  return KILN_OK;
}

void kiln_vulkan_context_deinit(kiln_context *ctx) {
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(ctx);
  /* Work still runs: destroying the device, or anything the work may
   * touch, would be invalid (and lavapipe would join the thread that runs
   * it). All of it stays, with the core's memory, until the process ends. */
  if (ctx->abandoned) return;
  /* The caller may use a borrowed device's other queues meanwhile, which
   * vkDeviceWaitIdle would race with: wait for kiln's own work only. */
  if (!vc->owns_device)
    kiln_vulkan_quiesce_for_deinit(vc, "releasing a borrowed VkDevice");
  kiln_vulkan_stream_teardown(vc->streams.util);
  free(vc->streams.util);
  kiln_vulkan_peer_forget(vc);
  kiln_vulkan_release_writes(vc, NULL);
  free(vc->writes.list);
  /* Every stream waited for its own work when it was destroyed: nothing
   * is held any more. */
  free(vc->reorder.held);
  /* Destroying the device with work queued is invalid, and a lost device
   * may still report work pending: this is not a hot path. */
  if (vc->owns_device) {
    VkResult r = vc->vk.vkDeviceWaitIdle(vc->device);
    if (r != VK_SUCCESS)
      kiln_vulkan_warn(r, "vkDeviceWaitIdle before destroying the device");
  }
  /* Every buffer is gone, and the work that ranges given back for later
   * waited for is over. */
  kiln_vulkan_memory_deinit(vc);
  kiln_vulkan_pipeline_cache_save(vc);
  vc->vk.vkDestroyPipelineCache(vc->device, vc->pipeline_cache.handle, NULL);
  if (vc->owns_device) vc->vk.vkDestroyDevice(vc->device, NULL);
  pthread_mutex_destroy(&vc->reorder.lock);
  pthread_mutex_destroy(&vc->writes.lock);
  pthread_mutex_destroy(&vc->streams.lock);
  destroy_queues(vc, vc->queues.compute_count, vc->queues.transfer_count);
}
