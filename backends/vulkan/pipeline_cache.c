/* The pipeline cache, kept in the disk cache between runs under a key
 * naming the device and driver, and written back at deinit only when it
 * changed. */
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vulkan.h"
#include "core/internal.h"

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

kiln_status kiln_vulkan_pipeline_cache_create(kiln_vulkan_context *vc) {
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
                                            &vc->pipeline_cache.handle);
  if (r != VK_SUCCESS && data) {
    why = "the driver refused it";
    info.initialDataSize = 0;
    info.pInitialData = NULL;
    r = vc->vk.vkCreatePipelineCache(vc->device, &info, NULL,
                                     &vc->pipeline_cache.handle);
    free(data);
    data = NULL;
  }
  if (r != VK_SUCCESS) {
    free(data);
    vc->pipeline_cache.handle = VK_NULL_HANDLE;
    return kiln_vulkan_error(r, "vkCreatePipelineCache");
  }
  if (data) {
    hash_of(data, size, &vc->pipeline_cache.seed);
    vc->pipeline_cache.seed_size = size;
    kiln_log(KILN_LOG_DEBUG,
             "vulkan: pipeline cache: loaded %zu bytes from disk", size);
    free(data);
  } else {
    kiln_log(KILN_LOG_DEBUG, "vulkan: pipeline cache: starting empty: %s",
             why);
  }
  return KILN_OK;
}

void kiln_vulkan_pipeline_cache_save(kiln_vulkan_context *vc) {
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
    r = vc->vk.vkGetPipelineCacheData(vc->device, vc->pipeline_cache.handle,
                                      &size, NULL);
    if (r != VK_SUCCESS || size == 0) break;
    if (!(data = malloc(size))) break;
    r = vc->vk.vkGetPipelineCacheData(vc->device, vc->pipeline_cache.handle,
                                      &size, data);
  }
  if (r != VK_SUCCESS || !data || size == 0) {
    kiln_log(KILN_LOG_DEBUG, "vulkan: pipeline cache: not saved: %s",
             r != VK_SUCCESS ? kiln_vulkan_result_name(r) : "no data");
    free(data);
    return;
  }
  kiln_hash now;
  hash_of(data, size, &now);
  if (size == vc->pipeline_cache.seed_size &&
      memcmp(now.bytes, vc->pipeline_cache.seed.bytes, sizeof now.bytes) == 0) {
    kiln_log(KILN_LOG_DEBUG, "vulkan: pipeline cache: unchanged");
  } else {
    kiln_hash key;
    pipeline_cache_key(vc->phys, &key);
    kiln_cache_store("pipeline", &key, data, size);
    kiln_log(KILN_LOG_DEBUG, "vulkan: pipeline cache: saved %zu bytes", size);
  }
  free(data);
}