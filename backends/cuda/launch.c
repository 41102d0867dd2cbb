/* Kernel launches: cuLaunchKernel with the one argument ABI. This is the
 * path whose overhead counts, so it allocates nothing and makes one driver
 * call besides the launch (cuCtxGetCurrent); only a launch asking for more
 * dynamic shared memory than its kernel was allowed so far takes a lock. */
#include <pthread.h>

#include "backends/cuda/cuda.h"

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

/* The dynamic shared memory opt-in, done as on HIP (backends/hip/launch.c):
 * k->shared_limit is the most the kernel was allowed so far. A launch
 * beyond it raises the driver's attribute to exactly what it asks for,
 * under the kernel's lock, and publishes the new limit only once the
 * driver has it: two threads raising at once cannot leave the attribute at
 * the smaller value while the limit says the larger, and no launch trusts a
 * limit the driver does not have yet. A request that cannot fit next to the
 * kernel's static shared memory is refused in words, before the driver
 * would refuse it (an API error in compute-sanitizer's report). */
static kiln_status allow_shared(kiln_cuda_kernel *k, const kiln_context *ctx,
                                size_t bytes, const char *fn) {
  pthread_mutex_t *lock = &raise_locks[((uintptr_t)k >> 6) % RAISE_LOCKS];
  pthread_mutex_lock(lock);
  kiln_status st = KILN_OK;
  if (bytes > atomic_load_explicit(&k->shared_limit, memory_order_relaxed)) {
    size_t optin = ctx->properties.max_shared_memory_per_block_optin;
    int static_bytes = 0;
    CUresult r = kiln_cuda_api.cuFuncGetAttribute(
        &static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k->handle);
    size_t room =
        optin > (size_t)static_bytes ? optin - (size_t)static_bytes : 0;
    if (r != CUDA_SUCCESS)
      st = kiln_cuda_error(r, "cuFuncGetAttribute(SHARED_SIZE_BYTES) of "
                              "kernel '%s'", k->base.name);
    else if (bytes > room)
      st = kiln_set_error(KILN_ERROR_OUT_OF_RANGE,
                          "%s: kernel '%s' has %d bytes of static shared "
                          "memory, which leaves %zu of the device's %zu "
                          "bytes per block for dynamic shared memory; %zu "
                          "were asked for",
                          fn, k->base.name, static_bytes, room, optin, bytes);
    else if ((r = kiln_cuda_api.cuFuncSetAttribute(
                  k->handle, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                  (int)bytes)) != CUDA_SUCCESS)
      st = kiln_cuda_error(r,
                           "cuFuncSetAttribute raising the dynamic shared "
                           "memory limit of kernel '%s' to %zu bytes",
                           k->base.name, bytes);
    else
      atomic_store_explicit(&k->shared_limit, bytes, memory_order_release);
  }
  pthread_mutex_unlock(lock);
  return st;
}

kiln_status kiln_cuda_need_shared(kiln_cuda_kernel *k, const kiln_context *ctx,
                                  size_t bytes, const char *fn) {
  if (bytes <= ctx->properties.max_shared_memory_per_block ||
      bytes <= atomic_load_explicit(&k->shared_limit, memory_order_acquire))
    return KILN_OK;
  return allow_shared(k, ctx, bytes, fn);
}

kiln_status kiln_cuda_launch(kiln_stream *s, kiln_kernel *base,
                             const kiln_launch_config *c,
                             const kiln_packed_args *args) {
  kiln_cuda_kernel *k = kiln_cuda_kernel_cast(base);
  const kiln_context *ctx = s->base.context;
  kiln_status st = kiln_cuda_hold(s);
  if (st == KILN_OK) st = kiln_cuda_make_current(ctx);
  if (st != KILN_OK) return st;
  if ((st = kiln_cuda_need_shared(k, ctx, c->shared_memory_bytes,
                                   "kiln_launch")) != KILN_OK)
    return st;
  /* kernelParams[i] points at argument i in the packed list; the driver
   * copies the values out before cuLaunchKernel returns. */
  void *params[KILN_MAX_KERNEL_ARGS];
  for (size_t i = 0; i < args->count; i++)
    params[i] = (void *)(args->data + args->offsets[i]);
  CUstream stream = kiln_cuda_stream_cast(s)->handle;
  CUresult r;
  if (k->follows) {
    /* The kernel waits for its predecessor itself (module.c): its blocks
     * may be placed while that one drains. */
    CUlaunchAttribute overlap = {
        .id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
        .value.programmaticStreamSerializationAllowed = 1,
    };
    CUlaunchConfig config = {
        .gridDimX = c->grid.x, .gridDimY = c->grid.y, .gridDimZ = c->grid.z,
        .blockDimX = c->block.x, .blockDimY = c->block.y,
        .blockDimZ = c->block.z,
        .sharedMemBytes = (unsigned)c->shared_memory_bytes,
        .hStream = stream, .attrs = &overlap, .numAttrs = 1,
    };
    r = kiln_cuda_api.cuLaunchKernelEx(&config, k->handle, params, NULL);
  } else {
    r = kiln_cuda_api.cuLaunchKernel(
        k->handle, c->grid.x, c->grid.y, c->grid.z, c->block.x, c->block.y,
        c->block.z, (unsigned)c->shared_memory_bytes, stream, params, NULL);
  }
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error_as(r, KILN_ERROR_LAUNCH_FAILED,
                              "%s of '%s' (grid %ux%ux%u, block "
                              "%ux%ux%u, %zu bytes of dynamic shared memory)",
                              k->follows ? "cuLaunchKernelEx" : "cuLaunchKernel",
                              k->base.name, c->grid.x, c->grid.y, c->grid.z,
                              c->block.x, c->block.y, c->block.z,
                              c->shared_memory_bytes);
  return KILN_OK;
}
