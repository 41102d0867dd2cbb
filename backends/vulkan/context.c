/* Contexts: one VkDevice with its queues, its pipeline cache, memory
 * allocation, and context-wide waits. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    vc->transfer_mode = has ? KILN_VULKAN_TRANSFER_HOST
                            : KILN_VULKAN_TRANSFER_OFF;
  else if (strcmp(v, "all") == 0)
    vc->transfer_mode = has ? KILN_VULKAN_TRANSFER_ALL
                            : KILN_VULKAN_TRANSFER_OFF;
  else if (strcmp(v, "off") == 0)
    vc->transfer_mode = KILN_VULKAN_TRANSFER_OFF;
  else if (strcmp(v, "compute") == 0)
    vc->transfer_mode = KILN_VULKAN_TRANSFER_COMPUTE;
  else
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "KILN_VULKAN_TRANSFER=\"%s\" is not one of auto, "
                          "all, off or compute",
                          v);
  vc->transfer_family = UINT32_MAX;
  vc->transfer_count = 0;
  if (vc->transfer_mode == KILN_VULKAN_TRANSFER_COMPUTE) {
    vc->transfer_family = p->queue_family;
  } else if (vc->transfer_mode != KILN_VULKAN_TRANSFER_OFF) {
    vc->transfer_family = p->transfer_family;
    vc->transfer_count = p->transfer_queue_count < KILN_VULKAN_MAX_TRANSFER
                             ? p->transfer_queue_count
                             : KILN_VULKAN_MAX_TRANSFER;
  }
  return KILN_OK;
}

/* KILN_VULKAN_PEER: auto (two contexts on one GPU share device memory for
 * copies between them where the driver can), or host (they go through
 * host memory, as between two GPUs: that way, testable on one device). */
static kiln_status choose_peer_memory(bool *share) {
  const char *v = kiln_getenv("KILN_VULKAN_PEER");
  *share = !v || strcmp(v, "auto") == 0;
  if (*share || strcmp(v, "host") == 0) return KILN_OK;
  return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                        "KILN_VULKAN_PEER=\"%s\" is not one of auto or host",
                        v);
}

static kiln_status create_device(kiln_vulkan_context *vc) {
  const kiln_vulkan_physical *p = vc->phys;
  kiln_status st = choose_transfer(vc);
  if (st != KILN_OK) return st;
  bool share = false;
  if ((st = choose_peer_memory(&share)) != KILN_OK) return st;
  share = share && p->memory_fd;
  vc->queue_count = p->queue_count < KILN_VULKAN_MAX_QUEUES
                        ? p->queue_count
                        : KILN_VULKAN_MAX_QUEUES;
  /* The last queue takes the streams of priority 1, at a higher queue
   * priority than the others (device.c reports the range). */
  float priorities[KILN_VULKAN_MAX_QUEUES];
  for (uint32_t i = 0; i < vc->queue_count; i++)
    priorities[i] =
        vc->queue_count >= 2 && i + 1 < vc->queue_count ? 0.5f : 1.0f;
  const float transfer_priorities[KILN_VULKAN_MAX_TRANSFER] = {1, 1, 1, 1};
  VkDeviceQueueCreateInfo queue_info[2] = {
      {
          .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
          .queueFamilyIndex = p->queue_family,
          .queueCount = vc->queue_count,
          .pQueuePriorities = priorities,
      },
      {
          .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
          .queueFamilyIndex = vc->transfer_family,
          .queueCount = vc->transfer_count,
          .pQueuePriorities = transfer_priorities,
      },
  };
  choose_features(p, &vc->enabled, &vc->enabled11, &vc->enabled12);
  const char *extensions[4 + KILN_VULKAN_MAX_OPTIONAL];
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
  const uint32_t required = extension_count;
  void *chain = NULL;
  extension_count += kiln_vulkan_optional_enable(
      &p->optional, &vc->enabled_optional, extensions + extension_count,
      &chain);
  vc->enabled12.pNext = chain;
  VkDeviceCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
      .pNext = &vc->enabled,
      .queueCreateInfoCount = vc->transfer_count > 0 ? 2 : 1,
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
  vc->budget = p->memory_budget;
  if (p->host_import) {
    PFN_vkVoidFunction fn = kiln_vulkan_lib.vkGetDeviceProcAddr(
        vc->device, "vkGetMemoryHostPointerPropertiesEXT");
    memcpy(&vc->vkGetMemoryHostPointerPropertiesEXT, &fn, sizeof fn);
  }
  if (share) {
    PFN_vkVoidFunction fn =
        kiln_vulkan_lib.vkGetDeviceProcAddr(vc->device, "vkGetMemoryFdKHR");
    memcpy(&vc->vkGetMemoryFdKHR, &fn, sizeof fn);
  }
  return KILN_OK;
}

