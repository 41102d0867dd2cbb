/* Kernel launches: the packed argument list handed over as kernelParams,
 * and dynamic shared memory beyond the device's default. */
#include <pthread.h>

#include "backends/hip/hip.h"

/* Raising a kernel's limit happens at most once per larger size it is
 * launched with, so a few locks, picked by the kernel's address, serve
 * every kernel: two kernels that share one merely take turns at raising. */
#define RAISE_LOCKS 8u
static pthread_mutex_t raise_locks[RAISE_LOCKS] = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
};

/* The dynamic shared memory opt-in, done as on CUDA (backends/cuda/
 * launch.c): hk->shared_limit is the most the kernel was allowed so far. A
 * launch beyond it raises the runtime's attribute to exactly what it asks
 * for, under the kernel's lock, and publishes the new limit only once the
 * runtime has it: two threads raising at once cannot leave the attribute
 * at the smaller value while the limit says the larger, and no launch
 * trusts a limit the runtime does not have yet. The core has checked the
 * request against the device's limit, so a refusal means the kernel's
 * static shared memory leaves too little: KILN_ERROR_OUT_OF_RANGE, as on
 * CUDA. Only HIP on NVIDIA gets here: an AMD GPU gives a block all of its
 * LDS without opting in. */
static kiln_status allow_shared(kiln_hip_kernel *hk, size_t bytes) {
  pthread_mutex_t *lock = &raise_locks[((uintptr_t)hk >> 6) % RAISE_LOCKS];
  pthread_mutex_lock(lock);
  kiln_status st = KILN_OK;
  if (bytes > atomic_load_explicit(&hk->shared_limit, memory_order_relaxed)) {
    hipError_t err = kiln_hip_api.hipFuncSetAttribute(
        (const void *)hk->function,
        hipFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (err == hipSuccess) {
      atomic_store_explicit(&hk->shared_limit, bytes, memory_order_release);
    } else {
      st = kiln_hip_error_as(err, KILN_ERROR_OUT_OF_RANGE,
                             "hipFuncSetAttribute raising the dynamic shared "
                             "memory limit of kernel '%.64s' to %zu bytes",
                             hk->base.name, bytes);
    }
  }
  pthread_mutex_unlock(lock);
  return st;
}

kiln_status kiln_hip_need_shared(kiln_hip_kernel *hk, size_t bytes) {
  if (bytes <= atomic_load_explicit(&hk->shared_limit, memory_order_acquire))
    return KILN_OK;
  return allow_shared(hk, bytes);
}

void kiln_hip_params_of(const kiln_packed_args *args, void **params) {
  for (size_t i = 0; i < args->count; i++)
    params[i] = (void *)(uintptr_t)(args->data + args->offsets[i]);
}

kiln_status kiln_hip_launch(kiln_stream *s, kiln_kernel *k,
                            const kiln_launch_config *config,
                            const kiln_packed_args *args) {
  kiln_hip_kernel *hk = kiln_hip_kernel_cast(k);
  kiln_status st = kiln_hip_hold(s);
  if (st != KILN_OK) return st;
  if ((st = kiln_hip_need_shared(hk, config->shared_memory_bytes)) != KILN_OK)
    return st;
  void *params[KILN_MAX_KERNEL_ARGS];
  kiln_hip_params_of(args, params);
  hipError_t err = kiln_hip_api.hipModuleLaunchKernel(
      hk->function, config->grid.x, config->grid.y, config->grid.z,
      config->block.x, config->block.y, config->block.z,
      (unsigned int)config->shared_memory_bytes, kiln_hip_stream_handle(s),
      args->count ? params : NULL, NULL);
  if (err != hipSuccess)
    return kiln_hip_error_as(
        err, KILN_ERROR_LAUNCH_FAILED,
        "hipModuleLaunchKernel of '%.64s' (grid %ux%ux%u, block %ux%ux%u, "
        "%zu bytes of dynamic shared memory)",
        k->name, config->grid.x, config->grid.y, config->grid.z,
        config->block.x, config->block.y, config->block.z,
        config->shared_memory_bytes);
  return KILN_OK;
}
