/* The shim's memory pools and stream-ordered allocation: each HIP call as
 * the CUDA driver's pool call that does the same. Pools are CUDA's handles
 * handed out as HIP's; of their properties and attributes the shim takes
 * what kiln's HIP backend passes (backends/hip/pool.c), and answers
 * hipErrorInvalidValue for the rest rather than guess at a mapping. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "tests/hip/shim/shim.h"

#define SHIM_DEVPTR(p) ((CUdeviceptr)(uintptr_t)(p))

hipError_t hipMemPoolCreate(hipMemPool_t *pool, const hipMemPoolProps *props) {
  if (!pool || !props || props->allocType != hipMemAllocationTypePinned ||
      props->handleTypes != hipMemHandleTypeNone ||
      props->location.type != hipMemLocationTypeDevice)
    return hipErrorInvalidValue;
  CUdevice device;
  hipError_t err = shim_device(props->location.id, &device);
  if (err == hipSuccess) err = shim_enter();
  if (err != hipSuccess) return err;
  CUmemPoolProps cu;
  memset(&cu, 0, sizeof cu);
  cu.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  cu.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  cu.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  cu.location.id = device;
  CUmemoryPool p;
  err = shim_error(shim_cu.cuMemPoolCreate(&p, &cu), "cuMemPoolCreate");
  if (err == hipSuccess) *pool = SHIM_HANDLE(hipMemPool_t, p);
  return err;
}

hipError_t hipMemPoolDestroy(hipMemPool_t pool) {
  if (!pool) return hipErrorInvalidValue;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuMemPoolDestroy(SHIM_HANDLE(CUmemoryPool, pool)),
                    "cuMemPoolDestroy");
}

hipError_t hipMallocFromPoolAsync(void **ptr, size_t size, hipMemPool_t pool,
                                  hipStream_t stream) {
  if (!ptr || !pool) return hipErrorInvalidValue;
  *ptr = NULL;
  hipError_t err = shim_enter_stream(stream);
  if (err != hipSuccess || size == 0) return err;
  CUdeviceptr d;
  err = shim_error(
      shim_cu.cuMemAllocFromPoolAsync(&d, size, SHIM_HANDLE(CUmemoryPool, pool),
                                      SHIM_HANDLE(CUstream, stream)),
      "cuMemAllocFromPoolAsync");
  if (err == hipSuccess) *ptr = (void *)(uintptr_t)d;
  return err;
}

/* Unlike hipFree, in stream order: the host does not wait. */
hipError_t hipFreeAsync(void *ptr, hipStream_t stream) {
  if (!ptr) return shim_ready();
  hipError_t err = shim_enter_stream(stream);
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuMemFreeAsync(SHIM_DEVPTR(ptr),
                                           SHIM_HANDLE(CUstream, stream)),
                    "cuMemFreeAsync");
}

hipError_t hipMemPoolTrimTo(hipMemPool_t pool, size_t keep_bytes) {
  if (!pool) return hipErrorInvalidValue;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  return shim_error(
      shim_cu.cuMemPoolTrimTo(SHIM_HANDLE(CUmemoryPool, pool), keep_bytes),
      "cuMemPoolTrimTo");
}

/* The attributes kiln reads or sets: the reuse rule an int, the others a
 * 64-bit count of bytes, in both APIs. */
static bool to_cuda_attr(hipMemPoolAttr attr, CUmemPool_attribute *out) {
  switch (attr) {
  case hipMemPoolReuseAllowInternalDependencies:
    *out = CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
    return true;
  case hipMemPoolAttrReleaseThreshold:
    *out = CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
    return true;
  case hipMemPoolAttrReservedMemCurrent:
    *out = CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT;
    return true;
  case hipMemPoolAttrUsedMemCurrent:
    *out = CU_MEMPOOL_ATTR_USED_MEM_CURRENT;
    return true;
  }
  return false;
}

hipError_t hipMemPoolSetAttribute(hipMemPool_t pool, hipMemPoolAttr attr,
                                  void *value) {
  /* The counts of memory in use are the runtime's, not the program's. */
  CUmemPool_attribute a;
  if (!pool || !value || !to_cuda_attr(attr, &a) ||
      attr == hipMemPoolAttrReservedMemCurrent ||
      attr == hipMemPoolAttrUsedMemCurrent)
    return hipErrorInvalidValue;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuMemPoolSetAttribute(
                        SHIM_HANDLE(CUmemoryPool, pool), a, value),
                    "cuMemPoolSetAttribute");
}

hipError_t hipMemPoolGetAttribute(hipMemPool_t pool, hipMemPoolAttr attr,
                                  void *value) {
  CUmemPool_attribute a;
  if (!pool || !value || !to_cuda_attr(attr, &a)) return hipErrorInvalidValue;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuMemPoolGetAttribute(
                        SHIM_HANDLE(CUmemoryPool, pool), a, value),
                    "cuMemPoolGetAttribute");
}