static void destroy_queues(kiln_vulkan_context *vc, uint32_t count,
                           uint32_t transfer_count) {
  for (uint32_t i = 0; i < count; i++)
    pthread_mutex_destroy(&vc->queues[i].lock);
  for (uint32_t i = 0; i < transfer_count; i++)
    pthread_mutex_destroy(&vc->transfer[i].lock);
}

/* ---- The pipeline cache, kept on disk between runs ----------------------- */

/* Everything a driver's pipeline cache blob depends on. */
static void pipeline_cache_key(const kiln_vulkan_physical *p, kiln_hash *out) {
  kiln_sha256 h;
  kiln_sha256_init(&h);
  kiln_sha256_string(&h, "vulkan-pipeline-cache");
  kiln_sha256_string(&h, kiln_version_string());
  kiln_sha256_field(&h, &p->properties.vendor_id,
                    sizeof p->properties.vendor_id);
  kiln_sha256_field(&h, &p->properties.device_id,
                    sizeof p->properties.device_id);
  kiln_sha256_field(&h, &p->driver_version, sizeof p->driver_version);
  kiln_sha256_field(&h, p->pipeline_cache_uuid, VK_UUID_SIZE);
  kiln_sha256_final(&h, out);
}

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* Why `data` is not a pipeline cache of this device and driver, by its
 * VkPipelineCacheHeaderVersionOne (little-endian, whatever the host), or
 * NULL. The key already names the device, so this only catches an entry
 * written wrong or a driver that changed without changing its version: the
 * spec says a driver ignores data that is not its own, but not every
 * driver has been careful about it. */
static const char *pipeline_cache_mismatch(const kiln_vulkan_physical *p,
                                           const unsigned char *data,
                                           size_t size) {
  if (size < 32) return "shorter than a pipeline cache header";
  uint32_t header_size = le32(data);
  if (header_size < 32 || header_size > size) return "bad headerSize";
  if (le32(data + 4) != VK_PIPELINE_CACHE_HEADER_VERSION_ONE)
    return "unknown headerVersion";
  if (le32(data + 8) != p->properties.vendor_id ||
      le32(data + 12) != p->properties.device_id)
    return "made for another device";
  if (memcmp(data + 16, p->pipeline_cache_uuid, VK_UUID_SIZE) != 0)
    return "made by another driver build (pipelineCacheUUID)";
  return NULL;
}

static void hash_of(const void *data, size_t size, kiln_hash *out) {
  kiln_sha256 h;
  kiln_sha256_init(&h);
  kiln_sha256_update(&h, data, size);
  kiln_sha256_final(&h, out);
}

/* Creates vc->pipeline_cache, seeded from the disk cache when it holds a
 * copy for this device and driver. */
static kiln_status create_pipeline_cache(kiln_vulkan_context *vc) {
  void *data = NULL;
  size_t size = 0;
  const char *why = "the disk cache is off (KILN_CACHE)";
  if (kiln_cache_enabled()) {
    kiln_hash key;
    pipeline_cache_key(vc->phys, &key);
    why = "no copy on disk";
    if (kiln_cache_load("pipeline", &key, &data, &size) &&
        (why = pipeline_cache_mismatch(vc->phys, data, size)) != NULL) {
      free(data);
      data = NULL;
      size = 0;
    }
  }
  VkPipelineCacheCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
      .initialDataSize = size,
      .pInitialData = data,
  };
  VkResult r = vc->vk.vkCreatePipelineCache(vc->device, &info, NULL,
                                            &vc->pipeline_cache);
  if (r != VK_SUCCESS && data) {
    why = "the driver refused it";
    info.initialDataSize = 0;
    info.pInitialData = NULL;
    r = vc->vk.vkCreatePipelineCache(vc->device, &info, NULL,
                                     &vc->pipeline_cache);
    free(data);
    data = NULL;
  }
  if (r != VK_SUCCESS) {
    free(data);
    vc->pipeline_cache = VK_NULL_HANDLE;
    return kiln_vulkan_error(r, "vkCreatePipelineCache");
  }
  if (data) {
    hash_of(data, size, &vc->pipeline_cache_seed);
    vc->pipeline_cache_seed_size = size;
    kiln_log(KILN_LOG_DEBUG,
             "vulkan: pipeline cache: loaded %zu bytes from disk", size);
    free(data);
  } else {
    kiln_log(KILN_LOG_DEBUG, "vulkan: pipeline cache: starting empty: %s",
             why);
  }
  return KILN_OK;
}

