/* Probing the HIP runtime, device properties from attribute and name
 * queries (hipDeviceProp_t's layout changed between ROCm releases, so kiln
 * reads nothing from it by offset), and the scope in which a context's
 * device is the thread's current one (hip.h says why). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/hip/hip.h"

static size_t device_total;

kiln_status kiln_hip_probe(char *reason, size_t reason_size) {
  const char *library;
  kiln_status st = kiln_hip_load(reason, reason_size, &library);
  if (st != KILN_OK) return st;

  /* HIP numbers its versions major * 10^7 + minor * 10^5 + patch; HIP on
   * NVIDIA reports CUDA's versions instead, which are smaller. Before 5.0
   * the attribute numbering differed from symbols.h's. */
  int version = 0;
  if (kiln_hip_api.hipRuntimeGetVersion(&version) == hipSuccess &&
      version >= 10000000 && version < 50000000) {
    snprintf(reason, reason_size,
             "%s is HIP %d.%d; kiln needs HIP 5.0 (ROCm 5.0) or newer",
             library, version / 10000000, version / 100000 % 100);
    return KILN_ERROR_UNAVAILABLE;
  }

  /* ROCm 5 answers hipInit with hipErrorInvalidDevice when there is no GPU
   * and only hipGetDeviceCount says hipErrorNoDevice, so ask both before
   * deciding which failure to report. */
  hipError_t init = kiln_hip_api.hipInit(0);
  int count = 0;
  hipError_t counted = kiln_hip_api.hipGetDeviceCount(&count);
  char description[256];
  if (init == hipErrorNoDevice || counted == hipErrorNoDevice ||
      (counted == hipSuccess && count <= 0)) {
    kiln_hip_describe(hipErrorNoDevice, description, sizeof description);
    snprintf(reason, reason_size, "%s: %s finds no GPU it can use",
             description, library);
    return KILN_ERROR_UNAVAILABLE;
  }
  if (init != hipSuccess || counted != hipSuccess) {
    kiln_hip_describe(init != hipSuccess ? init : counted, description,
                      sizeof description);
    snprintf(reason, reason_size, "%s failed in %s: %s",
             init != hipSuccess ? "hipInit" : "hipGetDeviceCount", library,
             description);
    return KILN_ERROR_UNAVAILABLE;
  }
  device_total = (size_t)count;
  return KILN_OK;
}

size_t kiln_hip_device_count(void) { return device_total; }

static kiln_status attribute(int device, hipDeviceAttribute_t attr,
                             const char *name, int *out) {
  hipError_t err = kiln_hip_api.hipDeviceGetAttribute(out, attr, device);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipDeviceGetAttribute(%s) of device %d", name,
                          device);
  return KILN_OK;
}

#define KILN_HIP_ATTRIBUTE(device, attr, out) \
  attribute((device), attr, #attr, (out))

/* Copies the gfx architecture name found in `props` into out, without its
 * feature suffix ("gfx90a:sramecc+:xnack-" gives "gfx90a"). The properties
 * begin with the 256-byte device name in every layout; gcnArchName comes
 * later at an offset that moved between releases, so it is found by what
 * it holds instead. */
static bool find_gfx_name(const unsigned char *props, size_t size, char *out,
                          size_t out_size) {
  for (size_t i = 256; i + 4 <= size; i++) {
    if (memcmp(props + i, "gfx", 3) != 0) continue;
    unsigned char c = props[i + 3];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'))) continue;
    size_t n = 0;
    while (i + n < size && n + 1 < out_size) {
      c = props[i + n];
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'))) break;
      out[n++] = (char)c;
    }
    out[n] = '\0';
    return true;
  }
  return false;
}

/* Larger than hipDeviceProp_t has ever been (792 bytes in ROCm 5.2, about
 * 1.5 KiB in ROCm 6's R0600 layout): the runtime writes its own size. */
#define KILN_HIP_PROPS_BYTES 16384

static kiln_status architecture(int device, char *out, size_t out_size) {
  if (kiln_hip_api.hipGetDeviceProperties) {
    unsigned char *props = calloc(1, KILN_HIP_PROPS_BYTES);
    if (!props)
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                            "hip: no memory to query device %d", device);
    hipError_t err = kiln_hip_api.hipGetDeviceProperties(
        (hipDeviceProp_t *)(void *)props, device);
    bool found = err == hipSuccess &&
                 find_gfx_name(props, KILN_HIP_PROPS_BYTES, out, out_size);
    free(props);
    if (found) return KILN_OK;
  }
  /* Only HIP on NVIDIA has no gfx name; its compute capability is then the
   * CUDA one. */
  int major, minor;
  kiln_status st;
  if ((st = KILN_HIP_ATTRIBUTE(device, hipDeviceAttributeComputeCapabilityMajor,
                               &major)) != KILN_OK ||
      (st = KILN_HIP_ATTRIBUTE(device, hipDeviceAttributeComputeCapabilityMinor,
                               &minor)) != KILN_OK)
    return st;
  snprintf(out, out_size, "sm_%d%d", major, minor);
  return KILN_OK;
}

