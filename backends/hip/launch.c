/* Kernel launches: the packed argument list handed over as kernelParams,
 * and dynamic shared memory beyond the device's default. */
#include <pthread.h>
#include <stdio.h>

#include "backends/hip/hip.h"

/* Serializes raising a kernel's shared memory limit, so that two threads
 * raising it at once cannot leave it at the smaller of their values while
 * the kernel records the larger. Taken only when a launch needs more than
 * any launch of that kernel did before. */
static pthread_mutex_t raise_lock = PTHREAD_MUTEX_INITIALIZER;

static kiln_status allow_shared(kiln_hip_kernel *hk, size_t bytes) {
  kiln_status st = KILN_OK;
  pthread_mutex_lock(&raise_lock);
  if (bytes > atomic_load(&hk->shared_limit)) {
    hipError_t err = kiln_hip_api.hipFuncSetAttribute(
        (const void *)hk->function,
        hipFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (err == hipSuccess) {
      atomic_store(&hk->shared_limit, bytes);
    } else {
      char what[192];
      snprintf(what, sizeof what,
               "allowing kernel '%.64s' %zu bytes of dynamic shared memory "
               "(hipFuncSetAttribute)",
               hk->base.name, bytes);
      st = kiln_hip_error(err, KILN_ERROR_LAUNCH_FAILED, what);
    }
  }
  pthread_mutex_unlock(&raise_lock);
  return st;
}

kiln_status kiln_hip_launch(kiln_stream *s, kiln_kernel *k,
                            const kiln_launch_config *config,
                            const kiln_packed_args *args) {
  kiln_hip_kernel *hk = kiln_hip_kernel_cast(k);
  if (config->shared_memory_bytes > atomic_load(&hk->shared_limit)) {
    kiln_status st = allow_shared(hk, config->shared_memory_bytes);
    if (st != KILN_OK) return st;
  }
  /* The one argument ABI: parameter i is the bytes at its packed offset. */
  void *params[KILN_MAX_KERNEL_ARGS];
  for (size_t i = 0; i < args->count; i++)
    params[i] = (void *)(uintptr_t)(args->data + args->offsets[i]);
  hipError_t err = kiln_hip_api.hipModuleLaunchKernel(
      hk->function, config->grid.x, config->grid.y, config->grid.z,
      config->block.x, config->block.y, config->block.z,
      (unsigned int)config->shared_memory_bytes, kiln_hip_stream_handle(s),
      args->count ? params : NULL, NULL);
  if (err != hipSuccess) {
    char what[128];
    snprintf(what, sizeof what,
             "launching kernel '%.64s' (hipModuleLaunchKernel)", k->name);
    return kiln_hip_error(err, KILN_ERROR_LAUNCH_FAILED, what);
  }
  return KILN_OK;
}
