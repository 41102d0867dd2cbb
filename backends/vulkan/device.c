/* The physical devices kiln can use, with their properties, found on the
 * process-wide VkInstance (instance.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vulkan.h"

static struct {
  kiln_vulkan_physical *devices;
  size_t count;
} g;

const kiln_vulkan_physical *kiln_vulkan_physical_device(size_t index) {
  return &g.devices[index];
}

size_t kiln_vulkan_device_count(void) { return g.count; }

kiln_status kiln_vulkan_device_properties(size_t index,
                                          kiln_device_properties *out) {
  kiln_backend backend = out->backend;
  *out = g.devices[index].properties;
  out->backend = backend;
  return KILN_OK;
}

static const char *vendor_name(uint32_t id, char *buf, size_t size) {
  switch (id) {
  case 0x10DE: return "NVIDIA";
  case 0x1002: return "AMD";
  case 0x8086: return "Intel";
  case 0x10005: return "Mesa";
  case 0x13B5: return "ARM";
  case 0x5143: return "Qualcomm";
  default: snprintf(buf, size, "0x%04X", id); return buf;
  }
}

static kiln_device_type device_type(VkPhysicalDeviceType type) {
  switch (type) {
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    return KILN_DEVICE_TYPE_DISCRETE_GPU;
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    return KILN_DEVICE_TYPE_INTEGRATED_GPU;
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return KILN_DEVICE_TYPE_VIRTUAL_GPU;
  case VK_PHYSICAL_DEVICE_TYPE_CPU: return KILN_DEVICE_TYPE_CPU;
  default: return KILN_DEVICE_TYPE_OTHER;
  }
}

/* Picks the compute family that lets streams overlap best: timestamps
 * first (events time work), then several queues, then compute-only (async
 * compute on AMD and NVIDIA). UINT32_MAX when none can compute. */
static uint32_t pick_queue_family(VkPhysicalDevice dev, uint32_t *queues,
                                  uint32_t *timestamp_bits) {
  uint32_t n = 0;
  kiln_vulkan_lib.vkGetPhysicalDeviceQueueFamilyProperties(dev, &n, NULL);
  VkQueueFamilyProperties *fams = calloc(n ? n : 1, sizeof *fams);
  if (!fams) return UINT32_MAX;
  kiln_vulkan_lib.vkGetPhysicalDeviceQueueFamilyProperties(dev, &n, fams);
  uint32_t best = UINT32_MAX;
  int best_score = -1;
  for (uint32_t i = 0; i < n; i++) {
    if (!(fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) || fams[i].queueCount == 0)
      continue;
    int score = (fams[i].timestampValidBits > 0 ? 4 : 0) +
                (fams[i].queueCount > 1 ? 2 : 0) +
                (fams[i].queueFlags & VK_QUEUE_GRAPHICS_BIT ? 0 : 1);
    if (score > best_score) {
      best = i;
      best_score = score;
    }
  }
  if (best != UINT32_MAX) {
    *queues = fams[best].queueCount;
    *timestamp_bits = fams[best].timestampValidBits;
  }
  free(fams);
  return best;
}

/* A family that only copies: a DMA engine that runs copies beside kernels
 * (NVIDIA's and AMD's drivers list one), not one that also decodes video
 * or computes. UINT32_MAX when there is none. */
static uint32_t pick_transfer_family(VkPhysicalDevice dev, uint32_t *queues) {
  uint32_t n = 0;
  kiln_vulkan_lib.vkGetPhysicalDeviceQueueFamilyProperties(dev, &n, NULL);
  VkQueueFamilyProperties *fams = calloc(n ? n : 1, sizeof *fams);
  if (!fams) return UINT32_MAX;
  kiln_vulkan_lib.vkGetPhysicalDeviceQueueFamilyProperties(dev, &n, fams);
  const VkQueueFlags only = VK_QUEUE_TRANSFER_BIT |
                            VK_QUEUE_SPARSE_BINDING_BIT |
                            VK_QUEUE_PROTECTED_BIT;
  uint32_t found = UINT32_MAX;
  for (uint32_t i = 0; i < n && found == UINT32_MAX; i++)
    if ((fams[i].queueFlags & VK_QUEUE_TRANSFER_BIT) &&
        !(fams[i].queueFlags & ~only) && fams[i].queueCount > 0) {
      found = i;
      *queues = fams[i].queueCount;
    }
  free(fams);
  return found;
}

/* Whether buffers of device memory can go out and in as opaque fds
 * (VK_KHR_external_memory_fd listed is not enough: the driver says per
 * usage); *dedicated when only as dedicated allocations. */
