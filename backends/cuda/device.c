/* Probing the driver, and the devices' properties. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cuda/cuda.h"

#define KILN_PCI_VENDOR_NVIDIA 0x10deu

static size_t device_total;

kiln_status kiln_cuda_probe(char *reason, size_t reason_size) {
  kiln_status st = kiln_cuda_load(reason, reason_size);
  if (st != KILN_OK) return st;
  const int v = kiln_cuda_api.driver_version;
  char why[384];
  CUresult r = kiln_cuda_api.cuInit(0);
  if (r == CUDA_SUCCESS) {
    int count = 0;
    r = kiln_cuda_api.cuDeviceGetCount(&count);
    if (r == CUDA_SUCCESS && count <= 0) {
      snprintf(reason, reason_size, "the CUDA %d.%d driver sees no device",
               v / 1000, v % 1000 / 10);
      return KILN_ERROR_UNAVAILABLE;
    }
    device_total = (size_t)count;
  }
  if (r != CUDA_SUCCESS) {
    kiln_cuda_describe(r, why, sizeof why);
    snprintf(reason, reason_size, "the CUDA %d.%d driver cannot start: %s",
             v / 1000, v % 1000 / 10, why);
    return KILN_ERROR_UNAVAILABLE;
  }
  return KILN_OK;
}

size_t kiln_cuda_device_count(void) { return device_total; }

/* The PCI device id, which the driver API does not give: read from sysfs
 * at the device's PCI address; 0 where that is not readable. */
static uint32_t pci_device_id(int domain, int bus, int device) {
  char path[96];
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%04x:%02x:%02x.0/device",
           (unsigned)domain, (unsigned)bus, (unsigned)device);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[16];
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  return (uint32_t)strtoul(text, NULL, 16);
}

/* The device attributes kiln reports, in the order they are stored. */
enum {
  ATTR_CC_MAJOR,
  ATTR_CC_MINOR,
  ATTR_SMS,
  ATTR_THREADS,
  ATTR_BLOCK_X,
  ATTR_BLOCK_Y,
  ATTR_BLOCK_Z,
  ATTR_GRID_X,
  ATTR_GRID_Y,
  ATTR_GRID_Z,
  ATTR_SHARED,
  ATTR_SHARED_OPTIN,
  ATTR_WARP,
  ATTR_INTEGRATED,
  ATTR_PCI_DOMAIN,
  ATTR_PCI_BUS,
  ATTR_PCI_DEVICE,
  ATTR_COUNT
};

static const CUdevice_attribute attributes[ATTR_COUNT] = {
    [ATTR_CC_MAJOR] = CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
    [ATTR_CC_MINOR] = CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
    [ATTR_SMS] = CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    [ATTR_THREADS] = CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
    [ATTR_BLOCK_X] = CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
    [ATTR_BLOCK_Y] = CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
    [ATTR_BLOCK_Z] = CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z,
    [ATTR_GRID_X] = CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
    [ATTR_GRID_Y] = CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
    [ATTR_GRID_Z] = CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z,
    [ATTR_SHARED] = CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
    [ATTR_SHARED_OPTIN] = CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
    [ATTR_WARP] = CU_DEVICE_ATTRIBUTE_WARP_SIZE,
    [ATTR_INTEGRATED] = CU_DEVICE_ATTRIBUTE_INTEGRATED,
    [ATTR_PCI_DOMAIN] = CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID,
    [ATTR_PCI_BUS] = CU_DEVICE_ATTRIBUTE_PCI_BUS_ID,
    [ATTR_PCI_DEVICE] = CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID,
};

kiln_status kiln_cuda_device_properties(size_t index,
                                        kiln_device_properties *out) {
  CUdevice dev;
  CUresult r = kiln_cuda_api.cuDeviceGet(&dev, (int)index);
  if (r != CUDA_SUCCESS) return kiln_cuda_error(r, "cuDeviceGet(%zu)", index);
  int a[ATTR_COUNT];
  for (int i = 0; i < ATTR_COUNT; i++) {
    r = kiln_cuda_api.cuDeviceGetAttribute(&a[i], attributes[i], dev);
    if (r != CUDA_SUCCESS)
      return kiln_cuda_error(r, "cuDeviceGetAttribute(%d) of CUDA device %zu",
                             (int)attributes[i], index);
  }
  r = kiln_cuda_api.cuDeviceGetName(out->name, (int)sizeof out->name, dev);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuDeviceGetName of CUDA device %zu", index);
  size_t memory = 0;
  r = kiln_cuda_api.cuDeviceTotalMem(&memory, dev);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuDeviceTotalMem of CUDA device %zu", index);
  CUuuid uuid;
  r = kiln_cuda_api.cuDeviceGetUuid(&uuid, dev);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuDeviceGetUuid of CUDA device %zu", index);

  kiln_strlcpy(out->vendor, "NVIDIA", sizeof out->vendor);
  out->vendor_id = KILN_PCI_VENDOR_NVIDIA;
  out->device_id =
      pci_device_id(a[ATTR_PCI_DOMAIN], a[ATTR_PCI_BUS], a[ATTR_PCI_DEVICE]);
  out->type = a[ATTR_INTEGRATED] ? KILN_DEVICE_TYPE_INTEGRATED_GPU
                                 : KILN_DEVICE_TYPE_DISCRETE_GPU;
  snprintf(out->architecture, sizeof out->architecture, "sm_%d%d",
           a[ATTR_CC_MAJOR], a[ATTR_CC_MINOR]);
  out->memory_bytes = memory;
  out->compute_units = (uint32_t)a[ATTR_SMS];
  out->max_threads_per_block = (uint32_t)a[ATTR_THREADS];
  out->max_block_size[0] = (uint32_t)a[ATTR_BLOCK_X];
  out->max_block_size[1] = (uint32_t)a[ATTR_BLOCK_Y];
  out->max_block_size[2] = (uint32_t)a[ATTR_BLOCK_Z];
  out->max_grid_size[0] = (uint32_t)a[ATTR_GRID_X];
  out->max_grid_size[1] = (uint32_t)a[ATTR_GRID_Y];
  out->max_grid_size[2] = (uint32_t)a[ATTR_GRID_Z];
  out->max_shared_memory_per_block = (size_t)a[ATTR_SHARED];
  out->max_shared_memory_per_block_optin = (size_t)a[ATTR_SHARED_OPTIN];
  out->subgroup_size = (uint32_t)a[ATTR_WARP];
  out->max_kernel_argument_bytes = KILN_MAX_ARG_BYTES;
  int v = kiln_cuda_api.driver_version;
  snprintf(out->api_version, sizeof out->api_version, "%d.%d", v / 1000,
           v % 1000 / 10);
  snprintf(out->driver_version, sizeof out->driver_version, "%d.%d",
           v / 1000, v % 1000 / 10);
  memcpy(out->uuid, uuid.bytes, sizeof out->uuid);
  /* The driver names no function: a GPU is function 0 of its slot. */
  snprintf(out->pci_bus_id, sizeof out->pci_bus_id, "%04x:%02x:%02x.0",
           (unsigned)a[ATTR_PCI_DOMAIN] & 0xffffffu,
           (unsigned)a[ATTR_PCI_BUS] & 0xffu,
           (unsigned)a[ATTR_PCI_DEVICE] & 0x1fu);
  kiln_features_from_architecture(out);
  return KILN_OK;
}