/* "5.2" or "5.2.21153" from HIP's encoding, "12.8" from CUDA's (HIP on
 * NVIDIA reports those). */
static void format_version(int v, bool with_patch, char *out, size_t size) {
  if (v >= 10000000) {
    if (with_patch)
      snprintf(out, size, "%d.%d.%d", v / 10000000, v / 100000 % 100,
               v % 100000);
    else
      snprintf(out, size, "%d.%d", v / 10000000, v / 100000 % 100);
  } else if (v > 0) {
    snprintf(out, size, "%d.%d", v / 1000, v % 1000 / 10);
  } else {
    kiln_strlcpy(out, "unknown", size);
  }
}

static uint32_t positive(int v) { return v > 0 ? (uint32_t)v : 0; }

kiln_status kiln_hip_device_properties(size_t index,
                                       kiln_device_properties *out) {
  int device = (int)index;
  hipDevice_t handle;
  hipError_t err = kiln_hip_api.hipDeviceGet(&handle, device);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipDeviceGet");
  err = kiln_hip_api.hipDeviceGetName(out->name, (int)sizeof out->name,
                                      handle);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipDeviceGetName");
  out->name[sizeof out->name - 1] = '\0';
  size_t memory = 0;
  err = kiln_hip_api.hipDeviceTotalMem(&memory, handle);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipDeviceTotalMem");
  out->memory_bytes = memory;

  int integrated, units, threads, block[3], grid[3], shared, warp;
  kiln_status st;
  if ((st = KILN_HIP_ATTRIBUTE(device, hipDeviceAttributeIntegrated,
                               &integrated)) != KILN_OK ||
      (st = KILN_HIP_ATTRIBUTE(device, hipDeviceAttributeMultiprocessorCount,
                               &units)) != KILN_OK ||
      (st = KILN_HIP_ATTRIBUTE(device, hipDeviceAttributeMaxThreadsPerBlock,
                               &threads)) != KILN_OK ||
      (st = KILN_HIP_ATTRIBUTE(device, hipDeviceAttributeMaxBlockDimX,
                               &block[0])) != KILN_OK ||
      (st = KILN_HIP_ATTRIBUTE(device, hipDeviceAttributeMaxBlockDimY,
                               &block[1])) != KILN_OK ||
      (st = KILN_HIP_ATTRIBUTE(device, hipDeviceAttributeMaxBlockDimZ,
                               &block[2])) != KILN_OK ||
      (st = KILN_HIP_ATTRIBUTE(device, hipDeviceAttributeMaxGridDimX,
                               &grid[0])) != KILN_OK ||
      (st = KILN_HIP_ATTRIBUTE(device, hipDeviceAttributeMaxGridDimY,
                               &grid[1])) != KILN_OK ||
      (st = KILN_HIP_ATTRIBUTE(device, hipDeviceAttributeMaxGridDimZ,
                               &grid[2])) != KILN_OK ||
      (st = KILN_HIP_ATTRIBUTE(device, hipDeviceAttributeMaxSharedMemoryPerBlock,
                               &shared)) != KILN_OK ||
      (st = KILN_HIP_ATTRIBUTE(device, hipDeviceAttributeWarpSize, &warp)) !=
          KILN_OK)
    return st;
  out->type = integrated ? KILN_DEVICE_TYPE_INTEGRATED_GPU
                         : KILN_DEVICE_TYPE_DISCRETE_GPU;
  out->compute_units = positive(units);
  out->max_threads_per_block = positive(threads);
  for (int d = 0; d < 3; d++) {
    out->max_block_size[d] = positive(block[d]);
    out->max_grid_size[d] = positive(grid[d]);
  }
  out->max_shared_memory_per_block = positive(shared);
  out->max_shared_memory_per_block_optin = positive(shared);
  out->subgroup_size = positive(warp);
  out->max_kernel_argument_bytes = KILN_MAX_ARG_BYTES;

  kiln_strlcpy(out->vendor, "AMD", sizeof out->vendor);
  out->vendor_id = 0x1002;
  /* HIP has no PCI device id query (hipDeviceAttributePciDeviceId is the
   * slot number on the bus). */
  out->device_id = 0;
  if ((st = architecture(device, out->architecture,
                         sizeof out->architecture)) != KILN_OK)
    return st;
  /* An AMD GPU gives a block all of its LDS without opting in (and
   * hipFuncSetAttribute takes no module function there), so only HIP on
   * NVIDIA has a larger limit to opt in to. */
  int optin = 0;
  if (strncmp(out->architecture, "gfx", 3) != 0 &&
      kiln_hip_api.hipDeviceGetAttribute(
          &optin, hipDeviceAttributeSharedMemPerBlockOptin, device) ==
          hipSuccess &&
      optin > shared)
    out->max_shared_memory_per_block_optin = (size_t)optin;

  /* "0000:3B:00.0" from HIP on NVIDIA (the CUDA runtime's upper case),
   * lower case from ROCm: kiln gives lspci's lower case. A runtime that
   * cannot tell leaves it "". */
  char bus[sizeof out->pci_bus_id] = "";
  if (kiln_hip_api.hipDeviceGetPCIBusId(bus, (int)sizeof bus, device) ==
      hipSuccess) {
    bus[sizeof bus - 1] = '\0';
    for (char *c = bus; *c; c++)
      if (*c >= 'A' && *c <= 'F') *c = (char)(*c - 'A' + 'a');
    kiln_strlcpy(out->pci_bus_id, bus, sizeof out->pci_bus_id);
  }

  hipUUID uuid;
  if (kiln_hip_api.hipDeviceGetUuid &&
      kiln_hip_api.hipDeviceGetUuid(&uuid, handle) == hipSuccess)
    memcpy(out->uuid, uuid.bytes, sizeof out->uuid);

  int runtime = 0, driver = 0;
  if (kiln_hip_api.hipRuntimeGetVersion(&runtime) != hipSuccess) runtime = 0;
  if (kiln_hip_api.hipDriverGetVersion(&driver) != hipSuccess) driver = 0;
  format_version(runtime, false, out->api_version, sizeof out->api_version);
  format_version(driver, true, out->driver_version,
                 sizeof out->driver_version);
  kiln_features_from_architecture(out);
  return KILN_OK;
}