static bool memory_fd_usable(VkPhysicalDevice dev, bool *dedicated) {
  PFN_vkVoidFunction fn = kiln_vulkan_lib.vkGetInstanceProcAddr(
      kiln_vulkan_instance(), "vkGetPhysicalDeviceExternalBufferProperties");
  PFN_vkGetPhysicalDeviceExternalBufferProperties query;
  memcpy(&query, &fn, sizeof query);
  if (!query) return false;
  VkPhysicalDeviceExternalBufferInfo info = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO,
      .usage = KILN_VULKAN_SHARED_USAGE,
      .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
  };
  VkExternalBufferProperties props = {
      .sType = VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES};
  query(dev, &info, &props);
  const VkExternalMemoryFeatureFlags f =
      props.externalMemoryProperties.externalMemoryFeatures;
  *dedicated = f & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT;
  return (f & VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT) &&
         (f & VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT);
}

static void append(char *buf, size_t size, const char *text) {
  size_t len = strlen(buf);
  if (len < size) snprintf(buf + len, size - len, "%s", text);
}

/* Checks one device; false with why appended to `skipped` when kiln cannot
 * use it. */
static bool inspect_device(VkPhysicalDevice dev, kiln_vulkan_physical *out,
                           char *skipped, size_t skipped_size) {
  VkPhysicalDeviceProperties props;
  kiln_vulkan_lib.vkGetPhysicalDeviceProperties(dev, &props);
  char line[512];
  if (props.apiVersion < VK_API_VERSION_1_2) {
    snprintf(line, sizeof line, "%s%s: Vulkan %u.%u, kiln needs 1.2",
             skipped[0] ? "; " : "", props.deviceName,
             VK_API_VERSION_MAJOR(props.apiVersion),
             VK_API_VERSION_MINOR(props.apiVersion));
    append(skipped, skipped_size, line);
    return false;
  }

  uint32_t ext_count = 0;
  VkExtensionProperties *exts = NULL;
  if (kiln_vulkan_lib.vkEnumerateDeviceExtensionProperties(
          dev, NULL, &ext_count, NULL) == VK_SUCCESS &&
      ext_count > 0) {
    exts = calloc(ext_count, sizeof *exts);
    if (!exts || kiln_vulkan_lib.vkEnumerateDeviceExtensionProperties(
                     dev, NULL, &ext_count, exts) < 0)
      ext_count = 0;
  }
  bool nv_sm = kiln_vulkan_has_extension(
      exts, ext_count, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
  bool amd_cores = kiln_vulkan_has_extension(
      exts, ext_count, VK_AMD_SHADER_CORE_PROPERTIES_2_EXTENSION_NAME);
  bool portability =
      kiln_vulkan_has_extension(exts, ext_count, "VK_KHR_portability_subset");
  bool pci = kiln_vulkan_has_extension(exts, ext_count,
                                       VK_EXT_PCI_BUS_INFO_EXTENSION_NAME);
  bool budget = kiln_vulkan_has_extension(exts, ext_count,
                                          VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  bool host_import = kiln_vulkan_has_extension(
      exts, ext_count, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
  bool memory_fd = kiln_vulkan_has_extension(
      exts, ext_count, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME);
  bool non_semantic = kiln_vulkan_has_extension(
      exts, ext_count, VK_KHR_SHADER_NON_SEMANTIC_INFO_EXTENSION_NAME);
  kiln_vulkan_optional optional;
  kiln_vulkan_optional_probe(dev, exts, ext_count,
                             kiln_vulkan_validation_version(), &optional);
  free(exts);

  VkPhysicalDeviceVulkan12Features f12 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features f11 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
      .pNext = &f12};
  VkPhysicalDeviceFeatures2 f = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11};
  kiln_vulkan_lib.vkGetPhysicalDeviceFeatures2(dev, &f);
  const char *missing[3];
  size_t missing_count = 0;
  if (!f12.bufferDeviceAddress)
    missing[missing_count++] = "bufferDeviceAddress";
  if (!f12.timelineSemaphore) missing[missing_count++] = "timelineSemaphore";
  if (!f.features.shaderInt64) missing[missing_count++] = "shaderInt64";
  uint32_t queues = 0, timestamp_bits = 0;
  uint32_t family = pick_queue_family(dev, &queues, &timestamp_bits);
  if (missing_count > 0 || family == UINT32_MAX) {
    snprintf(line, sizeof line, "%s%s: lacks", skipped[0] ? "; " : "",
             props.deviceName);
    for (size_t i = 0; i < missing_count; i++) {
      append(line, sizeof line, i ? ", " : " ");
      append(line, sizeof line, missing[i]);
    }
    if (family == UINT32_MAX)
      append(line, sizeof line,
             missing_count ? ", a compute queue" : " a compute queue");
    append(skipped, skipped_size, line);
    return false;
  }

  VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm = {
      .sType =
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
  VkPhysicalDeviceShaderCoreProperties2AMD cores = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_2_AMD};
  VkPhysicalDeviceExternalMemoryHostPropertiesEXT host = {
      .sType =
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
  VkPhysicalDeviceVulkan12Properties p12 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES};
  VkPhysicalDeviceVulkan11Properties p11 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES,
      .pNext = &p12};
  if (nv_sm) {
    sm.pNext = p11.pNext;
    p11.pNext = &sm;
  }
  if (host_import) {
    host.pNext = p11.pNext;
    p11.pNext = &host;
  }
  if (amd_cores) {
    cores.pNext = p11.pNext;
    p11.pNext = &cores;
  }
  VkPhysicalDevicePCIBusInfoPropertiesEXT bus = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT};
  if (pci) {
    bus.pNext = p11.pNext;
    p11.pNext = &bus;
  }
  VkPhysicalDeviceProperties2 p = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &p11};
  kiln_vulkan_lib.vkGetPhysicalDeviceProperties2(dev, &p);

  memset(out, 0, sizeof *out);
  out->handle = dev;
  out->api_version = props.apiVersion;
  out->limits = props.limits;
  out->type = props.deviceType;
  out->driver_version = props.driverVersion;
  memcpy(out->pipeline_cache_uuid, props.pipelineCacheUUID, VK_UUID_SIZE);
  out->max_allocation_bytes = p11.maxMemoryAllocationSize;
  kiln_vulkan_lib.vkGetPhysicalDeviceMemoryProperties(dev, &out->memory);
  out->queue_family = family;
  out->queue_count = queues;
  out->transfer_family =
      pick_transfer_family(dev, &out->transfer_queue_count);
  out->timestamp_valid_bits = timestamp_bits;
  out->portability_subset = portability;
  out->memory_budget = budget;
  out->host_import = host_import;
  out->non_semantic_info = non_semantic;
  out->host_import_align = host.minImportedHostPointerAlignment;
  out->memory_fd =
      memory_fd && memory_fd_usable(dev, &out->memory_fd_dedicated);
  memcpy(out->driver_uuid, p11.driverUUID, VK_UUID_SIZE);
  out->optional = optional;
  out->subgroup_operations =
      (p11.subgroupSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT)
          ? p11.subgroupSupportedOperations
          : 0;
  out->features = f;
  out->features.pNext = NULL;
  out->features11 = f11;
  out->features11.pNext = NULL;
  out->features12 = f12;
  out->features12.pNext = NULL;

  kiln_device_properties *kp = &out->properties;
  kiln_strlcpy(kp->name, props.deviceName, sizeof kp->name);
  char hex[16];
  kiln_strlcpy(kp->vendor, vendor_name(props.vendorID, hex, sizeof hex),
               sizeof kp->vendor);
  kp->vendor_id = props.vendorID;
  kp->device_id = props.deviceID;
  kp->type = device_type(props.deviceType);
  kiln_strlcpy(kp->architecture, p12.driverName[0] ? p12.driverName : "unknown",
               sizeof kp->architecture);
  for (uint32_t i = 0; i < out->memory.memoryHeapCount; i++) {
    const VkMemoryHeap *heap = &out->memory.memoryHeaps[i];
    if ((heap->flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
        heap->size > kp->memory_bytes)
      kp->memory_bytes = heap->size;
  }
  if (nv_sm)
    kp->compute_units = sm.shaderSMCount;
  else if (amd_cores)
    kp->compute_units = cores.activeComputeUnitCount;
  const VkPhysicalDeviceLimits *lim = &props.limits;
  kp->max_threads_per_block = lim->maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; i++) {
    kp->max_block_size[i] = lim->maxComputeWorkGroupSize[i];
    kp->max_grid_size[i] = lim->maxComputeWorkGroupCount[i];
  }
  kp->max_shared_memory_per_block = lim->maxComputeSharedMemorySize;
  kp->max_shared_memory_per_block_optin = lim->maxComputeSharedMemorySize;
  kp->subgroup_size = p11.subgroupSize;
  /* Two levels, one queue of the family set apart for urgent streams
   * (context.c), where the family has a queue to spare. */
  kp->max_stream_priority = queues >= 2 ? 1 : 0;
  kp->stream_queues =
      queues < KILN_VULKAN_MAX_QUEUES ? queues : KILN_VULKAN_MAX_QUEUES;
  kp->max_kernel_argument_bytes = lim->maxPushConstantsSize < KILN_MAX_ARG_BYTES
                                      ? lim->maxPushConstantsSize
                                      : KILN_MAX_ARG_BYTES;
  snprintf(kp->api_version, sizeof kp->api_version, "%u.%u.%u",
           VK_API_VERSION_MAJOR(props.apiVersion),
           VK_API_VERSION_MINOR(props.apiVersion),
           VK_API_VERSION_PATCH(props.apiVersion));
  if (p12.driverInfo[0])
    kiln_strlcpy(kp->driver_version, p12.driverInfo, sizeof kp->driver_version);
  else if (p12.driverName[0])
    kiln_strlcpy(kp->driver_version, p12.driverName, sizeof kp->driver_version);
  else
    snprintf(kp->driver_version, sizeof kp->driver_version, "%u",
             props.driverVersion);
  memcpy(kp->uuid, p11.deviceUUID, sizeof kp->uuid);
  if (pci)
    snprintf(kp->pci_bus_id, sizeof kp->pci_bus_id, "%04x:%02x:%02x.%x",
             bus.pciDomain & 0xffffffu, bus.pciBus & 0xffu,
             bus.pciDevice & 0x1fu, bus.pciFunction & 0x7u);
  kiln_vulkan_optional_report(kiln_vulkan_instance(), out, kp);
  return true;
}