/* Writes the pipeline cache to the disk cache when it changed since it was
 * loaded. Best effort: a failure only costs the next run its compiles. */
static void save_pipeline_cache(kiln_vulkan_context *vc) {
  if (!kiln_cache_enabled()) return;
  void *data = NULL;
  size_t size = 0;
  VkResult r = VK_INCOMPLETE;
  /* The size can only grow between the calls if another thread creates
   * pipelines meanwhile, which no one does at deinit; a few rounds are
   * plenty. */
  for (int round = 0; round < 4 && r == VK_INCOMPLETE; round++) {
    free(data);
    data = NULL;
    r = vc->vk.vkGetPipelineCacheData(vc->device, vc->pipeline_cache, &size,
                                      NULL);
    if (r != VK_SUCCESS || size == 0) break;
    if (!(data = malloc(size))) break;
    r = vc->vk.vkGetPipelineCacheData(vc->device, vc->pipeline_cache, &size,
                                      data);
  }
  if (r != VK_SUCCESS || !data || size == 0) {
    kiln_log(KILN_LOG_DEBUG, "vulkan: pipeline cache: not saved: %s",
             r != VK_SUCCESS ? kiln_vulkan_result_name(r) : "no data");
    free(data);
    return;
  }
  kiln_hash now;
  hash_of(data, size, &now);
  if (size == vc->pipeline_cache_seed_size &&
      memcmp(now.bytes, vc->pipeline_cache_seed.bytes, sizeof now.bytes) == 0) {
    kiln_log(KILN_LOG_DEBUG, "vulkan: pipeline cache: unchanged");
  } else {
    kiln_hash key;
    pipeline_cache_key(vc->phys, &key);
    kiln_cache_store("pipeline", &key, data, size);
    kiln_log(KILN_LOG_DEBUG, "vulkan: pipeline cache: saved %zu bytes", size);
  }
  free(data);
}

kiln_status kiln_vulkan_context_init(kiln_context *ctx) {
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(ctx);
  const char *problem = kiln_vulkan_validation_problem();
  if (problem) return kiln_set_error(KILN_ERROR_UNAVAILABLE, "%s", problem);
  vc->phys = kiln_vulkan_physical_device(ctx->device_index);
  kiln_status st = create_device(vc);
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
  for (; queues < vc->queue_count; queues++) {
    vc->vk.vkGetDeviceQueue(vc->device, vc->phys->queue_family, queues,
                            &vc->queues[queues].handle);
    if (pthread_mutex_init(&vc->queues[queues].lock, NULL) != 0) {
      st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "pthread_mutex_init failed for a Vulkan queue");
      break;
    }
  }
  uint32_t transfers = 0;
  for (; st == KILN_OK && transfers < vc->transfer_count; transfers++) {
    vc->vk.vkGetDeviceQueue(vc->device, vc->transfer_family, transfers,
                            &vc->transfer[transfers].handle);
    if (pthread_mutex_init(&vc->transfer[transfers].lock, NULL) != 0) {
      st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "pthread_mutex_init failed for a Vulkan queue");
      break;
    }
  }
  atomic_init(&vc->next_queue, 0);
  atomic_init(&vc->next_transfer, 0);
  atomic_init(&vc->busy_streams, 0);
  bool streams_lock = false;
  if (st == KILN_OK) st = create_pipeline_cache(vc);
  atomic_init(&vc->write_epoch, 0);
  vc->reorder = (vc->base.debug & KILN_DEBUG_REORDER) != 0;
  bool writes_lock = false, held_lock = false;
  if (st == KILN_OK) {
    if (pthread_mutex_init(&vc->streams_lock, NULL) == 0)
      streams_lock = true;
    else
      st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "pthread_mutex_init failed for the stream list");
  }
  if (st == KILN_OK) {
    if (pthread_mutex_init(&vc->writes_lock, NULL) == 0)
      writes_lock = true;
    else
      st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "pthread_mutex_init failed for the write list");
  }
  if (st == KILN_OK) {
    if (pthread_mutex_init(&vc->held_lock, NULL) == 0)
      held_lock = true;
    else
      st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "pthread_mutex_init failed for the held work");
  }
  if (st == KILN_OK) {
    vc->util = calloc(1, sizeof *vc->util);
    if (!vc->util)
      st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory creating a Vulkan context");
    else if ((st = kiln_vulkan_stream_setup(vc, vc->util, &vc->queues[0])) !=
             KILN_OK) {
      free(vc->util);
      vc->util = NULL;
    }
  }
  if (st != KILN_OK) {
    if (held_lock) pthread_mutex_destroy(&vc->held_lock);
    if (writes_lock) pthread_mutex_destroy(&vc->writes_lock);
    if (streams_lock) pthread_mutex_destroy(&vc->streams_lock);
    if (vc->pipeline_cache)
      vc->vk.vkDestroyPipelineCache(vc->device, vc->pipeline_cache, NULL);
    destroy_queues(vc, queues, transfers);
    if (vc->owns_device) vc->vk.vkDestroyDevice(vc->device, NULL);
  }
  return st;
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
  kiln_vulkan_stream_teardown(vc->util);
  free(vc->util);
  kiln_vulkan_peer_forget(vc);
  kiln_vulkan_release_writes(vc, NULL);
  free(vc->writes);
  /* Every stream waited for its own work when it was destroyed: nothing
   * is held any more. */
  free(vc->held);
  /* Destroying the device with work queued is invalid, and a lost device
   * may still report work pending: this is not a hot path. */
  if (vc->owns_device) {
    VkResult r = vc->vk.vkDeviceWaitIdle(vc->device);
    if (r != VK_SUCCESS)
      kiln_vulkan_warn(r, "vkDeviceWaitIdle before destroying the device");
  }
  save_pipeline_cache(vc);
  vc->vk.vkDestroyPipelineCache(vc->device, vc->pipeline_cache, NULL);
  if (vc->owns_device) vc->vk.vkDestroyDevice(vc->device, NULL);
  pthread_mutex_destroy(&vc->held_lock);
  pthread_mutex_destroy(&vc->writes_lock);
  pthread_mutex_destroy(&vc->streams_lock);
  destroy_queues(vc, vc->queue_count, vc->transfer_count);
}