/* Makes ctx's device current; on failure *out_call names the call. */
static hipError_t enter(const kiln_context *ctx, kiln_hip_device_scope *scope,
                        const char **out_call) {
  int device = kiln_hip_context_cast_const(ctx)->device;
  scope->switched = false;
  *out_call = "hipGetDevice";
  hipError_t err = kiln_hip_api.hipGetDevice(&scope->previous);
  if (err != hipSuccess || scope->previous == device) return err;
  *out_call = "hipSetDevice";
  err = kiln_hip_api.hipSetDevice(device);
  scope->switched = err == hipSuccess;
  return err;
}

kiln_status kiln_hip_device_enter(const kiln_context *ctx,
                                  kiln_hip_device_scope *scope) {
  const char *call = NULL;
  hipError_t err = enter(ctx, scope, &call);
  if (err != hipSuccess) return kiln_hip_error(err, "%s", call);
  return KILN_OK;
}

bool kiln_hip_device_enter_for_deinit(const kiln_context *ctx,
                                      kiln_hip_device_scope *scope,
                                      const char *what) {
  const char *call = NULL;
  hipError_t err = enter(ctx, scope, &call);
  if (err != hipSuccess) kiln_hip_warn(err, "%s before %s", call, what);
  return err == hipSuccess;
}

void kiln_hip_device_leave(const kiln_hip_device_scope *scope) {
  if (!scope->switched) return;
  hipError_t err = kiln_hip_api.hipSetDevice(scope->previous);
  if (err != hipSuccess)
    kiln_hip_warn(err, "hipSetDevice back to the thread's device");
}