static kiln_status find_devices(char *reason, size_t reason_size) {
  uint32_t n = 0;
  VkResult r = kiln_vulkan_lib.vkEnumeratePhysicalDevices(
      kiln_vulkan_instance(), &n, NULL);
  if (r != VK_SUCCESS || n == 0) {
    snprintf(reason, reason_size,
             "no Vulkan device (vkEnumeratePhysicalDevices: %s, %u devices)",
             kiln_vulkan_result_name(r), n);
    return KILN_ERROR_UNAVAILABLE;
  }
  VkPhysicalDevice *handles = calloc(n, sizeof *handles);
  g.devices = calloc(n, sizeof *g.devices);
  if (!handles || !g.devices) {
    free(handles);
    snprintf(reason, reason_size, "out of host memory listing %u devices", n);
    return KILN_ERROR_UNAVAILABLE;
  }
  r = kiln_vulkan_lib.vkEnumeratePhysicalDevices(kiln_vulkan_instance(), &n,
                                                 handles);
  if (r < 0) {
    free(handles);
    snprintf(reason, reason_size, "vkEnumeratePhysicalDevices failed: %s",
             kiln_vulkan_result_name(r));
    return KILN_ERROR_UNAVAILABLE;
  }
  char skipped[1024] = "";
  for (uint32_t i = 0; i < n; i++)
    if (inspect_device(handles[i], &g.devices[g.count], skipped,
                       sizeof skipped))
      g.count++;
  free(handles);
  if (g.count == 0) {
    snprintf(reason, reason_size, "no usable Vulkan device: %s", skipped);
    return KILN_ERROR_UNAVAILABLE;
  }
  if (skipped[0])
    kiln_log(KILN_LOG_INFO, "Vulkan devices skipped: %s", skipped);
  return KILN_OK;
}

kiln_status kiln_vulkan_probe(char *reason, size_t reason_size) {
  if (kiln_vulkan_instance()) return KILN_OK;
  kiln_status st = kiln_vulkan_load_library(reason, reason_size);
  if (st != KILN_OK) return st;
  uint32_t version = VK_API_VERSION_1_0;
  if (kiln_vulkan_lib.vkEnumerateInstanceVersion)
    kiln_vulkan_lib.vkEnumerateInstanceVersion(&version);
  if (version < VK_API_VERSION_1_2) {
    snprintf(reason, reason_size,
             "the Vulkan loader supports Vulkan %u.%u; kiln needs 1.2",
             VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version));
    return KILN_ERROR_UNAVAILABLE;
  }
  st = kiln_vulkan_instance_create(version, reason, reason_size);
  if (st == KILN_OK) st = find_devices(reason, reason_size);
  if (st != KILN_OK) {
    free(g.devices);
    g.devices = NULL;
    g.count = 0;
    kiln_vulkan_instance_destroy();
  }
  return st;
}