static kiln_status quiesce(kiln_vulkan_context *vc, uint64_t timeout_ns) {
  const uint64_t start = kiln_now_ns();
  kiln_status result = KILN_OK;
  pthread_mutex_lock(&vc->streams_lock);
  /* Submit everywhere first so that the streams finish together. */
  for (kiln_vulkan_stream *st = vc->streams; st; st = st->next) {
    kiln_vulkan_stream_lock(st);
    kiln_status s = kiln_vulkan_stream_flush(st);
    kiln_vulkan_stream_unlock(st);
    if (result == KILN_OK) result = s;
  }
  /* At once, the stream held last first, rather than in the list's order
   * by the waits below. */
  if (vc->reorder) {
    kiln_status s = kiln_vulkan_release_all(vc);
    if (result == KILN_OK) result = s;
  }
  for (kiln_vulkan_stream *st = vc->streams; st; st = st->next) {
    uint64_t waited = kiln_now_ns() - start, left = KILN_WAIT_FOREVER;
    if (timeout_ns != KILN_WAIT_FOREVER)
      left = waited < timeout_ns ? timeout_ns - waited : 0;
    kiln_vulkan_stream_lock(st);
    kiln_status s = kiln_vulkan_stream_wait_for(st, st->submitted, left);
    kiln_vulkan_stream_unlock(st);
    if (result == KILN_OK) result = s;
  }
  pthread_mutex_unlock(&vc->streams_lock);
  return result;
}

void kiln_vulkan_quiesce_for_deinit(kiln_vulkan_context *vc,
                                    const char *what) {
  if (quiesce(vc, KILN_WAIT_FOREVER) != KILN_OK)
    kiln_log(KILN_LOG_WARN, "vulkan: waiting for the device before %s "
             "failed: %s", what, kiln_last_error());
}

kiln_status kiln_vulkan_context_synchronize(kiln_context *ctx,
                                            uint64_t timeout_ns) {
  return quiesce(kiln_vulkan_context_cast(ctx), timeout_ns);
}

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
  if (!vc->budget) return false;
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
  families[1] = vc->transfer_family;
  const bool shared = vc->transfer_count > 0;
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
  VkResult r = vc->vkGetMemoryHostPointerPropertiesEXT(vc->device, type, host,
                                                       &props);
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
  return a->vkGetMemoryFdKHR && b->vkGetMemoryFdKHR &&
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
    VkResult r = from->vkGetMemoryFdKHR(from->device, &get, &fd);
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
